#include "engine/ir/shape.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

TEST(CheckedNumElementsTest, MultipliesDims) {
  EXPECT_THAT(CheckedNumElements({}), IsOkAndHolds(1));
  EXPECT_THAT(CheckedNumElements({7}), IsOkAndHolds(7));
  EXPECT_THAT(CheckedNumElements({3, 4, 5}), IsOkAndHolds(60));
  EXPECT_THAT(CheckedNumElements({3, 0, 5}), IsOkAndHolds(0));
}

TEST(ShapeTest, DefaultIsZeroDimensionalWithOneElement) {
  Shape shape;
  EXPECT_EQ(shape.rank(), 0);
  EXPECT_THAT(shape.dims(), IsEmpty());
  EXPECT_EQ(shape.num_elements(), 1);
  EXPECT_EQ(shape.ToString(), "()");
}

TEST(ShapeTest, CreateWithNoDimsEqualsDefault) {
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({}));
  EXPECT_EQ(shape, Shape());
  EXPECT_EQ(shape.num_elements(), 1);
}

TEST(ShapeTest, CreateKeepsDimsAndCountsElements) {
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({2, 3, 7}));
  EXPECT_EQ(shape.rank(), 3);
  EXPECT_THAT(shape.dims(), ElementsAre(2, 3, 7));
  EXPECT_EQ(shape.dim(0), 2);
  EXPECT_EQ(shape.dim(2), 7);
  EXPECT_EQ(shape.num_elements(), 42);
}

TEST(ShapeTest, CreateFromSpan) {
  const std::vector<int64_t> dims = {4, 5};
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create(absl::MakeConstSpan(dims)));
  EXPECT_THAT(shape.dims(), ElementsAre(4, 5));
  EXPECT_EQ(shape.num_elements(), 20);
}

TEST(ShapeTest, AnyZeroDimensionMakesAnEmptyArray) {
  for (std::vector<int64_t> dims :
       std::vector<std::vector<int64_t>>{{0}, {3, 0}, {0, 5}, {2, 0, 7}, {1 << 30, 1 << 30, 0}}) {
    ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create(absl::MakeConstSpan(dims)));
    EXPECT_EQ(shape.num_elements(), 0) << shape.ToString();
    EXPECT_EQ(shape.rank(), static_cast<int>(dims.size()));
  }
}

// Dimensions whose product would overflow still describe no elements when
// one of them is zero.
TEST(ShapeTest, ZeroDimensionWinsOverOverflowingDimensions) {
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({kInt64Max, kInt64Max, 0}));
  EXPECT_EQ(shape.num_elements(), 0);
}

TEST(ShapeTest, MoreThanTwoToThe31ElementsIsFine) {
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({int64_t{1} << 20, (int64_t{1} << 12) + 1}));
  EXPECT_EQ(shape.num_elements(), (int64_t{1} << 32) + (int64_t{1} << 20));
  EXPECT_GT(shape.num_elements(), std::numeric_limits<int32_t>::max());
  EXPECT_THAT(ByteSize(shape, DType::kFloat64),
              IsOkAndHolds((int64_t{1} << 35) + (int64_t{1} << 23)));
}

TEST(ShapeTest, ExactlyTwoToThe62ElementsIsAccepted) {
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({int64_t{1} << 31, int64_t{1} << 31}));
  EXPECT_EQ(shape.num_elements(), kMaxElements);
}

