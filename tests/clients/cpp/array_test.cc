#include "clients/cpp/array.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::client {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ArrayTest, EveryDTypeHasANameThatParsesBack) {
  EXPECT_EQ(AllDTypes().size(), 15u);
  for (v1::DType dtype : AllDTypes()) {
    EXPECT_GT(ItemSize(dtype), 0) << DTypeName(dtype);
    EXPECT_THAT(ParseDTypeName(DTypeName(dtype)), IsOkAndHolds(dtype));
  }
  EXPECT_EQ(DTypeName(v1::DTYPE_BFLOAT16), "bfloat16");
  EXPECT_EQ(ItemSize(v1::DTYPE_UINT64), 8);
  EXPECT_EQ(ItemSize(v1::DTYPE_UNSPECIFIED), 0);
  EXPECT_THAT(ParseDTypeName("float"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float32")));
}

TEST(ArrayTest, FromValuesChecksCountAndItemSize) {
  ASSERT_OK_AND_ASSIGN(Array a, Array::FromValues<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a.dtype, v1::DTYPE_FLOAT32);
  EXPECT_EQ(a.num_elements(), 6);
  EXPECT_EQ(a.TypeString(), "float32[2, 3]");
  EXPECT_THAT(a.ValuesAs<float>(), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(a.Validate(), IsOk());

  EXPECT_THAT(Array::FromValues<float>({2}, {1, 2, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds 2 elements but 3")));
  EXPECT_THAT(Array::FromValues<float>({2}, {1, 2}, v1::DTYPE_FLOAT64),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4-byte")));
  ASSERT_OK_AND_ASSIGN(Array half, Array::FromValues<uint16_t>({}, {0x3c00}, v1::DTYPE_FLOAT16));
  EXPECT_EQ(half.num_elements(), 1);
  EXPECT_EQ(HalfToFloat(half.ValuesAs<uint16_t>()[0]), 1.0f);
}

TEST(ArrayTest, ValidateNamesWhatIsWrong) {
  Array a;
  EXPECT_THAT(a.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype")));
  a.dtype = v1::DTYPE_INT16;
  a.shape = {2, -1};
  EXPECT_THAT(a.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative")));
  a.shape = {3};
  a.data = "12345";
  EXPECT_THAT(a.Validate(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("int16[3] needs 6 bytes but holds 5")));
  a.shape = {std::numeric_limits<int64_t>::max() / 2 + 1};
  EXPECT_THAT(a.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2^63 bytes")));
  a.shape = {0, 5};
  a.data.clear();
  EXPECT_THAT(a.Validate(), IsOk());
}

TEST(ArrayTest, NumElementsChecksOverflow) {
  EXPECT_THAT(NumElements({}), IsOkAndHolds(1));
  EXPECT_THAT(NumElements({3, 0, 7}), IsOkAndHolds(0));
  EXPECT_THAT(NumElements({int64_t{1} << 32, int64_t{1} << 32}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2^63")));
}

TEST(ArrayTest, InlineRoundTrip) {
  ASSERT_OK_AND_ASSIGN(Array a, Array::FromValues<int64_t>({2}, {-1, 5}));
  ASSERT_OK_AND_ASSIGN(Array back, FromInline(ToInline(a)));
  EXPECT_EQ(back, a);
  v1::InlineArray bad = ToInline(a);
  bad.set_data("short");
  EXPECT_THAT(FromInline(bad), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ArrayTest, HalfConversionsMatchIeee) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);         // a tie rounds to even (0)
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002);         // a tie rounds to even (2)
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  // Every half converts to float and back unchanged.
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float value = HalfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(FloatToHalf(value), bits) << std::hex << bits;
  }
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
}

TEST(ArrayTest, BFloat16ConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);  // to infinity
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float value = BFloat16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(FloatToBFloat16(value), bits) << std::hex << bits;
  }
}

}  // namespace
}  // namespace gpuflow::client
