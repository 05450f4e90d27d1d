// Reductions, softmax and scans against references computed here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

// The values of each output's reduced elements, in C order.
std::vector<std::vector<double>> Groups(const TestArray& x, const std::vector<int64_t>& axes) {
  const int rank = x.shape.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  int64_t outputs = 1;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) outputs *= x.shape.dim(d);
  }
  std::vector<std::vector<double>> groups(outputs);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t rest = i;
    std::vector<int64_t> idx(rank);
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rest % x.shape.dim(d);
      rest /= x.shape.dim(d);
    }
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) {
      if (!reduced[d]) o = o * x.shape.dim(d) + idx[d];
    }
    groups[o].push_back(x.At(i));
  }
  return groups;
}

Shape ReducedShape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<int64_t> dims;
  for (int d = 0; d < in.rank(); ++d) {
    const bool r = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!r) {
      dims.push_back(in.dim(d));
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  return S(dims);
}

std::vector<std::vector<int64_t>> AxisSubsets(int rank) {
  std::vector<std::vector<int64_t>> sets;
  for (int mask = 0; mask < (1 << rank); ++mask) {
    std::vector<int64_t> axes;
    for (int d = 0; d < rank; ++d) {
      if (mask & (1 << d)) axes.push_back(d);
    }
    sets.push_back(axes);
  }
  return sets;
}

absl::StatusOr<TestArray> Reduce(const std::string& op, const TestArray& x,
                                 const std::vector<int64_t>& axes, bool keepdims, DType out,
                                 DType compute, AttrMap extra = {},
                                 HostKernelOptions options = {}) {
  AttrMap attrs = std::move(extra);
  attrs["axes"] = axes;
  attrs["keepdims"] = keepdims;
  return RunNode(
      MakeNode(op, {x.type()}, {out, ReducedShape(x.shape, axes, keepdims)}, compute, attrs), {x},
      options);
}

DType SumDType(DType d) {
  if (d == DType::kBool || IsSigned(d)) return DType::kInt64;
  if (KindOf(d) == DTypeKind::kUnsigned) return DType::kUInt64;
  return d;
}
DType MeanDType(DType d) { return IsFloat(d) ? d : DType::kFloat64; }

TEST(HostReduceTest, SumProdMeanOverEveryAxisSetAndDType) {
  const Shape shape = S({3, 4, 5});
  for (DType d : kAllDTypes) {
    const TestArray x = RandomArray(d, shape, 31, -3, 3);
    for (const std::vector<int64_t>& axes : AxisSubsets(3)) {
      for (bool keepdims : {false, true}) {
        const auto groups = Groups(x, axes);
        const std::string what = std::string(DTypeName(d)) + " axes " +
                                 std::to_string(axes.size()) + (keepdims ? " keep" : "");
        const DType s = SumDType(d);
        absl::StatusOr<TestArray> sum = Reduce("sum", x, axes, keepdims, s, s);
        absl::StatusOr<TestArray> prod = Reduce("prod", x, axes, keepdims, s, s);
        absl::StatusOr<TestArray> mean =
            Reduce("mean", x, axes, keepdims, MeanDType(d), MeanDType(d));
        ASSERT_THAT(sum, IsOk());
        ASSERT_THAT(prod, IsOk());
        ASSERT_THAT(mean, IsOk());
        std::vector<double> want_sum;
        std::vector<double> want_prod;
        std::vector<double> want_mean;
        for (const auto& g : groups) {
          double a = 0;
          double p = 1;
          uint64_t wrapped = 1;  // integer products wrap modulo 2^64
          for (double v : g) {
            a += v;
            p *= v;
            wrapped *= static_cast<uint64_t>(static_cast<int64_t>(v));
          }
          want_sum.push_back(a);
          if (IsFloat(s)) {
            want_prod.push_back(p);
          } else if (IsSigned(s)) {
            want_prod.push_back(static_cast<double>(static_cast<int64_t>(wrapped)));
          } else {
            want_prod.push_back(static_cast<double>(wrapped));
          }
          want_mean.push_back(a / static_cast<double>(g.size()));
        }
        ExpectValues(*sum, want_sum, 0, "sum " + what);
        ExpectValues(*prod, want_prod, 0, "prod " + what);
        ExpectValues(*mean, want_mean, 1, "mean " + what);
      }
    }
  }
}

