// CudaBackend: the Backend interface over the device runtime
// (device_runtime.h), the kernel loader (kernel_loader.h) and the step
// runners (step_runner.h). It keeps each plan's code, runs a plan step by
// step (a first run compiles all its steps' kernels side by side first),
// times it with CUDA events and frees each value after its last reader.
#include "engine/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/device_errors.h"
#include "engine/cuda/device_runtime.h"
#include "engine/cuda/kernel_loader.h"
#include "engine/cuda/launch_log.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

// Most NVRTC compiles Precompile runs at once.
constexpr int kCompileThreads = 8;

// The values of one run: the caller's arrays, the nodes' buffers and the
// literals, uploaded on first use.
class RunValues {
 public:
  RunValues(DeviceRuntime& device, const ValidatedGraph& graph, absl::Span<const Array> arrays,
            CudaStream& stream)
      : device_(device),
        graph_(graph),
        arrays_(arrays),
        stream_(stream),
        nodes_(graph.nodes.size()),
        literals_(graph.literals.size()) {}

  std::shared_ptr<CudaBuffer>& node(int index) { return nodes_[index]; }

  // The device address of a value.
  absl::StatusOr<const void*> Address(const ValueRef& ref) {
    switch (ref.kind) {
      case ValueRef::Kind::kArray:
        return static_cast<const CudaBuffer&>(*arrays_[ref.index].buffer).data();
      case ValueRef::Kind::kNode:
        return nodes_[ref.index]->data();
      case ValueRef::Kind::kLiteral: {
        auto& buf = literals_[ref.index];
        if (buf == nullptr) {
          const std::string& bytes = graph_.literals[ref.index].bytes;
          absl::StatusOr<std::unique_ptr<CudaBuffer>> b =
              device_.AllocateOn(static_cast<int64_t>(bytes.size()), stream_);
          if (!b.ok()) return b.status();
          buf = *std::move(b);
          if (!bytes.empty()) {
            launch_log::Note(absl::StrCat("memcpy h2d ", bytes.size(), " literal"));
            GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(buf->data(), bytes.data(), bytes.size(),
                                                         cudaMemcpyHostToDevice, stream_.get()));
          }
        }
        return buf->data();
      }
    }
    return absl::InternalError("bad value reference");
  }

 private:
  DeviceRuntime& device_;
  const ValidatedGraph& graph_;
  const absl::Span<const Array> arrays_;
  CudaStream& stream_;
  std::vector<std::shared_ptr<CudaBuffer>> nodes_;
  std::vector<std::unique_ptr<CudaBuffer>> literals_;
};

