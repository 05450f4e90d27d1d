// gpuflowd: the gpuflow server. Every flag can also be set by a GPUFLOW_*
// environment variable (--max_sessions <- GPUFLOW_MAX_SESSIONS); the command
// line wins. See README.md and docs/server.md.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/kernel_cache.h"
#include "server/call_auth.h"
#include "server/device_set.h"
#include "server/flags.h"
#include "server/gpuflow_service.h"
#include "server/health_monitor.h"
#include "server/logging.h"
#include "server/metrics/endpoint.h"
#include "server/precompile_file.h"
#include "server/private_directory.h"
#include "server/reflection_service.h"
#include "server/security_warnings.h"
#include "server/server_metrics.h"
#include "server/session_registry.h"
#include "server/tenants.h"
#include "server/tls_credentials.h"

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
ABSL_FLAG(bool, allow_raw_kernels, false,
          "Accept raw_kernel nodes (CuPy RawKernel): their CUDA code can read and write any "
          "memory of the process, so enable this only for trusted clients");
ABSL_FLAG(int, device, 0, "CUDA device ordinal (cuda backend) of a server of one device");
ABSL_FLAG(std::string, devices, "",
          "Devices to drive, one backend instance each (docs/multi-gpu.md): cuda: all, or "
          "ordinals such as 0,1,3; cpu: a count N of virtual devices; empty: one device "
          "(--device)");
ABSL_FLAG(bool, testonly_device_faults, false,
          "Test only (cpu backend): a raw_kernel named gpuflow_injected_device_fault fails its "
          "session's device as a sticky CUDA error would (needs --allow_raw_kernels)");
ABSL_FLAG(int, reduction_blocks_per_sm, 4,
          "Reductions with too few outputs to fill the GPU split their reduced range until about "
          "this many blocks per SM run (cuda backend; tuning)");
ABSL_FLAG(int, rows_elements_per_thread_16bit, 16,
          "About how many elements of a row each thread of a row program holds when the row's "
          "data is float16 or bfloat16 (cuda backend; tuning)");
ABSL_FLAG(int, short_work_reserved_sms, 0,
          "SMs kept out of the sessions' own streams, which then run in a green context of the "
          "other SMs, so short requests (the priority streams) find SMs free beside long kernels "
          "(cuda backend, CUDA 12.5+, experimental; long work gets that many fewer SMs; 0: off)");
ABSL_FLAG(ByteCount, pool_reserve, ByteCount{int64_t{1} << 30},
          "Device memory the pool reserves at start, so first requests do not grow it (cuda "
          "backend; at most --pool_release_threshold)");
ABSL_FLAG(ByteCount, pool_release_threshold, ByteCount{int64_t{16} << 30},
          "Device memory the pool keeps reserved after frees (cuda backend)");
ABSL_FLAG(std::string, cuda_include_dir, "/usr/local/cuda/include",
          "CUDA headers NVRTC compiles generated kernels against (cuda backend)");
ABSL_FLAG(std::string, kernel_cache_dir, "",
          "On-disk cache of compiled kernels (cuda backend); empty: "
          "$XDG_CACHE_HOME/gpuflow/kernels, else ~/.cache/gpuflow/kernels; none: memory only");
ABSL_FLAG(ByteCount, kernel_cache_preload, ByteCount{int64_t{256} << 20},
          "At start, load this many bytes of the most recently used cached kernels into the "
          "device in the background (cuda backend); 0: off");
ABSL_FLAG(ByteCount, kernel_cache_max_bytes, ByteCount{int64_t{1} << 30},
          "Bound on the on-disk kernel cache (least recently used entries are evicted); 0: none");
ABSL_FLAG(std::string, precompile, "",
          "A PrecompileRequest in protobuf JSON form whose graphs are compiled before serving "
          "(docs/server.md)");
ABSL_FLAG(int, compute_threads, 0, "Threads running Execute/Benchmark work; 0: one per CPU core");
ABSL_FLAG(int, plan_cache_entries, 1024, "Plans kept in the in-memory plan cache");
ABSL_FLAG(int, max_fused_ops, 64, "Most ops fused into one step");
ABSL_FLAG(absl::Duration, max_benchmark_duration, absl::Seconds(60),
          "Longest max_duration a Benchmark call may ask for");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "On SIGINT/SIGTERM, how long calls in flight may take to finish; the process exits "
          "within this plus 1s");
ABSL_FLAG(absl::Duration, max_request_duration, absl::Minutes(10),
          "Longest any one Execute, Benchmark or Precompile may run (checked between steps); "
          "0: no cap but the client's deadline");
ABSL_FLAG(ByteCount, max_memory_bytes, ByteCount{0},
          "Bytes all sessions together may hold (arrays, uploads in progress, run "
          "intermediates, metadata); 0: 80% of the device's memory (cuda) or of the host's "
          "(cpu)");
