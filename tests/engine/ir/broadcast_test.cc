#include "engine/ir/broadcast.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

Shape S(std::initializer_list<int64_t> dims) { return *Shape::Create(dims); }

TEST(BroadcastShapesTest, EqualShapesAreUnchanged) {
  EXPECT_THAT(BroadcastShapes(S({2, 3}), S({2, 3})), IsOkAndHolds(S({2, 3})));
  EXPECT_THAT(BroadcastShapes(S({}), S({})), IsOkAndHolds(S({})));
}

TEST(BroadcastShapesTest, ZeroDimensionalBroadcastsToAnything) {
  EXPECT_THAT(BroadcastShapes(S({}), S({7, 1, 3})), IsOkAndHolds(S({7, 1, 3})));
  EXPECT_THAT(BroadcastShapes(S({4}), S({})), IsOkAndHolds(S({4})));
}

TEST(BroadcastShapesTest, AlignsFromTheRightAndStretchesOnes) {
  // np.broadcast_shapes((3, 1), (4,)) == (3, 4), etc.
  EXPECT_THAT(BroadcastShapes(S({3, 1}), S({4})), IsOkAndHolds(S({3, 4})));
  EXPECT_THAT(BroadcastShapes(S({8, 1, 6, 1}), S({7, 1, 5})), IsOkAndHolds(S({8, 7, 6, 5})));
  EXPECT_THAT(BroadcastShapes(S({5, 4}), S({1})), IsOkAndHolds(S({5, 4})));
  EXPECT_THAT(BroadcastShapes(S({15, 3, 5}), S({15, 1, 5})), IsOkAndHolds(S({15, 3, 5})));
}

TEST(BroadcastShapesTest, ZeroSizedDimensionsBroadcastWithOnes) {
  EXPECT_THAT(BroadcastShapes(S({0}), S({1})), IsOkAndHolds(S({0})));
  EXPECT_THAT(BroadcastShapes(S({1, 0}), S({3, 1})), IsOkAndHolds(S({3, 0})));
  EXPECT_THAT(BroadcastShapes(S({0}), S({3})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shapes (0,) and (3,) cannot be broadcast together"));
}

TEST(BroadcastShapesTest, IncompatibleShapesNameBothShapes) {
  EXPECT_THAT(BroadcastShapes(S({3}), S({4})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shapes (3,) and (4,) cannot be broadcast together"));
  EXPECT_THAT(BroadcastShapes(S({2, 1}), S({8, 4, 3})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shapes (2, 1) and (8, 4, 3) cannot be broadcast together"));
}

TEST(BroadcastShapesTest, ManyShapes) {
  const Shape shapes[] = {S({2, 1, 1}), S({3, 1}), S({4})};
  EXPECT_THAT(BroadcastShapes(shapes), IsOkAndHolds(S({2, 3, 4})));
  const Shape bad[] = {S({3}), S({4}), S({5})};
  EXPECT_THAT(BroadcastShapes(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shapes (3,), (4,) and (5,) cannot be broadcast together"));
  EXPECT_THAT(BroadcastShapes(absl::Span<const Shape>()), IsOkAndHolds(S({})));
  const Shape one[] = {S({6, 7})};
  EXPECT_THAT(BroadcastShapes(one), IsOkAndHolds(S({6, 7})));
}

TEST(BroadcastShapesTest, ResultOverElementLimitIsAnError) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(BroadcastShapes(S({big, 1}), S({1, big})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 2^62")));
}

TEST(CheckBroadcastableToTest, AcceptsNumpyBroadcastTo) {
  EXPECT_THAT(CheckBroadcastableTo(S({3}), S({2, 3})), IsOk());
  EXPECT_THAT(CheckBroadcastableTo(S({}), S({2, 3})), IsOk());
  EXPECT_THAT(CheckBroadcastableTo(S({1, 3}), S({4, 3})), IsOk());
  EXPECT_THAT(CheckBroadcastableTo(S({2, 3}), S({2, 3})), IsOk());
  EXPECT_THAT(CheckBroadcastableTo(S({1}), S({0})), IsOk());
  EXPECT_THAT(CheckBroadcastableTo(S({}), S({})), IsOk());
}

TEST(CheckBroadcastableToTest, RejectsStretchingOrShrinking) {
  EXPECT_THAT(CheckBroadcastableTo(S({3}), S({4})),
              StatusIs(absl::StatusCode::kInvalidArgument, "cannot broadcast shape (3,) to (4,)"));
  // Unlike BroadcastShapes, the target may not be stretched.
  EXPECT_THAT(
      CheckBroadcastableTo(S({4, 3}), S({1, 3})),
      StatusIs(absl::StatusCode::kInvalidArgument, "cannot broadcast shape (4, 3) to (1, 3)"));
  EXPECT_THAT(
      CheckBroadcastableTo(S({2, 3}), S({3})),
      StatusIs(absl::StatusCode::kInvalidArgument, "cannot broadcast shape (2, 3) to (3,)"));
  EXPECT_THAT(CheckBroadcastableTo(S({3}), S({})),
              StatusIs(absl::StatusCode::kInvalidArgument, "cannot broadcast shape (3,) to ()"));
}

}  // namespace
}  // namespace gpuflow