// Two CUDA events, destroyed with the guard.
struct EventPair {
  cudaEvent_t begin = nullptr;
  cudaEvent_t end = nullptr;
  // The device the events belong to, made current to destroy them (a
  // server of several devices frees them from any thread).
  int device = 0;
  explicit EventPair(int device_ordinal) : device(device_ordinal) {}
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    if (begin != nullptr || end != nullptr) cudaSetDevice(device);
    if (begin != nullptr) cudaEventDestroy(begin);
    if (end != nullptr) cudaEventDestroy(end);
  }
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(const CudaBackendOptions& options, std::unique_ptr<DeviceRuntime> device)
      : options_(options),
        device_(std::move(device)),
        loader_(*device_, options),
        error_words_(std::make_shared<ErrorWordPool>(device_->device())) {}

  absl::string_view name() const override { return "cuda"; }
  std::string device_description() const override { return device_->description(); }
  bool healthy() const override { return device_->healthy(); }
  int device() const override { return device_->device(); }
  std::string device_uuid() const override { return device_->uuid(); }
  MemoryStats memory_stats() const override { return device_->memory_stats(); }
  KernelCacheStats kernel_cache_stats() const override { return loader_.stats(); }

  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    return device_->CreateStream();
  }
  absl::StatusOr<std::unique_ptr<Stream>> CreatePriorityStream(const Stream& beside) override {
    return device_->CreateStream(device_->highest_priority(), &beside);
  }
  absl::Status OrderAfter(Stream& waiter, Stream& other) override {
    return device_->OrderAfter(static_cast<CudaStream&>(waiter), static_cast<CudaStream&>(other));
  }
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(int64_t bytes, Stream& stream) override {
    return device_->AllocateOn(bytes, static_cast<CudaStream&>(stream));
  }
  absl::Status CopyToDevice(const void* src, DeviceBuffer& dst, int64_t offset, int64_t n,
                            Stream& stream) override {
    return device_->CopyToDevice(src, static_cast<CudaBuffer&>(dst), offset, n,
                                 static_cast<CudaStream&>(stream));
  }
  absl::Status CopyToHost(const DeviceBuffer& src, int64_t offset, int64_t n, void* dst,
                          Stream& stream) override {
    return device_->CopyToHost(static_cast<const CudaBuffer&>(src), offset, n, dst,
                               static_cast<CudaStream&>(stream));
  }
  absl::Status Synchronize(Stream& stream) override {
    return device_->Synchronize(static_cast<CudaStream&>(stream));
  }
  absl::StatusOr<CopyRoute> CopyFrom(Backend& source, const DeviceBuffer& src, Stream& src_stream,
                                     DeviceBuffer& dst, Stream& dst_stream, int64_t n) override;
  absl::StatusOr<std::unique_ptr<HostRegistration>> RegisterHost(void* base,
                                                                 int64_t bytes) override {
    return device_->RegisterHost(base, bytes);
  }
  absl::Status CopyToDeviceDirect(const void* src, DeviceBuffer& dst, int64_t offset, int64_t n,
                                  Stream& stream) override {
    return device_->CopyToDeviceDirect(src, static_cast<CudaBuffer&>(dst), offset, n,
                                       static_cast<CudaStream&>(stream));
  }
  absl::Status CopyToHostDirect(const DeviceBuffer& src, int64_t offset, int64_t n, void* dst,
                                Stream& stream) override {
    return device_->CopyToHostDirect(static_cast<const CudaBuffer&>(src), offset, n, dst,
                                     static_cast<CudaStream&>(stream));
  }

  absl::StatusOr<std::unique_ptr<DeviceImport>> ImportDeviceMemory(
      absl::string_view handle) override {
    return device_->ImportIpc(handle);
  }

  absl::StatusOr<RunResult> Run(const ValidatedGraph& graph, const Plan& plan,
                                absl::Span<const Array> arrays, Stream& stream,
                                const RunOptions& options) override;

  absl::StatusOr<PrecompileResult> Precompile(const ValidatedGraph& graph,
                                              const Plan& plan) override {
    return CompilePlan(*CodeFor(plan), graph, plan);
  }

 private:
  // A begin/end pair of timing events for one run, from a free list (event
  // creation costs a driver call each, per request): back on the list when
  // the last holder lets go.
  absl::StatusOr<std::shared_ptr<EventPair>> RunEvents() {
    std::unique_ptr<EventPair> events;
    {
      absl::MutexLock lock(&events_mu_);
      if (!free_events_.empty()) {
        events = std::move(free_events_.back());
        free_events_.pop_back();
      }
    }
    if (events == nullptr) {
      events = std::make_unique<EventPair>(device_->device());
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&events->begin));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&events->end));
    }
    return std::shared_ptr<EventPair>(events.release(), [this](EventPair* done) {
      absl::MutexLock lock(&events_mu_);
      if (free_events_.size() < kFreeEventPairs) {
        free_events_.emplace_back(done);
      } else {
        delete done;
      }
    });
  }

  // The code of `plan`, kept for the plans built by BuildPlan (a plan made
  // by hand gets code of its own, for this call only). Bounded: past 4096
  // plans the oldest go, all at once (a plan still running keeps its own).
  std::shared_ptr<PlanCode> CodeFor(const Plan& plan) {
    if (plan.id == 0) return std::make_shared<PlanCode>(plan.steps.size());
    absl::MutexLock lock(&plan_code_mu_);
    std::shared_ptr<PlanCode>& code = plan_code_[plan.id];
    if (code == nullptr) {
      if (plan_code_.size() > 4096) {
        plan_code_.clear();
        return plan_code_[plan.id] = std::make_shared<PlanCode>(plan.steps.size());
      }
      code = std::make_shared<PlanCode>(plan.steps.size());
    }
    return code;
  }

  // Compiles (or finds) every step's kernels side by side, into `code`.
  absl::StatusOr<PrecompileResult> CompilePlan(PlanCode& code, const ValidatedGraph& graph,
                                               const Plan& plan);

  const CudaBackendOptions options_;
  const std::unique_ptr<DeviceRuntime> device_;
  KernelLoader loader_;  // destroyed before device_
  // Where gathers report out-of-bounds indices (held by runs' checks too).
  const std::shared_ptr<ErrorWordPool> error_words_;
  static constexpr size_t kFreeEventPairs = 64;
  absl::Mutex events_mu_;
  std::vector<std::unique_ptr<EventPair>> free_events_ ABSL_GUARDED_BY(events_mu_);
  absl::Mutex plan_code_mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<PlanCode>> plan_code_
      ABSL_GUARDED_BY(plan_code_mu_);
};