TEST(HostReduceTest, FloatSumsAccumulateInFloat64) {
  // 10000 float16 ones: a float16 accumulator would stop at 2048.
  TestArray ones = MakeArray(DType::kFloat16, S({10000}), std::vector<double>(10000, 1.0));
  absl::StatusOr<TestArray> s = Reduce("sum", ones, {0}, false, DType::kFloat16, DType::kFloat16);
  ASSERT_THAT(s, IsOk());
  ExpectValues(*s, {10000});
  // float32 [1e8, 1, -1e8] sums to 1.
  const TestArray f = MakeArray(DType::kFloat32, S({3}), {1e8, 1, -1e8});
  s = Reduce("sum", f, {0}, false, DType::kFloat32, DType::kFloat32);
  ASSERT_THAT(s, IsOk());
  ExpectValues(*s, {1});
  // The mean of large float16 values does not overflow in the sum.
  TestArray big = MakeArray(DType::kFloat16, S({1000}), std::vector<double>(1000, 1000.0));
  s = Reduce("mean", big, {0}, false, DType::kFloat16, DType::kFloat16);
  ASSERT_THAT(s, IsOk());
  ExpectValues(*s, {1000});
}

TEST(HostReduceTest, IntegerSumsAndProductsWrap) {
  TestArray x = Empty(DType::kInt64, S({3}));
  x.SetBits(0, uint64_t{1} << 62);
  x.SetBits(1, uint64_t{1} << 62);
  x.SetBits(2, 4);
  absl::StatusOr<TestArray> s = Reduce("sum", x, {0}, false, DType::kInt64, DType::kInt64);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->IntAt(0), std::numeric_limits<int64_t>::min() + 4);
  absl::StatusOr<TestArray> p = Reduce("prod", x, {0}, false, DType::kInt64, DType::kInt64);
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->IntAt(0), 0);
  // sum of int8 accumulates in int64 (no int8 wrap)...
  const TestArray i8 = MakeArray(DType::kInt8, S({3}), {100, 100, 100});
  s = Reduce("sum", i8, {0}, false, DType::kInt64, DType::kInt64);
  ASSERT_THAT(s, IsOk());
  ExpectValues(*s, {300});
  // ...unless dtype=int8 asks for it; mean with dtype=int8 divides the int8 sum.
  s = Reduce("sum", i8, {0}, false, DType::kInt8, DType::kInt8);
  ASSERT_THAT(s, IsOk());
  ExpectValues(*s, {44});
  const TestArray two = MakeArray(DType::kInt8, S({2}), {100, 100});
  s = Reduce("mean", two, {0}, false, DType::kInt8, DType::kInt8);
  ASSERT_THAT(s, IsOk());
  ExpectValues(*s, {-28});  // numpy.mean(int8 [100, 100], dtype=int8)
  // axes = []: only a conversion.
  s = Reduce("sum", i8, {}, false, DType::kInt64, DType::kInt64);
  ASSERT_THAT(s, IsOk());
  ExpectValues(*s, {100, 100, 100});
  // uint64 sums wrap modulo 2^64.
  TestArray u = Empty(DType::kUInt64, S({2}));
  u.SetBits(0, ~uint64_t{0});
  u.SetBits(1, 3);
  s = Reduce("sum", u, {0}, false, DType::kUInt64, DType::kUInt64);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->Bits64(0), 2u);
}

