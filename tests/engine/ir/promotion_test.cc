#include "engine/ir/promotion.h"

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/ir/dtype_codes.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

// NumPy's answers; see numpy_reference_tables.py for how they are made.
#include "tests/engine/ir/numpy_reference_tables.inc"

using ::gpuflow::testing::DTypeFromCode;
using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::NumpyDTypes;
using ::gpuflow::testing::ParseRow;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

ValueType Strong(DType dtype) { return {.dtype = dtype, .shape = Shape(), .weak = false}; }

std::vector<DType> AllDTypeValues() {
  std::vector<DType> out;
  for (const DTypeInfo& info : AllDTypes()) out.push_back(info.dtype);
  return out;
}

TEST(PromoteDTypesTest, MatchesNumpyPromoteTypes) {
  const std::vector<DType>& dtypes = NumpyDTypes();
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const auto row = ParseRow(kNumpyPromoteTypes[i]);
    ASSERT_EQ(row.size(), dtypes.size());
    for (size_t j = 0; j < dtypes.size(); ++j) {
      EXPECT_EQ(PromoteDTypes(dtypes[i], dtypes[j]), row[j].output)
          << DTypeName(dtypes[i]) << " + " << DTypeName(dtypes[j]);
    }
  }
}

// bfloat16 is not in NumPy: docs/ops.md gives its row.
TEST(PromoteDTypesTest, Bfloat16FollowsDocs) {
  const std::pair<DType, DType> expected[] = {
      {DType::kBool, DType::kBFloat16},     {DType::kInt8, DType::kBFloat16},
      {DType::kUInt8, DType::kBFloat16},    {DType::kInt16, DType::kFloat32},
      {DType::kUInt16, DType::kFloat32},    {DType::kInt32, DType::kFloat64},
      {DType::kUInt32, DType::kFloat64},    {DType::kInt64, DType::kFloat64},
      {DType::kUInt64, DType::kFloat64},    {DType::kFloat16, DType::kFloat32},
      {DType::kBFloat16, DType::kBFloat16}, {DType::kFloat32, DType::kFloat32},
      {DType::kFloat64, DType::kFloat64},
  };
  for (const auto& [other, result] : expected) {
    EXPECT_EQ(PromoteDTypes(DType::kBFloat16, other), result) << DTypeName(other);
    EXPECT_EQ(PromoteDTypes(other, DType::kBFloat16), result) << DTypeName(other);
  }
}

TEST(PromoteDTypesTest, IsCommutativeOverAllDTypes) {
  for (DType a : AllDTypeValues()) {
    for (DType b : AllDTypeValues()) {
      EXPECT_EQ(PromoteDTypes(a, b), PromoteDTypes(b, a)) << DTypeName(a) << ", " << DTypeName(b);
    }
  }
}

// Regression: pairwise promotion is not associative, and NumPy's result_type
// of three dtypes is not ((a + b) + c).
TEST(PromoteDTypesTest, IsNotAssociativeLikeNumpy) {
  EXPECT_EQ(PromoteDTypes(PromoteDTypes(DType::kInt8, DType::kUInt8), DType::kFloat16),
            DType::kFloat32);
  EXPECT_EQ(PromoteDTypes(DType::kInt8, PromoteDTypes(DType::kUInt8, DType::kFloat16)),
            DType::kFloat16);
}

TEST(PromoteTypesTest, ThreeStrongDTypesMatchNumpyResultType) {
  const std::vector<DType>& dtypes = NumpyDTypes();
  for (size_t i = 0; i < dtypes.size(); ++i) {
    for (size_t j = 0; j < dtypes.size(); ++j) {
      const auto row = ParseRow(kNumpyResultType3[i * dtypes.size() + j]);
      ASSERT_EQ(row.size(), dtypes.size());
      for (size_t k = 0; k < dtypes.size(); ++k) {
        EXPECT_THAT(PromoteTypes({Strong(dtypes[i]), Strong(dtypes[j]), Strong(dtypes[k])}),
                    IsOkAndHolds(row[k].output))
            << DTypeName(dtypes[i]) << ", " << DTypeName(dtypes[j]) << ", " << DTypeName(dtypes[k]);
      }
    }
  }
}