absl::StatusOr<CopyRoute> CudaBackend::CopyFrom(Backend& source, const DeviceBuffer& src,
                                                Stream& src_stream, DeviceBuffer& dst,
                                                Stream& dst_stream, int64_t n) {
  if (source.name() != "cuda")
    return Backend::CopyFrom(source, src, src_stream, dst, dst_stream, n);
  if (absl::Status s = CheckCopyRange(src.size(), 0, n); !s.ok()) return s;
  if (absl::Status s = CheckCopyRange(dst.size(), 0, n); !s.ok()) return s;
  // The source's queued work first, on its own device (its backend makes
  // that device current).
  if (absl::Status s = source.Synchronize(src_stream); !s.ok()) return s;
  const int peer = source.device();
  void* const to = static_cast<CudaBuffer&>(dst).data();
  const void* const from = static_cast<const CudaBuffer&>(src).data();
  auto& stream = static_cast<CudaStream&>(dst_stream);
  CopyRoute route = CopyRoute::kPeer;
  if (peer == device_->device()) {
    route = CopyRoute::kDevice;
    if (absl::Status s = device_->CopyDeviceToDevice(to, from, n, stream); !s.ok()) return s;
  } else if (!device_->CanReachPeer(peer)) {
    if (absl::Status s = CopyThroughHost(source, src, src_stream, *this, dst, dst_stream, n);
        !s.ok()) {
      return s;
    }
    return CopyRoute::kStaged;
  } else if (absl::Status s = device_->CopyFromPeer(to, from, peer, n, stream); !s.ok()) {
    return s;
  }
  if (absl::Status s = device_->Synchronize(stream); !s.ok()) return s;
  return route;
}

absl::StatusOr<RunResult> CudaBackend::Run(const ValidatedGraph& graph, const Plan& plan,
                                           absl::Span<const Array> arrays, Stream& base_stream,
                                           const RunOptions& options) {
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_->device()));
  auto& stream = static_cast<CudaStream&>(base_stream);
  const RunControlScope control_scope(options.control);
  RunResult result;
  const int num_steps = static_cast<int>(plan.steps.size());
  std::vector<bool> is_output(graph.nodes.size(), false);
  for (int o : plan.output_nodes) is_output[o] = true;
  // A plan seen for the first time compiles all its kernels side by side
  // first (a plan already compiled finds them in memory as it runs).
  const std::shared_ptr<PlanCode> code = CodeFor(plan);
  if (num_steps > 1 && !code->compiled.load()) {
    absl::StatusOr<PrecompileResult> pre = CompilePlan(*code, graph, plan);
    if (!pre.ok()) return pre.status();
    result.kernels_compiled += pre->kernels_compiled;
    result.compile_seconds += pre->compile_seconds;
  }
  // The run's device-side checks; a run that ends early waits for its
  // kernels before their words go back to the pool (~RunChecks).
  auto checks = std::make_shared<RunChecks>(error_words_, stream.handle());
  RunValues values(*device_, graph, arrays, stream);
  const ValueAddress address = [&](const ValueRef& ref) { return values.Address(ref); };

  absl::StatusOr<std::shared_ptr<EventPair>> run_events_owner = RunEvents();
  if (!run_events_owner.ok()) return run_events_owner.status();
  EventPair& run_events = **run_events_owner;

  std::vector<std::vector<int>> free_after(num_steps);
  for (int node = 0; node < static_cast<int>(graph.nodes.size()); ++node) {
    const int last =
        plan.last_use_step[node] >= 0 ? plan.last_use_step[node] : plan.node_step[node];
    if (last >= 0 && last < num_steps) free_after[last].push_back(node);
  }

  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(run_events.begin, stream.get()));
  for (int s = 0; s < num_steps; ++s) {
    if (options.control != nullptr) {
      if (absl::Status st = options.control->CheckContinue(); !st.ok()) return st;
    }
    const Step& step = plan.steps[s];
    const absl::Time step_start = absl::Now();
    EventPair step_events(device_->device());
    if (options.profile) {
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_events.begin));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_events.end));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_events.begin, stream.get()));
    }
    const ValidatedNode& root = graph.nodes[step.root];
    absl::StatusOr<int64_t> root_bytes = ByteSize(root.type.output.shape, root.type.output.dtype);
    if (!root_bytes.ok()) return root_bytes.status();
    absl::StatusOr<std::unique_ptr<CudaBuffer>> root_buffer =
        device_->AllocateOn(*root_bytes, stream, /*charged=*/!is_output[step.root]);
    if (!root_buffer.ok()) {
      return absl::Status(
          root_buffer.status().code(),
          absl::StrCat("step ", s, " (", step.description, "): ", root_buffer.status().message()));
    }
    values.node(step.root) = *std::move(root_buffer);
    StepRunContext ctx{{.device = *device_,
                        .loader = loader_,
                        .code = &code->steps[s],
                        .graph = graph,
                        .step = step,
                        .index = s,
                        .result = result,
                        .reduction_blocks_per_sm = options_.reduction_blocks_per_sm,
                        .rows_elements_per_thread_16bit = options_.rows_elements_per_thread_16bit},
                       address,
                       stream,
                       values.node(step.root)->data(),
                       options.allow_tf32,
                       checks.get()};
    absl::StatusOr<bool> on_device = RunStep(ctx);
    if (!on_device.ok()) return on_device.status();
    if (!*on_device) {
      if (absl::Status st = RunOnHost(ctx); !st.ok()) return st;
    }
    if (options.profile) {
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_events.end, stream.get()));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(step_events.end));
      float ms = 0;
      cudaEventElapsedTime(&ms, step_events.begin, step_events.end);
      StepTiming timing;
      timing.index = s;
      timing.kind = step.kind;
      timing.description = *on_device ? step.description : absl::StrCat("host: ", step.description);
      timing.host_seconds = absl::ToDoubleSeconds(absl::Now() - step_start);
      timing.gpu_seconds = ms / 1e3;
      result.steps.push_back(std::move(timing));
    }
    for (int n : free_after[s]) values.node(n).reset();
  }
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(run_events.end, stream.get()));
  if (options.defer_sync) {
    result.gpu_seconds_after_sync = [events =
                                         *std::move(run_events_owner)]() -> std::optional<double> {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, events->begin, events->end) != cudaSuccess) {
        return std::nullopt;
      }
      return ms / 1e3;
    };
    if (!checks->empty()) {
      result.error_after_sync = [checks = std::move(checks)] { return checks->Result(); };
    }
  } else {
    if (absl::Status st =
            device_->Check(cudaEventSynchronize(run_events.end), "cudaEventSynchronize");
        !st.ok()) {
      return st;
    }
    float ms = 0;
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, run_events.begin, run_events.end));
    result.gpu_seconds = ms / 1e3;
    if (absl::Status st = checks->Result(); !st.ok()) return st;
  }
  for (int o : plan.output_nodes) {
    const ValueType& type = graph.nodes[o].type.output;
    result.outputs.push_back(Array{type.dtype, type.shape, values.node(o)});
  }
  return result;
}

