#include "server/request_control.h"

#include <memory>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/grpc_status.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

class RequestControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Session>> session =
        registry_.Create({.label = "rc", .memory_limit_bytes = 1000});
    ASSERT_THAT(session, IsOk());
    session_ = *std::move(session);
  }
  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  SessionRegistry registry_{*backend_, {}};
  std::shared_ptr<Session> session_;
};

TEST_F(RequestControlTest, StopsPastTheServersCap) {
  RequestControl control(nullptr, session_.get(), absl::Milliseconds(30));
  EXPECT_THAT(control.CheckContinue(), IsOk());
  absl::SleepFor(absl::Milliseconds(40));
  EXPECT_THAT(control.CheckContinue(),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("--max_request_duration")));
}

TEST_F(RequestControlTest, NoCapRunsOn) {
  RequestControl control(nullptr, session_.get(), absl::ZeroDuration());
  EXPECT_EQ(control.deadline(), absl::InfiniteFuture());
  EXPECT_THAT(control.CheckContinue(), IsOk());
}

TEST_F(RequestControlTest, StopsWhenTheSessionCloses) {
  RequestControl control(nullptr, session_.get(), absl::Minutes(1));
  ASSERT_THAT(registry_.Close(session_->id()), IsOk());
  EXPECT_THAT(control.CheckContinue(),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("session was closed")));
}

TEST_F(RequestControlTest, ChargesTheSessionAndGivesEverythingBack) {
  {
    RequestControl control(nullptr, session_.get(), absl::Minutes(1));
    ASSERT_THAT(control.Acquire(600), IsOk());
    EXPECT_EQ(session_->memory_used_bytes(), 600);
    EXPECT_THAT(control.Acquire(401), StatusIs(absl::StatusCode::kResourceExhausted,
                                               HasSubstr("401 bytes requested, 400")));
    control.Release(100);
    EXPECT_EQ(control.charged(), 500);
  }  // what is still charged is given back
  EXPECT_EQ(session_->memory_used_bytes(), 0);
}

TEST(BoundedMessageTest, CutsLongMessagesAndKeepsShortOnes) {
  EXPECT_EQ(BoundedMessage("short"), "short");
  const std::string cut = BoundedMessage(std::string(1 << 20, 'x'));
  EXPECT_LE(cut.size(), kMaxStatusMessageBytes);
  EXPECT_THAT(cut, HasSubstr("(1048576 bytes, cut)"));
  EXPECT_EQ(
      ToGrpcStatus(absl::InvalidArgumentError(std::string(1 << 20, 'y'))).error_message().size(),
      cut.size());
}

}  // namespace
}  // namespace gpuflow::server