absl::StatusOr<TestArray> ArgReduce(const std::string& op, const TestArray& x,
                                    std::optional<int64_t> axis, bool keepdims,
                                    HostKernelOptions options = {}) {
  AttrMap attrs;
  attrs["keepdims"] = keepdims;
  std::vector<int64_t> axes;
  if (axis) {
    attrs["axis"] = *axis;
    axes = {*axis};
  } else {
    for (int d = 0; d < x.shape.rank(); ++d) axes.push_back(d);
  }
  return RunNode(MakeNode(op, {x.type()}, {DType::kInt64, ReducedShape(x.shape, axes, keepdims)},
                          DType::kInt64, attrs),
                 {x}, options);
}

TEST(HostReduceTest, MinMaxArgMinArgMaxEveryDType) {
  const Shape shape = S({4, 6, 3});
  for (DType d : kAllDTypes) {
    // Few distinct values, so there are ties.
    const TestArray x = RandomArray(d, shape, 41, -3, 3);
    for (const std::vector<int64_t>& axes : AxisSubsets(3)) {
      for (bool keepdims : {false, true}) {
        const auto groups = Groups(x, axes);
        absl::StatusOr<TestArray> mn = Reduce("min", x, axes, keepdims, d, d);
        absl::StatusOr<TestArray> mx = Reduce("max", x, axes, keepdims, d, d);
        ASSERT_THAT(mn, IsOk());
        ASSERT_THAT(mx, IsOk());
        std::vector<double> want_min;
        std::vector<double> want_max;
        for (const auto& g : groups) {
          want_min.push_back(*std::min_element(g.begin(), g.end()));
          want_max.push_back(*std::max_element(g.begin(), g.end()));
        }
        ExpectValues(*mn, want_min, 0, "min");
        ExpectValues(*mx, want_max, 0, "max");
      }
    }
    for (std::optional<int64_t> axis : {std::optional<int64_t>(), std::optional<int64_t>(0),
                                        std::optional<int64_t>(1), std::optional<int64_t>(2)}) {
      std::vector<int64_t> axes;
      if (axis) {
        axes = {*axis};
      } else {
        axes = {0, 1, 2};
      }
      const auto groups = Groups(x, axes);
      absl::StatusOr<TestArray> amin = ArgReduce("argmin", x, axis, axis.has_value());
      absl::StatusOr<TestArray> amax = ArgReduce("argmax", x, axis, false);
      ASSERT_THAT(amin, IsOk());
      ASSERT_THAT(amax, IsOk());
      std::vector<double> want_amin;
      std::vector<double> want_amax;
      for (const auto& g : groups) {
        // std::min_element / max_element return the first extremum.
        want_amin.push_back(static_cast<double>(std::min_element(g.begin(), g.end()) - g.begin()));
        want_amax.push_back(static_cast<double>(std::max_element(g.begin(), g.end()) - g.begin()));
      }
      ExpectValues(*amin, want_amin, 0, "argmin " + std::string(DTypeName(d)));
      ExpectValues(*amax, want_amax, 0, "argmax " + std::string(DTypeName(d)));
    }
  }
}

TEST(HostReduceTest, NaNPropagatesThroughMinMaxAndArgMinMax) {
  const TestArray x = MakeArray(DType::kFloat32, S({2, 4}), {1, kNaN, kInf, kNaN, 3, -kInf, 2, 0});
  absl::StatusOr<TestArray> mx = Reduce("max", x, {1}, false, DType::kFloat32, DType::kFloat32);
  absl::StatusOr<TestArray> mn = Reduce("min", x, {0, 1}, false, DType::kFloat32, DType::kFloat32);
  ASSERT_THAT(mx, IsOk());
  ASSERT_THAT(mn, IsOk());
  ExpectValues(*mx, {kNaN, 3});
  ExpectValues(*mn, {kNaN});
  // numpy.argmax([1, nan, inf, nan]) == 1; numpy.argmin([1, nan, -inf]) == 1.
  absl::StatusOr<TestArray> am = ArgReduce("argmax", x, 1, false);
  ASSERT_THAT(am, IsOk());
  ExpectValues(*am, {1, 0});
  absl::StatusOr<TestArray> an = ArgReduce("argmin", x, std::nullopt, false);
  ASSERT_THAT(an, IsOk());
  ExpectValues(*an, {1});
  // Among equal values the later zero decides the sign (numpy.max([0.0, -0.0])
  // is -0.0; numpy.max([-0.0, 0.0]) is 0.0).
  const TestArray z = MakeArray(DType::kFloat64, S({2, 2}), {0.0, -0.0, -0.0, 0.0});
  mx = Reduce("max", z, {1}, false, DType::kFloat64, DType::kFloat64);
  mn = Reduce("min", z, {1}, false, DType::kFloat64, DType::kFloat64);
  ASSERT_THAT(mx, IsOk());
  ASSERT_THAT(mn, IsOk());
  ExpectValues(*mx, {-0.0, 0.0});
  ExpectValues(*mn, {-0.0, 0.0});
}

