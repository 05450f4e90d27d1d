// The interface every compute backend implements (cpu/, cuda/), and the
// array type that sessions hold.
//
//   std::unique_ptr<Backend> backend = CreateCpuBackend();
//   auto stream = backend->CreateStream();
//   auto buf = backend->Allocate(1024, **stream);
//   backend->CopyToDevice(host_bytes, **buf, /*offset=*/0, /*n=*/1024,
//   **stream); backend->CopyToHost(**buf, 0, 1024, out_bytes, **stream);
//   backend->Synchronize(**stream);
//
// Backends are thread-safe: any thread may call any method. Work submitted on
// one Stream runs in submission order; work on different streams may overlap.
#ifndef GPUFLOW_ENGINE_BACKEND_H_
#define GPUFLOW_ENGINE_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"

namespace gpuflow {

// Memory owned by a backend (host memory for cpu, device memory for cuda).
// Freed by the destructor, which never fails.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual int64_t size() const = 0;
};

// An ordered queue of work (a CUDA stream; nothing for the CPU backend).
// A session owns one.
class Stream {
 public:
  virtual ~Stream() = default;
};

// An immutable array held by a session: dtype, shape and the buffer holding
// num_elements * itemsize bytes, C-contiguous. Copies share the buffer, which
// lives as long as its last holder.
struct Array {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::shared_ptr<const DeviceBuffer> buffer;

  int64_t num_bytes() const { return shape.num_elements() * ItemSize(dtype); }
};

// What a run may use and when it must stop, given by whoever asked for it
// (the server: the client's deadline and cancellation, the session's quota).
// Backends call it from the thread that called Run.
class RunControl {
 public:
  virtual ~RunControl() = default;
  // Called before each step: OK to go on, else the status the run ends with
  // (CANCELLED, DEADLINE_EXCEEDED, ...). A step that has started runs to its
  // end.
  virtual absl::Status CheckContinue() = 0;
  // Takes `bytes` for an intermediate buffer before it is allocated
  // (RESOURCE_EXHAUSTED, saying what was asked and what is left, when it
  // cannot); Release gives them back when the buffer is freed. The run's
  // outputs are not charged here: the caller accounts for them.
  virtual absl::Status Acquire(int64_t bytes) = 0;
  virtual void Release(int64_t bytes) = 0;
};

// Bytes taken from a RunControl, given back on destruction. Move-only.
class RunCharge {
 public:
  RunCharge() = default;
  // Takes `bytes` from `control` (null: nothing to take).
  static absl::StatusOr<RunCharge> Take(RunControl* control, int64_t bytes);
  RunCharge(RunCharge&& other) noexcept : control_(other.control_), bytes_(other.bytes_) {
    other.control_ = nullptr;
  }
  RunCharge& operator=(RunCharge&& other) noexcept;
  RunCharge(const RunCharge&) = delete;
  RunCharge& operator=(const RunCharge&) = delete;
  ~RunCharge() { Reset(); }
  void Reset();

 private:
  RunCharge(RunControl* control, int64_t bytes) : control_(control), bytes_(bytes) {}
  RunControl* control_ = nullptr;
  int64_t bytes_ = 0;
};

struct RunOptions {
  // Time each step separately (adds a synchronisation per step on the GPU).
  bool profile = false;
  // Allow TF32 tensor cores for float32 matmul.
  bool allow_tf32 = false;
  // Checked between steps, and charged for intermediates; null: run to the
  // end with no bound but the backend's memory. Must outlive Run.
  RunControl* control = nullptr;
  // Return once the work is queued, without waiting for it: the caller
  // queues more (copies of the outputs), synchronises the stream, then reads
  // RunResult::gpu_seconds_after_sync. Host steps and profiling still wait.
  bool defer_sync = false;
};

struct StepTiming {
  int index = 0;
  StepKind kind = StepKind::kElementwise;
  std::string description;
  double host_seconds = 0;
  std::optional<double> gpu_seconds;  // absent on the CPU backend
};

struct RunResult {
  // One per Plan::output_nodes, in order.
  std::vector<Array> outputs;
  double compile_seconds = 0;
  int kernels_compiled = 0;
  int kernel_cache_hits = 0;
  // Device time of the whole plan; absent on the CPU backend.
  std::optional<double> gpu_seconds;
  // Set instead of gpu_seconds when RunOptions::defer_sync was: gives the
  // device time once the stream has been synchronised.
  std::function<std::optional<double>()> gpu_seconds_after_sync;
  // Set, when RunOptions::defer_sync was, for a run that checks its data on
  // the device (the indices of take and take_along_axis): once the stream
  // has been synchronised, the run's data-dependent error (INVALID_ARGUMENT)
  // or OK. On an error the outputs hold garbage and must not be used. Unset:
  // the run has no such checks (without defer_sync, Run returns them).
  std::function<absl::Status()> error_after_sync;
  // Filled when RunOptions::profile is set.
  std::vector<StepTiming> steps;
};

