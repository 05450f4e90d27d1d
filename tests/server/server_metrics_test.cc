#include "server/server_metrics.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/ir/shape.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/device_set.h"
#include "server/session_registry.h"
#include "tests/server/fake_backend.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::FakeBackend;
using ::gpuflow::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;

class ServerMetricsTest : public ::testing::Test {
 protected:
  std::string Scrape() const { return metrics_.Scrape(); }

  ServerMetrics metrics_;
};

TEST_F(ServerMetricsTest, HotPathSeriesStartAtZero) {
  const std::string text = Scrape();
  for (const char* method : {"GetServerInfo", "CreateSession", "CloseSession", "KeepAlive",
                             "UploadArray", "DownloadArray", "ListArrays", "GetArrayInfo",
                             "DeleteArray", "Execute", "Benchmark", "Precompile"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("gpuflow_rpc_requests_total{code=\"OK\",method=\"",
                                             method, "\"} 0\n")));
    EXPECT_THAT(text, HasSubstr(absl::StrCat("gpuflow_rpc_duration_seconds_count{method=\"", method,
                                             "\"} 0\n")));
  }
  for (const char* phase : {"validate", "plan", "compile", "launch", "gpu", "transfer"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("gpuflow_execute_phase_seconds_count{phase=\"", phase,
                                             "\"} 0\n")));
  }
  for (const char* step :
       {"elementwise", "reduction", "matmul", "scan", "custom", "copy", "creation", "sort"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("gpuflow_gpu_time_seconds_count{device=\"0\",step=\"",
                                             step, "\"} 0\n")));
  }
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compile_seconds_count 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_transfer_bytes_total{direction=\"upload\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_transfer_bytes_total{direction=\"download\"} 0\n"));
}

TEST_F(ServerMetricsTest, RecordRpcCountsByMethodAndCode) {
  metrics_.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::OK, 0.002);
  metrics_.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::OK, 0.003);
  metrics_.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::INVALID_ARGUMENT, 0.001);
  metrics_.RecordRpc(RpcMethod::kKeepAlive, grpc::StatusCode::NOT_FOUND, 0.0001);
  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"Execute\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_requests_total{code=\"INVALID_ARGUMENT\","
                              "method=\"Execute\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuflow_rpc_requests_total{code=\"NOT_FOUND\",method=\"KeepAlive\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_duration_seconds_count{method=\"Execute\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_duration_seconds_sum{method=\"Execute\"} 0.006\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_duration_seconds_bucket{method=\"Execute\","
                              "le=\"0.001\"} 1\n"));
}

TEST_F(ServerMetricsTest, RecordRpcCountsEachTenantApart) {
  metrics_.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::OK, 0.001, "team-a");
  metrics_.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::OK, 0.001, "team-a");
  metrics_.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::OK, 0.001, "team-b");
  metrics_.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::OK, 0.001);
  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"Execute\","
                              "tenant=\"team-a\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"Execute\","
                              "tenant=\"team-b\"} 1\n"));
  // A call of no tenant (auth off, or refused) keeps the series of before.
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_requests_total{code=\"OK\",method=\"Execute\"} 1\n"));
  // Durations stay per method only.
  EXPECT_THAT(text, HasSubstr("gpuflow_rpc_duration_seconds_count{method=\"Execute\"} 4\n"));
}

TEST_F(ServerMetricsTest, RecordExecuteObservesPhasesAndProfiledSteps) {
  v1::Timings timings;
  timings.set_validate_seconds(0.001);
  timings.set_plan_seconds(0.002);
  timings.set_run_seconds(0.010);
  timings.set_compile_seconds(0.004);
  timings.set_kernels_compiled(2);
  timings.set_transfer_seconds(0.003);
  timings.set_gpu_seconds(0.005);
  v1::StepTiming* step = timings.add_steps();
  step->set_kind("elementwise");
  step->set_gpu_seconds(0.002);
  step = timings.add_steps();
  step->set_kind("reduction");
  step->set_gpu_seconds(0.003);
  timings.add_steps()->set_kind("copy");  // no GPU time: not observed
  metrics_.RecordExecute(timings);

  // A cached CPU-backend run: no compile, no GPU time.
  v1::Timings cached;
  cached.set_run_seconds(0.001);
  metrics_.RecordExecute(cached);

  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_execute_phase_seconds_count{phase=\"validate\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_execute_phase_seconds_count{phase=\"compile\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_execute_phase_seconds_sum{phase=\"compile\"} 0.004\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_execute_phase_seconds_sum{phase=\"launch\"} 0.007\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_execute_phase_seconds_count{phase=\"gpu\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_execute_phase_seconds_sum{phase=\"transfer\"} 0.003\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuflow_gpu_time_seconds_count{device=\"0\",step=\"elementwise\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuflow_gpu_time_seconds_sum{device=\"0\",step=\"reduction\"} 0.003\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_gpu_time_seconds_count{device=\"0\",step=\"copy\"} 0\n"));
  // Compiles are RecordCompiles' to count.
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compile_seconds_count 0\n"));
}