TEST(ShapeTest, NegativeDimensionIsRejectedWithItsIndex) {
  EXPECT_THAT(Shape::Create({2, -1, 3}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("dimension 1 is negative (-1)")));
  EXPECT_THAT(CheckedNumElements({-5}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimension 0 is negative")));
}

TEST(ShapeTest, NegativeDimensionIsRejectedEvenWithAZero) {
  EXPECT_THAT(Shape::Create({0, -1}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ShapeTest, TooManyElementsIsRejected) {
  EXPECT_THAT(Shape::Create({(int64_t{1} << 31) + 1, int64_t{1} << 31}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 2^62 elements")));
  EXPECT_THAT(Shape::Create({int64_t{1} << 31, int64_t{1} << 31, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // Products that would wrap around int64 (and even to a small positive
  // number: 2^32 * 2^32 = 2^64 = 0 mod 2^64) must not slip through.
  EXPECT_THAT(Shape::Create({int64_t{1} << 32, int64_t{1} << 32}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Shape::Create({kInt64Max, kInt64Max}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Shape::Create({kMaxElements + 1}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ShapeTest, ToStringMatchesNumPy) {
  EXPECT_EQ(Shape().ToString(), "()");
  EXPECT_EQ(Shape::Create({5})->ToString(), "(5,)");
  EXPECT_EQ(Shape::Create({0})->ToString(), "(0,)");
  EXPECT_EQ(Shape::Create({2, 3})->ToString(), "(2, 3)");
  EXPECT_EQ(Shape::Create({2, 0, 4})->ToString(), "(2, 0, 4)");
  EXPECT_EQ(Shape::Create({int64_t{1} << 40})->ToString(), "(1099511627776,)");
}

TEST(ShapeTest, EqualityComparesDims) {
  EXPECT_EQ(*Shape::Create({2, 3}), *Shape::Create({2, 3}));
  EXPECT_FALSE(*Shape::Create({2, 3}) == *Shape::Create({3, 2}));
  EXPECT_FALSE(*Shape::Create({6}) == *Shape::Create({2, 3}));
  EXPECT_FALSE(Shape() == *Shape::Create({1}));
}

TEST(ShapeTest, ByteSizeIsElementsTimesItemSize) {
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({2, 3}));
  for (const DTypeInfo& info : AllDTypes()) {
    EXPECT_THAT(ByteSize(shape, info.dtype), IsOkAndHolds(6 * info.itemsize)) << info.name;
    EXPECT_THAT(ByteSize(Shape(), info.dtype), IsOkAndHolds(info.itemsize)) << info.name;
    EXPECT_THAT(ByteSize(*Shape::Create({4, 0}), info.dtype), IsOkAndHolds(0)) << info.name;
  }
}

TEST(ShapeTest, ByteSizeOverTwoToThe62IsRejected) {
  ASSERT_OK_AND_ASSIGN(Shape max_shape, Shape::Create({kMaxElements}));
  EXPECT_THAT(ByteSize(max_shape, DType::kUInt8), IsOkAndHolds(kMaxElements));
  EXPECT_THAT(
      ByteSize(max_shape, DType::kInt16),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype int16 exceeds 2^62 bytes")));
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({int64_t{1} << 61}));
  EXPECT_THAT(ByteSize(shape, DType::kFloat32), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ByteSize(shape, DType::kInt16), IsOkAndHolds(int64_t{1} << 62));
}

TEST(ShapeTest, RankIsAtMostKMaxRank) {
  EXPECT_EQ(kMaxRank, 64);
  const std::vector<int64_t> ones64(64, 1);
  const std::vector<int64_t> ones65(65, 1);
  ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create(ones64));
  EXPECT_EQ(shape.rank(), 64);
  EXPECT_THAT(Shape::Create(ones65),
              StatusIs(absl::StatusCode::kInvalidArgument, "rank 65 is over the maximum of 64"));
  EXPECT_THAT(Shape::Create(std::vector<int64_t>(1000000, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 1000000")));
}

TEST(ShapeTest, EmptyShapesMayHaveHugeDimensionsButNotTheirSubsets) {
  // The reproducer of the ReducedShape crash: (0, INT64_MAX) is a valid
  // empty shape, (INT64_MAX,) is not.
  ASSERT_OK_AND_ASSIGN(Shape empty, Shape::Create({0, kInt64Max}));
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_THAT(Shape::Create({kInt64Max}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 2^62")));
  EXPECT_THAT(CheckedNumElements({kInt64Max, kInt64Max, 0}), IsOkAndHolds(0));
  EXPECT_THAT(CheckedNumElements({int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 2^62")));
}

TEST(ByteSizeTest, OverflowsAreErrorsNotWraps) {
  ASSERT_OK_AND_ASSIGN(Shape big, Shape::Create({kMaxElements}));
  EXPECT_THAT(ByteSize(big, DType::kBool), IsOkAndHolds(kMaxElements));
  EXPECT_THAT(ByteSize(big, DType::kFloat64),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exceeds 2^62 bytes")));
}

}  // namespace
}  // namespace gpuflow