TEST(HostReduceTest, EmptyReductions) {
  const TestArray e = Empty(DType::kFloat32, S({0, 3}));
  // With no identity, an empty reduction is an error when it has outputs...
  EXPECT_THAT(Reduce("max", e, {0}, false, DType::kFloat32, DType::kFloat32),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("zero-size")));
  EXPECT_THAT(ArgReduce("argmin", e, std::nullopt, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("zero-size")));
  // ...and none without (numpy.zeros((0, 3)).max(axis=1) is empty).
  absl::StatusOr<TestArray> r = Reduce("max", e, {1}, false, DType::kFloat32, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
  // Identities: sum 0, prod 1, any false, all true, mean NaN, logsumexp -inf.
  auto one = [&](const std::string& op, DType out) {
    absl::StatusOr<TestArray> v = Reduce(op, e, {0}, false, out, IsFloat(out) ? out : DType::kBool);
    EXPECT_THAT(v, IsOk()) << op;
    return *v;
  };
  ExpectValues(one("sum", DType::kFloat32), {0, 0, 0});
  ExpectValues(one("prod", DType::kFloat32), {1, 1, 1});
  ExpectValues(one("any", DType::kBool), {0, 0, 0});
  ExpectValues(one("all", DType::kBool), {1, 1, 1});
  ExpectValues(one("mean", DType::kFloat32), {kNaN, kNaN, kNaN});
  ExpectValues(one("logsumexp", DType::kFloat32), {-kInf, -kInf, -kInf});
  // Empty input, empty output: nothing to do.
  const TestArray ee = Empty(DType::kInt8, S({0}));
  r = Reduce("sum", ee, {}, true, DType::kInt64, DType::kInt64);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
  // 0-d input: a reduction over no axes.
  r = Reduce("max", Scalar0d(DType::kInt8, -5), {}, false, DType::kInt8, DType::kInt8);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {-5});
}

TEST(HostReduceTest, VarianceAndStd) {
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64,
                  DType::kInt32, DType::kUInt8, DType::kBool}) {
    const TestArray x = RandomArray(d, S({5, 7}), 51, 0, 10);
    for (double ddof : {0.0, 1.0, 1.5}) {
      for (const std::vector<int64_t>& axes : AxisSubsets(2)) {
        const DType out = MeanDType(d);
        AttrMap extra;
        extra["ddof"] = ddof;
        absl::StatusOr<TestArray> var = Reduce("var", x, axes, false, out, out, extra);
        absl::StatusOr<TestArray> sd = Reduce("std", x, axes, true, out, out, extra);
        ASSERT_THAT(var, IsOk());
        ASSERT_THAT(sd, IsOk());
        std::vector<double> want_var;
        std::vector<double> want_std;
        for (const auto& g : Groups(x, axes)) {
          const double n = static_cast<double>(g.size());
          double mean = 0;
          for (double v : g) mean += v;
          mean /= n;
          double ss = 0;
          for (double v : g) ss += (v - mean) * (v - mean);
          want_var.push_back(ss / std::max(n - ddof, 0.0));
          want_std.push_back(std::sqrt(ss / std::max(n - ddof, 0.0)));
        }
        ExpectValues(*var, want_var, 2, "var " + std::string(DTypeName(d)));
        ExpectValues(*sd, want_std, 2, "std " + std::string(DTypeName(d)));
      }
    }
  }
  // No degrees of freedom: numpy.var([1., 2.], ddof=2) is inf, and
  // numpy.var([1., 1.], ddof=2) is nan.
  const TestArray v = MakeArray(DType::kFloat64, S({2, 2}), {1, 2, 1, 1});
  AttrMap extra;
  extra["ddof"] = 2.0;
  absl::StatusOr<TestArray> r =
      Reduce("var", v, {1}, false, DType::kFloat64, DType::kFloat64, extra);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {kInf, kNaN});
  extra["ddof"] = 3.0;
  r = Reduce("var", v, {1}, false, DType::kFloat64, DType::kFloat64, extra);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {kInf, kNaN});
}

