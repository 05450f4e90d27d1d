// histogram against results worked out here (numpy.histogram's answers).
#include <cmath>
#include <cstdint>
#include <limits>
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

absl::StatusOr<TestArray> Histogram(const TestArray& a, const TestArray& edges,
                                    const TestArray* weights = nullptr, AttrMap attrs = {},
                                    DType compute = DType::kFloat64) {
  std::vector<ValueType> types = {a.type(), edges.type()};
  std::vector<TestArray> inputs = {a, edges};
  DType out = DType::kInt64;
  if (weights != nullptr) {
    types.push_back(weights->type());
    inputs.push_back(*weights);
    out = weights->dtype;
  }
  return RunNode(
      MakeNode("histogram", types, {out, S({edges.size() - 1})}, compute, std::move(attrs)),
      inputs);
}

// numpy.linspace(first, last, bins + 1) in float64.
std::vector<double> Linspace(double first, double last, int bins) {
  std::vector<double> e(bins + 1);
  const double step = (last - first) / bins;
  for (int i = 0; i <= bins; ++i) e[i] = i * step + first;
  e[bins] = last;
  return e;
}

AttrMap Uniform(double first, double denom, DType sub = DType::kFloat64,
                DType div = DType::kFloat64) {
  return {{"uniform", true},
          {"first_edge", first},
          {"norm_denom", denom},
          {"sub_dtype", sub},
          {"div_dtype", div}};
}

TEST(HostHistogramTest, CountsBetweenEdgesWithTheLastBinClosed) {
  // np.histogram([-1, 0, .5, 1, 2.5, 3, 3.5, nan], bins=[0, 1, 2, 3]) -> [2, 1, 2]
  const TestArray a = MakeArray(DType::kFloat32, S({8}), {-1, 0, .5, 1, 2.5, 3, 3.5, kNaN});
  const TestArray edges = MakeArray(DType::kFloat64, S({4}), {0, 1, 2, 3});
  absl::StatusOr<TestArray> r = Histogram(a, edges);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {2, 1, 2});
  // Repeated edges: an empty bin, the values at the repeat in the next
  // one; int data compared with float edges.
  r = Histogram(MakeArray(DType::kInt32, S({5}), {0, 1, 1, 2, 5}),
                MakeArray(DType::kFloat64, S({4}), {0, 1, 1, 2}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 0, 3});
  // A NaN last edge takes the NaN values (searchsorted orders NaN last).
  r = Histogram(MakeArray(DType::kFloat64, S({3}), {0.5, 7, kNaN}),
                MakeArray(DType::kFloat64, S({2}), {0, kNaN}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {3});
  // One edge: no bins.
  r = Histogram(a, MakeArray(DType::kFloat64, S({1}), {0}));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
}

TEST(HostHistogramTest, UniformBinsCorrectNumPysFormulaByTheEdges) {
  // Edges of np.histogram(x, 7, range=(0.1, 0.7)); just below edges[2] the
  // formula gives bin 2 and the correction bin 1.
  const std::vector<double> e = Linspace(0.1, 0.7, 7);
  const double below = std::nextafter(e[2], 0.0);
  ASSERT_EQ(static_cast<int>((below - 0.1) / (0.7 - 0.1) * 7), 2);
  const TestArray a = MakeArray(DType::kFloat64, S({6}), {below, 0.1, 0.7, 0.05, 0.75, kNaN});
  const TestArray edges = MakeArray(DType::kFloat64, S({8}), e);
  absl::StatusOr<TestArray> r = Histogram(a, edges, nullptr, Uniform(0.1, 0.7 - 0.1));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 1, 0, 0, 0, 0, 1});
  // The same by binary search.
  r = Histogram(a, edges);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 1, 0, 0, 0, 0, 1});
}

TEST(HostHistogramTest, UniformBinsComputeInNumPysDtypes) {
  // float16 data, range None: numpy computes (x - min) / (max - min) * bins
  // in float16; the largest float16 below 3 and 3 itself fall in the last
  // bin, which is closed.
  const TestArray a = MakeArray(DType::kFloat16, S({5}), {0, 1, 1.5, 2.998046875, 3});
  const TestArray edges = MakeArray(DType::kFloat16, S({4}), {0, 1, 2, 3});
  absl::StatusOr<TestArray> r = Histogram(
      a, edges, nullptr, Uniform(0, 3, DType::kFloat16, DType::kFloat16), DType::kFloat16);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 2, 2});
}

TEST(HostHistogramTest, WeightsSumAsNumPySumsThem) {
  const TestArray a = MakeArray(DType::kFloat64, S({4}), {0.5, 1.5, 1.5, 2.5});
  const TestArray edges = MakeArray(DType::kFloat64, S({4}), {0, 1, 2, 3});
  // int8 weights: a block's float64 sum 200 becomes int8 -56 (both paths).
  const TestArray w8 = MakeArray(DType::kInt8, S({4}), {100, 100, 100, 1});
  absl::StatusOr<TestArray> r = Histogram(a, edges, &w8, Uniform(0, 3));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->dtype, DType::kInt8);
  ExpectValues(*r, {100, -56, 1});
  r = Histogram(a, edges, &w8);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {100, -56, 1});
  // bool weights (uniform only): the counts are bools.
  const TestArray wb = MakeArray(DType::kBool, S({4}), {1, 0, 0, 0});
  r = Histogram(a, edges, &wb, Uniform(0, 3));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 0, 0});
  // float32 weights by the cumulative path: differences of float32
  // cumulative sums, so 1e8 + 1 + 1 leaves the second bin 0.
  const TestArray b = MakeArray(DType::kFloat64, S({3}), {0.5, 1.5, 1.5});
  const TestArray e2 = MakeArray(DType::kFloat64, S({3}), {0, 1, 2});
  const TestArray w32 = MakeArray(DType::kFloat32, S({3}), {1e8, 1, 1});
  r = Histogram(b, e2, &w32);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1e8, 0});
  // ... and by the uniform path: float64 sums per block, so 2.
  r = Histogram(b, e2, &w32, Uniform(0, 2));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1e8, 2});
  // float16 weights: each bin's block sum in float64, then float16.
  const TestArray w16 = MakeArray(DType::kFloat16, S({3}), {2048, 1, 1});
  r = Histogram(b, e2, &w16, Uniform(0, 2));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {2048, 2});
}

TEST(HostHistogramTest, WeightedBlocksAddInTheWeightsDtype) {
  // Two blocks of numpy's 65536: each block's sum is exact, and the two add
  // in float32.
  const int64_t n = 65536 + 3;
  std::vector<double> x(n, 0.5), w(n, 1.0);
  const TestArray a = MakeArray(DType::kFloat32, S({n}), x);
  const TestArray wt = MakeArray(DType::kFloat32, S({n}), w);
  const TestArray edges = MakeArray(DType::kFloat32, S({2}), {0, 1});
  absl::StatusOr<TestArray> r = Histogram(a, edges, &wt, Uniform(0, 1), DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {static_cast<double>(n)});
  absl::StatusOr<TestArray> c = Histogram(a, edges, nullptr, Uniform(0, 1), DType::kFloat32);
  ASSERT_THAT(c, IsOk());
  ExpectValues(*c, {static_cast<double>(n)});
}

}  // namespace
}  // namespace gpuflow::host_test
