#include "engine/ir/dtype.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

struct Expected {
  DType dtype;
  const char* name;
  int64_t itemsize;
  DTypeKind kind;
};

// Written out independently of dtype.cc, so a wrong table entry shows up.
constexpr Expected kExpected[] = {
    {DType::kBool, "bool", 1, DTypeKind::kBool},
    {DType::kInt8, "int8", 1, DTypeKind::kSigned},
    {DType::kInt16, "int16", 2, DTypeKind::kSigned},
    {DType::kInt32, "int32", 4, DTypeKind::kSigned},
    {DType::kInt64, "int64", 8, DTypeKind::kSigned},
    {DType::kUInt8, "uint8", 1, DTypeKind::kUnsigned},
    {DType::kUInt16, "uint16", 2, DTypeKind::kUnsigned},
    {DType::kUInt32, "uint32", 4, DTypeKind::kUnsigned},
    {DType::kUInt64, "uint64", 8, DTypeKind::kUnsigned},
    {DType::kFloat16, "float16", 2, DTypeKind::kFloat},
    {DType::kBFloat16, "bfloat16", 2, DTypeKind::kFloat},
    {DType::kFloat32, "float32", 4, DTypeKind::kFloat},
    {DType::kFloat64, "float64", 8, DTypeKind::kFloat},
    {DType::kComplex64, "complex64", 8, DTypeKind::kComplex},
    {DType::kComplex128, "complex128", 16, DTypeKind::kComplex},
};
static_assert(std::size(kExpected) == kNumDTypes);

TEST(DTypeTest, EveryDTypeHasNumPyNameItemSizeAndKind) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(DTypeName(e.dtype), e.name);
    EXPECT_EQ(ItemSize(e.dtype), e.itemsize);
    EXPECT_EQ(KindOf(e.dtype), e.kind);
    EXPECT_EQ(GetDTypeInfo(e.dtype).dtype, e.dtype);
    EXPECT_EQ(IsFloat(e.dtype), e.kind == DTypeKind::kFloat);
    EXPECT_EQ(IsInteger(e.dtype), e.kind == DTypeKind::kSigned || e.kind == DTypeKind::kUnsigned);
    EXPECT_EQ(IsComplex(e.dtype), e.kind == DTypeKind::kComplex);
  }
}

TEST(DTypeTest, ComplexDTypesPairWithTheirRealParts) {
  EXPECT_EQ(RealDType(DType::kComplex64), DType::kFloat32);
  EXPECT_EQ(RealDType(DType::kComplex128), DType::kFloat64);
  EXPECT_EQ(RealDType(DType::kInt8), DType::kInt8);
  EXPECT_EQ(ComplexDType(DType::kFloat64), DType::kComplex128);
  EXPECT_EQ(ComplexDType(DType::kFloat32), DType::kComplex64);
  EXPECT_EQ(ComplexDType(DType::kFloat16), DType::kComplex64);
  EXPECT_EQ(ComplexDType(DType::kBFloat16), DType::kComplex64);
  EXPECT_EQ(ComplexDType(DType::kComplex128), DType::kComplex128);
  EXPECT_THAT(ParseDType("complex64"), ::gpuflow::testing::IsOkAndHolds(DType::kComplex64));
}

TEST(DTypeTest, AllDTypesListsEachDTypeOnceInEnumOrder) {
  std::set<absl::string_view> names;
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(AllDTypes()[i].dtype, static_cast<DType>(i));
    EXPECT_EQ(AllDTypes()[i].name, kExpected[i].name);
    names.insert(AllDTypes()[i].name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumDTypes));
}

TEST(DTypeTest, ParseDTypeRoundTripsEveryName) {
  for (const DTypeInfo& info : AllDTypes()) {
    SCOPED_TRACE(std::string(info.name));
    absl::StatusOr<DType> parsed = ParseDType(info.name);
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(*parsed, info.dtype);
    EXPECT_EQ(DTypeName(*parsed), info.name);
  }
}

TEST(DTypeTest, ParseDTypeRejectsUnknownNamesAndQuotesThem) {
  for (const char* bad : {"", "float", "Float32", "float32 ", "f4", "complex32", "int128"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ParseDType(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr(absl::StrCat("'", bad, "'"))));
  }
}

}  // namespace
}  // namespace gpuflow
