#include "server/rpc_observer.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::server {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::SizeIs;

class RpcObserverTest : public ::testing::Test {
 protected:
  RpcObserverTest()
      : log_({.format = LogFormat::kText,
              .sink = [this](absl::string_view line) { lines_.emplace_back(line); }}) {}

  std::string Scrape() const { return metrics_.Scrape(); }

  ServerMetrics metrics_;
  std::vector<std::string> lines_;
  Logger log_;
  Telemetry telemetry_{.metrics = &metrics_, .log = &log_};
};

TEST_F(RpcObserverTest, FinishCountsTimesAndLogsOneLine) {
  RpcObserver call(telemetry_, RpcMethod::kExecute);
  call.set_session_label("nightly job");
  const grpc::Status status = call.Finish(absl::OkStatus());
  EXPECT_TRUE(status.ok());
  EXPECT_THAT(Scrape(),
              HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"Execute\"} 1\n"));
  EXPECT_THAT(Scrape(), HasSubstr("gpuflow_rpc_duration_seconds_count{method=\"Execute\"} 1\n"));
  ASSERT_THAT(lines_, SizeIs(1));
  EXPECT_THAT(lines_[0], MatchesRegex(".* gpuflowd: rpc method=Execute session_label=\"nightly "
                                      "job\" code=OK duration_ms=[0-9.e-]+\n"));
}

TEST_F(RpcObserverTest, TraceparentIsLoggedWithTheCall) {
  RpcObserver call(telemetry_, RpcMethod::kExecute);
  call.set_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  RpcObserver moved(std::move(call));
  moved.Finish(absl::OkStatus());
  ASSERT_THAT(lines_, SizeIs(1));
  EXPECT_THAT(lines_[0],
              HasSubstr(" traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
}

TEST_F(RpcObserverTest, FailureKeepsTheCodeAndHidesTheSessionId) {
  const std::string id = "0123456789abcdef0123456789abcdef";
  RpcObserver call(telemetry_, RpcMethod::kKeepAlive);
  call.set_session_id(id);
  const grpc::Status status =
      call.Finish(absl::NotFoundError("unknown or expired session '" + id + "'"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  // The caller still gets the whole message.
  EXPECT_THAT(status.error_message(), HasSubstr(id));
  EXPECT_THAT(Scrape(),
              HasSubstr("gpuflow_rpc_requests_total{code=\"NOT_FOUND\",method=\"KeepAlive\"} 1\n"));
  ASSERT_THAT(lines_, SizeIs(1));
  EXPECT_THAT(lines_[0], HasSubstr("code=NOT_FOUND"));
  EXPECT_THAT(lines_[0], HasSubstr("error=\"unknown or expired session '<session>'\""));
  EXPECT_THAT(lines_[0], Not(HasSubstr(id)));
}

TEST_F(RpcObserverTest, TenantIsLoggedAndCountedAndItsSlotGivenBack) {
  auto tenant = std::make_shared<Tenant>("team-a", TenantLimits{.max_concurrent_requests = 1});
  {
    RpcObserver call(telemetry_, RpcMethod::kCreateSession);
    call.set_tenant(tenant);
    absl::StatusOr<Tenant::RequestSlot> slot = tenant->BeginRequest();
    ASSERT_TRUE(slot.ok());
    call.set_request_slot(*std::move(slot));
    RpcObserver moved(std::move(call));
    EXPECT_EQ(tenant->requests_in_flight(), 1);
    moved.Finish(absl::OkStatus());
    // Given back when the call finishes, before the reply goes out.
    EXPECT_EQ(tenant->requests_in_flight(), 0);
  }
  EXPECT_THAT(Scrape(), HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"CreateSession\","
                                  "tenant=\"team-a\"} 1\n"));
  ASSERT_THAT(lines_, SizeIs(1));
  EXPECT_THAT(lines_[0], HasSubstr("rpc method=CreateSession tenant=team-a session_label="));
}

TEST_F(RpcObserverTest, AnonymousTenantIsNotALabel) {
  RpcObserver call(telemetry_, RpcMethod::kKeepAlive);
  call.set_tenant(std::make_shared<Tenant>("", TenantLimits{}));
  call.Finish(absl::OkStatus());
  EXPECT_THAT(Scrape(),
              HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"KeepAlive\"} 1\n"));
  EXPECT_THAT(Scrape(), Not(HasSubstr("tenant=")));
  ASSERT_THAT(lines_, SizeIs(1));
  EXPECT_THAT(lines_[0], Not(HasSubstr("tenant")));
}

TEST_F(RpcObserverTest, RefusedCallerLogsWhyAndFromWhereButNoTenant) {
  RpcObserver call(telemetry_, RpcMethod::kGetServerInfo);
  call.set_auth_failure(AuthFailure::kUnknownToken, "ipv4:10.1.2.3:5555");
  call.Finish(absl::UnauthenticatedError("this server requires a bearer token"));
  EXPECT_THAT(Scrape(), HasSubstr("gpuflow_rpc_requests_total{code=\"UNAUTHENTICATED\","
                                  "method=\"GetServerInfo\"} 1\n"));
  ASSERT_THAT(lines_, SizeIs(1));
  EXPECT_THAT(lines_[0], HasSubstr("code=UNAUTHENTICATED"));
  EXPECT_THAT(lines_[0], HasSubstr("auth=\"unknown token\" peer=ipv4:10.1.2.3:5555"));
}

TEST_F(RpcObserverTest, RecordsOnceEvenWhenMovedOrFinishedTwice) {
  {
    RpcObserver call(telemetry_, RpcMethod::kUploadArray);
    RpcObserver moved(std::move(call));
    moved.Finish(absl::OkStatus());
    moved.Finish(absl::InternalError("again"));
  }
  EXPECT_THAT(Scrape(),
              HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"UploadArray\"} 1\n"));
  EXPECT_THAT(Scrape(), Not(HasSubstr("INTERNAL")));
  EXPECT_THAT(lines_, SizeIs(1));
}

TEST_F(RpcObserverTest, DroppedUnfinishedCallCountsAsCancelled) {
  { RpcObserver call(telemetry_, RpcMethod::kBenchmark); }
  EXPECT_THAT(Scrape(),
              HasSubstr("gpuflow_rpc_requests_total{code=\"CANCELLED\",method=\"Benchmark\"} 1\n"));
}

TEST_F(RpcObserverTest, NoLogBelowInfoAndNullSinksAreFine) {
  log_.set_min_level(LogLevel::kWarning);
  RpcObserver(telemetry_, RpcMethod::kGetServerInfo).Finish(absl::OkStatus());
  EXPECT_THAT(lines_, IsEmpty());
  RpcObserver(Telemetry{}, RpcMethod::kGetServerInfo).Finish(absl::OkStatus());
  EXPECT_THAT(Scrape(),
              HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"GetServerInfo\"} 1\n"));
}

}  // namespace
}  // namespace gpuflow::server