ABSL_FLAG(int, max_arrays_per_session, 4096,
          "Most arrays one session may hold (keeps ListArrays replies under 4 MiB)");
ABSL_FLAG(int, max_benchmark_repeats, 100000, "Most timed repeats one Benchmark call may ask");
ABSL_FLAG(int, max_session_compute_threads, 0,
          "Most compute threads one session may use at once; 0: --compute_threads - 1 (at "
          "least 1), so no session can hold every thread");
ABSL_FLAG(absl::Duration, inline_max_run, absl::Milliseconds(1),
          "A repeated Execute (a request-cache hit) whose last run took at most this runs on "
          "the gRPC thread that received it when no compute work is queued; 0: always hand "
          "Execute to a compute thread");
ABSL_FLAG(int, request_cache_entries, 1024,
          "Execute requests kept validated and planned by their graph's bytes, so a repeat "
          "skips conversion, validation and planning; 0: off");
ABSL_FLAG(std::string, advertise_address, "",
          "host:port by which clients reach this worker, returned in SessionInfo.endpoint and "
          "ServerInfo.endpoint (in Kubernetes: the pod IP, from the downward API); empty: none");
ABSL_FLAG(bool, allow_shared_memory, false,
          "Accept same-host transfers through POSIX shared memory (RegisterSharedMemory and the "
          "shared-memory uploads and downloads) from clients on this host; off: "
          "PERMISSION_DENIED");
ABSL_FLAG(bool, allow_cuda_ipc, false,
          "Accept device memory other processes on this host and GPU export through CUDA IPC "
          "(RegisterSharedMemory with a cuda_ipc_handle), so the shared-memory transfers copy "
          "device to device; off: PERMISSION_DENIED");
ABSL_FLAG(ByteCount, max_shared_memory_bytes, ByteCount{int64_t{64} << 30},
          "Bytes of shared memory one session may register in all (the CUDA backend pins them)");
ABSL_FLAG(int, max_prepared_graphs, 1024,
          "Prepared graphs (PrepareGraph) one session keeps; preparing more forgets the least "
          "recently used; 0: the server prepares none");
ABSL_FLAG(bool, exit_on_device_error, true,
          "After a sticky device error: NOT_SERVING, drain calls for at most --shutdown_grace, "
          "then exit with status 3 so a supervisor restarts the process");
ABSL_FLAG(int, metrics_port, 9464,
          "HTTP port serving Prometheus metrics at /metrics; 0: no metrics endpoint");
ABSL_FLAG(std::string, metrics_address, "",
          "Address the metrics endpoint listens on (IPv4 or a host name); empty: --address");
ABSL_FLAG(std::string, log_format, "text", "text, or json for one JSON object per line");
ABSL_FLAG(std::string, log_level, "info",
          "Least severe lines logged: debug (adds compiles and cache misses), info (one line "
          "per request), warning or error");
ABSL_FLAG(absl::Duration, health_check_interval, absl::Seconds(1),
          "How often the backend's health is published to grpc.health.v1");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of the gRPC port (with --tls_key_file): TLS; empty: plaintext");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file (unencrypted)");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA bundle: clients must present a certificate it verifies (mutual TLS)");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "JSON file of tenants, their token SHA-256s and limits (docs/security.md): every RPC "
          "but health needs 'authorization: Bearer <token>'; empty: no authentication");
ABSL_FLAG(absl::Duration, credentials_reload_interval, absl::Seconds(1),
          "How often the --tls_* files and --auth_tokens_file are checked for changes");
ABSL_FLAG(int, max_concurrent_requests, 0,
          "Calls one tenant may have in flight at once (all clients together without "
          "--auth_tokens_file), unless its entry says otherwise; 0: no bound");

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
    "allow_raw_kernels",
    "shutdown_grace",
    "metrics_port",
    "metrics_address",
    "log_format",
    "log_level",
    "health_check_interval",
    "compute_threads",
    "plan_cache_entries",
    "max_fused_ops",
    "max_benchmark_duration",
    "device",
    "devices",
    "pool_release_threshold",
    "pool_reserve",
    "reduction_blocks_per_sm",
    "rows_elements_per_thread_16bit",
    "short_work_reserved_sms",
    "cuda_include_dir",
    "kernel_cache_dir",
    "kernel_cache_max_bytes",
    "kernel_cache_preload",
    "precompile",
    "max_request_duration",
    "max_memory_bytes",
    "max_arrays_per_session",
    "max_benchmark_repeats",
    "max_session_compute_threads",
    "inline_max_run",
    "request_cache_entries",
    "max_prepared_graphs",
    "allow_shared_memory",
    "allow_cuda_ipc",
    "advertise_address",
    "max_shared_memory_bytes",
    "exit_on_device_error",
    "tls_cert_file",
    "tls_key_file",
    "tls_client_ca_file",
    "auth_tokens_file",
    "credentials_reload_interval",
    "max_concurrent_requests",
};