TEST(HostReduceTest, AnyAll) {
  TestArray x = MakeArray(DType::kFloat32, S({3, 2}), {0, kNaN, -0.0, 0, 1, 2});
  absl::StatusOr<TestArray> any = Reduce("any", x, {1}, false, DType::kBool, DType::kBool);
  absl::StatusOr<TestArray> all = Reduce("all", x, {1}, true, DType::kBool, DType::kBool);
  ASSERT_THAT(any, IsOk());
  ASSERT_THAT(all, IsOk());
  ExpectValues(*any, {1, 0, 1});
  ExpectValues(*all, {0, 0, 1});
  for (DType d : kAllDTypes) {
    const TestArray r = RandomArray(d, S({4, 9}), 3, -1, 1);
    for (const std::vector<int64_t>& axes : AxisSubsets(2)) {
      absl::StatusOr<TestArray> a = Reduce("any", r, axes, false, DType::kBool, DType::kBool);
      absl::StatusOr<TestArray> l = Reduce("all", r, axes, false, DType::kBool, DType::kBool);
      ASSERT_THAT(a, IsOk());
      ASSERT_THAT(l, IsOk());
      std::vector<double> want_any;
      std::vector<double> want_all;
      for (const auto& g : Groups(r, axes)) {
        want_any.push_back(std::any_of(g.begin(), g.end(), [](double v) { return v != 0; }));
        want_all.push_back(std::all_of(g.begin(), g.end(), [](double v) { return v != 0; }));
      }
      ExpectValues(*a, want_any);
      ExpectValues(*l, want_all);
    }
  }
}

TEST(HostReduceTest, LogSumExpIsStable) {
  const TestArray x = MakeArray(DType::kFloat32, S({5, 2}),
                                {1000, 1000, -kInf, -kInf, kInf, 1, kNaN, 0, -1000, -1001});
  absl::StatusOr<TestArray> r =
      Reduce("logsumexp", x, {1}, false, DType::kFloat32, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1000 + std::log(2.0), -kInf, kInf, kNaN, -1000 + std::log1p(std::exp(-1.0))},
               1);
  for (DType d : kFloatDTypes) {
    const TestArray y = RandomArray(d, S({3, 33}), 8, -20, 20);
    for (const std::vector<int64_t>& axes : AxisSubsets(2)) {
      absl::StatusOr<TestArray> l = Reduce("logsumexp", y, axes, true, d, d);
      ASSERT_THAT(l, IsOk());
      std::vector<double> want;
      for (const auto& g : Groups(y, axes)) {
        double s = 0;
        for (double v : g) s += std::exp(v);
        want.push_back(std::log(s));
      }
      // Results near 0 come from cancellation: an absolute tolerance.
      ExpectValues(*l, want, 1, "logsumexp " + std::string(DTypeName(d)), 1e-13);
    }
  }
  // Integers reduce in the float rule's dtype: int8 -> float16.
  const TestArray i = MakeArray(DType::kInt8, S({2}), {1, 2});
  r = Reduce("logsumexp", i, {0}, false, DType::kFloat16, DType::kFloat16);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {std::log(std::exp(1.0) + std::exp(2.0))});
}