absl::StatusOr<PrecompileResult> CudaBackend::CompilePlan(PlanCode& code,
                                                          const ValidatedGraph& graph,
                                                          const Plan& plan) {
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_->device()));
  // NVRTC is slow (seconds for a kernel with CUB) and single-threaded, so the
  // steps compile side by side, on at most kCompileThreads threads.
  const int n = static_cast<int>(plan.steps.size());
  const int threads = std::clamp<int>(
      std::min<int>(n, static_cast<int>(std::thread::hardware_concurrency())), 1, kCompileThreads);
  std::vector<RunResult> partial(threads);
  std::vector<absl::Status> errors(n);
  std::atomic<int> next{0};
  auto work = [&](int t) {
    cudaSetDevice(device_->device());
    for (int s = next++; s < n; s = next++) {
      StepCompileContext ctx{
          .device = *device_,
          .loader = loader_,
          .code = &code.steps[s],
          .graph = graph,
          .step = plan.steps[s],
          .index = s,
          .result = partial[t],
          .reduction_blocks_per_sm = options_.reduction_blocks_per_sm,
          .rows_elements_per_thread_16bit = options_.rows_elements_per_thread_16bit};
      errors[s] = CompileStep(ctx);
    }
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (std::thread& t : pool) t.join();
  }
  RunResult counts;
  for (const RunResult& r : partial) {
    counts.kernels_compiled += r.kernels_compiled;
    counts.kernel_cache_hits += r.kernel_cache_hits;
    counts.compile_seconds += r.compile_seconds;
  }
  for (int s = 0; s < n; ++s) {
    if (!errors[s].ok()) {
      return absl::Status(errors[s].code(),
                          absl::StrCat("compiling step ", s, " (", plan.steps[s].description,
                                       "): ", errors[s].message()));
    }
  }
  code.compiled = true;
  PrecompileResult result;
  result.kernels_compiled = counts.kernels_compiled;
  result.kernels_cached = counts.kernel_cache_hits;
  result.compile_seconds = counts.compile_seconds;
  return result;
}

}  // namespace

absl::StatusOr<int> VisibleDeviceCount() {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error to keep
    return absl::FailedPreconditionError(
        absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorString(e)));
  }
  return count;
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& options) {
  absl::StatusOr<std::unique_ptr<DeviceRuntime>> device = DeviceRuntime::Create(options);
  if (!device.ok()) return device.status();
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(options, *std::move(device)));
}

}  // namespace gpuflow::cuda
