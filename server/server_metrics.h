// gpuflowd's Prometheus metrics (docs/metrics.md lists them all): the
// gpuflow_* families in a prometheus-cpp registry, with handles the service
// updates on the hot path, and scrape-time callbacks that read the devices'
// backends, the session registry and the plan cache.
//
//   ServerMetrics metrics({.device_ids = {0, 1}});   // the ids of sessions.devices()
//   metrics.AddCollectors(sessions, plans);
//   MetricsEndpoint::Start({.port = 9464}, metrics.collectables());
//   metrics.SetBuildInfo({.version = "0.1.0", .backend = "cuda", ...});
//   metrics.RecordRpc(RpcMethod::kExecute, grpc::StatusCode::OK, 0.0012);
//
// Labels stay low-cardinality: method names, status codes, step kinds,
// device ids (one per device the server drives), fixed words and tenant
// names (which come from the operator's tokens file); never a session id or
// label, a token or a peer address.
//
// Thread-safe; every Record/Add method is a few atomic operations.
#ifndef GPUFLOW_SERVER_SERVER_METRICS_H_
#define GPUFLOW_SERVER_SERVER_METRICS_H_

#include <grpcpp/support/status.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/plan/plan.h"
#include "gpuflow/v1/service.pb.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/device_set.h"
#include "server/metrics/callbacks.h"
#include "server/session_registry.h"

namespace gpuflow::server {

// The GpuFlow RPCs, as metric labels and log fields.
enum class RpcMethod : uint8_t {
  kGetServerInfo,
  kCreateSession,
  kCloseSession,
  kKeepAlive,
  kUploadArray,
  kDownloadArray,
  kListArrays,
  kGetArrayInfo,
  kDeleteArray,
  kExecute,
  kBenchmark,
  kPrecompile,
  kPrepareGraph,
  kReleaseGraph,
  kRegisterSharedMemory,
  kUnregisterSharedMemory,
  kUploadFromSharedMemory,
  kDownloadToSharedMemory,
  kCopyArray,
};
inline constexpr int kNumRpcMethods = 19;
// "Execute", "UploadArray", ... (the proto's method names).
absl::string_view RpcMethodName(RpcMethod method);
// "OK", "INVALID_ARGUMENT", ... (the canonical code names).
absl::string_view StatusCodeName(grpc::StatusCode code);

enum class TransferDirection : uint8_t { kUpload, kDownload };

struct BuildInfo {
  std::string version;
  std::string backend;
  std::string device;
  // CUDA toolkit version gpuflowd was built with; "" without CUDA.
  std::string cuda;
};

struct ServerMetricsOptions {
  // How often the devices' memory figures are read (on a thread of their
  // own: a scrape makes no device call).
  absl::Duration device_poll_interval = absl::Seconds(1);
  // The ids of the devices the server drives (DeviceSet::id, in its order):
  // the values of the `device` label, one per device, so it stays bounded.
  std::vector<int> device_ids = {0};
};

class ServerMetrics {
 public:
  // Registers every gpuflow_* family. Hot-path series (per method, phase,
  // step kind) exist from the start at zero, so rate() works from the first
  // scrape.
  explicit ServerMetrics(ServerMetricsOptions options = {});
  // Stops the device poller.
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // What the /metrics endpoint serves: the registry and the scrape-time
  // families (shared: the endpoint keeps them alive).
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables() const {
    return {registry_, callbacks_};
  }
  // The text format a scrape returns now.
  std::string Scrape() const;

  // The scrape-time families: sessions, arrays, session bytes, memory pool
  // and device memory, kernel and plan cache counters, device health; and
  // the thread that polls the devices' memory figures (read once now). The
  // per-device families carry a `device` label: the devices of
  // sessions.devices(), whose ids must be options.device_ids. Call once.
  // Both must outlive this object and every later scrape (stop the endpoint
  // first).
  void AddCollectors(const SessionRegistry& sessions, const PlanCache& plans);

  // gpuflow_build_info{...} 1. Call once.
  void SetBuildInfo(const BuildInfo& info);

  // gpuflow_sessions_max and gpuflow_memory_limit_bytes: the server's
  // --max_sessions and --max_memory_bytes, so alerts compare against the
  // limits a worker really has. Call once.
  void SetLimits(int64_t max_sessions, int64_t max_memory_bytes);

  // One finished RPC of `tenant` ("": no tenant label, a server without
  // auth or a caller it refused).
  void RecordRpc(RpcMethod method, grpc::StatusCode code, double seconds,
                 const std::string& tenant = "");

  // The phases of one successful Execute, from its reply's timings:
  // validate, plan, launch (run minus compile), transfer always; compile when
  // it compiled kernels; gpu when the backend measured device time. Per-step
  // GPU times (profiled requests only) go to gpuflow_gpu_time_seconds of the
  // device (its index in options.device_ids) that ran them. Compiles are
  // RecordCompiles' business.
  void RecordExecute(const v1::Timings& timings, int device_index = 0);

  // `kernels` kernels compiled in `seconds` of NVRTC time together by one
  // request (Execute, Benchmark's first run, Precompile): each is observed at
  // their mean, so the histogram's _count and _sum are exact.
  void RecordCompiles(int kernels, double seconds);

  void AddTransferBytes(TransferDirection direction, int64_t bytes);

 private:
  // The devices' memory figures as last polled, by index.
  std::vector<MemoryStats> DeviceMemory() const ABSL_LOCKS_EXCLUDED(device_mu_);

  const ServerMetricsOptions options_;
  const std::shared_ptr<prometheus::Registry> registry_;
  const std::shared_ptr<metrics::Callbacks> callbacks_;
  prometheus::Family<prometheus::Counter>& requests_;
  std::array<prometheus::Histogram*, kNumRpcMethods> rpc_duration_{};
  // [method][code], filled on first use (Family::Add is idempotent, so a
  // race only looks the child up twice).
  std::array<std::array<std::atomic<prometheus::Counter*>, 17>, kNumRpcMethods> rpc_count_{};
  prometheus::Histogram* phase_queue_;
  prometheus::Histogram* phase_convert_;
  prometheus::Histogram* phase_validate_;
  prometheus::Histogram* phase_plan_;
  prometheus::Histogram* phase_compile_;
  prometheus::Histogram* phase_launch_;
  prometheus::Histogram* phase_gpu_;
  prometheus::Histogram* phase_transfer_;
  prometheus::Counter* request_cache_hits_;
  prometheus::Counter* request_cache_misses_;
  // Per device index, one per step kind in the order of kStepKinds
  // (server_metrics.cc).
  std::vector<std::vector<prometheus::Histogram*>> step_gpu_time_;
  prometheus::Histogram* compile_seconds_;
  prometheus::Counter* upload_bytes_;
  prometheus::Counter* download_bytes_;

  mutable absl::Mutex device_mu_;
  std::vector<MemoryStats> device_memory_ ABSL_GUARDED_BY(device_mu_);
  absl::Notification stop_polling_;
  std::thread device_poller_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_SERVER_METRICS_H_