// Exit statuses (docs/server.md).
constexpr int kExitDeviceError = 3;

// The process's log: text at info until ConfigureLog applies the flags.
// main passes it down to everything that logs.
gpuflow::server::Logger& ServerLog() {
  static gpuflow::server::Logger* const log = new gpuflow::server::Logger();
  return *log;
}

// "error: ..." lines are logged as errors, the rest as information.
void Log(const std::string& line) {
  if (absl::StartsWith(line, "error: ")) {
    ServerLog().Error(absl::string_view(line).substr(7));
  } else {
    ServerLog().Info(line);
  }
}

absl::Status ConfigureLog() {
  absl::StatusOr<gpuflow::server::LogFormat> format =
      gpuflow::server::ParseLogFormat(absl::GetFlag(FLAGS_log_format));
  if (!format.ok()) return format.status();
  absl::StatusOr<gpuflow::server::LogLevel> level =
      gpuflow::server::ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level.ok()) return level.status();
  ServerLog().set_format(*format);
  ServerLog().set_min_level(*level);
  return absl::OkStatus();
}

gpuflow::cuda::CudaBackendOptions CudaOptions(int device) {
  gpuflow::cuda::CudaBackendOptions options;
  options.device = device;
  options.pool_release_threshold = absl::GetFlag(FLAGS_pool_release_threshold).bytes;
  options.pool_reserve = absl::GetFlag(FLAGS_pool_reserve).bytes;
  options.reduction_blocks_per_sm = std::max(1, absl::GetFlag(FLAGS_reduction_blocks_per_sm));
  options.rows_elements_per_thread_16bit =
      std::clamp(absl::GetFlag(FLAGS_rows_elements_per_thread_16bit), 1, 64);
  options.short_work_reserved_sms = std::max(0, absl::GetFlag(FLAGS_short_work_reserved_sms));
  options.cuda_include_dir = absl::GetFlag(FLAGS_cuda_include_dir);
  // One on-disk cache for every device: what one compiled, the others load.
  options.kernel_cache_dir =
      gpuflow::cuda::ResolveKernelCacheDir(absl::GetFlag(FLAGS_kernel_cache_dir));
  options.kernel_cache_max_bytes = absl::GetFlag(FLAGS_kernel_cache_max_bytes).bytes;
  options.kernel_cache_preload_bytes = absl::GetFlag(FLAGS_kernel_cache_preload).bytes;
  return options;
}

// --devices on the CPU backend: that many independent instances.
absl::StatusOr<std::unique_ptr<gpuflow::server::DeviceSet>> CreateCpuDevices(
    const std::string& why_cpu) {
  absl::StatusOr<gpuflow::server::DeviceList> list = gpuflow::server::ParseDevicesFlag(
      absl::GetFlag(FLAGS_devices), gpuflow::server::DeviceKind::kCpu, 0);
  if (!list.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(list.status().message(), why_cpu));
  }
  const bool faults = absl::GetFlag(FLAGS_testonly_device_faults);
  std::vector<std::unique_ptr<gpuflow::Backend>> backends;
  std::vector<int> ids = list->ids;
  if (ids.empty()) {
    backends.push_back(gpuflow::CreateCpuBackend({.fault_injection = faults}));
    ids = {0};
  } else {
    for (int id : ids) {
      backends.push_back(
          gpuflow::CreateCpuBackend({.virtual_device = id, .fault_injection = faults}));
    }
  }
  return std::make_unique<gpuflow::server::DeviceSet>(std::move(backends), std::move(ids));
}

