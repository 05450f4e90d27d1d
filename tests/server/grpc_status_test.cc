#include "server/grpc_status.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::server {
namespace {

// absl and gRPC share the canonical code space: 0 (OK) to 16
// (UNAUTHENTICATED).
constexpr int kLastCanonicalCode = 16;

TEST(GrpcStatusTest, EveryAbslCodeMapsToTheSameNumberedGrpcCode) {
  for (int code = 0; code <= kLastCanonicalCode; ++code) {
    const auto absl_code = static_cast<absl::StatusCode>(code);
    SCOPED_TRACE(absl::StatusCodeToString(absl_code));
    EXPECT_EQ(static_cast<int>(ToGrpcCode(absl_code)), code);
  }
}

TEST(GrpcStatusTest, NamedCodesMatch) {
  EXPECT_EQ(ToGrpcCode(absl::StatusCode::kInvalidArgument), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpcCode(absl::StatusCode::kNotFound), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcCode(absl::StatusCode::kResourceExhausted), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(ToGrpcCode(absl::StatusCode::kUnimplemented), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(ToGrpcCode(absl::StatusCode::kUnauthenticated), grpc::StatusCode::UNAUTHENTICATED);
}

TEST(GrpcStatusTest, CodesOutsideTheCanonicalSpaceBecomeUnknown) {
  EXPECT_EQ(ToGrpcCode(static_cast<absl::StatusCode>(17)), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToGrpcCode(static_cast<absl::StatusCode>(1000)), grpc::StatusCode::UNKNOWN);
}

TEST(GrpcStatusTest, OkStaysOk) {
  const grpc::Status status = ToGrpcStatus(absl::OkStatus());
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::OK);
  EXPECT_EQ(status.error_message(), "");
}

TEST(GrpcStatusTest, EveryErrorKeepsItsCodeAndMessage) {
  for (int code = 1; code <= kLastCanonicalCode; ++code) {
    const std::string message = absl::StrCat("message for code ", code, " with \"quotes\"\n");
    const grpc::Status status =
        ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(code), message));
    EXPECT_EQ(static_cast<int>(status.error_code()), code);
    EXPECT_EQ(status.error_message(), message);
  }
}

TEST(GrpcStatusTest, NonAsciiMessageIsKeptByteForByte) {
  const std::string message = "array 'x\xc3\xa9' not found";
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError(message)).error_message(), message);
}

}  // namespace
}  // namespace gpuflow::server
