#include "server/server_metrics.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/metrics/endpoint.h"

namespace gpuflow::server {

namespace {

using prometheus::Histogram;
using prometheus::MetricType;

constexpr StepKind kStepKinds[] = {
    StepKind::kElementwise, StepKind::kReduction, StepKind::kScan,
    StepKind::kMatmul,      StepKind::kShape,     StepKind::kCreation,
    StepKind::kCustom,      StepKind::kSort,      StepKind::kRows};
static_assert(std::size(kStepKinds) == 9, "ServerMetrics::step_gpu_time_ has one per kind");

// 1, 2.5, 5 per decade from `low` up to and including `high`: fine enough
// for latency quantiles, few enough series.
Histogram::BucketBoundaries DecadeBuckets(double low, double high) {
  Histogram::BucketBoundaries bounds;
  for (double decade = low; decade <= high * 1.0001; decade *= 10) {
    for (double step : {1.0, 2.5, 5.0}) {
      if (decade * step <= high * 1.0001) bounds.push_back(decade * step);
    }
  }
  return bounds;
}

// RPCs: 100 us to 60 s (a Benchmark may run for a minute).
Histogram::BucketBoundaries RpcBuckets() {
  Histogram::BucketBoundaries bounds = DecadeBuckets(1e-4, 10);
  bounds.push_back(30);
  bounds.push_back(60);
  return bounds;
}

// One {device, state} sample of a memory figure, left out when unknown.
void AddKnown(metrics::CallbackSink& out, const std::string& device, const char* state,
              const std::optional<int64_t>& bytes) {
  if (bytes) out.Add({{"device", device}, {"state", state}}, static_cast<double>(*bytes));
}

}  // namespace

absl::string_view RpcMethodName(RpcMethod method) {
  switch (method) {
    case RpcMethod::kGetServerInfo:
      return "GetServerInfo";
    case RpcMethod::kCreateSession:
      return "CreateSession";
    case RpcMethod::kCloseSession:
      return "CloseSession";
    case RpcMethod::kKeepAlive:
      return "KeepAlive";
    case RpcMethod::kUploadArray:
      return "UploadArray";
    case RpcMethod::kDownloadArray:
      return "DownloadArray";
    case RpcMethod::kListArrays:
      return "ListArrays";
    case RpcMethod::kGetArrayInfo:
      return "GetArrayInfo";
    case RpcMethod::kDeleteArray:
      return "DeleteArray";
    case RpcMethod::kExecute:
      return "Execute";
    case RpcMethod::kBenchmark:
      return "Benchmark";
    case RpcMethod::kPrecompile:
      return "Precompile";
    case RpcMethod::kPrepareGraph:
      return "PrepareGraph";
    case RpcMethod::kReleaseGraph:
      return "ReleaseGraph";
    case RpcMethod::kRegisterSharedMemory:
      return "RegisterSharedMemory";
    case RpcMethod::kUnregisterSharedMemory:
      return "UnregisterSharedMemory";
    case RpcMethod::kUploadFromSharedMemory:
      return "UploadFromSharedMemory";
    case RpcMethod::kDownloadToSharedMemory:
      return "DownloadToSharedMemory";
    case RpcMethod::kCopyArray:
      return "CopyArray";
  }
  return "Unknown";
}

absl::string_view StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

ServerMetrics::ServerMetrics(ServerMetricsOptions options)
    : options_(options),
      registry_(std::make_shared<prometheus::Registry>()),
      callbacks_(std::make_shared<metrics::Callbacks>()),
      requests_(prometheus::BuildCounter()
                    .Name("gpuflow_rpc_requests_total")
                    .Help("GpuFlow RPCs finished, by method, gRPC status code and (with "
                          "--auth_tokens_file) tenant.")
                    .Register(*registry_)) {
  prometheus::Family<Histogram>& durations =
      prometheus::BuildHistogram()
          .Name("gpuflow_rpc_duration_seconds")
          .Help("Time from receiving a GpuFlow RPC to finishing it, by method.")
          .Register(*registry_);
  for (int m = 0; m < kNumRpcMethods; ++m) {
    const std::string method(RpcMethodName(static_cast<RpcMethod>(m)));
    rpc_duration_[m] = &durations.Add({{"method", method}}, RpcBuckets());
    rpc_count_[m][0] = &requests_.Add({{"method", method}, {"code", "OK"}});
  }
  prometheus::Family<Histogram>& phases =
      prometheus::BuildHistogram()
          .Name("gpuflow_execute_phase_seconds")
          .Help(
              "Time of each phase of successful Execute requests: queue (waiting for a compute "
              "thread), convert, validate and plan (request-cache misses only), compile "
              "(NVRTC), launch (running the plan, less compile), gpu (device time), transfer "
              "(inline results).")
          .Register(*registry_);
  const Histogram::BucketBoundaries phase_buckets = DecadeBuckets(1e-6, 10);
  phase_queue_ = &phases.Add({{"phase", "queue"}}, phase_buckets);
  phase_convert_ = &phases.Add({{"phase", "convert"}}, phase_buckets);
  phase_validate_ = &phases.Add({{"phase", "validate"}}, phase_buckets);
  phase_plan_ = &phases.Add({{"phase", "plan"}}, phase_buckets);
  phase_compile_ = &phases.Add({{"phase", "compile"}}, phase_buckets);
  phase_launch_ = &phases.Add({{"phase", "launch"}}, phase_buckets);
  phase_gpu_ = &phases.Add({{"phase", "gpu"}}, phase_buckets);
  phase_transfer_ = &phases.Add({{"phase", "transfer"}}, phase_buckets);
  prometheus::Family<prometheus::Counter>& request_cache =
      prometheus::BuildCounter()
          .Name("gpuflow_request_cache_lookups_total")
          .Help(
              "Successful Execute requests by whether the request cache held their validated "
              "graph and plan (hit) or not (miss).")
          .Register(*registry_);
  request_cache_hits_ = &request_cache.Add({{"result", "hit"}});
  request_cache_misses_ = &request_cache.Add({{"result", "miss"}});
  prometheus::Family<Histogram>& gpu_time =
      prometheus::BuildHistogram()
          .Name("gpuflow_gpu_time_seconds")
          .Help(
              "Device time of one plan step, by device and step kind (profiled Execute "
              "requests only).")
          .Register(*registry_);
  for (int id : options_.device_ids) {
    std::vector<Histogram*>& per_kind = step_gpu_time_.emplace_back();
    for (size_t i = 0; i < std::size(kStepKinds); ++i) {
      per_kind.push_back(&gpu_time.Add(
          {{"device", absl::StrCat(id)}, {"step", std::string(StepKindName(kStepKinds[i]))}},
          phase_buckets));
    }
  }
  compile_seconds_ = &prometheus::BuildHistogram()
                          .Name("gpuflow_kernel_compile_seconds")
                          .Help(
                              "NVRTC time per compiled kernel (a request that compiles "
                              "several records each at their mean).")
                          .Register(*registry_)
                          .Add({}, DecadeBuckets(1e-3, 60));
  prometheus::Family<prometheus::Counter>& transfers =
      prometheus::BuildCounter()
          .Name("gpuflow_transfer_bytes_total")
          .Help(
              "Array bytes moved between clients and the server: upload (UploadArray "
              "chunks), download (DownloadArray chunks and inline Execute results).")
          .Register(*registry_);
  upload_bytes_ = &transfers.Add({{"direction", "upload"}});
  download_bytes_ = &transfers.Add({{"direction", "download"}});
}

ServerMetrics::~ServerMetrics() {
  stop_polling_.Notify();
  if (device_poller_.joinable()) device_poller_.join();
}

std::string ServerMetrics::Scrape() const { return metrics::Scrape(collectables()); }

std::vector<MemoryStats> ServerMetrics::DeviceMemory() const {
  absl::MutexLock lock(&device_mu_);
  return device_memory_;
}

void ServerMetrics::AddCollectors(const SessionRegistry& sessions, const PlanCache& plans) {
  using metrics::CallbackSink;
  const DeviceSet& devices = sessions.devices();
  // Device memory comes from the driver: read here, then on the poller's
  // thread, never on a scrape's.
  auto read_memory = [&devices] {
    std::vector<MemoryStats> all;
    for (int d = 0; d < devices.size(); ++d) all.push_back(devices.backend(d).memory_stats());
    return all;
  };
  {
    std::vector<MemoryStats> first = read_memory();
    absl::MutexLock lock(&device_mu_);
    device_memory_ = std::move(first);
  }
  device_poller_ = std::thread([this, read_memory] {
    while (!stop_polling_.WaitForNotificationWithTimeout(options_.device_poll_interval)) {
      std::vector<MemoryStats> now = read_memory();
      absl::MutexLock lock(&device_mu_);
      device_memory_ = std::move(now);
    }
  });
  // The `device` label of device index d.
  auto label = [&devices](int d) { return absl::StrCat(devices.id(d)); };
  callbacks_->Add("gpuflow_kernel_compiles_total",
                  "Kernels compiled by NVRTC since the server started, by device.",
                  MetricType::Counter, [&devices, label](CallbackSink& out) {
                    for (int d = 0; d < devices.size(); ++d) {
                      out.Add(
                          {{"device", label(d)}},
                          static_cast<double>(devices.backend(d).kernel_cache_stats().compiles));
                    }
                  });
  callbacks_->Add(
      "gpuflow_kernel_cache_lookups_total",
      "Kernel cache lookups by device and result: memory_hit (loaded kernel), disk_hit (read "
      "from the on-disk cache), miss (compiled).",
      MetricType::Counter, [&devices, label](CallbackSink& out) {
        for (int d = 0; d < devices.size(); ++d) {
          const KernelCacheStats stats = devices.backend(d).kernel_cache_stats();
          out.Add({{"device", label(d)}, {"result", "memory_hit"}},
                  static_cast<double>(stats.memory_hits));
          out.Add({{"device", label(d)}, {"result", "disk_hit"}},
                  static_cast<double>(stats.disk_hits));
          out.Add({{"device", label(d)}, {"result", "miss"}}, static_cast<double>(stats.misses));
        }
      });
  callbacks_->Add("gpuflow_kernel_cache_evictions_total",
                  "Entries removed from the on-disk kernel cache to keep it within its "
                  "size bound, by the device whose backend removed them.",
                  MetricType::Counter, [&devices, label](CallbackSink& out) {
                    for (int d = 0; d < devices.size(); ++d) {
                      out.Add(
                          {{"device", label(d)}},
                          static_cast<double>(devices.backend(d).kernel_cache_stats().evictions));
                    }
                  });
  callbacks_->Add("gpuflow_plan_cache_lookups_total", "Plan cache lookups by result (hit or miss).",
                  MetricType::Counter, [&plans](CallbackSink& out) {
                    const PlanCache::Stats stats = plans.stats();
                    out.Add({{"result", "hit"}}, static_cast<double>(stats.hits));
                    out.Add({{"result", "miss"}}, static_cast<double>(stats.misses));
                  });
  callbacks_->Add(
      "gpuflow_memory_pool_bytes",
      "Device memory pool bytes by device: used (held by live allocations) and reserved (taken "
      "from the device by the pool). Absent on the CPU backend.",
      MetricType::Gauge, [this, label](CallbackSink& out) {
        const std::vector<MemoryStats> all = DeviceMemory();
        for (size_t d = 0; d < all.size(); ++d) {
          const std::string device = label(static_cast<int>(d));
          AddKnown(out, device, "used", all[d].pool_used_bytes);
          AddKnown(out, device, "reserved", all[d].pool_reserved_bytes);
        }
      });
  callbacks_->Add(
      "gpuflow_device_memory_bytes",
      "Device memory as the driver reports it, by device: free and total. Absent on the CPU "
      "backend.",
      MetricType::Gauge, [this, label](CallbackSink& out) {
        const std::vector<MemoryStats> all = DeviceMemory();
        for (size_t d = 0; d < all.size(); ++d) {
          const std::string device = label(static_cast<int>(d));
          AddKnown(out, device, "free", all[d].device_free_bytes);
          AddKnown(out, device, "total", all[d].device_total_bytes);
        }
      });
  callbacks_->Add(
      "gpuflow_session_bytes", "Bytes held by all sessions' arrays and uploads in progress.",
      MetricType::Gauge,
      [&sessions](CallbackSink& out) { out.Add(static_cast<double>(sessions.totals().bytes)); });
  callbacks_->Add(
      "gpuflow_sessions_active", "Sessions open now.", MetricType::Gauge,
      [&sessions](CallbackSink& out) { out.Add(static_cast<double>(sessions.totals().sessions)); });
  callbacks_->Add(
      "gpuflow_device_sessions_active",
      "Sessions open now, by the device that holds them (placement's first figure).",
      MetricType::Gauge, [&sessions, label](CallbackSink& out) {
        const std::vector<SessionRegistry::DeviceLoad> loads = sessions.device_loads();
        for (size_t d = 0; d < loads.size(); ++d) {
          out.Add({{"device", label(static_cast<int>(d))}}, static_cast<double>(loads[d].sessions));
        }
      });
  callbacks_->Add(
      "gpuflow_device_session_bytes",
      "Bytes held by the sessions of each device, data and metadata (placement's second figure).",
      MetricType::Gauge, [&sessions, label](CallbackSink& out) {
        const std::vector<SessionRegistry::DeviceLoad> loads = sessions.device_loads();
        for (size_t d = 0; d < loads.size(); ++d) {
          out.Add({{"device", label(static_cast<int>(d))}}, static_cast<double>(loads[d].bytes));
        }
      });
  callbacks_->Add(
      "gpuflow_sessions_expired_total",
      "Sessions closed by the server because they stayed idle past their TTL.", MetricType::Counter,
      [&sessions](CallbackSink& out) { out.Add(static_cast<double>(sessions.expired_total())); });
  callbacks_->Add(
      "gpuflow_arrays_active", "Arrays held by all sessions.", MetricType::Gauge,
      [&sessions](CallbackSink& out) { out.Add(static_cast<double>(sessions.totals().arrays)); });
  callbacks_->Add("gpuflow_device_healthy",
                  "1 while the device can run requests, 0 after a sticky error on it; by device.",
                  MetricType::Gauge, [&devices, label](CallbackSink& out) {
                    for (int d = 0; d < devices.size(); ++d) {
                      out.Add({{"device", label(d)}}, devices.backend(d).healthy() ? 1 : 0);
                    }
                  });
}

void ServerMetrics::SetBuildInfo(const BuildInfo& info) {
  prometheus::BuildGauge()
      .Name("gpuflow_build_info")
      .Help(
          "Always 1; the labels say which gpuflowd this is: version, backend, device and the "
          "CUDA toolkit it was built with.")
      .Register(*registry_)
      .Add({{"version", info.version},
            {"backend", info.backend},
            {"device", info.device},
            {"cuda", info.cuda}})
      .Set(1);
}

void ServerMetrics::SetLimits(int64_t max_sessions, int64_t max_memory_bytes) {
  prometheus::BuildGauge()
      .Name("gpuflow_sessions_max")
      .Help("Most sessions open at once (--max_sessions).")
      .Register(*registry_)
      .Add({})
      .Set(static_cast<double>(max_sessions));
  prometheus::BuildGauge()
      .Name("gpuflow_memory_limit_bytes")
      .Help("Most bytes all sessions may hold together (--max_memory_bytes).")
      .Register(*registry_)
      .Add({})
      .Set(static_cast<double>(max_memory_bytes));
}

void ServerMetrics::RecordRpc(RpcMethod method, grpc::StatusCode code, double seconds,
                              const std::string& tenant) {
  const int m = static_cast<int>(method);
  const int c = static_cast<int>(code);
  if (m < 0 || m >= kNumRpcMethods) return;
  rpc_duration_[m]->Observe(seconds);
  if (!tenant.empty()) {
    // Tenants come and go with the tokens file: looked up by label each
    // time (one map lookup under the family's lock).
    requests_
        .Add({{"method", std::string(RpcMethodName(method))},
              {"code", std::string(StatusCodeName(code))},
              {"tenant", tenant}})
        .Increment();
    return;
  }
  if (c < 0 || c >= 17) {
    requests_.Add({{"method", std::string(RpcMethodName(method))}, {"code", "UNKNOWN"}})
        .Increment();
    return;
  }
  prometheus::Counter* counter = rpc_count_[m][c].load(std::memory_order_acquire);
  if (counter == nullptr) {
    counter = &requests_.Add({{"method", std::string(RpcMethodName(method))},
                              {"code", std::string(StatusCodeName(code))}});
    rpc_count_[m][c].store(counter, std::memory_order_release);
  }
  counter->Increment();
}

void ServerMetrics::RecordExecute(const v1::Timings& timings, int device_index) {
  phase_queue_->Observe(timings.queue_seconds());
  if (timings.request_cache_hit()) {
    request_cache_hits_->Increment();
  } else {
    request_cache_misses_->Increment();
    phase_convert_->Observe(timings.convert_seconds());
    phase_validate_->Observe(timings.validate_seconds());
    phase_plan_->Observe(timings.plan_seconds());
  }
  if (timings.kernels_compiled() > 0) phase_compile_->Observe(timings.compile_seconds());
  phase_launch_->Observe(std::max(0.0, timings.run_seconds() - timings.compile_seconds()));
  if (timings.has_gpu_seconds()) phase_gpu_->Observe(timings.gpu_seconds());
  phase_transfer_->Observe(timings.transfer_seconds());
  if (device_index < 0 || device_index >= static_cast<int>(step_gpu_time_.size())) return;
  for (const v1::StepTiming& step : timings.steps()) {
    if (!step.has_gpu_seconds()) continue;
    for (size_t i = 0; i < std::size(kStepKinds); ++i) {
      if (step.kind() == StepKindName(kStepKinds[i])) {
        step_gpu_time_[device_index][i]->Observe(step.gpu_seconds());
        break;
      }
    }
  }
}

void ServerMetrics::RecordCompiles(int kernels, double seconds) {
  for (int i = 0; i < kernels; ++i) compile_seconds_->Observe(seconds / kernels);
}

void ServerMetrics::AddTransferBytes(TransferDirection direction, int64_t bytes) {
  (direction == TransferDirection::kUpload ? upload_bytes_ : download_bytes_)
      ->Increment(static_cast<double>(bytes));
}

}  // namespace gpuflow::server