// The devices --backend and --devices ask for. auto: the CUDA backend when
// this build has one and a device is usable, else the CPU backend (saying
// why).
absl::StatusOr<std::unique_ptr<gpuflow::server::DeviceSet>> CreateDevices(const std::string& name) {
  if (name == "cpu") return CreateCpuDevices("");
  if (name != "cuda" && name != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend='", name, "': expected auto, cpu or cuda"));
  }
  const std::string spec = absl::GetFlag(FLAGS_devices);
  if (!spec.empty() && absl::GetFlag(FLAGS_device) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", absl::GetFlag(FLAGS_device), " and --devices=", spec,
                     " both name devices: give the ordinals in --devices alone"));
  }
  std::vector<int> ids = {absl::GetFlag(FLAGS_device)};
  absl::Status unusable = absl::OkStatus();
  if (!spec.empty()) {
    absl::StatusOr<int> visible = gpuflow::cuda::VisibleDeviceCount();
    if (visible.ok() && *visible == 0) {
      visible = absl::FailedPreconditionError("no CUDA device is visible");
    }
    if (!visible.ok()) {
      unusable = visible.status();
    } else {
      absl::StatusOr<gpuflow::server::DeviceList> list =
          gpuflow::server::ParseDevicesFlag(spec, gpuflow::server::DeviceKind::kCuda, *visible);
      if (!list.ok()) return list.status();
      ids = list->ids;
    }
  }
  std::vector<std::unique_ptr<gpuflow::Backend>> backends;
  for (int id : ids) {
    if (!unusable.ok()) break;
    absl::StatusOr<std::unique_ptr<gpuflow::Backend>> cuda =
        gpuflow::cuda::CreateCudaBackend(CudaOptions(id));
    if (!cuda.ok()) {
      // One device of several that cannot start is an error, whatever
      // --backend says: the operator asked for it.
      if (ids.size() > 1) {
        return absl::Status(cuda.status().code(), absl::StrCat("--devices=", spec, ": device ", id,
                                                               ": ", cuda.status().message()));
      }
      unusable = cuda.status();
      break;
    }
    backends.push_back(*std::move(cuda));
  }
  if (unusable.ok()) {
    const gpuflow::cuda::CudaBackendOptions options = CudaOptions(ids[0]);
    Log(options.kernel_cache_dir.empty()
            ? std::string("kernel cache: memory only")
            : absl::StrCat("kernel cache: ", options.kernel_cache_dir, " (at most ",
                           gpuflow::server::FormatByteCount(options.kernel_cache_max_bytes), ")"));
    return std::make_unique<gpuflow::server::DeviceSet>(std::move(backends), std::move(ids));
  }
  if (name == "cuda") return unusable;
  Log(absl::StrCat("no usable CUDA device, using the CPU backend: ", unusable.message()));
  return CreateCpuDevices(
      absl::StrCat(" (no usable CUDA device, so the cpu backend: ", unusable.message(), ")"));
}

// --precompile=FILE: compiles the file's graphs before serving, logging
// what each took. 0, or the exit code for a bad file (2) or a failure (1).
int Precompile(const std::string& file, gpuflow::server::GraphRunner& runner) {
  absl::StatusOr<gpuflow::v1::PrecompileRequest> request =
      gpuflow::server::ReadPrecompileFile(file);
  if (!request.ok()) {
    Log(absl::StrCat("error: --precompile: ", request.status().message()));
    return 2;
  }
  const absl::Time start = absl::Now();
  gpuflow::v1::PrecompileResponse total;
  for (int i = 0; i < request->graphs_size(); ++i) {
    // One graph at a time, so the log says what each compiled.
    gpuflow::v1::PrecompileRequest one;
    *one.add_graphs() = request->graphs(i);
    *one.mutable_array_types() = request->array_types();
    gpuflow::v1::PrecompileResponse response;
    if (absl::Status s = runner.Precompile(one, &response); !s.ok()) {
      // The runner's message names the graph of `one` (always 0): name the
      // file's.
      absl::string_view message = s.message();
      absl::ConsumePrefix(&message, "graph 0: ");
      Log(absl::StrCat("error: --precompile=", file, ": graph ", i, ": ", message));
      return s.code() == absl::StatusCode::kInvalidArgument ||
                     s.code() == absl::StatusCode::kNotFound
                 ? 2
                 : 1;
    }
    Log(absl::StrCat("precompile: graph ", i, " (", request->graphs(i).nodes_size(),
                     " nodes): ", response.kernels_compiled(), " kernel(s) compiled in ",
                     absl::SixDigits(response.compile_seconds()), " s, ", response.kernels_cached(),
                     " found in the kernel cache"));
    total.set_kernels_compiled(total.kernels_compiled() + response.kernels_compiled());
    total.set_kernels_cached(total.kernels_cached() + response.kernels_cached());
  }
  Log(absl::StrCat("precompiled ", request->graphs_size(), " graph(s) from ", file, " in ",
                   absl::FormatDuration(absl::Now() - start), ": ", total.kernels_compiled(),
                   " kernel(s) compiled, ", total.kernels_cached(), " cached"));
  return 0;
}

// Why main stops serving: the first request wins. Thread-safe.
class StopRequest {
 public:
  enum Reason { kNone, kSignal, kDeviceError };
  void Request(Reason reason) {
    absl::MutexLock lock(&mu_);
    if (reason_ == kNone) reason_ = reason;
  }
  Reason Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Reason* r) { return *r != kNone; }, &reason_));
    return reason_;
  }

 private:
  absl::Mutex mu_;
  Reason reason_ ABSL_GUARDED_BY(mu_) = kNone;
};

// 80% of the devices' memory (cuda) or of the host's physical memory (cpu,
// however many virtual devices): the default of --max_memory_bytes.
int64_t DefaultMaxMemoryBytes(const gpuflow::server::DeviceSet& devices) {
  int64_t total = 0;
  for (int d = 0; d < devices.size(); ++d) {
    total += devices.backend(d).memory_stats().device_total_bytes.value_or(0);
  }
  if (total <= 0) {
    total = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  }
  return total / 5 * 4;
}

