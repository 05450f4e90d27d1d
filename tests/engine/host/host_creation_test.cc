// full, arange (against NumPy's values) and the random ops (against the
// Philox formulas of engine/ir/philox.h).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/host/host_kernels.h"
#include "engine/ir/philox.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/host/host_test_util.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::host_test {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;

absl::StatusOr<TestArray> Create(const std::string& op, const Shape& shape, DType d, AttrMap attrs,
                                 const std::vector<TestArray>& inputs = {},
                                 HostKernelOptions options = {}) {
  std::vector<ValueType> types;
  for (const TestArray& a : inputs) types.push_back(a.type(true));
  attrs["dtype"] = d;
  if (op != "arange")
    attrs["shape"] = std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
  return RunNode(MakeNode(op, types, {d, shape}, d, std::move(attrs)), inputs, options);
}

TEST(HostCreationTest, FullConvertsTheValue) {
  absl::StatusOr<TestArray> r =
      Create("full", S({2, 3}), DType::kInt8, {}, {Scalar0d(DType::kInt64, 7)});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, std::vector<double>(6, 7));
  r = Create("full", S({3}), DType::kFloat16, {}, {Scalar0d(DType::kFloat64, 0.1)});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0.1, 0.1, 0.1});
  r = Create("full", S({}), DType::kInt32, {}, {Scalar0d(DType::kFloat64, -2.7)});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {-2});
  r = Create("full", S({0, 5}), DType::kBool, {}, {Scalar0d(DType::kFloat64, 2)});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
  r = Create("full", S({65539}), DType::kBool, {}, {Scalar0d(DType::kFloat64, 0.5)}, ManyThreads());
  ASSERT_THAT(r, IsOk());
  for (int64_t i = 0; i < r->size(); ++i) ASSERT_EQ(r->bytes[i], std::byte{1});
}

absl::StatusOr<TestArray> Arange(double start, double step, int64_t n, DType d,
                                 HostKernelOptions options = {}) {
  AttrMap attrs;
  attrs["start"] = start;
  attrs["stop"] = start + step * static_cast<double>(n);
  attrs["step"] = step;
  return Create("arange", S({n}), d, attrs, {}, options);
}

TEST(HostCreationTest, ArangeMatchesNumPy) {
  // numpy.arange(0.1, 1.0, 0.1, dtype=np.float32)
  absl::StatusOr<TestArray> r = Arange(0.1, 0.1, 9, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  ExpectValues(
      *r, {0.10000000149011612, 0.20000000298023224, 0.30000001192092896, 0.4000000059604645, 0.5,
           0.6000000238418579, 0.7000000476837158, 0.800000011920929, 0.9000000357627869});
  // numpy.arange(0, 1, 0.1)
  r = Arange(0, 0.1, 10, DType::kFloat64);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001,
                    0.7000000000000001, 0.8, 0.9});
  // numpy.arange(-3, 3, 0.7, dtype=np.float16)
  r = Arange(-3, 0.7, 9, DType::kFloat16);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {-3.0, -2.30078125, -1.6015625, -0.90234375, -0.203125, 0.49609375, 1.1953125,
                    1.89453125, 2.59375});
  // numpy.arange(0.5, 5, 1.5, dtype=np.int64) and arange(5, -6, -3, dtype=np.int8)
  r = Arange(0.5, 1.5, 3, DType::kInt64);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0, 2, 4});
  r = Arange(5, -3, 4, DType::kInt8);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {5, 2, -1, -4});
  // int8 wraps like NumPy's fill.
  r = Arange(120, 5, 4, DType::kInt8);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {120, 125, -126, -121});
  // Large, with threads: integers exactly.
  r = Arange(-7, 3, 65539, DType::kInt32, ManyThreads());
  ASSERT_THAT(r, IsOk());
  for (int64_t i = 0; i < 65539; ++i) ASSERT_EQ(r->At(i), -7 + 3 * static_cast<double>(i));
  r = Arange(0, 1, 0, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
}

// The largest value of float dtype d below 3.
double BelowThree(DType d) {
  switch (d) {
    case DType::kFloat16:
      return 3 - 0x1p-9;
    case DType::kBFloat16:
      return 3 - 0x1p-6;
    case DType::kFloat32:
      return 3 - 0x1p-22;
    default:
      return 3 - 0x1p-51;
  }
}