absl::StatusOr<TestArray> Softmax(const std::string& op, const TestArray& x, int64_t axis,
                                  DType out, HostKernelOptions options = {}) {
  AttrMap attrs;
  attrs["axis"] = axis;
  return RunNode(MakeNode(op, {x.type()}, {out, x.shape}, out, attrs), {x}, options);
}

TEST(HostReduceTest, SoftmaxAndLogSoftmax) {
  for (DType d : kFloatDTypes) {
    const TestArray x = RandomArray(d, S({4, 5, 6}), 61, -30, 30);
    for (int64_t axis = 0; axis < 3; ++axis) {
      absl::StatusOr<TestArray> sm = Softmax("softmax", x, axis, d);
      absl::StatusOr<TestArray> lsm = Softmax("log_softmax", x, axis, d, ManyThreads());
      ASSERT_THAT(sm, IsOk());
      ASSERT_THAT(lsm, IsOk());
      std::vector<double> want_sm(x.size());
      std::vector<double> want_lsm(x.size());
      const int64_t stride = axis == 0 ? 30 : (axis == 1 ? 6 : 1);
      const int64_t len = x.shape.dim(static_cast<int>(axis));
      for (int64_t i = 0; i < x.size(); ++i) {
        // The row through i: start at i with its axis index zeroed.
        const int64_t j = (i / stride) % len;
        const int64_t start = i - j * stride;
        double m = -kInf;
        for (int64_t t = 0; t < len; ++t) m = std::max(m, x.At(start + t * stride));
        double s = 0;
        for (int64_t t = 0; t < len; ++t) s += std::exp(x.At(start + t * stride) - m);
        want_sm[i] = std::exp(x.At(i) - m) / s;
        want_lsm[i] = x.At(i) - m - std::log(s);
      }
      ExpectValues(*sm, want_sm, 2, "softmax " + std::string(DTypeName(d)));
      ExpectValues(*lsm, want_lsm, 2, "log_softmax " + std::string(DTypeName(d)));
    }
  }
  // Large values do not overflow; -inf entries get 0 (log: -inf).
  const TestArray big = MakeArray(DType::kFloat32, S({2, 3}), {1000, 1000, -kInf, 1, 2, 3});
  absl::StatusOr<TestArray> sm = Softmax("softmax", big, 1, DType::kFloat32);
  absl::StatusOr<TestArray> lsm = Softmax("log_softmax", big, 1, DType::kFloat32);
  ASSERT_THAT(sm, IsOk());
  ASSERT_THAT(lsm, IsOk());
  const double s = std::exp(-2.0) + std::exp(-1.0) + 1;
  ExpectValues(*sm, {0.5, 0.5, 0, std::exp(-2.0) / s, std::exp(-1.0) / s, 1 / s}, 1);
  ExpectValues(
      *lsm,
      {-std::log(2.0), -std::log(2.0), -kInf, -2 - std::log(s), -1 - std::log(s), -std::log(s)}, 1);
}

absl::StatusOr<TestArray> Scan(const std::string& op, const TestArray& x,
                               std::optional<int64_t> axis, DType out, DType compute,
                               HostKernelOptions options = {}) {
  AttrMap attrs;
  Shape shape = x.shape;
  if (axis) {
    attrs["axis"] = *axis;
  } else {
    shape = S({x.size()});
  }
  return RunNode(MakeNode(op, {x.type()}, {out, shape}, compute, attrs), {x}, options);
}

// A scan step's result as NumPy's loops give it: float16 and bfloat16 round
// every partial result to the dtype; the other dtypes (float32, float64:
// accumulated in float64, rounded once at the end) do not.
double StepRounded(DType compute, double v) {
  return compute == DType::kFloat16 || compute == DType::kBFloat16 ? RoundTo(compute, v) : v;
}

