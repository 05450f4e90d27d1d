// gpuflowd: the gpuflow server. Every flag can also be set by a GPUFLOW_*
// environment variable (--max_sessions <- GPUFLOW_MAX_SESSIONS); the command
// line wins. See README.md and docs/server.md.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cuda/cuda_backend.h"
#include "server/flags.h"
#include "server/gpuflow_service.h"
#include "server/session_registry.h"

using gpuflow::server::ByteCount;

ABSL_FLAG(std::string, address, "localhost",
          "Address to listen on; 0.0.0.0 or [::] for every interface (containers)");
ABSL_FLAG(int, port, 50051, "gRPC port; 0 picks a free one (see --port_file)");
ABSL_FLAG(std::string, port_file, "",
          "When set, the bound port is written to this file once the server is "
          "serving");
ABSL_FLAG(std::string, backend, "auto", "auto, cpu or cuda (auto: cuda when a device is usable)");
ABSL_FLAG(int, max_sessions, 64, "Most sessions open at once");
ABSL_FLAG(absl::Duration, session_idle_ttl, absl::Minutes(10),
          "Idle time after which a session expires, unless it asks for another");
ABSL_FLAG(absl::Duration, max_session_idle_ttl, absl::Hours(24), "Longest TTL a session may ask");
ABSL_FLAG(absl::Duration, session_reap_interval, absl::Seconds(1),
          "How often expired sessions are swept");
ABSL_FLAG(ByteCount, default_session_memory_limit, ByteCount{int64_t{4} << 30},
          "Memory quota of a session that asks for none");
ABSL_FLAG(ByteCount, max_session_memory_limit, ByteCount{int64_t{64} << 30},
          "Largest quota a session may ask for");
ABSL_FLAG(ByteCount, max_array_bytes, ByteCount{int64_t{16} << 30}, "Largest single array");
ABSL_FLAG(ByteCount, max_chunk_bytes, ByteCount{int64_t{4} << 20}, "Largest upload/download chunk");
ABSL_FLAG(ByteCount, max_inline_bytes, ByteCount{int64_t{4} << 20},
          "Largest inline literal or inline result");
ABSL_FLAG(int, max_graph_nodes, 10000, "Most nodes in one graph");
ABSL_FLAG(int, device, 0, "CUDA device ordinal (cuda backend)");
ABSL_FLAG(ByteCount, pool_release_threshold, ByteCount{int64_t{16} << 30},
          "Device memory the pool keeps reserved after frees (cuda backend)");
ABSL_FLAG(std::string, cuda_include_dir, "/usr/local/cuda/include",
          "CUDA headers NVRTC compiles generated kernels against (cuda backend)");
ABSL_FLAG(int, compute_threads, 0, "Threads running Execute/Benchmark work; 0: one per CPU core");
ABSL_FLAG(int, plan_cache_entries, 1024, "Plans kept in the in-memory plan cache");
ABSL_FLAG(int, max_fused_ops, 64, "Most ops fused into one step");
ABSL_FLAG(absl::Duration, max_benchmark_duration, absl::Seconds(60),
          "Longest max_duration a Benchmark call may ask for");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "On SIGINT/SIGTERM, how long calls in flight may take to finish");

namespace {

const std::vector<std::string> kEnvFlags = {
    "address",
    "port",
    "port_file",
    "backend",
    "max_sessions",
    "session_idle_ttl",
    "max_session_idle_ttl",
    "session_reap_interval",
    "default_session_memory_limit",
    "max_session_memory_limit",
    "max_array_bytes",
    "max_chunk_bytes",
    "max_inline_bytes",
    "max_graph_nodes",
    "shutdown_grace",
    "compute_threads",
    "plan_cache_entries",
    "max_fused_ops",
    "max_benchmark_duration",
    "device",
    "pool_release_threshold",
    "cuda_include_dir",
};

void Log(const std::string& line) {
  std::fprintf(stderr, "%s gpuflowd: %s\n",
               absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()).c_str(),
               line.c_str());
}

// auto: the CUDA backend when this build has one and a device is usable,
// else the CPU backend (saying why).
absl::StatusOr<std::unique_ptr<gpuflow::Backend>> CreateBackend(const std::string& name) {
  if (name == "cpu") return gpuflow::CreateCpuBackend();
  if (name != "cuda" && name != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend='", name, "': expected auto, cpu or cuda"));
  }
  gpuflow::cuda::CudaBackendOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  options.pool_release_threshold = absl::GetFlag(FLAGS_pool_release_threshold).bytes;
  options.cuda_include_dir = absl::GetFlag(FLAGS_cuda_include_dir);
  absl::StatusOr<std::unique_ptr<gpuflow::Backend>> cuda =
      gpuflow::cuda::CreateCudaBackend(options);
  if (cuda.ok() || name == "cuda") return cuda;
  Log(absl::StrCat("no usable CUDA device, using the CPU backend: ", cuda.status().message()));
  return gpuflow::CreateCpuBackend();
}