TEST_F(ServerMetricsTest, RecordCompilesObservesEachKernelAtTheMean) {
  metrics_.RecordCompiles(4, 2.0);
  metrics_.RecordCompiles(0, 0);
  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compile_seconds_count 4\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compile_seconds_sum 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compile_seconds_bucket{le=\"0.5\"} 4\n"));
}

TEST_F(ServerMetricsTest, TransferBytes) {
  metrics_.AddTransferBytes(TransferDirection::kUpload, 1 << 20);
  metrics_.AddTransferBytes(TransferDirection::kDownload, 12);
  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_transfer_bytes_total{direction=\"upload\"} 1048576\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_transfer_bytes_total{direction=\"download\"} 12\n"));
}

TEST_F(ServerMetricsTest, LimitsAreExported) {
  metrics_.SetLimits(64, int64_t{80} << 30);
  EXPECT_THAT(Scrape(), HasSubstr("gpuflow_sessions_max 64\n"));
  EXPECT_THAT(Scrape(), HasSubstr("gpuflow_memory_limit_bytes 85899345920\n"));
}

TEST_F(ServerMetricsTest, BuildInfoLabelsAreEscaped) {
  metrics_.SetBuildInfo(
      {.version = "0.1.0", .backend = "cuda", .device = "GPU \"0\"", .cuda = "12.4.1"});
  EXPECT_THAT(Scrape(), HasSubstr("gpuflow_build_info{backend=\"cuda\",cuda=\"12.4.1\","
                                  "device=\"GPU \\\"0\\\"\",version=\"0.1.0\"} 1\n"));
}

// The collectors' sources must outlive the metrics (the device poller reads
// the backend): each test below declares its ServerMetrics after them.
TEST(ServerMetricsCollectorsTest, CollectorsReadTheBackendSessionsAndPlanCache) {
  FakeBackend backend;
  backend.set_kernel_cache_stats(
      {.memory_hits = 5, .disk_hits = 2, .misses = 1, .compiles = 1, .evictions = 3});
  backend.set_memory_stats({.pool_used_bytes = 100,
                            .pool_reserved_bytes = 200,
                            .device_free_bytes = 300,
                            .device_total_bytes = 400});
  SessionRegistry sessions(backend, {});
  PlanCache plans(PlanOptions{});
  ServerMetrics metrics;
  metrics.AddCollectors(sessions, plans);
  auto Scrape = [&] { return metrics.Scrape(); };

  absl::StatusOr<std::shared_ptr<Session>> session = sessions.Create({.label = "t"});
  ASSERT_THAT(session, IsOk());
  absl::StatusOr<MemoryReservation> reservation =
      (*session)->Reserve(Session::StoredBytes("x", *Shape::Create({64}), 64));
  ASSERT_THAT(reservation, IsOk());
  Array array;
  array.dtype = DType::kUInt8;
  array.shape = *Shape::Create({64});
  array.buffer = *backend.Allocate(64, (*session)->stream());
  ASSERT_THAT((*session)->PutArray("x", std::move(array), *std::move(reservation)), IsOk());
  ASSERT_THAT(sessions.Create({}), IsOk());

  std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compiles_total{device=\"0\"} 1\n"));
  EXPECT_THAT(
      text,
      HasSubstr("gpuflow_kernel_cache_lookups_total{device=\"0\",result=\"memory_hit\"} 5\n"));
  EXPECT_THAT(
      text, HasSubstr("gpuflow_kernel_cache_lookups_total{device=\"0\",result=\"disk_hit\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuflow_kernel_cache_lookups_total{device=\"0\",result=\"miss\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_cache_evictions_total{device=\"0\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_plan_cache_lookups_total{result=\"hit\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_plan_cache_lookups_total{result=\"miss\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_memory_pool_bytes{device=\"0\",state=\"used\"} 100\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_memory_pool_bytes{device=\"0\",state=\"reserved\"} 200\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_device_memory_bytes{device=\"0\",state=\"free\"} 300\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_device_memory_bytes{device=\"0\",state=\"total\"} 400\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_sessions_active 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_arrays_active 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_session_bytes 64\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_sessions_expired_total 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_device_healthy{device=\"0\"} 1\n"));

  backend.set_healthy(false);
  ASSERT_THAT(sessions.Close((*session)->id()), IsOk());
  text = Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_device_healthy{device=\"0\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_sessions_active 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_session_bytes 0\n"));
}