// Logs what a reload of the tokens file did, and closes the sessions of the
// tenants it removed. Never logs a token or a digest.
void ApplyTokensReload(const gpuflow::server::TenantDirectory& tenants,
                       gpuflow::server::TenantDirectory::Reload reload,
                       gpuflow::server::SessionRegistry& registry,
                       const gpuflow::server::SessionRegistryOptions& session_options) {
  if (!reload.changed) return;
  if (!reload.status.ok()) {
    ServerLog().Warning(absl::StrCat(reload.status.message(), "; the ", tenants.tenants().size(),
                                     " tenant(s) loaded before stay in force"));
    return;
  }
  std::vector<std::string> removed;
  int closed = 0;
  for (const std::shared_ptr<gpuflow::server::Tenant>& tenant : reload.removed) {
    removed.push_back(tenant->name());
    closed += registry.CloseTenant(tenant.get());
  }
  ServerLog().Info("tokens file reloaded",
                   {{"file", tenants.path()},
                    {"tenants", static_cast<int64_t>(tenants.tenants().size())},
                    {"added", absl::StrJoin(reload.added, ",")},
                    {"updated", absl::StrJoin(reload.updated, ",")},
                    {"removed", absl::StrJoin(removed, ",")},
                    {"sessions_closed", closed}});
  for (const std::string& warning :
       gpuflow::server::LockoutWarnings(tenants.tenants(), session_options.max_total_bytes)) {
    ServerLog().Warning(warning);
  }
}

void ApplyTlsReload(gpuflow::server::TlsCredentials::Reload reload, const std::string& in_use) {
  if (!reload.changed) return;
  if (!reload.status.ok()) {
    ServerLog().Error(absl::StrCat("TLS files changed but cannot be used: ",
                                   reload.status.message(), "; still serving ", in_use));
    return;
  }
  ServerLog().Info(absl::StrCat("TLS certificates reloaded: ", reload.description));
  if (reload.expired) {
    ServerLog().Warning("the reloaded TLS certificate has expired: clients will refuse it");
  }
}