TEST(HostReduceTest, CumsumCumprod) {
  for (DType d : kAllDTypes) {
    const TestArray x = RandomArray(d, S({3, 4, 5}), 71, -2, 2);
    const DType s = SumDType(d);
    for (std::optional<int64_t> axis : {std::optional<int64_t>(), std::optional<int64_t>(0),
                                        std::optional<int64_t>(1), std::optional<int64_t>(2)}) {
      absl::StatusOr<TestArray> cs = Scan("cumsum", x, axis, s, s);
      absl::StatusOr<TestArray> cp = Scan("cumprod", x, axis, s, s, ManyThreads());
      ASSERT_THAT(cs, IsOk());
      ASSERT_THAT(cp, IsOk());
      std::vector<double> want_s(x.size());
      std::vector<double> want_p(x.size());
      const int64_t stride = !axis ? 1 : (*axis == 0 ? 20 : (*axis == 1 ? 5 : 1));
      const int64_t len = !axis ? x.size() : x.shape.dim(static_cast<int>(*axis));
      for (int64_t i = 0; i < x.size(); ++i) {
        const int64_t j = (i / stride) % len;
        const int64_t start = i - j * stride;
        double a = 0;
        double p = 1;
        for (int64_t t = 0; t <= j; ++t) {
          a = StepRounded(s, a + x.At(start + t * stride));
          p = StepRounded(s, p * x.At(start + t * stride));
        }
        want_s[i] = a;
        want_p[i] = p;
      }
      ExpectValues(*cs, want_s, 0, "cumsum " + std::string(DTypeName(d)));
      ExpectValues(*cp, want_p, 0, "cumprod " + std::string(DTypeName(d)));
    }
  }
  // numpy.cumsum(int8 [100, 100], dtype=int8) is [100, -56].
  const TestArray i8 = MakeArray(DType::kInt8, S({2}), {100, 100});
  absl::StatusOr<TestArray> r = Scan("cumsum", i8, 0, DType::kInt8, DType::kInt8);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {100, -56});
  // float16 scans round every step, as NumPy: 3000 ones stop at 2048
  // (2048 + 1 rounds to 2048), where float64 accumulation would give 3000.
  const TestArray ones = MakeArray(DType::kFloat16, S({3000}), std::vector<double>(3000, 1.0));
  r = Scan("cumsum", ones, std::nullopt, DType::kFloat16, DType::kFloat16);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->At(2047), 2048);
  EXPECT_EQ(r->At(2999), 2048);
  // A 0-d input scans to a 1-element 1-D array.
  r = Scan("cumsum", Scalar0d(DType::kInt32, 4), std::nullopt, DType::kInt64, DType::kInt64);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {4});
}

// Regression: float16 and bfloat16 scans accumulated in float64 and rounded
// once, off by an ulp and more from NumPy's add.accumulate / multiply.accumulate,
// which round each partial result. Long rows (several host blocks), odd
// sizes, both axes of a 2-D array, the flattened array, and dtype= giving a
// half accumulator for float32 and int inputs.
TEST(HostReduceTest, HalfScansRoundEveryStep) {
  struct Case {
    DType in;
    DType compute;
    std::vector<int64_t> dims;
    std::optional<int64_t> axis;
  };
  const std::vector<Case> cases = {
      {DType::kFloat16, DType::kFloat16, {1}, 0},
      {DType::kFloat16, DType::kFloat16, {7}, 0},
      {DType::kFloat16, DType::kFloat16, {5000}, 0},
      {DType::kFloat16, DType::kFloat16, {70001}, std::nullopt},
      {DType::kFloat16, DType::kFloat16, {37, 301}, 0},
      {DType::kFloat16, DType::kFloat16, {37, 301}, 1},
      {DType::kBFloat16, DType::kBFloat16, {3001}, 0},
      {DType::kBFloat16, DType::kBFloat16, {9, 1001}, 0},
      {DType::kFloat32, DType::kFloat16, {1001}, 0},
      {DType::kInt16, DType::kFloat16, {1001}, 0},
  };
  for (const Case& c : cases) {
    const Shape shape = S(c.dims);
    const TestArray x = RandomArray(c.in, shape, 1234, -3, 3);
    const int64_t len = c.axis ? shape.dim(static_cast<int>(*c.axis)) : x.size();
    int64_t stride = 1;
    if (c.axis) {
      for (int d = static_cast<int>(*c.axis) + 1; d < shape.rank(); ++d) stride *= shape.dim(d);
    }
    for (const char* op : {"cumsum", "cumprod"}) {
      const bool prod = std::string(op) == "cumprod";
      // Products of values in [-3, 3] overflow fast: scan values near 1.
      TestArray in = x;
      if (prod && IsFloat(c.in)) {
        for (int64_t i = 0; i < in.size(); ++i) {
          in.Set(i, RoundTo(c.in, 1 + in.At(i) / 64));
        }
      }
      absl::StatusOr<TestArray> got = Scan(op, in, c.axis, c.compute, c.compute, ManyThreads());
      ASSERT_THAT(got, IsOk());
      std::vector<double> want(in.size());
      for (int64_t start = 0; start < in.size(); ++start) {
        if ((start / stride) % len != 0) continue;  // not a row's first element
        double acc = prod ? 1 : 0;
        for (int64_t t = 0; t < len; ++t) {
          const double v = RoundTo(c.compute, in.At(start + t * stride));
          acc = RoundTo(c.compute, prod ? acc * v : acc + v);
          want[start + t * stride] = acc;
        }
      }
      ExpectValues(*got, want, 0,
                   absl::StrCat(op, " ", DTypeName(c.in), " -> ", DTypeName(c.compute), " ",
                                shape.ToString()));
    }
  }
}