TEST(PromoteTypesTest, ThreeDTypesWithBfloat16PromoteIntoIt) {
  // bfloat16 is the main dtype, as a user dtype would be in NumPy.
  EXPECT_THAT(PromoteTypes({Strong(DType::kInt8), Strong(DType::kUInt8), Strong(DType::kBFloat16)}),
              IsOkAndHolds(DType::kBFloat16));
  EXPECT_THAT(
      PromoteTypes({Strong(DType::kInt16), Strong(DType::kUInt16), Strong(DType::kBFloat16)}),
      IsOkAndHolds(DType::kFloat32));
  EXPECT_THAT(
      PromoteTypes({Strong(DType::kFloat16), Strong(DType::kBFloat16), Strong(DType::kInt8)}),
      IsOkAndHolds(DType::kFloat32));
}

TEST(PromoteTypesTest, StrongTypesFollowPromoteDTypes) {
  for (DType a : AllDTypeValues()) {
    for (DType b : AllDTypeValues()) {
      EXPECT_THAT(PromoteTypes({Strong(a), Strong(b)}), IsOkAndHolds(PromoteDTypes(a, b)));
    }
  }
}

TEST(PromoteTypesTest, WeakScalarsMatchNumpy2) {
  const auto ints = ParseRow(kNumpyWeakInt);
  const auto floats = ParseRow(kNumpyWeakFloat);
  const auto bools = ParseRow(kNumpyWeakBool);
  const std::vector<DType>& dtypes = NumpyDTypes();
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const ValueType array = Strong(dtypes[i]);
    SCOPED_TRACE(DTypeName(dtypes[i]));
    EXPECT_THAT(PromoteTypes({array, WeakIntType()}), IsOkAndHolds(ints[i].output));
    EXPECT_THAT(PromoteTypes({WeakIntType(), array}), IsOkAndHolds(ints[i].output));
    EXPECT_THAT(PromoteTypes({array, WeakFloatType()}), IsOkAndHolds(floats[i].output));
    EXPECT_THAT(PromoteTypes({WeakFloatType(), array}), IsOkAndHolds(floats[i].output));
    EXPECT_THAT(PromoteTypes({array, WeakBoolType()}), IsOkAndHolds(bools[i].output));
    // A Python int above INT64_MAX is still just "an int".
    EXPECT_THAT(PromoteTypes({array, WeakUIntType()}), IsOkAndHolds(ints[i].output));
  }
}

TEST(PromoteTypesTest, WeakScalarsKeepBfloat16) {
  const ValueType bf16 = Strong(DType::kBFloat16);
  EXPECT_THAT(PromoteTypes({bf16, WeakIntType()}), IsOkAndHolds(DType::kBFloat16));
  EXPECT_THAT(PromoteTypes({bf16, WeakFloatType()}), IsOkAndHolds(DType::kBFloat16));
  EXPECT_THAT(PromoteTypes({bf16, WeakBoolType()}), IsOkAndHolds(DType::kBFloat16));
}

