// Elementwise host kernels against float64 / wide-integer references computed
// here, and against NumPy 2 (values noted from numpy with weak promotion).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/host/host_kernels.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/host/host_test_util.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::host_test {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

const std::vector<Shape>& OddShapes() {
  static const auto* shapes =
      new std::vector<Shape>{S({}), S({0}), S({1}), S({7}), S({1023}), S({65539}), S({3, 0, 2})};
  return *shapes;
}

// The float dtype NumPy's sqrt loop picks for an input dtype.
DType FloatRuleOf(DType d) {
  switch (d) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
      return DType::kFloat16;
    case DType::kInt16:
    case DType::kUInt16:
      return DType::kFloat32;
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64:
      return DType::kFloat64;
    default:
      return d;
  }
}

TestArray RunUnary(const std::string& op, const TestArray& x, DType out, DType compute,
                   HostKernelOptions options = {}) {
  absl::StatusOr<TestArray> r =
      RunNode(MakeNode(op, {x.type()}, {out, x.shape}, compute), {x}, options);
  EXPECT_THAT(r, IsOk()) << op;
  return r.ok() ? *r : Empty(out, x.shape);
}

TestArray RunBinary(const std::string& op, const TestArray& a, const TestArray& b,
                    const Shape& out_shape, DType out, DType compute, bool b_weak = false,
                    HostKernelOptions options = {}) {
  absl::StatusOr<TestArray> r =
      RunNode(MakeNode(op, {a.type(), b.type(b_weak)}, {out, out_shape}, compute), {a, b}, options);
  EXPECT_THAT(r, IsOk()) << op;
  return r.ok() ? *r : Empty(out, out_shape);
}

struct FloatFn {
  std::string op;
  std::function<double(double)> ref;
  double lo;
  double hi;
};

TEST(HostElementwiseTest, UnaryFloatFunctionsMatchFloat64Reference) {
  const std::vector<FloatFn> fns = {
      {"sqrt", [](double x) { return std::sqrt(x); }, 0, 100},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.01, 100},
      {"exp", [](double x) { return std::exp(x); }, -20, 10},
      {"log", [](double x) { return std::log(x); }, 0.001, 1000},
      {"log1p", [](double x) { return std::log1p(x); }, -0.9, 10},
      {"expm1", [](double x) { return std::expm1(x); }, -5, 5},
      {"sin", [](double x) { return std::sin(x); }, -10, 10},
      {"cos", [](double x) { return std::cos(x); }, -10, 10},
      {"tanh", [](double x) { return std::tanh(x); }, -5, 5},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20},
      {"gelu", [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -6, 6},
      {"erf", [](double x) { return std::erf(x); }, -3, 3},
  };
  for (const FloatFn& fn : fns) {
    for (DType d : kFloatDTypes) {
      for (const Shape& shape : OddShapes()) {
        const TestArray x = RandomArray(d, shape, 17, fn.lo, fn.hi);
        const TestArray y = RunUnary(fn.op, x, d, d);
        std::vector<double> want;
        for (double v : x.Values()) want.push_back(fn.ref(v));
        // gelu's erfc magnifies the rounding of its argument for x < 0:
        // an absolute tolerance there.
        ExpectValues(y, want, 4, fn.op + shape.ToString(), fn.op == "gelu" ? 1e-15 : 0);
      }
    }
  }
}

TEST(HostElementwiseTest, UnaryFloatFunctionsOfIntegersUseTheFloatRule) {
  // numpy.sqrt(np.arange(-2, 5, dtype=np.int8)) is float16:
  // [nan, nan, 0, 1, 1.4140625, 1.732421875, 2].
  const TestArray x = MakeArray(DType::kInt8, S({7}), {-2, -1, 0, 1, 2, 3, 4});
  ExpectValues(RunUnary("sqrt", x, DType::kFloat16, DType::kFloat16),
               {kNaN, kNaN, 0, 1, 1.4140625, 1.732421875, 2});
  for (DType d : kAllDTypes) {
    if (IsFloat(d)) continue;
    const DType f = FloatRuleOf(d);
    const TestArray a = RandomArray(d, S({1023}), 5, 0, 100);
    std::vector<double> want;
    for (double v : a.Values()) want.push_back(std::log1p(v));
    ExpectValues(RunUnary("log1p", a, f, f), want, 1, std::string(DTypeName(d)));
  }
}

// Reference for unary integer ops, computed in uint64 and wrapped.
uint64_t WrapTo(DType d, uint64_t v) {
  return IsSigned(d) ? static_cast<uint64_t>(WrapSigned(v, d)) : WrapUnsigned(v, d);
}

TestArray FullRangeInts(DType d, const Shape& shape, uint64_t seed) {
  TestArray a = Empty(d, shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < a.size(); ++i) {
    // Mostly random bits, with the extremes and small values mixed in.
    const uint64_t r = rng();
    uint64_t v = r;
    switch (r % 8) {
      case 0:
        v = 0;
        break;
      case 1:
        v = uint64_t{1} << (Bits(d) - 1);  // INT_MIN, or the top bit
        break;
      case 2:
        v = ~uint64_t{0};  // -1, or UINT_MAX
        break;
      case 3:
        v = (rng() % 7);
        break;
      default:
        break;
    }
    a.SetBits(i, v);
  }
  return a;
}

