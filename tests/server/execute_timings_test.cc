// Execute's Timings.total against a real in-process gRPC server: it covers
// the whole of gpuflow's handling, from the handler being entered to just
// before the reply is handed to gRPC, the call's own metrics and log line
// included (issue 15).
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cpu/cpu_backend.h"
#include "gpuflow/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/compute_pool.h"
#include "server/gpuflow_service.h"
#include "server/graph_runner.h"
#include "server/logging.h"
#include "server/server_metrics.h"
#include "server/session_registry.h"

namespace gpuflow::server {
namespace {

// How long writing an Execute's request log line takes in these tests.
constexpr absl::Duration kSlowLogLine = absl::Milliseconds(40);

class ExecuteTimingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<GpuFlowService>(sessions_, plans_, runner_, pool_, ServiceOptions{},
                                                Telemetry{.metrics = &metrics_, .log = &log_});
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::GpuFlow::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));

    grpc::ClientContext context;
    v1::CreateSessionRequest create;
    create.set_label("timings");
    v1::SessionInfo info;
    ASSERT_TRUE(stub_->CreateSession(&context, create, &info).ok());
    // y = full((3,), 1.0) * 2 + 1, returned inline.
    request_.set_session_id(info.session_id());
    v1::Node* full = request_.mutable_graph()->add_nodes();
    full->set_id("x");
    full->set_op("full");
    full->add_inputs()->mutable_scalar()->set_float_value(1.0);
    (*full->mutable_attrs())["shape"].mutable_ints()->add_values(3);
    (*full->mutable_attrs())["dtype"].set_dtype_value(v1::DTYPE_FLOAT32);
    v1::Node* mul = request_.mutable_graph()->add_nodes();
    mul->set_id("m");
    mul->set_op("mul");
    mul->add_inputs()->set_node("x");
    mul->add_inputs()->mutable_scalar()->set_float_value(2.0);
    v1::Node* add = request_.mutable_graph()->add_nodes();
    add->set_id("y");
    add->set_op("add");
    add->add_inputs()->set_node("m");
    add->add_inputs()->mutable_scalar()->set_float_value(1.0);
    v1::OutputSpec* out = request_.add_outputs();
    out->set_node("y");
    out->set_return_inline(true);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // One Execute through the stub; `wall` is the client's time for it.
  v1::ExecuteResponse Execute(absl::Duration* wall) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::ExecuteResponse response;
    const absl::Time start = absl::Now();
    grpc::Status status = stub_->Execute(&context, request_, &response);
    *wall = absl::Now() - start;
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  SessionRegistry sessions_{*backend_, {}};
  PlanCache plans_{PlanOptions{}};
  GraphRunner runner_{*backend_, plans_, GraphLimits{.request_cache_entries = 4}};
  ComputePool pool_{2};
  ServerMetrics metrics_;
  // Writing an Execute's log line is slow, so a total that ended before it
  // would be far shorter than kSlowLogLine.
  Logger log_{{.sink = [](absl::string_view line) {
    if (absl::StrContains(line, "method=Execute")) absl::SleepFor(kSlowLogLine);
  }}};
  std::unique_ptr<GpuFlowService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::GpuFlow::Stub> stub_;
  v1::ExecuteRequest request_;
};

// The first call runs on a compute thread, the repeat (a request-cache hit
// whose last run was short) on the gRPC thread that received it: the total
// covers the log line either way, and stays within what the client saw.
TEST_F(ExecuteTimingsTest, TotalCoversTheCallsOwnLogLineOnBothPaths) {
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(absl::StrCat("call ", i));
    absl::Duration wall;
    const v1::ExecuteResponse response = Execute(&wall);
    ASSERT_EQ(response.outputs_size(), 1);
    EXPECT_EQ(response.outputs(0).value().data().size(), 3 * sizeof(float));
    const v1::Timings& t = response.timings();
    EXPECT_EQ(t.request_cache_hit(), i == 1);
    EXPECT_GE(t.total_seconds(), absl::ToDoubleSeconds(kSlowLogLine));
    EXPECT_LE(t.total_seconds(), absl::ToDoubleSeconds(wall));
    EXPECT_GE(t.total_seconds(), t.queue_seconds() + t.convert_seconds() + t.validate_seconds() +
                                     t.plan_seconds() + t.run_seconds() + t.transfer_seconds());
  }
}

}  // namespace
}  // namespace gpuflow::server
