// Complex host kernels against NumPy (values printed by NumPy, with NumPy 2's
// sign, z / |z|): the elementwise functions with their special values,
// arithmetic, ordering, casts, reductions and matmul.
#include <cmath>
#include <complex>
#include <string>
#include <utility>
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
using Cx = std::complex<double>;

constexpr DType kC64 = DType::kComplex64;
constexpr DType kC128 = DType::kComplex128;

TestArray MakeComplex(DType dtype, const std::vector<Cx>& values) {
  TestArray a = Empty(dtype, S({static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) a.SetComplex(i, values[i].real(), values[i].imag());
  return a;
}

// Equal parts: NaN matches NaN, zeros their sign unchecked, others within a
// relative 1e-15 (complex128) or exactly the float32 rounding (complex64).
bool Near(double a, double b, DType dtype) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  if (dtype == kC64 || dtype == DType::kFloat32) {
    return static_cast<float>(a) == static_cast<float>(b) ||
           std::fabs(a - b) <= 2e-7 * std::fabs(b);
  }
  return std::fabs(a - b) <= 1e-15 * std::max(1.0, std::fabs(b));
}

void ExpectComplex(const TestArray& r, const std::vector<Cx>& expected, const std::string& what) {
  ASSERT_EQ(r.size(), static_cast<int64_t>(expected.size())) << what;
  for (int64_t i = 0; i < r.size(); ++i) {
    EXPECT_TRUE(Near(r.At(i), expected[i].real(), r.dtype) &&
                Near(r.Imag(i), expected[i].imag(), r.dtype))
        << what << "[" << i << "]: got (" << r.At(i) << ", " << r.Imag(i) << "), want "
        << expected[i];
  }
}

void ExpectReal(const TestArray& r, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(r.size(), static_cast<int64_t>(expected.size())) << what;
  for (int64_t i = 0; i < r.size(); ++i) {
    EXPECT_TRUE(Near(r.At(i), expected[i], r.dtype))
        << what << "[" << i << "]: got " << r.At(i) << ", want " << expected[i];
  }
}

TestArray Unary(const std::string& op, const TestArray& x, DType out, DType compute) {
  absl::StatusOr<TestArray> r = RunNode(MakeNode(op, {x.type()}, {out, x.shape}, compute), {x});
  EXPECT_TRUE(r.ok()) << op << ": " << r.status();
  return r.ok() ? *r : Empty(out, x.shape);
}

TestArray Binary(const std::string& op, const TestArray& a, const TestArray& b, DType out,
                 DType compute) {
  absl::StatusOr<TestArray> r =
      RunNode(MakeNode(op, {a.type(), b.type()}, {out, a.shape}, compute), {a, b});
  EXPECT_TRUE(r.ok()) << op << ": " << r.status();
  return r.ok() ? *r : Empty(out, a.shape);
}

const double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

// 1+2j, -3.5+0.25j, 0j, inf+0j, nan+1j, -infj, -2+0j.
std::vector<Cx> SpecialInputs() {
  return {Cx(1, 2), Cx(-3.5, 0.25), Cx(0, 0), Cx(kInf, 0), Cx(kNan, 1), Cx(0, -kInf), Cx(-2, 0)};
}

TEST(HostComplexTest, UnaryFunctionsMatchNumpy) {
  const TestArray z = MakeComplex(kC128, SpecialInputs());
  const std::vector<std::pair<std::string, std::vector<Cx>>> cases = {
      {"sqrt",
       {Cx(1.272019649514069, 0.7861513777574233), Cx(0.0667727935036041, 1.8720199266974362),
        Cx(0, 0), Cx(kInf, 0), Cx(kNan, kNan), Cx(kInf, -kInf), Cx(0, 1.4142135623730951)}},
      {"exp",
       {Cx(-1.1312043837568135, 2.4717266720048188), Cx(0.029258619901043496, 0.007470952217808493),
        Cx(1, 0), Cx(kInf, 0), Cx(kNan, kNan), Cx(kNan, kNan), Cx(0.1353352832366127, 0)}},
      {"log",
       {Cx(0.8047189562170503, 1.1071487177940904), Cx(1.2553075032491037, 3.070285188804503),
        Cx(-kInf, 0), Cx(kInf, 0), Cx(kNan, kNan), Cx(kInf, -1.5707963267948966),
        Cx(0.6931471805599453, 3.141592653589793)}},
      {"sin",
       {Cx(3.165778513216168, 1.9596010414216063), Cx(0.3618024162571129, -0.23656049336703044),
        Cx(0, 0), Cx(kNan, 0), Cx(kNan, kNan), Cx(0, -kInf), Cx(-0.9092974268256817, 0)}},
      {"cos",
       {Cx(2.0327230070196656, -3.0518977991518), Cx(-0.9658736947415564, -0.08861216384412209),
        Cx(1, 0), Cx(kNan, 0), Cx(kNan, kNan), Cx(kInf, 0), Cx(-0.4161468365471424, 0)}},
      {"tanh",
       {Cx(1.16673625724092, -0.2434582011857253), Cx(-0.9984003950229746, 0.0008729611018350542),
        Cx(0, 0), Cx(1, 0), Cx(kNan, kNan), Cx(0, kNan), Cx(-0.9640275800758168, 0)}},
      {"log1p",
       {Cx(1.039720770839918, 0.7853981633974483), Cx(0.921265897300739, 3.0419240010986313),
        Cx(0, 0), Cx(kInf, 0), Cx(kNan, kNan), Cx(kInf, -1.5707963267948966),
        Cx(0, 3.141592653589793)}},
      {"expm1",
       {Cx(-2.1312043837568133, 2.4717266720048188), Cx(-0.9707413800989565, 0.007470952217808493),
        Cx(0, 0), Cx(kInf, kNan), Cx(kNan, kNan), Cx(kNan, kNan), Cx(-0.8646647167633873, 0)}},
      // NumPy 2: z / |z|; a NaN part gives NaN, an infinite part its direction.
      {"sign",
       {Cx(0.4472135954999579, 0.8944271909999159), Cx(-0.9974586998307349, 0.07124704998790964),
        Cx(0, 0), Cx(1, 0), Cx(kNan, kNan), Cx(0, -1), Cx(-1, 0)}},
      {"reciprocal",
       {Cx(0.2, -0.4), Cx(-0.28426395939086296, -0.02030456852791878), Cx(kNan, kNan), Cx(0, 0),
        Cx(kNan, kNan), Cx(0, 0), Cx(-0.5, 0)}},
      {"square",
       {Cx(-3, 4), Cx(12.1875, -1.75), Cx(0, 0), Cx(kInf, kNan), Cx(kNan, kNan), Cx(-kInf, kNan),
        Cx(4, 0)}},
      {"round", {Cx(1, 2), Cx(-4, 0), Cx(0, 0), Cx(kInf, 0), Cx(kNan, 1), Cx(0, -kInf), Cx(-2, 0)}},
      {"neg",
       {Cx(-1, -2), Cx(3.5, -0.25), Cx(0, 0), Cx(-kInf, 0), Cx(kNan, -1), Cx(0, kInf), Cx(2, 0)}},
      {"conj",
       {Cx(1, -2), Cx(-3.5, -0.25), Cx(0, 0), Cx(kInf, 0), Cx(kNan, -1), Cx(0, kInf), Cx(-2, 0)}},
  };
  for (const auto& [op, expected] : cases) {
    ExpectComplex(Unary(op, z, kC128, kC128), expected, op);
  }
}

// glibc's inverse functions, as NumPy calls them: C99's branch cuts, the
// sign of a zero imaginary part choosing the side of a cut (asin(2 - 0j)).
TEST(HostComplexTest, InverseFunctionsMatchNumpy) {
  std::vector<Cx> inputs = SpecialInputs();
  for (Cx c : {Cx(2, -0.0), Cx(0, 2), Cx(0.5, -0.5)}) inputs.push_back(c);
  const TestArray z = MakeComplex(kC128, inputs);
  const std::vector<std::pair<std::string, std::vector<Cx>>> cases = {
      {"asin",
       {Cx(0.42707858639247614, 1.528570919480998), Cx(-1.4964164836595653, 1.927736115849374),
        Cx(0.0, 0.0), Cx(1.5707963267948966, kInf), Cx(kNan, kNan), Cx(0.0, -kInf),
        Cx(-1.5707963267948966, 1.3169578969248166), Cx(1.5707963267948966, -1.3169578969248166),
        Cx(0.0, 1.4436354751788103), Cx(0.45227844715119064, -0.5306375309525179)}},
      {"acos",
       {Cx(1.1437177404024206, -1.528570919480998), Cx(3.067212810454462, -1.927736115849374),
        Cx(1.5707963267948966, -0.0), Cx(0.0, -kInf), Cx(kNan, kNan), Cx(1.5707963267948966, kInf),
        Cx(3.141592653589793, -1.3169578969248166), Cx(0.0, 1.3169578969248166),
        Cx(1.5707963267948966, -1.4436354751788103), Cx(1.118517879643706, 0.5306375309525179)}},
      {"atan",
       {Cx(1.3389725222944935, 0.40235947810852507), Cx(-1.2937376899731716, 0.01878818059483616),
        Cx(0.0, 0.0), Cx(1.5707963267948966, 0.0), Cx(kNan, kNan), Cx(1.5707963267948966, -0.0),
        Cx(-1.1071487177940904, 0.0), Cx(1.1071487177940904, -0.0),
        Cx(1.5707963267948966, 0.5493061443340549), Cx(0.5535743588970452, -0.40235947810852507)}},
      {"asinh",
       {Cx(1.4693517443681852, 1.0634400235777521), Cx(-1.9679838861733177, 0.0685847167167022),
        Cx(0.0, 0.0), Cx(kInf, 0.0), Cx(kNan, kNan), Cx(kInf, -1.5707963267948966),
        Cx(-1.4436354751788103, 0.0), Cx(1.4436354751788103, -0.0),
        Cx(1.3169578969248166, 1.5707963267948966), Cx(0.5306375309525179, -0.45227844715119064)}},
      {"acosh",
       {Cx(1.528570919480998, 1.1437177404024206), Cx(1.927736115849374, 3.067212810454462),
        Cx(0.0, 1.5707963267948966), Cx(kInf, 0.0), Cx(kNan, kNan), Cx(kInf, -1.5707963267948966),
        Cx(1.3169578969248166, 3.141592653589793), Cx(1.3169578969248166, -0.0),
        Cx(1.4436354751788103, 1.5707963267948966), Cx(0.5306375309525179, -1.118517879643706)}},
      {"atanh",
       {Cx(0.17328679513998632, 1.1780972450961724), Cx(-0.2921761663721195, 1.548711253172174),
        Cx(0.0, 0.0), Cx(0.0, 1.5707963267948966), Cx(kNan, kNan), Cx(0.0, -1.5707963267948966),
        Cx(-0.5493061443340549, 1.5707963267948966), Cx(0.5493061443340549, -1.5707963267948966),
        Cx(0.0, 1.1071487177940904), Cx(0.40235947810852507, -0.5535743588970452)}},
  };
  for (const auto& [op, expected] : cases) {
    ExpectComplex(Unary(op, z, kC128, kC128), expected, op);
  }
  // The side of a cut: the sign of the imaginary part of asin(2 -+ 0j).
  const TestArray cut = Unary("asin", MakeComplex(kC128, {Cx(2, 0.0), Cx(2, -0.0)}), kC128, kC128);
  EXPECT_GT(cut.Imag(0), 0);
  EXPECT_LT(cut.Imag(1), 0);
  // Real inputs: the real functions (NaN outside the domain, as NumPy).
  const TestArray x = MakeArray(DType::kFloat64, S({3}), {0.5, 2, -0.25});
  ExpectReal(Unary("asin", x, DType::kFloat64, DType::kFloat64),
             {std::asin(0.5), kNan, std::asin(-0.25)}, "asin");
  ExpectReal(Unary("acosh", x, DType::kFloat64, DType::kFloat64), {kNan, std::acosh(2.0), kNan},
             "acosh");
}

TEST(HostComplexTest, RealValuedUnaryOps) {
  const TestArray z = MakeComplex(kC128, SpecialInputs());
  ExpectReal(Unary("abs", z, DType::kFloat64, kC128),
             {2.23606797749979, 3.50891721190455, 0, kInf, kNan, kInf, 2}, "abs");
  ExpectReal(
      Unary("angle", z, DType::kFloat64, kC128),
      {1.1071487177940904, 3.070285188804503, 0, 0, kNan, -1.5707963267948966, 3.141592653589793},
      "angle");
  ExpectReal(Unary("real", z, DType::kFloat64, kC128), {1, -3.5, 0, kInf, kNan, 0, -2}, "real");
  ExpectReal(Unary("imag", z, DType::kFloat64, kC128), {2, 0.25, 0, 0, 1, -kInf, 0}, "imag");
  ExpectReal(Unary("isnan", z, DType::kBool, kC128), {0, 0, 0, 0, 1, 0, 0}, "isnan");
  ExpectReal(Unary("isinf", z, DType::kBool, kC128), {0, 0, 0, 1, 0, 1, 0}, "isinf");
  ExpectReal(Unary("logical_not", z, DType::kBool, DType::kBool), {0, 0, 1, 0, 0, 0, 0},
             "logical_not");
  // complex64: |3+4j| is 5 in float32; the parts of a complex64 are float32.
  const TestArray f = MakeComplex(kC64, {Cx(3, 4), Cx(0.1, -0.2)});
  ExpectReal(Unary("abs", f, DType::kFloat32, kC64), {5, std::hypot(0.1f, -0.2f)}, "abs c64");
  ExpectReal(Unary("imag", f, DType::kFloat32, kC64), {4, -0.2f}, "imag c64");
}

TEST(HostComplexTest, RealInputsOfThePartOps) {
  const TestArray x = MakeArray(DType::kFloat64, S({3}), {-2, 0, 3});
  ExpectReal(Unary("real", x, DType::kFloat64, DType::kFloat64), {-2, 0, 3}, "real");
  ExpectReal(Unary("imag", x, DType::kFloat64, DType::kFloat64), {0, 0, 0}, "imag");
  ExpectReal(Unary("conj", x, DType::kFloat64, DType::kFloat64), {-2, 0, 3}, "conj");
  ExpectReal(Unary("angle", x, DType::kFloat64, DType::kFloat64), {M_PI, 0, 0}, "angle");
}

TEST(HostComplexTest, BinaryOpsMatchNumpy) {
  const TestArray a =
      MakeComplex(kC128, {Cx(1, 2), Cx(2, -1), Cx(kNan, 0), Cx(0, 0), Cx(kInf, kInf)});
  const TestArray b = MakeComplex(kC128, {Cx(3, -1), Cx(2, -1), Cx(0, 1), Cx(0, 0), Cx(2, 0)});
  ExpectComplex(
      Binary("div", a, b, kC128, kC128),
      {Cx(0.1, 0.7000000000000001), Cx(1, 0), Cx(kNan, kNan), Cx(kNan, kNan), Cx(kNan, kNan)},
      "div");
  ExpectComplex(
      Binary("pow", a, b, kC128, kC128),
      {Cx(-27.43638199160605, 19.789310365010714), Cx(-0.5048246889783188, -3.104144076995529),
       Cx(kNan, kNan), Cx(1, 0), Cx(kNan, kInf)},
      "pow");
  ExpectComplex(Binary("mul", a, b, kC128, kC128),
                {Cx(5, 5), Cx(3, -4), Cx(kNan, kNan), Cx(0, 0), Cx(kNan, kNan)}, "mul");
  ExpectComplex(Binary("maximum", a, b, kC128, kC128),
                {Cx(3, -1), Cx(2, -1), Cx(kNan, 0), Cx(0, 0), Cx(kInf, kInf)}, "maximum");
  ExpectComplex(Binary("minimum", a, b, kC128, kC128),
                {Cx(1, 2), Cx(2, -1), Cx(kNan, 0), Cx(0, 0), Cx(2, 0)}, "minimum");
  ExpectReal(Binary("lt", a, b, DType::kBool, kC128), {1, 0, 0, 0, 0}, "lt");
  ExpectReal(Binary("ge", a, b, DType::kBool, kC128), {0, 1, 0, 1, 1}, "ge");
  ExpectReal(Binary("eq", a, b, DType::kBool, kC128), {0, 1, 0, 1, 0}, "eq");
  // Integer powers by repeated multiplication, as NumPy.
  const TestArray base = MakeComplex(kC128, {Cx(1, 1), Cx(2, -3), Cx(1, 1)});
  const TestArray exponent = MakeComplex(kC128, {Cx(5, 0), Cx(5, 0), Cx(-2, 0)});
  ExpectComplex(Binary("pow", base, exponent, kC128, kC128),
                {Cx(-4, -4), Cx(122, 597), Cx(0, -0.5)}, "integer pow");
}

TEST(HostComplexTest, OpsWithoutAComplexLoopFail) {
  const TestArray z = MakeComplex(kC128, {Cx(1, 2)});
  for (const char* op : {"relu", "erf", "bitwise_not"}) {
    EXPECT_THAT(RunNode(MakeNode(op, {z.type()}, {kC128, z.shape}, kC128), {z}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("complex128")))
        << op;
  }
  for (const char* op : {"mod", "floordiv", "atan2", "bitwise_and"}) {
    EXPECT_THAT(RunNode(MakeNode(op, {z.type(), z.type()}, {kC128, z.shape}, kC128), {z, z}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("complex128")))
        << op;
  }
}

TEST(HostComplexTest, CastsToAndFromComplex) {
  const TestArray z = MakeComplex(kC128, {Cx(1.5, 2), Cx(-2.7, -1), Cx(0, 0), Cx(0, 1)});
  // To real dtypes: the real part (NumPy's ComplexWarning cast); to bool: either part nonzero.
  ExpectReal(Unary("cast", z, DType::kInt32, DType::kInt32), {1, -2, 0, 0}, "to int32");
  ExpectReal(Unary("cast", z, DType::kFloat32, DType::kFloat32), {1.5, -2.7f, 0, 0}, "to f32");
  ExpectReal(Unary("cast", z, DType::kBool, DType::kBool), {1, 1, 0, 1}, "to bool");
  ExpectComplex(Unary("cast", z, kC64, kC64), {Cx(1.5, 2), Cx(-2.7f, -1), Cx(0, 0), Cx(0, 1)},
                "to c64");
  const TestArray i = MakeArray(DType::kInt16, S({2}), {-7, 300});
  ExpectComplex(Unary("cast", i, kC64, kC64), {Cx(-7, 0), Cx(300, 0)}, "from int16");
  const TestArray b = MakeArray(DType::kBool, S({2}), {1, 0});
  ExpectComplex(Unary("cast", b, kC128, kC128), {Cx(1, 0), Cx(0, 0)}, "from bool");
}

// The layout ops convert through a block buffer of compute values: a block of
// complex128 (16 bytes each) once overflowed a buffer sized for 8-byte values
// and killed the server (gf.zeros(513, complex128)). Sizes past one block,
// each element checked.
TEST(HostComplexTest, ConvertingCopiesOfMoreThanABlock) {
  constexpr int64_t kN = 2 * 1024 + 3;
  for (DType out : {kC64, kC128}) {
    AttrMap attrs;
    attrs["dtype"] = out;
    attrs["shape"] = std::vector<int64_t>{kN};
    const TestArray v = Scalar0d(DType::kFloat64, -1.5);
    absl::StatusOr<TestArray> r =
        RunNode(MakeNode("full", {v.type(true)}, {out, S({kN})}, out, std::move(attrs)), {v});
    ASSERT_THAT(r, IsOk());
    ExpectComplex(*r, std::vector<Cx>(kN, Cx(-1.5, 0)), "full");

    std::vector<double> iota(kN);
    for (int64_t i = 0; i < kN; ++i) iota[i] = static_cast<double>(i);
    const TestArray f = MakeArray(DType::kFloat32, S({kN}), iota);
    const TestArray z = MakeComplex(out, {Cx(7, -8)});
    AttrMap axis0;
    axis0["axis"] = int64_t{0};
    r = RunNode(MakeNode("concatenate", {f.type(), z.type()}, {out, S({kN + 1})}, out, axis0),
                {f, z});
    ASSERT_THAT(r, IsOk());
    std::vector<Cx> want(iota.begin(), iota.end());
    want.emplace_back(7, -8);
    ExpectComplex(*r, want, "concatenate");
  }
}

TEST(HostComplexTest, MixedInputsPromoteInTheLoad) {
  const TestArray a = MakeComplex(kC64, {Cx(1, 2), Cx(0.5, -1)});
  const TestArray f = MakeArray(DType::kFloat32, S({2}), {2, 4});
  ExpectComplex(Binary("add", a, f, kC64, kC64), {Cx(3, 2), Cx(4.5, -1)}, "c64 + f32");
  ExpectComplex(Binary("mul", f, a, kC64, kC64), {Cx(2, 4), Cx(2, -4)}, "f32 * c64");
}

ValidatedNode Reduction(const std::string& op, const TestArray& x, DType out, DType compute) {
  return MakeNode(op, {x.type()}, {out, S({})}, compute, {{"axes", std::vector<int64_t>{0}}});
}

TEST(HostComplexTest, ReductionsMatchNumpy) {
  const TestArray x = MakeComplex(kC128, {Cx(1, 2), Cx(-3.5, 0.25), Cx(2, -1), Cx(0.5, 0.5)});
  auto run = [&](const std::string& op, DType out) {
    absl::StatusOr<TestArray> r = RunNode(Reduction(op, x, out, kC128), {x});
    EXPECT_TRUE(r.ok()) << op << ": " << r.status();
    return r.ok() ? *r : Empty(out, S({}));
  };
  ExpectComplex(run("sum", kC128), {Cx(0, 1.75)}, "sum");
  ExpectComplex(run("prod", kC128), {Cx(-2.625, -12.125)}, "prod");
  ExpectComplex(run("mean", kC128), {Cx(0, 0.4375)}, "mean");
  ExpectReal(run("var", DType::kFloat64), {5.51171875}, "var");
  ExpectReal(run("std", DType::kFloat64), {2.3477049963741186}, "std");
  ExpectComplex(run("max", kC128), {Cx(2, -1)}, "max");
  ExpectComplex(run("min", kC128), {Cx(-3.5, 0.25)}, "min");
  ExpectReal(run("argmax", DType::kInt64), {2}, "argmax");
  ExpectReal(run("argmin", DType::kInt64), {1}, "argmin");
  absl::StatusOr<TestArray> cumprod = RunNode(
      MakeNode("cumprod", {x.type()}, {kC128, x.shape}, kC128, {{"axis", int64_t{0}}}), {x});
  ASSERT_TRUE(cumprod.ok()) << cumprod.status();
  ExpectComplex(*cumprod, {Cx(1, 2), Cx(-4, -6.75), Cx(-14.75, -9.5), Cx(-2.625, -12.125)},
                "cumprod");
  // A NaN wins max and argmax.
  const TestArray n = MakeComplex(kC128, {Cx(1, 0), Cx(0, kNan), Cx(5, 0)});
  absl::StatusOr<TestArray> max = RunNode(Reduction("max", n, kC128, kC128), {n});
  ASSERT_TRUE(max.ok());
  EXPECT_TRUE(std::isnan(max->Imag(0)));
  absl::StatusOr<TestArray> argmax = RunNode(Reduction("argmax", n, DType::kInt64, kC128), {n});
  ASSERT_TRUE(argmax.ok());
  EXPECT_EQ(argmax->IntAt(0), 1);
}

TEST(HostComplexTest, MatmulMatchesNumpy) {
  TestArray a = Empty(kC128, S({2, 2}));
  TestArray b = Empty(kC128, S({2, 2}));
  const Cx av[] = {Cx(1, 1), Cx(2, 0), Cx(0, 0), Cx(1, -1)};
  const Cx bv[] = {Cx(0, 1), Cx(1, 0), Cx(2, 0), Cx(3, 1)};
  for (int i = 0; i < 4; ++i) {
    a.SetComplex(i, av[i].real(), av[i].imag());
    b.SetComplex(i, bv[i].real(), bv[i].imag());
  }
  absl::StatusOr<TestArray> r =
      RunNode(MakeNode("matmul", {a.type(), b.type()}, {kC128, S({2, 2})}, kC128), {a, b});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectComplex(*r, {Cx(3, 1), Cx(7, 3), Cx(2, -2), Cx(4, -2)}, "matmul");
}

}  // namespace
}  // namespace gpuflow::host_test
