#include "server/proto_convert.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ProtoConvertTest, DTypeRoundTripsForEveryDType) {
  for (const DTypeInfo& info : AllDTypes()) {
    SCOPED_TRACE(std::string(info.name));
    const v1::DType proto = DTypeToProto(info.dtype);
    EXPECT_NE(proto, v1::DTYPE_UNSPECIFIED);
    EXPECT_THAT(DTypeFromProto(proto), IsOkAndHolds(info.dtype));
  }
}

// The wire enum is named after NumPy's names, like the engine's table.
TEST(ProtoConvertTest, ProtoDTypeNamesMatchEngineNames) {
  for (const DTypeInfo& info : AllDTypes()) {
    EXPECT_EQ(v1::DType_Name(DTypeToProto(info.dtype)),
              absl::StrCat("DTYPE_", absl::AsciiStrToUpper(info.name)));
  }
}

TEST(ProtoConvertTest, EveryProtoDTypeButUnspecifiedIsKnown) {
  int known = 0;
  for (int value = v1::DType_MIN; value <= v1::DType_MAX; ++value) {
    if (!v1::DType_IsValid(value) || value == v1::DTYPE_UNSPECIFIED) continue;
    ASSERT_OK_AND_ASSIGN(DType dtype, DTypeFromProto(value));
    EXPECT_EQ(DTypeToProto(dtype), value);
    ++known;
  }
  EXPECT_EQ(known, kNumDTypes);
}

TEST(ProtoConvertTest, UnspecifiedDTypeIsAnError) {
  EXPECT_THAT(DTypeFromProto(v1::DTYPE_UNSPECIFIED),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype is not set")));
}

TEST(ProtoConvertTest, UnknownDTypeValueIsAnErrorNamingIt) {
  EXPECT_THAT(DTypeFromProto(v1::DType_MAX + 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("unknown dtype value ", v1::DType_MAX + 1))));
  EXPECT_THAT(DTypeFromProto(-1), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ProtoConvertTest, ShapeFromProtoValidates) {
  google::protobuf::RepeatedField<int64_t> dims;
  EXPECT_THAT(ShapeFromProto(dims), IsOkAndHolds(Shape()));
  dims.Add(2);
  dims.Add(3);
  ASSERT_OK_AND_ASSIGN(Shape shape, ShapeFromProto(dims));
  EXPECT_THAT(shape.dims(), ElementsAre(2, 3));
  dims.Add(-1);
  EXPECT_THAT(ShapeFromProto(dims), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ProtoConvertTest, ShapeFromProtoRejectsRankOver64) {
  google::protobuf::RepeatedField<int64_t> dims;
  for (int i = 0; i < 64; ++i) dims.Add(1);
  EXPECT_THAT(ShapeFromProto(dims), IsOk());
  dims.Add(1);
  EXPECT_THAT(ShapeFromProto(dims),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 65")));
}

TEST(ProtoConvertTest, FillArrayInfoDescribesTheArray) {
  Array array;
  array.dtype = DType::kFloat64;
  array.shape = *Shape::Create({4, 5});
  v1::ArrayInfo info;
  FillArrayInfo("weights", array, &info);
  EXPECT_EQ(info.name(), "weights");
  EXPECT_EQ(info.dtype(), v1::DTYPE_FLOAT64);
  EXPECT_THAT(info.shape(), ElementsAre(4, 5));
  EXPECT_EQ(info.num_elements(), 20);
  EXPECT_EQ(info.num_bytes(), 160);

  Array scalar;
  scalar.dtype = DType::kInt16;
  v1::ArrayInfo scalar_info;
  FillArrayInfo("s", scalar, &scalar_info);
  EXPECT_EQ(scalar_info.shape_size(), 0);
  EXPECT_EQ(scalar_info.num_elements(), 1);
  EXPECT_EQ(scalar_info.num_bytes(), 2);
}

TEST(ProtoConvertTest, DurationRoundTrips) {
  for (absl::Duration d : {absl::ZeroDuration(), absl::Milliseconds(300), absl::Seconds(1),
                           absl::Seconds(90) + absl::Nanoseconds(7), absl::Hours(24)}) {
    google::protobuf::Duration proto;
    DurationToProto(d, &proto);
    EXPECT_EQ(DurationFromProto(proto), d) << d;
  }
  google::protobuf::Duration proto;
  DurationToProto(absl::Milliseconds(1500), &proto);
  EXPECT_EQ(proto.seconds(), 1);
  EXPECT_EQ(proto.nanos(), 500'000'000);
}

TEST(ValidateNameTest, AcceptsTheAllowedAlphabet) {
  EXPECT_THAT(ValidateName("x", "array name"), IsOk());
  EXPECT_THAT(ValidateName("layer_1.weight:v2-final", "array name"), IsOk());
  EXPECT_THAT(ValidateName("ABCxyz0189", "array name"), IsOk());
  EXPECT_THAT(ValidateName(std::string(128, 'a'), "array name"), IsOk());
}

TEST(ValidateNameTest, RejectsEmptyAndTooLongNames) {
  EXPECT_THAT(ValidateName("", "array name"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("array name must have 1 to 128 characters, got 0")));
  EXPECT_THAT(ValidateName(std::string(129, 'a'), "session label"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("session label")));
}

TEST(ValidateNameTest, RejectsOtherCharactersAndEscapesThem) {
  for (const char* bad : {"a b", "a/b", "../x", "a\nb", "caf\xc3\xa9", "x*", "a,b", "\"q\""}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ValidateName(bad, "array name"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[A-Za-z0-9_.:-]")));
  }
  EXPECT_THAT(ValidateName("a\nb", "array name"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'a\\nb'")));
  EXPECT_THAT(ValidateName(absl::string_view("a\0b", 3), "array name"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace gpuflow::server