TEST(HostElementwiseTest, UnaryIntegerOpsWrap) {
  for (DType d : kIntDTypes) {
    const TestArray x = FullRangeInts(d, S({1023}), 3);
    const bool is_signed = IsSigned(d);
    auto check = [&](const std::string& op, std::function<uint64_t(uint64_t)> ref) {
      const TestArray y = RunUnary(op, x, d, d);
      for (int64_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(y.Bits64(i), WrapTo(d, ref(x.Bits64(i))))
            << op << " " << DTypeName(d) << " of " << x.IntAt(i);
      }
    };
    check("neg", [](uint64_t v) { return 0 - v; });
    check("abs", [&](uint64_t v) { return is_signed && static_cast<int64_t>(v) < 0 ? 0 - v : v; });
    check("square", [](uint64_t v) { return v * v; });
    check("sign", [&](uint64_t v) -> uint64_t {
      if (v == 0) return 0;
      return is_signed && static_cast<int64_t>(v) < 0 ? ~uint64_t{0} : 1;
    });
    check("relu", [&](uint64_t v) { return is_signed && static_cast<int64_t>(v) < 0 ? 0 : v; });
    check("bitwise_not", [](uint64_t v) { return ~v; });
    check("floor", [](uint64_t v) { return v; });
    check("ceil", [](uint64_t v) { return v; });
    check("round", [](uint64_t v) { return v; });
    check("reciprocal", [&](uint64_t v) -> uint64_t {
      if (v == 1) return 1;
      if (is_signed && v == ~uint64_t{0}) return v;
      return 0;
    });
  }
  // abs and neg of INT_MIN stay INT_MIN (numpy: np.abs(np.int8(-128)) == -128).
  const TestArray m = MakeArray(DType::kInt8, S({2}), {-128, 127});
  ExpectValues(RunUnary("abs", m, DType::kInt8, DType::kInt8), {-128, 127});
  ExpectValues(RunUnary("neg", m, DType::kInt8, DType::kInt8), {-128, -127});
  ExpectValues(
      RunUnary("square", MakeArray(DType::kInt8, S({1}), {16}), DType::kInt8, DType::kInt8), {0});
}

TEST(HostElementwiseTest, UnaryFloatSpecialValues) {
  for (DType d : kFloatDTypes) {
    const TestArray x = MakeArray(d, S({9}), {-0.0, 0.0, kNaN, kInf, -kInf, -2.5, 2.5, 0.5, -0.3});
    ExpectValues(RunUnary("sign", x, d, d), {0.0, 0.0, kNaN, 1, -1, -1, 1, 1, -1});
    ExpectValues(RunUnary("round", x, d, d),
                 {-0.0, 0.0, kNaN, kInf, -kInf, -2, 2, 0, RoundTo(d, -0.0)});
    ExpectValues(RunUnary("relu", x, d, d), {0.0, 0.0, kNaN, kInf, 0, 0, 2.5, 0.5, 0});
    ExpectValues(RunUnary("abs", x, d, d), {0.0, 0.0, kNaN, kInf, kInf, 2.5, 2.5, 0.5, 0.3});
    ExpectValues(RunUnary("neg", x, d, d), {0.0, -0.0, kNaN, -kInf, kInf, 2.5, -2.5, -0.5, 0.3});
    ExpectValues(RunUnary("floor", x, d, d), {-0.0, 0.0, kNaN, kInf, -kInf, -3, 2, 0, -1});
    ExpectValues(RunUnary("ceil", x, d, d), {-0.0, 0.0, kNaN, kInf, -kInf, -2, 3, 1, -0.0});
    ExpectValues(RunUnary("reciprocal", x, d, d),
                 {-kInf, kInf, kNaN, 0, -0.0, -0.4, 0.4, 2, 1 / RoundTo(d, -0.3)});
    ExpectValues(RunUnary("isnan", x, DType::kBool, d), {0, 0, 1, 0, 0, 0, 0, 0, 0});
    ExpectValues(RunUnary("isinf", x, DType::kBool, d), {0, 0, 0, 1, 1, 0, 0, 0, 0});
    ExpectValues(RunUnary("logical_not", x, DType::kBool, d), {1, 1, 0, 0, 0, 0, 0, 0, 0});
    ExpectValues(RunUnary("sqrt", x, d, d),
                 {-0.0, 0.0, kNaN, kInf, kNaN, kNaN, std::sqrt(2.5), std::sqrt(0.5), kNaN}, 1);
    ExpectValues(RunUnary("sigmoid", x, d, d),
                 {0.5, 0.5, kNaN, 1, 0, 1 / (1 + std::exp(2.5)), 1 / (1 + std::exp(-2.5)),
                  1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-RoundTo(d, -0.3)))},
                 1);
  }
  // numpy.round([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.3]).
  const TestArray r = MakeArray(DType::kFloat64, S({8}),
                                {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.3});
  ExpectValues(RunUnary("round", r, DType::kFloat64, DType::kFloat64),
               {0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, -0.0});
  // sigmoid does not overflow for large negative inputs.
  const TestArray big = MakeArray(DType::kFloat64, S({2}), {-800, 800});
  ExpectValues(RunUnary("sigmoid", big, DType::kFloat64, DType::kFloat64), {std::exp(-800.0), 1.0},
               1);
}

TEST(HostElementwiseTest, BoolUnaryOps) {
  TestArray x = MakeArray(DType::kBool, S({3}), {0, 1, 1});
  x.bytes[2] = std::byte{7};  // any nonzero byte is true
  ExpectValues(RunUnary("logical_not", x, DType::kBool, DType::kBool), {1, 0, 0});
  ExpectValues(RunUnary("bitwise_not", x, DType::kBool, DType::kBool), {1, 0, 0});
  ExpectValues(RunUnary("abs", x, DType::kBool, DType::kBool), {0, 1, 1});
  const TestArray y = RunUnary("abs", x, DType::kBool, DType::kBool);
  EXPECT_EQ(y.bytes[2], std::byte{1});
  EXPECT_THAT(RunNode(MakeNode("neg", {x.type()}, {DType::kBool, x.shape}, DType::kBool), {x}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("neg")));
}