TEST(PromoteTypesTest, OnlyWeakScalarsGiveDefaultDTypes) {
  EXPECT_THAT(PromoteTypes({WeakIntType()}), IsOkAndHolds(DType::kInt64));
  EXPECT_THAT(PromoteTypes({WeakIntType(), WeakIntType()}), IsOkAndHolds(DType::kInt64));
  EXPECT_THAT(PromoteTypes({WeakUIntType(), WeakIntType()}), IsOkAndHolds(DType::kInt64));
  EXPECT_THAT(PromoteTypes({WeakFloatType(), WeakFloatType()}), IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(PromoteTypes({WeakIntType(), WeakFloatType()}), IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(PromoteTypes({WeakBoolType(), WeakBoolType()}), IsOkAndHolds(DType::kBool));
  EXPECT_THAT(PromoteTypes({WeakBoolType(), WeakIntType()}), IsOkAndHolds(DType::kInt64));
}

TEST(PromoteTypesTest, ThreeInputsMixStrongAndWeak) {
  // np.result_type(np.int8, np.uint8, 1.0) under NumPy 2 rules.
  EXPECT_THAT(PromoteTypes({Strong(DType::kInt8), Strong(DType::kUInt8), WeakFloatType()}),
              IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(PromoteTypes({Strong(DType::kFloat16), Strong(DType::kInt8), WeakIntType()}),
              IsOkAndHolds(DType::kFloat16));
  EXPECT_THAT(PromoteTypes({Strong(DType::kBool), WeakIntType(), WeakFloatType()}),
              IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(PromoteTypes({Strong(DType::kUInt8), WeakIntType(), WeakIntType()}),
              IsOkAndHolds(DType::kUInt8));
}

TEST(PromoteTypesTest, ShapesDoNotMatter) {
  ValueType a = Strong(DType::kInt16);
  a.shape = *Shape::Create({3, 4});
  EXPECT_THAT(PromoteTypes({a, WeakIntType()}), IsOkAndHolds(DType::kInt16));
}

TEST(PromoteTypesTest, EmptyIsAnError) {
  EXPECT_THAT(PromoteTypes({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no dtypes")));
}

TEST(FloatResultDTypeTest, MatchesNumpySqrtLoops) {
  const auto sqrt_row = [] {
    for (const auto& [op, row] : kNumpyUnary) {
      if (std::string(op) == "sqrt") return ParseRow(row);
    }
    return ParseRow("");
  }();
  const std::vector<DType>& dtypes = NumpyDTypes();
  ASSERT_EQ(sqrt_row.size(), dtypes.size());
  for (size_t i = 0; i < dtypes.size(); ++i) {
    EXPECT_EQ(FloatResultDType(dtypes[i]), sqrt_row[i].output) << DTypeName(dtypes[i]);
  }
  EXPECT_EQ(FloatResultDType(DType::kBFloat16), DType::kBFloat16);
}

TEST(FloatLoopDTypeTest, PicksTheSmallestFloatEveryInputConvertsTo) {
  // numpy.arctan2's dtypes.
  EXPECT_THAT(FloatLoopDType({Strong(DType::kInt8), Strong(DType::kUInt8)}),
              IsOkAndHolds(DType::kFloat16));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kInt16), Strong(DType::kUInt16)}),
              IsOkAndHolds(DType::kFloat32));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kInt16), Strong(DType::kFloat16)}),
              IsOkAndHolds(DType::kFloat32));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kInt32), Strong(DType::kFloat16)}),
              IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kBool), Strong(DType::kBool)}),
              IsOkAndHolds(DType::kFloat16));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kFloat32)}), IsOkAndHolds(DType::kFloat32));
}

TEST(FloatLoopDTypeTest, WeakScalarsCountOnlyWhenOfAHigherKind) {
  EXPECT_THAT(FloatLoopDType({Strong(DType::kInt8), WeakIntType()}), IsOkAndHolds(DType::kFloat16));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kBool), WeakIntType()}), IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kInt8), WeakFloatType()}),
              IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kFloat16), WeakFloatType()}),
              IsOkAndHolds(DType::kFloat16));
  EXPECT_THAT(FloatLoopDType({WeakIntType(), WeakIntType()}), IsOkAndHolds(DType::kFloat64));
  EXPECT_THAT(FloatLoopDType({}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(FloatLoopDTypeTest, SmallIntsGoToBfloat16) {
  EXPECT_THAT(FloatLoopDType({Strong(DType::kBFloat16), Strong(DType::kInt8)}),
              IsOkAndHolds(DType::kBFloat16));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kBool), Strong(DType::kBFloat16)}),
              IsOkAndHolds(DType::kBFloat16));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kBFloat16), Strong(DType::kInt16)}),
              IsOkAndHolds(DType::kFloat32));
  EXPECT_THAT(FloatLoopDType({Strong(DType::kBFloat16), Strong(DType::kFloat16)}),
              IsOkAndHolds(DType::kFloat32));
}

