// scatter and flatnonzero against results worked out here (numpy's answers).
#include <cstdint>
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

absl::StatusOr<TestArray> Scatter(const std::string& mode, const TestArray& a, const TestArray& idx,
                                  const TestArray& upd) {
  AttrMap attrs;
  attrs["mode"] = mode;
  return RunNode(
      MakeNode("scatter", {a.type(), idx.type(), upd.type()}, {a.dtype, a.shape}, a.dtype, attrs),
      {a, idx, upd});
}

TEST(HostScatterTest, SetKeepsTheLastDuplicateForEveryDType) {
  for (DType d : kAllDTypes) {
    const TestArray a = MakeArray(d, S({2, 3}), {0, 1, 0, 1, 0, 1});
    for (DType id : kIntDTypes) {
      const std::vector<double> raw =
          IsSigned(id) ? std::vector<double>{4, -1, 0, -2, 1} : std::vector<double>{4, 5, 0, 4, 1};
      const TestArray idx = MakeArray(id, S({5}), raw);
      const TestArray upd = MakeArray(d, S({5}), {1, 1, 1, 0, 0});
      absl::StatusOr<TestArray> r = Scatter("set", a, idx, upd);
      ASSERT_THAT(r, IsOk()) << DTypeName(d) << " " << DTypeName(id);
      // Position 4 is written with 1, then with 0 (the last wins).
      ExpectValues(*r, {1, 0, 0, 1, 0, 1}, 0, std::string(DTypeName(d)));
    }
  }
}

TEST(HostScatterTest, AddAccumulatesEveryDuplicateAndWraps) {
  const TestArray a = MakeArray(DType::kUInt8, S({3}), {250, 0, 7});
  const TestArray idx = MakeArray(DType::kInt64, S({4}), {0, 0, -3, 2});
  absl::StatusOr<TestArray> r =
      Scatter("add", a, idx, MakeArray(DType::kUInt8, S({4}), {3, 3, 3, 1}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {3, 0, 8});  // 250 + 9 wraps to 3
  // float16 rounds after each addition, as numpy.add.at: 2048 + 1 + 1 stays 2048.
  const TestArray h = MakeArray(DType::kFloat16, S({1}), {2048});
  r = Scatter("add", h, MakeArray(DType::kInt32, S({2}), {0, 0}), Scalar0d(DType::kFloat16, 1));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {2048});
  // bool adds as or, multiplies as and.
  const TestArray b = MakeArray(DType::kBool, S({2}), {0, 1});
  r = Scatter("add", b, MakeArray(DType::kInt8, S({2}), {0, 0}),
              MakeArray(DType::kBool, S({2}), {1, 1}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 1});
  r = Scatter("mul", b, MakeArray(DType::kInt8, S({1}), {1}), MakeArray(DType::kBool, S({1}), {0}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0, 0});
}

TEST(HostScatterTest, MinMaxPropagateNaNAndUpdatesBroadcastAndConvert) {
  const TestArray a = MakeArray(DType::kFloat32, S({4}), {5, 5, kNaN, 5});
  const TestArray idx = MakeArray(DType::kInt64, S({2, 2}), {0, 1, 2, 1});
  // Updates (2, 1) broadcast over the indices (2, 2); int64 converted to float32.
  absl::StatusOr<TestArray> r = Scatter("min", a, idx, MakeArray(DType::kInt64, S({2, 1}), {3, 9}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {3, 3, kNaN, 5});
  r = Scatter("max", a, MakeArray(DType::kInt64, S({1}), {3}), Scalar0d(DType::kFloat64, kNaN));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {5, 5, kNaN, kNaN});
  // A float update into an integer array is converted as cast does (truncated).
  const TestArray i = MakeArray(DType::kInt32, S({2}), {0, 0});
  r = Scatter("set", i, Scalar0d(DType::kInt64, 1), Scalar0d(DType::kFloat64, -2.7));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0, -2});
}

TEST(HostScatterTest, OutOfBoundsNamesTheFirstBadIndexAsNumPy) {
  const TestArray a = MakeArray(DType::kFloat64, S({2, 3}), {0, 1, 2, 3, 4, 5});
  absl::StatusOr<TestArray> r =
      Scatter("set", a, MakeArray(DType::kInt16, S({3}), {1, -7, 6}), Scalar0d(DType::kFloat64, 1));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("index -7 is out of bounds for axis 0 with size 6")));
  TestArray big = Empty(DType::kUInt64, S({1}));
  big.SetBits(0, ~uint64_t{0});
  r = Scatter("add", a, big, Scalar0d(DType::kFloat64, 1));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("index 18446744073709551615 is out of bounds")));
  // No indices: a copy.
  r = Scatter("set", a, Empty(DType::kInt64, S({0})), Scalar0d(DType::kFloat64, 1));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0, 1, 2, 3, 4, 5});
}

absl::StatusOr<TestArray> FlatNonzero(const TestArray& a, int64_t size) {
  AttrMap attrs;
  attrs["size"] = size;
  return RunNode(
      MakeNode("flatnonzero", {a.type()}, {DType::kInt64, S({size})}, DType::kInt64, attrs), {a});
}

TEST(HostFlatNonzeroTest, IndicesInCOrderForEveryDType) {
  for (DType d : kAllDTypes) {
    TestArray a = Empty(d, S({3, 700}));  // more than one block of 1024
    std::vector<double> want;
    for (int64_t i = 0; i < a.size(); ++i) {
      const bool on = i % 7 == 3 || i == 2099;
      a.Set(i, on ? 1 : 0);
      if (on) want.push_back(static_cast<double>(i));
    }
    absl::StatusOr<TestArray> r = FlatNonzero(a, static_cast<int64_t>(want.size()));
    ASSERT_THAT(r, IsOk()) << DTypeName(d);
    ExpectValues(*r, want, 0, std::string(DTypeName(d)));
  }
  // NaN is nonzero, -0.0 is zero.
  absl::StatusOr<TestArray> r = FlatNonzero(MakeArray(DType::kFloat32, S({3}), {-0.0, kNaN, 0}), 1);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1});
  r = FlatNonzero(Scalar0d(DType::kInt8, 0), 0);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
}

TEST(HostFlatNonzeroTest, ACountOtherThanTheSizeIsAnError) {
  const TestArray a = MakeArray(DType::kInt32, S({4}), {1, 0, 2, 3});
  EXPECT_THAT(FlatNonzero(a, 2), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("the input has 3 nonzero elements, but the "
                                                    "node's size is 2")));
  EXPECT_THAT(FlatNonzero(a, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 3 nonzero elements")));
}

}  // namespace
}  // namespace gpuflow::host_test