// Blocks SIGINT/SIGTERM in every thread (call before starting any), so that
// WaitForShutdownSignal receives them.
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("gpuflowd: the gpuflow GPU compute server");
  if (absl::Status s = gpuflow::server::ApplyEnvironmentToFlags(kEnvFlags); !s.ok()) {
    Log(absl::StrCat("error: ", s.message()));
    return 2;
  }
  absl::ParseCommandLine(argc, argv);
  const sigset_t signals = BlockShutdownSignals();

  absl::StatusOr<std::unique_ptr<gpuflow::Backend>> backend =
      CreateBackend(absl::GetFlag(FLAGS_backend));
  if (!backend.ok()) {
    Log(absl::StrCat("error: ", backend.status().message()));
    return 1;
  }

  gpuflow::server::SessionRegistryOptions session_options;
  session_options.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  session_options.default_memory_limit_bytes =
      absl::GetFlag(FLAGS_default_session_memory_limit).bytes;
  session_options.max_memory_limit_bytes = absl::GetFlag(FLAGS_max_session_memory_limit).bytes;
  session_options.default_idle_ttl = absl::GetFlag(FLAGS_session_idle_ttl);
  session_options.max_idle_ttl = absl::GetFlag(FLAGS_max_session_idle_ttl);
  if (session_options.default_memory_limit_bytes > session_options.max_memory_limit_bytes ||
      session_options.default_idle_ttl > session_options.max_idle_ttl ||
      session_options.default_idle_ttl <= absl::ZeroDuration()) {
    Log("error: the session defaults must be positive and within the maxima");
    return 2;
  }
  gpuflow::server::SessionRegistry registry(**backend, session_options);

  gpuflow::server::ServiceOptions service_options;
  service_options.max_array_bytes = absl::GetFlag(FLAGS_max_array_bytes).bytes;
  service_options.max_chunk_bytes = absl::GetFlag(FLAGS_max_chunk_bytes).bytes;
  service_options.default_chunk_bytes =
      std::min<int64_t>(int64_t{1} << 20, service_options.max_chunk_bytes);
  service_options.max_inline_bytes = absl::GetFlag(FLAGS_max_inline_bytes).bytes;
  service_options.max_graph_nodes = absl::GetFlag(FLAGS_max_graph_nodes);
  // Room for the largest chunk or inline payload plus the message around it.
  service_options.max_message_bytes =
      std::max(service_options.max_chunk_bytes, service_options.max_inline_bytes) + (1 << 20);
  gpuflow::PlanCache plans(
      gpuflow::PlanOptions{.max_fused_ops = absl::GetFlag(FLAGS_max_fused_ops)},
      absl::GetFlag(FLAGS_plan_cache_entries));
  gpuflow::server::GraphRunner runner(
      **backend, plans,
      {.max_graph_nodes = service_options.max_graph_nodes,
       .max_inline_bytes = service_options.max_inline_bytes,
       .max_benchmark_duration = absl::GetFlag(FLAGS_max_benchmark_duration)});
  gpuflow::server::ComputePool pool(absl::GetFlag(FLAGS_compute_threads));
  gpuflow::server::GpuFlowService service(**backend, registry, plans, runner, pool,
                                          service_options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address =
      absl::StrCat(absl::GetFlag(FLAGS_address), ":", absl::GetFlag(FLAGS_port));
  int bound_port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(service_options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(service_options.max_message_bytes));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    Log(absl::StrCat("error: cannot listen on ", address));
    return 1;
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus("", (*backend)->healthy());
  health->SetServingStatus("gpuflow.v1.GpuFlow", (*backend)->healthy());
  Log(absl::StrCat("serving on ", absl::GetFlag(FLAGS_address), ":", bound_port, " (backend ",
                   (*backend)->name(), ": ", (*backend)->device_description(), ")"));
  if (const std::string port_file = absl::GetFlag(FLAGS_port_file); !port_file.empty()) {
    // Written whole then renamed, so a reader never sees a partial number.
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << bound_port << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }

  absl::Notification stopping;
  std::thread reaper([&] {
    const absl::Duration interval = absl::GetFlag(FLAGS_session_reap_interval);
    while (!stopping.WaitForNotificationWithTimeout(interval)) {
      if (int n = registry.ExpireIdle(); n > 0)
        Log(absl::StrCat("expired ", n, " idle session(s)"));
    }
  });

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  Log(absl::StrCat("received ", strsignal(signal_number), ", shutting down"));
  health->Shutdown();  // NOT_SERVING for every service from now on.
  stopping.Notify();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_shutdown_grace)));
  reaper.join();
  registry.CloseAll();
  Log("stopped");
  return 0;
}