// Python's floor division and remainder on wide integers.
struct PyDivMod {
  __int128 q;
  __int128 r;
};
PyDivMod PythonDivMod(__int128 a, __int128 b) {
  __int128 q = a / b;
  __int128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    q -= 1;
    r += b;
  }
  return {q, r};
}

TEST(HostElementwiseTest, BinaryIntegerOpsMatchWideReference) {
  for (DType d : kIntDTypes) {
    const bool is_signed = IsSigned(d);
    const TestArray a = FullRangeInts(d, S({4099}), 11);
    const TestArray b = FullRangeInts(d, S({4099}), 12);
    auto value = [&](const TestArray& x, int64_t i) -> __int128 {
      return is_signed ? static_cast<__int128>(x.IntAt(i)) : static_cast<__int128>(x.Bits64(i));
    };
    auto check = [&](const std::string& op, DType out,
                     std::function<uint64_t(__int128, __int128)> ref) {
      const TestArray y = RunBinary(op, a, b, a.shape, out, d, false, ManyThreads());
      for (int64_t i = 0; i < a.size(); ++i) {
        const uint64_t want = out == DType::kBool ? ref(value(a, i), value(b, i))
                                                  : WrapTo(d, ref(value(a, i), value(b, i)));
        ASSERT_EQ(y.Bits64(i), want)
            << op << " " << DTypeName(d) << " " << a.IntAt(i) << ", " << b.IntAt(i);
      }
    };
    auto u = [](__int128 v) { return static_cast<uint64_t>(v); };
    check("add", d, [&](__int128 x, __int128 y) { return u(x + y); });
    check("sub", d, [&](__int128 x, __int128 y) { return u(x - y); });
    check("mul", d, [&](__int128 x, __int128 y) {
      return u(static_cast<unsigned __int128>(x) * static_cast<unsigned __int128>(y));
    });
    check("floordiv", d,
          [&](__int128 x, __int128 y) { return y == 0 ? 0 : u(PythonDivMod(x, y).q); });
    check("mod", d, [&](__int128 x, __int128 y) { return y == 0 ? 0 : u(PythonDivMod(x, y).r); });
    check("maximum", d, [&](__int128 x, __int128 y) { return u(x > y ? x : y); });
    check("minimum", d, [&](__int128 x, __int128 y) { return u(x < y ? x : y); });
    check("bitwise_and", d, [&](__int128 x, __int128 y) { return u(x & y); });
    check("bitwise_or", d, [&](__int128 x, __int128 y) { return u(x | y); });
    check("bitwise_xor", d, [&](__int128 x, __int128 y) { return u(x ^ y); });
    // numpy.gcd / numpy.lcm: on the magnitudes, wrapped to the dtype.
    auto gcd = [](__int128 x, __int128 y) {
      unsigned __int128 a = x < 0 ? -x : x, b = y < 0 ? -y : y;
      while (b != 0) {
        const unsigned __int128 r = a % b;
        a = b;
        b = r;
      }
      return a;
    };
    check("gcd", d, [&](__int128 x, __int128 y) { return u(gcd(x, y)); });
    check("lcm", d, [&](__int128 x, __int128 y) {
      const unsigned __int128 g = gcd(x, y);
      const unsigned __int128 ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
      return g == 0 ? uint64_t{0} : u(static_cast<__int128>(ax / g * ay));
    });
    check("eq", DType::kBool, [](__int128 x, __int128 y) { return x == y; });
    check("ne", DType::kBool, [](__int128 x, __int128 y) { return x != y; });
    check("lt", DType::kBool, [](__int128 x, __int128 y) { return x < y; });
    check("le", DType::kBool, [](__int128 x, __int128 y) { return x <= y; });
    check("gt", DType::kBool, [](__int128 x, __int128 y) { return x > y; });
    check("ge", DType::kBool, [](__int128 x, __int128 y) { return x >= y; });
    check("logical_and", DType::kBool, [](__int128 x, __int128 y) { return x != 0 && y != 0; });
    check("logical_or", DType::kBool, [](__int128 x, __int128 y) { return x != 0 || y != 0; });
    check("logical_xor", DType::kBool, [](__int128 x, __int128 y) { return (x != 0) != (y != 0); });
  }
}