AttrMap RandomAttrs(int64_t seed, double a, double b, bool normal) {
  AttrMap attrs;
  attrs["seed"] = seed;
  attrs[normal ? "mean" : "low"] = a;
  attrs[normal ? "std" : "high"] = b;
  return attrs;
}

TEST(HostCreationTest, RandomUniformFollowsPhilox) {
  const int64_t seed = 0x123456789abcdefLL;
  for (DType d : kFloatDTypes) {
    absl::StatusOr<TestArray> r = Create("random_uniform", S({7, 1023}), d,
                                         RandomAttrs(seed, -2, 3, false), {}, ManyThreads());
    ASSERT_THAT(r, IsOk());
    std::vector<double> want;
    for (int64_t i = 0; i < r->size(); ++i) {
      const double v = philox::UniformAt(static_cast<uint64_t>(i), static_cast<uint64_t>(seed),
                                         d == DType::kFloat64, -2, 3);
      // A draw that rounds up to `high` is the dtype's value just below it.
      want.push_back(RoundTo(d, v) >= 3 ? BelowThree(d) : v);
    }
    for (int64_t i = 0; i < r->size(); ++i) {
      ASSERT_GE(r->At(i), -2);
      ASSERT_LT(r->At(i), 3);
    }
    ExpectValues(*r, want, 0, std::string(DTypeName(d)));
    // Same seed, same numbers; another seed, others.
    absl::StatusOr<TestArray> again =
        Create("random_uniform", S({7, 1023}), d, RandomAttrs(seed, -2, 3, false));
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(again->bytes, r->bytes);
    absl::StatusOr<TestArray> other =
        Create("random_uniform", S({7, 1023}), d, RandomAttrs(seed + 1, -2, 3, false));
    ASSERT_THAT(other, IsOk());
    EXPECT_NE(other->bytes, r->bytes);
  }
}

TEST(HostCreationTest, RandomUniformNeverReturnsHigh) {
  // In float16 [0, 1) draws above 1 - 2^-12 round to 1.0; they become the
  // largest float16 below 1.
  absl::StatusOr<TestArray> r =
      Create("random_uniform", S({1 << 20}), DType::kFloat16, RandomAttrs(5, 0, 1, false));
  ASSERT_THAT(r, IsOk());
  int64_t top = 0;
  for (int64_t i = 0; i < r->size(); ++i) {
    ASSERT_LT(r->At(i), 1.0);
    ASSERT_GE(r->At(i), 0.0);
    if (r->At(i) == 1.0 - 0x1p-11) ++top;
  }
  EXPECT_GT(top, 0);
  // A high that is not a bfloat16 value.
  r = Create("random_uniform", S({1 << 16}), DType::kBFloat16, RandomAttrs(6, 0, 1.001, false));
  ASSERT_THAT(r, IsOk());
  for (int64_t i = 0; i < r->size(); ++i) ASSERT_LT(r->At(i), 1.001);
}

TEST(HostCreationTest, RandomNormalFollowsPhiloxAndHasTheMoments) {
  const int64_t seed = 99;
  for (DType d : kFloatDTypes) {
    absl::StatusOr<TestArray> r = Create("random_normal", S({65539}), d,
                                         RandomAttrs(seed, 1.5, 2.0, true), {}, ManyThreads());
    ASSERT_THAT(r, IsOk());
    std::vector<double> want;
    double sum = 0;
    double sq = 0;
    for (int64_t i = 0; i < r->size(); ++i) {
      want.push_back(
          philox::NormalAt(static_cast<uint64_t>(i), seed, d == DType::kFloat64, 1.5, 2.0));
      sum += r->At(i);
      sq += r->At(i) * r->At(i);
    }
    ExpectValues(*r, want, 0, std::string(DTypeName(d)));
    const double n = static_cast<double>(r->size());
    const double mean = sum / n;
    EXPECT_NEAR(mean, 1.5, 0.05);
    EXPECT_NEAR(std::sqrt(sq / n - mean * mean), 2.0, 0.05);
  }
}

TEST(HostCreationTest, RandomRejectsNonFloatDTypes) {
  EXPECT_THAT(Create("random_uniform", S({3}), DType::kInt32, RandomAttrs(1, 0, 1, false)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace gpuflow::host_test