// Kernel cache counters since the backend started (all zero on the CPU
// backend, which compiles nothing).
struct KernelCacheStats {
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t misses = 0;  // lookups that ran the compiler
  int64_t compiles = 0;
  double compile_seconds = 0;
  int64_t evictions = 0;       // disk entries removed to stay within the bound
  int64_t memory_entries = 0;  // loaded kernels
  int64_t disk_entries = 0;
  int64_t disk_bytes = 0;
};

// What Backend::Precompile did.
struct PrecompileResult {
  int kernels_compiled = 0;
  // Kernels already in the memory or disk cache.
  int kernels_cached = 0;
  double compile_seconds = 0;
};

// Memory figures for metrics and ServerInfo. Absent values are unknown to the
// backend (the CPU backend has no pool or device).
struct MemoryStats {
  std::optional<int64_t> pool_used_bytes;
  std::optional<int64_t> pool_reserved_bytes;
  std::optional<int64_t> device_free_bytes;
  std::optional<int64_t> device_total_bytes;
};

// Host memory registered for direct copies (Backend::RegisterHost): the
// registration ends when this is destroyed.
class HostRegistration {
 public:
  virtual ~HostRegistration() = default;
};

// Device memory another process on the same device exported (a CUDA IPC
// handle), mapped into this one until destroyed (Backend::ImportDeviceMemory).
class DeviceImport {
 public:
  virtual ~DeviceImport() = default;
  // Bytes of the exporter's allocation, from its base.
  virtual int64_t byte_size() const = 0;
  // Copies import bytes [offset, offset + n) into dst[0, n), ordered on
  // `stream` (complete at the next Synchronize). The caller checks the
  // range against byte_size().
  virtual absl::Status CopyToDevice(int64_t offset, int64_t n, DeviceBuffer& dst,
                                    Stream& stream) const = 0;
  // Copies src[0, n) into import bytes [offset, offset + n), ordered on
  // `stream`.
  virtual absl::Status CopyFromDevice(const DeviceBuffer& src, int64_t n, int64_t offset,
                                      Stream& stream) const = 0;
};

// How Backend::CopyFrom moved the bytes.
enum class CopyRoute {
  kDevice,  // within one GPU (device to device)
  kPeer,    // GPU to GPU directly (peer access)
  kStaged,  // through host memory, piece by piece
  kHost,    // host memory to host memory (the CPU backend)
};
// "device", "peer", "staged", "host".
absl::string_view CopyRouteName(CopyRoute route);

class Backend;