TEST(HostElementwiseTest, IntegerDivisionCorners) {
  for (DType d : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64}) {
    TestArray a = Empty(d, S({6}));
    TestArray b = Empty(d, S({6}));
    const uint64_t min = uint64_t{1} << (Bits(d) - 1);
    const uint64_t m1 = ~uint64_t{0};
    const uint64_t av[] = {min, min, 5, static_cast<uint64_t>(-5), 7, static_cast<uint64_t>(-7)};
    const uint64_t bv[] = {m1, 0, 0, 0, static_cast<uint64_t>(-2), 2};
    for (int i = 0; i < 6; ++i) {
      a.SetBits(i, av[i]);
      b.SetBits(i, bv[i]);
    }
    // numpy: INT_MIN // -1 == INT_MIN, x // 0 == 0, x % 0 == 0, 7 // -2 == -4.
    const TestArray q = RunBinary("floordiv", a, b, a.shape, d, d);
    const TestArray r = RunBinary("mod", a, b, a.shape, d, d);
    EXPECT_EQ(q.IntAt(0), WrapSigned(min, d));
    EXPECT_EQ(r.IntAt(0), 0);
    for (int i = 1; i < 4; ++i) {
      EXPECT_EQ(q.IntAt(i), 0) << i;
      EXPECT_EQ(r.IntAt(i), 0) << i;
    }
    EXPECT_EQ(q.IntAt(4), -4);
    EXPECT_EQ(r.IntAt(4), -1);
    EXPECT_EQ(q.IntAt(5), -4);
    EXPECT_EQ(r.IntAt(5), 1);
  }
  // numpy.power(int8 [2,-2,3,0,1,-1,-1,7], [7,7,5,0,100,101,100,3]).
  const TestArray base = MakeArray(DType::kInt8, S({8}), {2, -2, 3, 0, 1, -1, -1, 7});
  const TestArray exp = MakeArray(DType::kInt8, S({8}), {7, 7, 5, 0, 100, 101, 100, 3});
  ExpectValues(RunBinary("pow", base, exp, base.shape, DType::kInt8, DType::kInt8),
               {-128, -128, -13, 1, 1, -1, 1, 87});
  // Negative exponents (an array, not a literal): 0 except for bases 1 and -1.
  const TestArray b2 = MakeArray(DType::kInt64, S({5}), {2, 1, -1, 0, -1});
  const TestArray e2 = MakeArray(DType::kInt64, S({5}), {-1, -2, -3, -1, -2});
  ExpectValues(RunBinary("pow", b2, e2, b2.shape, DType::kInt64, DType::kInt64), {0, 1, -1, 0, 1});
  const TestArray u = MakeArray(DType::kUInt64, S({2}), {3, 2});
  const TestArray ue = MakeArray(DType::kUInt64, S({2}), {41, 64});
  const TestArray up = RunBinary("pow", u, ue, u.shape, DType::kUInt64, DType::kUInt64);
  uint64_t p = 1;
  for (int i = 0; i < 41; ++i) p *= 3;
  EXPECT_EQ(up.Bits64(0), p);
  EXPECT_EQ(up.Bits64(1), 0u);
}

TEST(HostElementwiseTest, BinaryFloatOpsMatchFloat64Reference) {
  struct Case {
    std::string op;
    std::function<double(double, double)> ref;
  };
  const std::vector<Case> cases = {
      {"add", [](double x, double y) { return x + y; }},
      {"sub", [](double x, double y) { return x - y; }},
      {"mul", [](double x, double y) { return x * y; }},
      {"div", [](double x, double y) { return x / y; }},
      {"maximum", [](double x, double y) { return std::isnan(x) ? x : (x > y ? x : y); }},
      {"minimum", [](double x, double y) { return std::isnan(x) ? x : (x < y ? x : y); }},
      {"atan2", [](double x, double y) { return std::atan2(x, y); }},
      {"pow", [](double x, double y) { return std::pow(std::fabs(x), y / 40); }},
  };
  for (DType d : kFloatDTypes) {
    for (const Shape& shape : OddShapes()) {
      TestArray a = RandomArray(d, shape, 21, -100, 100);
      const TestArray b = RandomArray(d, shape, 22, -100, 100);
      for (const Case& c : cases) {
        TestArray x = a;
        TestArray y = b;
        if (c.op == "pow") {
          // Positive bases, moderate exponents: within range for float16.
          for (int64_t i = 0; i < x.size(); ++i) {
            x.Set(i, RoundTo(d, std::fabs(a.At(i)) / 10));
            y.Set(i, RoundTo(d, b.At(i) / 40));
          }
        }
        std::vector<double> want;
        for (int64_t i = 0; i < x.size(); ++i) {
          want.push_back(c.op == "pow" ? std::pow(x.At(i), y.At(i)) : c.ref(x.At(i), y.At(i)));
        }
        const TestArray out = RunBinary(c.op, x, y, shape, d, d);
        ExpectValues(out, want, c.op == "pow" || c.op == "atan2" ? 1 : 0, c.op + shape.ToString());
      }
      // Comparisons compare the dtype's values exactly.
      const TestArray lt = RunBinary("lt", a, b, shape, DType::kBool, d);
      const TestArray eq = RunBinary("eq", a, a, shape, DType::kBool, d);
      for (int64_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(lt.At(i), a.At(i) < b.At(i) ? 1 : 0);
        ASSERT_EQ(eq.At(i), 1);
      }
    }
  }
}

TEST(HostElementwiseTest, FloatFloorDivideAndRemainderMatchNumPy) {
  const std::vector<double> a = {5.,  -5.,  0.,   -0.,   1.,   -1,    7,  -7,
                                 7.5, -7.5, kInf, -kInf, kNaN, 1e308, 3.0};
  const std::vector<double> b = {0., 0., 0., 0., kInf, kInf,   -2,  2,
                                 2., 2., 3., 3., 1.,   1e-308, -0.0};
  const TestArray x = MakeArray(DType::kFloat64, S({15}), a);
  const TestArray y = MakeArray(DType::kFloat64, S({15}), b);
  // numpy.floor_divide(a, b) and numpy.remainder(a, b).
  ExpectValues(
      RunBinary("floordiv", x, y, x.shape, DType::kFloat64, DType::kFloat64),
      {kInf, -kInf, kNaN, kNaN, 0.0, -1.0, -4.0, -4.0, 3.0, -4.0, kNaN, kNaN, kNaN, kInf, -kInf});
  ExpectValues(RunBinary("mod", x, y, x.shape, DType::kFloat64, DType::kFloat64),
               {kNaN, kNaN, kNaN, kNaN, 1.0, kInf, -1.0, 1.0, 1.5, 0.5, kNaN, kNaN, kNaN,
                3.498445546245627e-309, kNaN});
  // Random operands: q * b + r == a (approximately) and r has b's sign.
  for (DType d : kFloatDTypes) {
    const TestArray p = RandomArray(d, S({1023}), 1, -50, 50);
    const TestArray q = RandomArray(d, S({1023}), 2, -50, 50);
    const TestArray fd = RunBinary("floordiv", p, q, p.shape, d, d);
    const TestArray md = RunBinary("mod", p, q, p.shape, d, d);
    for (int64_t i = 0; i < p.size(); ++i) {
      if (q.At(i) == 0) continue;
      EXPECT_EQ(fd.At(i), std::floor(fd.At(i)));
      // Within the rounding of the remainder to the dtype.
      EXPECT_NEAR(fd.At(i) * q.At(i) + md.At(i), p.At(i),
                  0.01 * (std::fabs(p.At(i)) + std::fabs(q.At(i))) + 0.01);
      EXPECT_TRUE(md.At(i) == 0 || (md.At(i) < 0) == (q.At(i) < 0));
    }
  }
}