TEST(HostReduceTest, LargeReductionsAreDeterministicAcrossThreadCounts) {
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {
      {S({65539}), {0}},   {S({65539, 3}), {0}},    {S({3, 65539}), {1}},
      {S({1048579}), {0}}, {S({257, 259}), {0, 1}}, {S({7, 1023, 9}), {0, 2}},
  };
  for (const Case& c : cases) {
    const TestArray x = RandomArray(DType::kFloat32, c.shape, 81, -1, 1);
    absl::StatusOr<TestArray> one =
        Reduce("sum", x, c.axes, false, DType::kFloat32, DType::kFloat32, {}, {.threads = 1});
    ASSERT_THAT(one, IsOk());
    std::vector<double> want;
    for (const auto& g : Groups(x, c.axes)) {
      double s = 0;
      for (double v : g) s += v;
      want.push_back(s);
    }
    ExpectValues(*one, want, 1, "sum " + c.shape.ToString());
    for (int threads : {2, 3, 8}) {
      for (const char* op : {"sum", "var", "max", "logsumexp"}) {
        absl::StatusOr<TestArray> a = Reduce(op, x, c.axes, false, DType::kFloat32, DType::kFloat32,
                                             {}, {.threads = 1, .min_elements_per_thread = 1});
        absl::StatusOr<TestArray> b =
            Reduce(op, x, c.axes, false, DType::kFloat32, DType::kFloat32, {},
                   {.threads = threads, .min_elements_per_thread = 1});
        ASSERT_THAT(a, IsOk());
        ASSERT_THAT(b, IsOk());
        EXPECT_EQ(a->bytes, b->bytes) << op << " " << c.shape.ToString() << " " << threads;
      }
    }
    absl::StatusOr<TestArray> am = ArgReduce(
        "argmax", x, c.axes.size() == 1 ? std::optional<int64_t>(c.axes[0]) : std::nullopt, false,
        ManyThreads());
    ASSERT_THAT(am, IsOk());
  }
  // argmax over a large array finds the first of two maxima in late chunks.
  TestArray y = MakeArray(DType::kInt16, S({200003}), std::vector<double>(200003, 0.0));
  y.Set(150000, 5);
  y.Set(199000, 5);  // in the last chunk
  absl::StatusOr<TestArray> am = ArgReduce("argmax", y, std::nullopt, false, ManyThreads());
  ASSERT_THAT(am, IsOk());
  ExpectValues(*am, {150000});
}

}  // namespace
}  // namespace gpuflow::host_test