TEST(ServerMetricsCollectorsTest, UnknownMemoryFiguresAreLeftOut) {
  FakeBackend backend;  // like the CPU backend: no pool, no device
  SessionRegistry sessions(backend, {});
  PlanCache plans(PlanOptions{});
  ServerMetrics metrics;
  metrics.AddCollectors(sessions, plans);
  const std::string text = metrics.Scrape();
  EXPECT_THAT(text, Not(HasSubstr("gpuflow_memory_pool_bytes")));
  EXPECT_THAT(text, Not(HasSubstr("gpuflow_device_memory_bytes")));
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compiles_total{device=\"0\"} 0\n"));
}

MemoryStats PoolUsed(int64_t bytes) {
  MemoryStats stats;
  stats.pool_used_bytes = bytes;
  return stats;
}

// A scrape makes no device call: the memory figures come from the poller,
// which picks up a change within its interval.
TEST(ServerMetricsCollectorsTest, DeviceMemoryIsPolledNotReadByScrapes) {
  FakeBackend backend;
  backend.set_memory_stats(PoolUsed(100));
  SessionRegistry sessions(backend, {});
  PlanCache plans(PlanOptions{});
  ServerMetrics metrics({.device_poll_interval = absl::Hours(1)});
  metrics.AddCollectors(sessions, plans);
  const int calls = backend.memory_stats_calls();
  EXPECT_EQ(calls, 1);  // the first reading, taken by AddCollectors
  backend.set_memory_stats(PoolUsed(200));
  for (int i = 0; i < 5; ++i) {
    EXPECT_THAT(metrics.Scrape(),
                HasSubstr("gpuflow_memory_pool_bytes{device=\"0\",state=\"used\"} 100\n"));
  }
  EXPECT_EQ(backend.memory_stats_calls(), calls);
}

// Every per-device family has one series per device, labelled by its id
// (here 0 and 3, as --devices=0,3 would give); server-wide ones have none.
TEST(ServerMetricsCollectorsTest, PerDeviceSeriesCarryTheDeviceLabel) {
  auto zero = std::make_unique<FakeBackend>();
  auto three = std::make_unique<FakeBackend>();
  FakeBackend* failing = three.get();
  zero->set_memory_stats(PoolUsed(100));
  three->set_memory_stats(PoolUsed(300));
  three->set_kernel_cache_stats({.compiles = 7});
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::move(zero));
  backends.push_back(std::move(three));
  DeviceSet devices(std::move(backends), {0, 3});
  SessionRegistry sessions(devices, {});
  PlanCache plans(PlanOptions{});
  ServerMetrics metrics({.device_poll_interval = absl::Hours(1), .device_ids = {0, 3}});
  metrics.AddCollectors(sessions, plans);
  ASSERT_THAT(sessions.Create({.label = "", .device = 3}), IsOk());
  v1::Timings timings;
  v1::StepTiming* step = timings.add_steps();
  step->set_kind("elementwise");
  step->set_gpu_seconds(0.5);
  metrics.RecordExecute(timings, /*device_index=*/1);
  failing->set_healthy(false);

  const std::string text = metrics.Scrape();
  EXPECT_THAT(text, HasSubstr("gpuflow_memory_pool_bytes{device=\"0\",state=\"used\"} 100\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_memory_pool_bytes{device=\"3\",state=\"used\"} 300\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compiles_total{device=\"0\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_kernel_compiles_total{device=\"3\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_device_healthy{device=\"0\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_device_healthy{device=\"3\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_device_sessions_active{device=\"0\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_device_sessions_active{device=\"3\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuflow_sessions_active 1\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuflow_gpu_time_seconds_count{device=\"3\",step=\"elementwise\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuflow_gpu_time_seconds_count{device=\"0\",step=\"elementwise\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("device=\"1\"")));
}

TEST(ServerMetricsCollectorsTest, ThePollerPicksUpChanges) {
  FakeBackend backend;
  backend.set_memory_stats(PoolUsed(100));
  SessionRegistry sessions(backend, {});
  PlanCache plans(PlanOptions{});
  ServerMetrics metrics({.device_poll_interval = absl::Milliseconds(5)});
  metrics.AddCollectors(sessions, plans);
  backend.set_memory_stats(PoolUsed(200));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline &&
         !absl::StrContains(metrics.Scrape(),
                            "gpuflow_memory_pool_bytes{device=\"0\",state=\"used\"} 200\n")) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_THAT(metrics.Scrape(),
              HasSubstr("gpuflow_memory_pool_bytes{device=\"0\",state=\"used\"} 200\n"));
}

TEST(StatusCodeNameTest, CanonicalNames) {
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(StatusCodeName(static_cast<grpc::StatusCode>(99)), "UNKNOWN");
}

}  // namespace
}  // namespace gpuflow::server