TEST(HostElementwiseTest, MaximumMinimumPropagateNaNAndTakeTheSecondOnTies) {
  const TestArray a = MakeArray(DType::kFloat32, S({6}), {kNaN, 1, -0.0, 0.0, kNaN, 3});
  const TestArray b = MakeArray(DType::kFloat32, S({6}), {1, kNaN, 0.0, -0.0, kNaN, 2});
  // numpy.maximum(-0.0, 0.0) is 0.0 and numpy.maximum(0.0, -0.0) is -0.0.
  ExpectValues(RunBinary("maximum", a, b, a.shape, DType::kFloat32, DType::kFloat32),
               {kNaN, kNaN, 0.0, -0.0, kNaN, 3});
  ExpectValues(RunBinary("minimum", a, b, a.shape, DType::kFloat32, DType::kFloat32),
               {kNaN, kNaN, 0.0, -0.0, kNaN, 2});
  ExpectValues(RunBinary("eq", a, b, a.shape, DType::kBool, DType::kFloat32), {0, 0, 1, 1, 0, 0});
  ExpectValues(RunBinary("ne", a, b, a.shape, DType::kBool, DType::kFloat32), {1, 1, 0, 0, 1, 1});
}

TEST(HostElementwiseTest, BoolBinaryOps) {
  const TestArray a = MakeArray(DType::kBool, S({4}), {0, 0, 1, 1});
  const TestArray b = MakeArray(DType::kBool, S({4}), {0, 1, 0, 1});
  const DType k = DType::kBool;
  ExpectValues(RunBinary("add", a, b, a.shape, k, k), {0, 1, 1, 1});
  ExpectValues(RunBinary("mul", a, b, a.shape, k, k), {0, 0, 0, 1});
  ExpectValues(RunBinary("maximum", a, b, a.shape, k, k), {0, 1, 1, 1});
  ExpectValues(RunBinary("minimum", a, b, a.shape, k, k), {0, 0, 0, 1});
  ExpectValues(RunBinary("bitwise_xor", a, b, a.shape, k, k), {0, 1, 1, 0});
  ExpectValues(RunBinary("bitwise_and", a, b, a.shape, k, k), {0, 0, 0, 1});
  ExpectValues(RunBinary("bitwise_or", a, b, a.shape, k, k), {0, 1, 1, 1});
  ExpectValues(RunBinary("gt", a, b, a.shape, k, k), {0, 0, 1, 0});
  // floordiv of bools computes in int8.
  ExpectValues(RunBinary("floordiv", a, b, a.shape, DType::kInt8, DType::kInt8), {0, 0, 0, 1});
  EXPECT_THAT(RunNode(MakeNode("sub", {a.type(), b.type()}, {k, a.shape}, k), {a, b}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sub")));
}

// NumPy's values: gcd(-12, 18) = 6, lcm(-4, 6) = 12, gcd(0, 0) = 0,
// lcm(0, 5) = 0; in int8, gcd(-128, 0) = -128 and lcm(100, 3) = 44 (wrapped).
TEST(HostElementwiseTest, GcdAndLcmMatchNumpy) {
  const TestArray a = MakeArray(DType::kInt8, S({5}), {-12, 0, 0, -128, 100});
  const TestArray b = MakeArray(DType::kInt8, S({5}), {18, 0, 5, 0, 3});
  const DType k = DType::kInt8;
  ExpectValues(RunBinary("gcd", a, b, a.shape, k, k), {6, 0, 5, -128, 1});
  ExpectValues(RunBinary("lcm", a, b, a.shape, k, k), {36, 0, 0, 0, 44});
  const TestArray big = MakeArray(DType::kUInt64, S({1}), {9223372036854775808.0});  // 2^63
  const TestArray other = MakeArray(DType::kUInt64, S({1}), {3298534883328.0});      // 3 * 2^40
  const TestArray g = RunBinary("gcd", big, other, big.shape, DType::kUInt64, DType::kUInt64);
  EXPECT_EQ(g.Bits64(0), uint64_t{1} << 40);
}

// bitcast copies the bytes: float32 -1.5 is 0xbfc00000, -0.0 and NaN keep
// their sign bit, float16 1.0 is 0x3c00, complex64 (1, -2) is two floats.
TEST(HostElementwiseTest, BitcastKeepsTheBytes) {
  const TestArray f = MakeArray(DType::kFloat32, S({4}), {-1.5, -0.0, -kNaN, kInf});
  absl::StatusOr<TestArray> i = RunNode(MakeNode("bitcast", {f.type()}, {DType::kInt32, f.shape},
                                                 DType::kFloat32, {{"dtype", DType::kInt32}}),
                                        {f});
  ASSERT_THAT(i, IsOk());
  EXPECT_EQ(static_cast<uint32_t>(i->Raw<int32_t>(0)), 0xbfc00000u);
  EXPECT_EQ(static_cast<uint32_t>(i->Raw<int32_t>(1)), 0x80000000u);
  EXPECT_LT(i->Raw<int32_t>(2), 0);  // the sign of -NaN
  EXPECT_EQ(i->Raw<int32_t>(3), 0x7f800000);
  const TestArray h = MakeArray(DType::kFloat16, S({2, 1}), {1.0, -2.0});
  absl::StatusOr<TestArray> u = RunNode(MakeNode("bitcast", {h.type()}, {DType::kUInt16, h.shape},
                                                 DType::kFloat16, {{"dtype", DType::kUInt16}}),
                                        {h});
  ASSERT_THAT(u, IsOk());
  ExpectValues(*u, {0x3c00, 0xc000});
  const TestArray empty = Empty(DType::kFloat64, S({0, 3}));
  absl::StatusOr<TestArray> e =
      RunNode(MakeNode("bitcast", {empty.type()}, {DType::kInt64, empty.shape}, DType::kFloat64,
                       {{"dtype", DType::kInt64}}),
              {empty});
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->size(), 0);
  // A node whose output does not keep the input's bytes is refused.
  EXPECT_THAT(RunNode(MakeNode("bitcast", {f.type()}, {DType::kInt16, f.shape}, DType::kFloat32,
                               {{"dtype", DType::kInt16}}),
                      {f}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bitcast")));
}

TEST(HostElementwiseTest, MixedDTypesConvertToTheComputeDType) {
  // int8 + uint8 -> int16.
  const TestArray i8 = MakeArray(DType::kInt8, S({3}), {-128, 127, 5});
  const TestArray u8 = MakeArray(DType::kUInt8, S({3}), {255, 255, 250});
  ExpectValues(RunBinary("add", i8, u8, i8.shape, DType::kInt16, DType::kInt16), {127, 382, 255});
  // int64 + uint64 -> float64.
  TestArray i64 = MakeArray(DType::kInt64, S({2}), {-1, 3});
  TestArray u64 = Empty(DType::kUInt64, S({2}));
  u64.SetBits(0, ~uint64_t{0});
  u64.SetBits(1, 1);
  ExpectValues(RunBinary("add", i64, u64, i64.shape, DType::kFloat64, DType::kFloat64),
               {0x1p64 - 1, 4});
  // eq(int8, uint8) compares in int16: -1 != 255.
  const TestArray m1 = MakeArray(DType::kInt8, S({1}), {-1});
  const TestArray u255 = MakeArray(DType::kUInt8, S({1}), {255});
  ExpectValues(RunBinary("eq", m1, u255, m1.shape, DType::kBool, DType::kInt16), {0});
  // div of ints is float64.
  const TestArray i32a = MakeArray(DType::kInt32, S({3}), {7, -7, 1});
  const TestArray i32b = MakeArray(DType::kInt32, S({3}), {2, 2, 0});
  ExpectValues(RunBinary("div", i32a, i32b, i32a.shape, DType::kFloat64, DType::kFloat64),
               {3.5, -3.5, kInf});
  // float16 + int16 -> float32.
  const TestArray h = MakeArray(DType::kFloat16, S({1}), {0.1});
  const TestArray s16 = MakeArray(DType::kInt16, S({1}), {30000});
  ExpectValues(RunBinary("add", h, s16, h.shape, DType::kFloat32, DType::kFloat32),
               {Half::FromDouble(0.1).ToDouble() + 30000});
}

TEST(HostElementwiseTest, WeakScalarsAreConvertedToTheComputeDTypeAndBroadcast) {
  // float16 array + 3.7 (a weak float): numpy gives float16 4.7, i.e. 1 +
  // float16(3.7) rounded to float16.
  const TestArray h = MakeArray(DType::kFloat16, S({2}), {1, 2});
  const TestArray w = Scalar0d(DType::kFloat64, 3.7);
  const double w16 = Half::FromDouble(3.7).ToDouble();
  ExpectValues(RunBinary("add", h, w, h.shape, DType::kFloat16, DType::kFloat16, true),
               {1 + w16, 2 + w16});
  // int8 array + 1 (a weak int) stays int8 and wraps.
  const TestArray i8 = MakeArray(DType::kInt8, S({3}), {127, -128, 0});
  const TestArray one = Scalar0d(DType::kInt64, 1);
  ExpectValues(RunBinary("add", i8, one, i8.shape, DType::kInt8, DType::kInt8, true),
               {-128, -127, 1});
  // uint8 * 2 wraps.
  const TestArray u8 = MakeArray(DType::kUInt8, S({2}), {200, 3});
  ExpectValues(RunBinary("mul", u8, Scalar0d(DType::kInt64, 2), u8.shape, DType::kUInt8,
                         DType::kUInt8, true),
               {144, 6});
  // int32 array * 0.5 (weak float) -> float64.
  const TestArray i32 = MakeArray(DType::kInt32, S({2}), {3, -3});
  ExpectValues(RunBinary("mul", i32, Scalar0d(DType::kFloat64, 0.5), i32.shape, DType::kFloat64,
                         DType::kFloat64, true),
               {1.5, -1.5});
  // float32 array compared with 0.1: 0.1 becomes float32(0.1) first.
  const TestArray f = MakeArray(DType::kFloat32, S({1}), {0.1});
  ExpectValues(RunBinary("eq", f, Scalar0d(DType::kFloat64, 0.1), f.shape, DType::kBool,
                         DType::kFloat32, true),
               {1});
  // Two 0-d operands give a 0-d result.
  ExpectValues(RunBinary("sub", Scalar0d(DType::kInt64, 3), Scalar0d(DType::kInt64, 5), S({}),
                         DType::kInt64, DType::kInt64, true),
               {-2});
}

// Reference broadcasting: the element of `x` (dims right-aligned to `out`)
// at output position `pos`.
double BroadcastAt(const TestArray& x, const Shape& out, int64_t pos) {
  std::vector<int64_t> idx(out.rank());
  for (int d = out.rank() - 1; d >= 0; --d) {
    idx[d] = pos % out.dim(d);
    pos /= out.dim(d);
  }
  int64_t off = 0;
  const int lead = out.rank() - x.shape.rank();
  for (int d = 0; d < x.shape.rank(); ++d) {
    const int64_t i = x.shape.dim(d) == 1 ? 0 : idx[lead + d];
    off = off * x.shape.dim(d) + i;
  }
  return x.At(off);
}

TEST(HostElementwiseTest, BroadcastingCorners) {
  struct Case {
    Shape a;
    Shape b;
    Shape out;
  };
  const std::vector<Case> cases = {
      {S({3, 1}), S({1, 4}), S({3, 4})},
      {S({2, 1, 3}), S({4, 1}), S({2, 4, 3})},
      {S({}), S({5}), S({5})},
      {S({5}), S({}), S({5})},
      {S({0, 3}), S({1, 3}), S({0, 3})},
      {S({1}), S({}), S({1})},
      {S({5, 1, 1}), S({1}), S({5, 1, 1})},
      {S({1, 1}), S({1, 1}), S({1, 1})},
      {S({7, 1, 5}), S({7, 3, 1}), S({7, 3, 5})},
      {S({300, 1}), S({1, 301}), S({300, 301})},
      {S({2, 3, 4, 5}), S({3, 1, 5}), S({2, 3, 4, 5})},
  };
  for (const Case& c : cases) {
    for (DType d : {DType::kInt16, DType::kFloat32, DType::kBFloat16}) {
      const TestArray a = RandomArray(d, c.a, 1, -50, 50);
      const TestArray b = RandomArray(d, c.b, 2, -50, 50);
      for (const HostKernelOptions& options : {HostKernelOptions{}, ManyThreads()}) {
        const TestArray y = RunBinary("sub", a, b, c.out, d, d, false, options);
        std::vector<double> want;
        for (int64_t i = 0; i < c.out.num_elements(); ++i) {
          want.push_back(BroadcastAt(a, c.out, i) - BroadcastAt(b, c.out, i));
        }
        ExpectValues(y, want, 0, c.a.ToString() + " - " + c.b.ToString());
      }
    }
  }
}

TEST(HostElementwiseTest, WhereAndClip) {
  // where(cond (3,1) float with NaN, a 0-d, b (1,4)).
  const TestArray cond = MakeArray(DType::kFloat32, S({3, 1}), {0, kNaN, -0.0});
  const TestArray a = Scalar0d(DType::kInt8, 7);
  const TestArray b = MakeArray(DType::kInt8, S({1, 4}), {1, 2, 3, 4});
  absl::StatusOr<TestArray> w = RunNode(
      MakeNode("where", {cond.type(), a.type(), b.type()}, {DType::kInt8, S({3, 4})}, DType::kInt8),
      {cond, a, b});
  ASSERT_THAT(w, IsOk());
  ExpectValues(*w, {1, 2, 3, 4, 7, 7, 7, 7, 1, 2, 3, 4});

  // As numpy.clip: a NaN bound makes every element NaN; lo > hi gives hi
  // (numpy.clip([1, 2, 5], 4, 3) is [3, 3, 3]).
  const TestArray x = MakeArray(DType::kFloat64, S({3}), {1, kNaN, 5});
  auto clip = [](const TestArray& v, const TestArray& lo, const TestArray& hi, DType d) {
    absl::StatusOr<TestArray> r = RunNode(
        MakeNode("clip", {v.type(), lo.type(true), hi.type(true)}, {d, v.shape}, d), {v, lo, hi});
    EXPECT_THAT(r, IsOk());
    return *r;
  };
  ExpectValues(clip(x, Scalar0d(DType::kFloat64, 0), Scalar0d(DType::kFloat64, 3), DType::kFloat64),
               {1, kNaN, 3});
  ExpectValues(
      clip(x, Scalar0d(DType::kFloat64, kNaN), Scalar0d(DType::kFloat64, 3), DType::kFloat64),
      {kNaN, kNaN, kNaN});
  ExpectValues(
      clip(x, Scalar0d(DType::kFloat64, 0), Scalar0d(DType::kFloat64, kNaN), DType::kFloat64),
      {kNaN, kNaN, kNaN});
  const TestArray y = MakeArray(DType::kInt32, S({3}), {1, 2, 5});
  ExpectValues(clip(y, Scalar0d(DType::kInt64, 4), Scalar0d(DType::kInt64, 3), DType::kInt32),
               {3, 3, 3});
  // Random clip against min(max(x, lo), hi) for every dtype.
  for (DType d : kAllDTypes) {
    const TestArray v = RandomArray(d, S({1023}), 9, -100, 100);
    const TestArray lo = RandomArray(d, S({1023}), 10, -100, 0);
    const TestArray hi = RandomArray(d, S({1}), 11, 0, 100);
    absl::StatusOr<TestArray> r =
        RunNode(MakeNode("clip", {v.type(), lo.type(), hi.type()}, {d, v.shape}, d), {v, lo, hi});
    ASSERT_THAT(r, IsOk());
    std::vector<double> want;
    for (int64_t i = 0; i < v.size(); ++i) {
      want.push_back(std::min(std::max(v.At(i), lo.At(i)), hi.At(0)));
    }
    ExpectValues(*r, want, 0, std::string(DTypeName(d)));
  }
}

// The reference cast of a double (exactly a value of `from`) to `to`.
double ReferenceCast(double v, DType to) {
  if (to == DType::kBool) return v != 0 ? 1 : 0;  // NaN is true
  if (IsFloat(to)) return RoundTo(to, v);
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  const int bits = Bits(to);
  const double lo = IsSigned(to) ? -std::ldexp(1.0, bits - 1) : 0;
  const double hi = IsSigned(to) ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  return std::min(std::max(t, lo), hi) + 0.0;  // no -0 for integers
}

TEST(HostElementwiseTest, CastBetweenEveryPairOfDTypes) {
  const std::vector<double> candidates = {
      0,    1,    -1,    2.5,   -2.5,  127,   128,    255,        256,
      -129, -128, 65504, 65535, 65536, 1e10,  -1e10,  kInf,       -kInf,
      kNaN, 0.1,  -0.0,  3e38,  1e300, 0.999, -0.999, 2147483647, -2147483648.0};
  for (DType from : kAllDTypes) {
    std::vector<double> values;
    for (double v : candidates) {
      if (from == DType::kBool) {
        if (v == 0 || v == 1) values.push_back(v);
      } else if (IsInteger(from)) {
        if (v == std::trunc(v) && ReferenceCast(v, from) == v) values.push_back(v);
      } else {
        values.push_back(RoundTo(from, v));
      }
    }
    const TestArray x = MakeArray(from, S({static_cast<int64_t>(values.size())}), values);
    for (DType to : kAllDTypes) {
      // compute_dtype deliberately wrong: cast computes in its output dtype.
      const TestArray y = RunUnary("cast", x, to, DType::kBool);
      std::vector<double> want;
      for (double v : x.Values()) {
        // Integer -> integer wraps; the candidates are all in range of the
        // source, so wrap the exact integer value.
        if (IsInteger(to) && (IsInteger(from) || from == DType::kBool)) {
          const uint64_t bits = static_cast<uint64_t>(static_cast<int64_t>(v));
          want.push_back(IsSigned(to) ? static_cast<double>(WrapSigned(bits, to))
                                      : static_cast<double>(WrapUnsigned(bits, to)));
        } else {
          want.push_back(ReferenceCast(v, to));
        }
      }
      ExpectValues(y, want, 0, std::string(DTypeName(from)) + "->" + std::string(DTypeName(to)));
    }
  }
  // 64-bit extremes: int64 <-> uint64 wrap, float -> 64-bit saturates.
  TestArray big = Empty(DType::kUInt64, S({2}));
  big.SetBits(0, ~uint64_t{0});
  big.SetBits(1, uint64_t{1} << 63);
  const TestArray as_i64 = RunUnary("cast", big, DType::kInt64, DType::kInt64);
  EXPECT_EQ(as_i64.IntAt(0), -1);
  EXPECT_EQ(as_i64.IntAt(1), std::numeric_limits<int64_t>::min());
  const TestArray f = MakeArray(DType::kFloat64, S({4}), {1e19, -1e19, 0x1p63, 1e30});
  const TestArray f_i64 = RunUnary("cast", f, DType::kInt64, DType::kInt64);
  EXPECT_EQ(f_i64.IntAt(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(f_i64.IntAt(1), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f_i64.IntAt(2), std::numeric_limits<int64_t>::max());
  const TestArray f_u64 = RunUnary("cast", f, DType::kUInt64, DType::kUInt64);
  EXPECT_EQ(f_u64.Bits64(0), 10000000000000000000u);
  EXPECT_EQ(f_u64.Bits64(1), 0u);
  EXPECT_EQ(f_u64.Bits64(2), uint64_t{1} << 63);
  EXPECT_EQ(f_u64.Bits64(3), ~uint64_t{0});
}

TEST(HostElementwiseTest, ThreadsGiveIdenticalResults) {
  for (DType d : {DType::kFloat32, DType::kInt64, DType::kFloat16}) {
    const TestArray a = RandomArray(d, S({65539}), 4, -10, 10);
    const TestArray b = RandomArray(d, S({1}), 5, -10, 10);
    const TestArray one = RunBinary("mul", a, b, a.shape, d, d);
    for (int threads : {2, 3, 4, 8}) {
      HostKernelOptions o;
      o.threads = threads;
      o.min_elements_per_thread = 100;
      EXPECT_EQ(RunBinary("mul", a, b, a.shape, d, d, false, o).bytes, one.bytes) << threads;
    }
  }
}

TEST(HostElementwiseTest, EmptyAndZeroDimensional) {
  for (DType d : kAllDTypes) {
    const TestArray e = Empty(d, S({0, 4}));
    EXPECT_EQ(RunUnary("abs", e, d, d).size(), 0);
    const TestArray z = Scalar0d(d, 1);
    ExpectValues(RunUnary("abs", z, d, d), {1});
    ExpectValues(RunUnary("logical_not", z, DType::kBool, d), {0});
  }
}

}  // namespace
}  // namespace gpuflow::host_test
