// The health monitor against a real in-process gRPC server running the
// GpuFlow service on a FakeBackend that the test marks unhealthy (clients of
// gpuflowd have no way to do that).
#include "server/health_monitor.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "google/protobuf/wrappers.pb.h"
#include "gpuflow/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/compute_pool.h"
#include "server/gpuflow_service.h"
#include "server/graph_runner.h"
#include "server/server_metrics.h"
#include "server/session_registry.h"
#include "tests/server/fake_backend.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::FakeBackend;
using ::testing::HasSubstr;

// grpc.health.v1.HealthCheckResponse.ServingStatus
constexpr int kServing = 1;
constexpr int kNotServing = 2;

class HealthMonitorTest : public ::testing::Test {
 protected:
  void StartServer(absl::Duration interval) {
    grpc::EnableDefaultHealthCheckService(true);
    health_ = std::make_unique<HealthMonitor>(backend_,
                                              std::vector<std::string>{"", "gpuflow.v1.GpuFlow"},
                                              HealthMonitorOptions{.interval = interval});
    service_ =
        std::make_unique<GpuFlowService>(sessions_, plans_, runner_, pool_, ServiceOptions{},
                                         Telemetry{.metrics = &metrics_, .health = health_.get()});
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    health_->Start(server_->GetHealthCheckService());
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    stub_ = v1::GpuFlow::NewStub(channel_);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // grpc.health.v1.Health/Check by hand (no C++ stubs for it here): its
  // messages are wire-compatible with StringValue and Int32Value.
  int Health(const std::string& service) {
    grpc::TemplatedGenericStub<google::protobuf::StringValue, google::protobuf::Int32Value> stub(
        channel_);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    google::protobuf::StringValue request;
    request.set_value(service);
    google::protobuf::Int32Value response;
    grpc::Status status;
    absl::Notification done;
    stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                   &response, [&](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
    done.WaitForNotification();
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.value();
  }

  // Polls until both services report `expected`, for up to 10 s.
  bool WaitForHealth(int expected) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      if (Health("") == expected && Health("gpuflow.v1.GpuFlow") == expected) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }

  std::string Scrape() const { return metrics_.Scrape(); }

  FakeBackend backend_;
  SessionRegistry sessions_{backend_, {}};
  PlanCache plans_{PlanOptions{}};
  GraphRunner runner_{backend_, plans_, GraphLimits{}};
  ComputePool pool_{1};
  ServerMetrics metrics_;
  std::unique_ptr<HealthMonitor> health_;
  std::unique_ptr<GpuFlowService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::GpuFlow::Stub> stub_;
};

TEST_F(HealthMonitorTest, PollingFollowsTheBackendBothWays) {
  StartServer(absl::Milliseconds(10));
  EXPECT_EQ(Health(""), kServing);
  EXPECT_EQ(Health("gpuflow.v1.GpuFlow"), kServing);
  backend_.set_healthy(false);
  EXPECT_TRUE(WaitForHealth(kNotServing));
  EXPECT_FALSE(health_->serving());
  backend_.set_healthy(true);
  EXPECT_TRUE(WaitForHealth(kServing));
}

TEST_F(HealthMonitorTest, FailedRequestFlipsHealthWithoutWaitingForAPoll) {
  StartServer(absl::ZeroDuration());  // no polling at all
  ASSERT_EQ(Health(""), kServing);
  backend_.set_healthy(false);
  grpc::ClientContext context;
  v1::KeepAliveRequest request;
  request.set_session_id(std::string(32, '0'));
  v1::SessionInfo response;
  EXPECT_EQ(stub_->KeepAlive(&context, request, &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Health(""), kNotServing);
  EXPECT_EQ(Health("gpuflow.v1.GpuFlow"), kNotServing);
  EXPECT_THAT(Scrape(), HasSubstr("gpuflow_rpc_requests_total{code=\"UNAVAILABLE\","
                                  "method=\"KeepAlive\"} 1\n"));
}

TEST_F(HealthMonitorTest, UnhealthyAtStartIsNotServing) {
  backend_.set_healthy(false);
  StartServer(absl::ZeroDuration());
  EXPECT_EQ(Health(""), kNotServing);
  EXPECT_EQ(Health("gpuflow.v1.GpuFlow"), kNotServing);
}

TEST_F(HealthMonitorTest, ShutdownIsNotServingForGood) {
  StartServer(absl::Milliseconds(5));
  ASSERT_EQ(Health(""), kServing);
  health_->Shutdown();
  EXPECT_EQ(Health(""), kNotServing);
  EXPECT_EQ(Health("gpuflow.v1.GpuFlow"), kNotServing);
  // The backend is healthy, but polls and checks no longer publish.
  absl::SleepFor(absl::Milliseconds(50));
  health_->Check();
  EXPECT_EQ(Health(""), kNotServing);
  EXPECT_FALSE(health_->serving());
}

}  // namespace
}  // namespace gpuflow::server