TEST(CheckIntFitsDTypeTest, AcceptsEachIntegerDTypesRange) {
  EXPECT_THAT(CheckIntFitsDType(int64_t{-128}, DType::kInt8), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{127}, DType::kInt8), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{-32768}, DType::kInt16), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{32767}, DType::kInt16), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{std::numeric_limits<int32_t>::min()}, DType::kInt32),
              IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{std::numeric_limits<int32_t>::max()}, DType::kInt32),
              IsOk());
  EXPECT_THAT(CheckIntFitsDType(std::numeric_limits<int64_t>::min(), DType::kInt64), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{0}, DType::kUInt8), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{255}, DType::kUInt8), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{65535}, DType::kUInt16), IsOk());
  EXPECT_THAT(CheckIntFitsDType(int64_t{4294967295}, DType::kUInt32), IsOk());
  EXPECT_THAT(CheckIntFitsDType(std::numeric_limits<uint64_t>::max(), DType::kUInt64), IsOk());
  EXPECT_THAT(CheckIntFitsDType(uint64_t{9223372036854775807u}, DType::kInt64), IsOk());
}

TEST(CheckIntFitsDTypeTest, RejectsOutOfBoundsWithNumpysMessage) {
  EXPECT_THAT(
      CheckIntFitsDType(int64_t{300}, DType::kInt8),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer 300 out of bounds for int8"));
  EXPECT_THAT(
      CheckIntFitsDType(int64_t{-129}, DType::kInt8),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer -129 out of bounds for int8"));
  EXPECT_THAT(
      CheckIntFitsDType(int64_t{32768}, DType::kInt16),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer 32768 out of bounds for int16"));
  EXPECT_THAT(CheckIntFitsDType(int64_t{2147483648}, DType::kInt32),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Python integer 2147483648 out of bounds for int32"));
  EXPECT_THAT(
      CheckIntFitsDType(int64_t{-1}, DType::kUInt8),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer -1 out of bounds for uint8"));
  EXPECT_THAT(
      CheckIntFitsDType(int64_t{256}, DType::kUInt8),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer 256 out of bounds for uint8"));
  EXPECT_THAT(CheckIntFitsDType(int64_t{65536}, DType::kUInt16),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Python integer 65536 out of bounds for uint16"));
  EXPECT_THAT(CheckIntFitsDType(int64_t{4294967296}, DType::kUInt32),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Python integer 4294967296 out of bounds for uint32"));
  EXPECT_THAT(
      CheckIntFitsDType(int64_t{-1}, DType::kUInt64),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer -1 out of bounds for uint64"));
  EXPECT_THAT(CheckIntFitsDType(uint64_t{9223372036854775808u}, DType::kInt64),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Python integer 9223372036854775808 out of bounds for int64"));
}

TEST(CheckIntFitsDTypeTest, FloatAndBoolTargetsAcceptAnyInt) {
  for (DType d :
       {DType::kBool, DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    EXPECT_THAT(CheckIntFitsDType(std::numeric_limits<int64_t>::min(), d), IsOk());
    EXPECT_THAT(CheckIntFitsDType(std::numeric_limits<uint64_t>::max(), d), IsOk());
  }
}

TEST(WeakTypesTest, AreZeroDimensionalWeakValues) {
  for (const auto& [type, dtype] :
       {std::pair{WeakIntType(), DType::kInt64}, std::pair{WeakUIntType(), DType::kUInt64},
        std::pair{WeakFloatType(), DType::kFloat64}, std::pair{WeakBoolType(), DType::kBool}}) {
    EXPECT_TRUE(type.weak);
    EXPECT_EQ(type.dtype, dtype);
    EXPECT_EQ(type.shape, Shape());
  }
}

TEST(DTypeCodesTest, TableCodesParse) { EXPECT_EQ(DTypeFromCode("bf"), DType::kBFloat16); }

}  // namespace
}  // namespace gpuflow