// Copies n bytes of `src` (a buffer of `source`) into dst[0, n) (a buffer
// of `target`) through pageable host memory, at most 4 MiB at a time:
// what CopyFrom does between backends with no better way.
absl::Status CopyThroughHost(Backend& source, const DeviceBuffer& src, Stream& src_stream,
                             Backend& target, DeviceBuffer& dst, Stream& dst_stream, int64_t n);

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "cuda".
  virtual absl::string_view name() const = 0;
  // Human-readable device, e.g. "CPU (2 threads)".
  virtual std::string device_description() const = 0;
  // The index of the device it runs on (-1: none, the CPU backend).
  virtual int device() const { return -1; }
  // The device's UUID as nvidia-smi writes it ("GPU-xxxxxxxx-xxxx-...");
  // empty where there is none (the CPU backend).
  virtual std::string device_uuid() const { return ""; }
  // False after an unrecoverable device error; requests then fail with
  // UNAVAILABLE.
  virtual bool healthy() const = 0;

  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream() = 0;
  // A stream whose work the device schedules ahead of other streams' when
  // both wait for room (CUDA stream priorities), for short requests beside
  // long ones; it shares `beside`'s host staging memory (copies through the
  // two take turns). Where priorities mean nothing (the CPU backend), a
  // plain one.
  virtual absl::StatusOr<std::unique_ptr<Stream>> CreatePriorityStream(const Stream& /*beside*/) {
    return CreateStream();
  }
  // Makes what is queued on `waiter` from now on wait for what is queued on
  // `other` now. A no-op where streams run work as it is queued.
  virtual absl::Status OrderAfter(Stream& /*waiter*/, Stream& /*other*/) {
    return absl::OkStatus();
  }

  // Counters of the kernel cache; cheap, thread-safe.
  virtual KernelCacheStats kernel_cache_stats() const { return {}; }
  // Pool and device memory; thread-safe.
  virtual MemoryStats memory_stats() const { return {}; }

  // Allocates `bytes` (may be 0), ordered on `stream`. RESOURCE_EXHAUSTED
  // naming the size when memory runs out. Contents are unspecified.
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(int64_t bytes, Stream& stream) = 0;

  // Copies n bytes from host memory `src` into dst[offset, offset + n),
  // ordered on `stream`. `src` may be reused as soon as the call returns
  // (the bytes are staged); the copy is complete at the next
  // Synchronize(stream), and later work on `stream` sees it.
  virtual absl::Status CopyToDevice(const void* src, DeviceBuffer& dst, int64_t offset, int64_t n,
                                    Stream& stream) = 0;
  // Copies src[offset, offset + n) into host memory `dst`, valid after the
  // next Synchronize(stream).
  virtual absl::Status CopyToHost(const DeviceBuffer& src, int64_t offset, int64_t n, void* dst,
                                  Stream& stream) = 0;
  // Waits for all work submitted on `stream`.
  virtual absl::Status Synchronize(Stream& stream) = 0;

  // Copies src[0, n) into dst[0, n): `src` is a buffer of `source` (this
  // backend, or another device's of a server driving several), `dst` one of
  // this backend. What is queued on `src_stream` is waited for first; the
  // copy is complete when this returns. The CUDA backend copies peer to peer
  // between devices that can reach each other's memory; the default, and
  // the fallback, stages through host memory (CopyThroughHost). Says which
  // way the bytes went.
  virtual absl::StatusOr<CopyRoute> CopyFrom(Backend& source, const DeviceBuffer& src,
                                             Stream& src_stream, DeviceBuffer& dst,
                                             Stream& dst_stream, int64_t n);

  // Registers host memory [base, base + bytes) (a shared-memory region's
  // mapping) so the device copies straight from and to it: the CUDA backend
  // pins it (cudaHostRegister). Null when this backend has no direct copies
  // (the CPU backend), or the memory cannot be pinned: the caller then
  // copies through CopyToDevice and CopyToHost. The memory must stay
  // mapped while registered.
  virtual absl::StatusOr<std::unique_ptr<HostRegistration>> RegisterHost(void* /*base*/,
                                                                         int64_t /*bytes*/) {
    return std::unique_ptr<HostRegistration>();
  }
  // Copies between memory RegisterHost registered and a buffer with no
  // staging, ordered on `stream`: complete at the next Synchronize(stream),
  // before which the host memory must stay registered and its bytes (for
  // CopyToDeviceDirect) unchanged. UNIMPLEMENTED where RegisterHost
  // registers nothing.
  virtual absl::Status CopyToDeviceDirect(const void* /*src*/, DeviceBuffer& /*dst*/,
                                          int64_t /*offset*/, int64_t /*n*/, Stream& /*stream*/) {
    return absl::UnimplementedError("this backend has no direct copies from host memory");
  }
  virtual absl::Status CopyToHostDirect(const DeviceBuffer& /*src*/, int64_t /*offset*/,
                                        int64_t /*n*/, void* /*dst*/, Stream& /*stream*/) {
    return absl::UnimplementedError("this backend has no direct copies to host memory");
  }

  // Opens device memory another process exported with cudaIpcGetMemHandle
  // (`handle`: the 64 bytes of a cudaIpcMemHandle_t). FAILED_PRECONDITION
  // for a handle this process cannot open (another host, a dead or foreign
  // exporter, memory not from cudaMalloc) or memory of another device;
  // UNIMPLEMENTED where the backend has no device memory (the CPU backend).
  virtual absl::StatusOr<std::unique_ptr<DeviceImport>> ImportDeviceMemory(
      absl::string_view /*handle*/) {
    return absl::UnimplementedError(
        absl::StrCat("the ", name(), " backend has no device memory to share through CUDA IPC"));
  }

  // Runs `plan` (built from `graph`) on `stream`. `arrays[i]` holds
  // graph.arrays[i]; literal values come from graph.literals. Returns the
  // plan's outputs as new arrays once they are complete. INVALID_ARGUMENT for
  // data-dependent errors, FAILED_PRECONDITION for ops this backend cannot
  // run, RESOURCE_EXHAUSTED when memory runs out.
  virtual absl::StatusOr<RunResult> Run(const ValidatedGraph& graph, const Plan& plan,
                                        absl::Span<const Array> arrays, Stream& stream,
                                        const RunOptions& options) = 0;

  // Compiles (or loads from the kernel cache) every kernel Run would use
  // for `plan`, without running anything, so later Runs find them warm.
  // The CPU backend compiles nothing. Errors name the step.
  virtual absl::StatusOr<PrecompileResult> Precompile(const ValidatedGraph& /*graph*/,
                                                      const Plan& /*plan*/) {
    return PrecompileResult{};
  }
};

// OUT_OF_RANGE unless [offset, offset + n) lies inside a buffer of `size`
// bytes. Backends call it before every copy.
absl::Status CheckCopyRange(int64_t size, int64_t offset, int64_t n);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_BACKEND_H_