// Blocks SIGINT/SIGTERM in every thread (call before starting any), so that
// WaitForShutdownSignal receives them.
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // wakes the signal thread at exit
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef NDEBUG
  // Debian's abseil is built with Mutex deadlock detection on: every Lock
  // and Unlock then records the lock graph under one global lock (39 ns a
  // Lock+Unlock pair against 11 without it, uncontended, on the CI
  // machine). Release builds skip it; Debug builds (the sanitizer run)
  // keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  absl::SetProgramUsageMessage("gpuflowd: the gpuflow GPU compute server");
  if (absl::Status s = gpuflow::server::ApplyEnvironmentToFlags(kEnvFlags); !s.ok()) {
    Log(absl::StrCat("error: ", s.message()));
    return 2;
  }
  absl::ParseCommandLine(argc, argv);
  if (absl::Status s = ConfigureLog(); !s.ok()) {
    Log(absl::StrCat("error: ", s.message()));
    return 2;
  }
  const sigset_t signals = BlockShutdownSignals();
  // Large host buffers (the CPU backend's arrays and intermediates) come from
  // mmap and go back to the OS when freed; glibc's adaptive threshold would
  // otherwise keep gigabytes of freed arrays resident for good
  // (bench/memory_growth.py measured 2 GiB after every session closed).
  mallopt(M_MMAP_THRESHOLD, 4 << 20);

  const gpuflow::server::TlsFiles tls_files = {
      .cert_file = absl::GetFlag(FLAGS_tls_cert_file),
      .key_file = absl::GetFlag(FLAGS_tls_key_file),
      .client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file)};
  if (tls_files.cert_file.empty() != tls_files.key_file.empty()) {
    Log("error: --tls_cert_file and --tls_key_file go together: give both, or neither");
    return 2;
  }
  if (!tls_files.client_ca_file.empty() && tls_files.cert_file.empty()) {
    Log("error: --tls_client_ca_file needs TLS: give --tls_cert_file and --tls_key_file too");
    return 2;
  }
  const absl::Duration reload_interval = absl::GetFlag(FLAGS_credentials_reload_interval);
  if (reload_interval <= absl::ZeroDuration()) {
    Log("error: --credentials_reload_interval must be positive");
    return 2;
  }
  // Cubins in the kernel cache are loaded and run: a directory others can
  // write is refused (the CPU backend has no kernel cache).
  if (absl::GetFlag(FLAGS_backend) != "cpu") {
    const std::string dir =
        gpuflow::cuda::ResolveKernelCacheDir(absl::GetFlag(FLAGS_kernel_cache_dir));
    if (absl::Status s = gpuflow::server::PreparePrivateDirectory(dir); !s.ok()) {
      Log(absl::StrCat("error: ", s.message()));
      return 2;
    }
  }

  absl::StatusOr<std::unique_ptr<gpuflow::server::DeviceSet>> created =
      CreateDevices(absl::GetFlag(FLAGS_backend));
  if (!created.ok()) {
    Log(absl::StrCat("error: ", created.status().message()));
    return created.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  const gpuflow::server::DeviceSet& devices = **created;
  // The first device stands for the server where one name is wanted (logs,
  // build info).
  gpuflow::Backend& first = devices.backend(0);
  if (devices.size() > 1) {
    std::vector<std::string> names;
    for (int d = 0; d < devices.size(); ++d) {
      names.push_back(absl::StrCat(devices.id(d), ": ", devices.backend(d).device_description()));
    }
    Log(absl::StrCat("devices: ", devices.size(), " (", absl::StrJoin(names, "; "), ")"));
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
  session_options.max_arrays_per_session = std::max(1, absl::GetFlag(FLAGS_max_arrays_per_session));
  // Tenants: with a tokens file, every RPC but health needs a token; without
  // one, every caller is the same anonymous tenant.
  std::unique_ptr<gpuflow::server::TenantDirectory> tenants;
  if (const std::string file = absl::GetFlag(FLAGS_auth_tokens_file); !file.empty()) {
    absl::StatusOr<std::unique_ptr<gpuflow::server::TenantDirectory>> loaded =
        gpuflow::server::TenantDirectory::Load(
            file, {.max_concurrent_requests = absl::GetFlag(FLAGS_max_concurrent_requests)});
    if (!loaded.ok()) {
      Log(absl::StrCat("error: ", loaded.status().message()));
      return 2;
    }
    tenants = *std::move(loaded);
  }
  // One tenant must not learn from a refusal how much the others hold.
  session_options.hide_totals = tenants != nullptr;
  // Nor take the last free sessions while other tenants hold none.
  if (tenants != nullptr) {
    session_options.tenant_count = [&tenants] { return tenants->size(); };
  }
  session_options.max_total_bytes = absl::GetFlag(FLAGS_max_memory_bytes).bytes;
  if (session_options.max_total_bytes <= 0) {
    session_options.max_total_bytes = DefaultMaxMemoryBytes(devices);
  }
  Log(absl::StrCat("memory: sessions may hold ",
                   gpuflow::server::FormatByteCount(session_options.max_total_bytes),
                   " in all (--max_memory_bytes)"));
  gpuflow::server::SessionRegistry registry(devices, session_options);
  if (tenants != nullptr) {
    std::vector<std::string> names;
    for (const auto& tenant : tenants->tenants()) names.push_back(tenant->name());
    ServerLog().Info("authentication: bearer tokens",
                     {{"file", tenants->path()},
                      {"tenants", static_cast<int64_t>(names.size())},
                      {"names", absl::StrJoin(names, ",")}});
    for (const std::string& warning :
         gpuflow::server::LockoutWarnings(tenants->tenants(), session_options.max_total_bytes)) {
      ServerLog().Warning(warning);
    }
  }
  const gpuflow::server::CallAuthenticator auth(
      tenants.get(), std::make_shared<gpuflow::server::Tenant>(
                         "", gpuflow::server::TenantLimits{.max_concurrent_requests = absl::GetFlag(
                                                               FLAGS_max_concurrent_requests)}));

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
  service_options.max_request_duration = absl::GetFlag(FLAGS_max_request_duration);
  service_options.max_benchmark_repeats = std::max(1, absl::GetFlag(FLAGS_max_benchmark_repeats));
  service_options.inline_max_run = absl::GetFlag(FLAGS_inline_max_run);
  service_options.allow_shared_memory = absl::GetFlag(FLAGS_allow_shared_memory);
  service_options.allow_cuda_ipc = absl::GetFlag(FLAGS_allow_cuda_ipc);
  service_options.advertise_address = absl::GetFlag(FLAGS_advertise_address);
  service_options.max_shared_memory_bytes =
      std::max<int64_t>(0, absl::GetFlag(FLAGS_max_shared_memory_bytes).bytes);
  gpuflow::PlanCache plans(
      gpuflow::PlanOptions{.max_fused_ops = absl::GetFlag(FLAGS_max_fused_ops)},
      absl::GetFlag(FLAGS_plan_cache_entries));
  gpuflow::server::GraphRunner runner(
      devices, plans,
      {.max_graph_nodes = service_options.max_graph_nodes,
       .max_inline_bytes = service_options.max_inline_bytes,
       .max_array_bytes = service_options.max_array_bytes,
       .max_reply_bytes = service_options.max_message_bytes,
       .max_benchmark_duration = absl::GetFlag(FLAGS_max_benchmark_duration),
       .max_benchmark_repeats = service_options.max_benchmark_repeats,
       .allow_raw_kernels = absl::GetFlag(FLAGS_allow_raw_kernels),
       .request_cache_entries = std::max(0, absl::GetFlag(FLAGS_request_cache_entries)),
       .request_cache_bytes = int64_t{16} << 20,
       .max_prepared_graphs = std::max(0, absl::GetFlag(FLAGS_max_prepared_graphs)),
       // Execute outputs may go to regions of either kind.
       .allow_shared_memory =
           absl::GetFlag(FLAGS_allow_shared_memory) || absl::GetFlag(FLAGS_allow_cuda_ipc)});
  if (const std::string file = absl::GetFlag(FLAGS_precompile); !file.empty()) {
    if (int exit_code = Precompile(file, runner); exit_code != 0) return exit_code;
  }
  // With tenants, no tenant may hold every compute thread either.
  const int compute_threads =
      absl::GetFlag(FLAGS_compute_threads) > 0
          ? absl::GetFlag(FLAGS_compute_threads)
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  gpuflow::server::ComputePool pool(compute_threads,
                                    absl::GetFlag(FLAGS_max_session_compute_threads),
                                    tenants != nullptr ? std::max(1, compute_threads - 1) : 0);
  // Metrics and health watch the backend, the sessions and the plan cache.
  gpuflow::server::ServerMetricsOptions metrics_options;
  metrics_options.device_ids.clear();
  for (int d = 0; d < devices.size(); ++d) metrics_options.device_ids.push_back(devices.id(d));
  gpuflow::server::ServerMetrics metrics(metrics_options);
  metrics.AddCollectors(registry, plans);
  metrics.SetBuildInfo({.version = GPUFLOW_VERSION,
                        .backend = std::string(first.name()),
                        .device = first.device_description(),
                        .cuda = GPUFLOW_CUDA_VERSION});
  metrics.SetLimits(session_options.max_sessions, session_options.max_total_bytes);
  // Why the server stops: a signal, or a sticky device error.
  StopRequest stop;
  gpuflow::server::HealthMonitor health_monitor(
      devices, {"", "gpuflow.v1.GpuFlow"},
      {.interval = absl::GetFlag(FLAGS_health_check_interval),
       .log = &ServerLog(),
       .on_unhealthy = [&stop] {
         if (absl::GetFlag(FLAGS_exit_on_device_error)) stop.Request(StopRequest::kDeviceError);
       }});
  std::unique_ptr<gpuflow::metrics::MetricsEndpoint> metrics_exposer;
  if (const int metrics_port = absl::GetFlag(FLAGS_metrics_port); metrics_port != 0) {
    std::string metrics_address = absl::GetFlag(FLAGS_metrics_address);
    if (metrics_address.empty()) metrics_address = absl::GetFlag(FLAGS_address);
    absl::StatusOr<std::unique_ptr<gpuflow::metrics::MetricsEndpoint>> exposer =
        gpuflow::metrics::MetricsEndpoint::Start({.address = metrics_address, .port = metrics_port},
                                                 metrics.collectables());
    if (!exposer.ok()) {
      Log(absl::StrCat("error: --metrics_port: ", exposer.status().message()));
      return 1;
    }
    metrics_exposer = *std::move(exposer);
    Log(absl::StrCat("metrics on http://", metrics_address, ":", metrics_exposer->port(),
                     "/metrics"));
  }
  gpuflow::server::GpuFlowService service(
      registry, plans, runner, pool, service_options,
      {.metrics = &metrics, .log = &ServerLog(), .health = &health_monitor}, &auth);
  gpuflow::server::ReflectionService reflection(
      auth, {std::string(gpuflow::v1::GpuFlow::service_full_name()), "grpc.health.v1.Health"});

  std::unique_ptr<gpuflow::server::TlsCredentials> tls;
  if (!tls_files.cert_file.empty()) {
    absl::StatusOr<std::unique_ptr<gpuflow::server::TlsCredentials>> created =
        gpuflow::server::TlsCredentials::Create(tls_files);
    if (!created.ok()) {
      Log(absl::StrCat("error: ", created.status().message()));
      return 2;
    }
    tls = *std::move(created);
    Log(absl::StrCat(tls->mutual() ? "mutual TLS: " : "TLS: ", tls->description()));
    if (tls->expired()) {
      ServerLog().Warning("the TLS certificate has expired: clients will refuse it");
    }
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const std::string address =
      absl::StrCat(absl::GetFlag(FLAGS_address), ":", absl::GetFlag(FLAGS_port));
  int bound_port = 0;
  builder.AddListeningPort(
      address, tls != nullptr ? tls->server_credentials() : grpc::InsecureServerCredentials(),
      &bound_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(service_options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(service_options.max_message_bytes));
  builder.RegisterService(&service);
  builder.RegisterService(&reflection);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    Log(absl::StrCat("error: cannot listen on ", address));
    return 1;
  }
  health_monitor.Start(server->GetHealthCheckService());
  Log(absl::StrCat("serving on ", absl::GetFlag(FLAGS_address), ":", bound_port, " (backend ",
                   first.name(), ": ", first.device_description(),
                   devices.size() > 1 ? absl::StrCat(" and ", devices.size() - 1, " more") : "",
                   "; ", tls == nullptr ? "plaintext" : (tls->mutual() ? "mutual TLS" : "TLS"),
                   ", ", tenants == nullptr ? "no authentication" : "bearer tokens", ")"));
  for (const std::string& warning :
       gpuflow::server::SecurityWarnings({.address = absl::GetFlag(FLAGS_address),
       .tls = tls != nullptr,
       .mutual_tls = tls != nullptr && tls->mutual(),
       .tokens = tenants != nullptr,
       .raw_kernels = absl::GetFlag(FLAGS_allow_raw_kernels)})) {
    ServerLog().Warning(warning);
  }
  if (const std::string port_file = absl::GetFlag(FLAGS_port_file); !port_file.empty()) {
    // Written whole then renamed, so a reader never sees a partial number.
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << bound_port << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }

  absl::Notification stopping;
  std::thread reaper([&] {
    const absl::Duration interval = absl::GetFlag(FLAGS_session_reap_interval);
    int last_sessions = 0;
    while (!stopping.WaitForNotificationWithTimeout(interval)) {
      if (int n = registry.ExpireIdle(); n > 0)
        Log(absl::StrCat("expired ", n, " idle session(s)"));
      // Sessions went away: hand the heap pages their arrays used back.
      const int sessions = registry.size();
      if (sessions < last_sessions) malloc_trim(0);
      last_sessions = sessions;
    }
  });

  // Certificates and the tokens file are looked at again every interval; a
  // valid change is put in force, a bad one is logged and the old kept.
  std::thread credentials_watcher;
  if (tls != nullptr || tenants != nullptr) {
    credentials_watcher = std::thread([&] {
      while (!stopping.WaitForNotificationWithTimeout(reload_interval)) {
        if (tenants != nullptr) {
          ApplyTokensReload(*tenants, tenants->ReloadIfChanged(), registry, session_options);
        }
        if (tls != nullptr) {
          const std::string in_use = tls->description();
          ApplyTlsReload(tls->ReloadIfChanged(), in_use);
        }
      }
    });
  }

  // Signals arrive on a thread of their own, so a device error can stop the
  // server too.
  std::thread signal_waiter([&signals, &stop] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (signal_number == SIGUSR1) return;  // main is done: just wake up
    Log(absl::StrCat("received ", strsignal(signal_number), ", shutting down"));
    stop.Request(StopRequest::kSignal);
  });
  const StopRequest::Reason reason = stop.Wait();
  if (reason == StopRequest::kDeviceError) {
    Log(absl::StrCat("error: the ", first.name(),
                     devices.size() > 1 ? " backend has sticky device errors on every device"
                                        : " backend has a sticky device error",
                     "; draining for at most ",
                     absl::FormatDuration(absl::GetFlag(FLAGS_shutdown_grace)),
                     ", then exiting with status ", kExitDeviceError,
                     " (--exit_on_device_error) so the process is restarted"));
  }
  const int exit_code = reason == StopRequest::kDeviceError ? kExitDeviceError : 0;
  const absl::Duration grace = absl::GetFlag(FLAGS_shutdown_grace);
  const absl::Time hard_deadline = absl::Now() + grace + absl::Seconds(1);
  health_monitor.Shutdown();  // NOT_SERVING for every service from now on.
  stopping.Notify();
  // Calls in flight get the grace; then gRPC cancels them, and the compute
  // work stops at its next step. Work that cannot stop in time (one long
  // kernel or host loop) does not hold the process: past the grace plus 1 s
  // it exits anyway, saying how many calls were cut.
  std::thread shutdown([&] {
    server->Shutdown(absl::ToChronoTime(absl::Now() + grace));
    registry.CloseAll();
  });
  absl::Notification shut_down;
  std::thread watcher([&] {
    shutdown.join();
    shut_down.Notify();
  });
  if (!shut_down.WaitForNotificationWithTimeout(hard_deadline - absl::Now())) {
    Log(absl::StrCat("error: ", pool.pending(),
                     " call(s) still running past --shutdown_grace + 1s; exiting without them"));
    std::fflush(nullptr);
    std::_Exit(exit_code == 0 ? 1 : exit_code);
  }
  watcher.join();
  // Tearing down (sessions' buffers, the CUDA context and pool) must not
  // take the process past the deadline either.
  std::thread([hard_deadline, exit_code] {
    absl::SleepFor(hard_deadline - absl::Now());
    Log("error: tearing down took past --shutdown_grace + 1s; exiting now");
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }).detach();
  reaper.join();
  if (credentials_watcher.joinable()) credentials_watcher.join();
  metrics_exposer.reset();
  if (reason != StopRequest::kSignal) pthread_kill(signal_waiter.native_handle(), SIGUSR1);
  signal_waiter.join();
  Log("stopped");
  return exit_code;
}
