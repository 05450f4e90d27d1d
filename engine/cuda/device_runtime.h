// The device runtime: what the CUDA backend owns of one device. The
// stream-ordered memory pool and the buffers allocated from it, the
// sessions' streams (each with its cuBLAS handle and a ring of pinned
// staging buffers), host <-> device copies through that ring, the one
// launch point of every generated kernel, and the health flag a sticky
// error clears for good.
//
//   absl::StatusOr<std::unique_ptr<DeviceRuntime>> device = DeviceRuntime::Create(options);
//   absl::StatusOr<std::unique_ptr<Stream>> stream = (*device)->CreateStream();
//   auto buffer = (*device)->AllocateOn(bytes, static_cast<CudaStream&>(**stream));
//
// Thread-safe. Knows nothing of plans, kernels' sources or steps.
#ifndef GPUFLOW_ENGINE_CUDA_DEVICE_RUNTIME_H_
#define GPUFLOW_ENGINE_CUDA_DEVICE_RUNTIME_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/backend.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/sm_partition.h"

namespace gpuflow::cuda {

// Bytes of one pinned staging buffer, and buffers in a stream's ring.
inline constexpr int64_t kStagingBytes = int64_t{4} << 20;
inline constexpr int kStagingBuffers = 3;

// Pinned host memory that stages copies between pageable memory and the
// device, so host-to-device copies are asynchronous DMA (the caller's buffer
// is free again once the bytes are staged) and device-to-host ones run at
// pinned speed.
struct StagingBuffer {
  void* host = nullptr;
  cudaEvent_t done = nullptr;  // the last copy from or into `host` finished
};

// A ring of staging buffers (allocated on first use), one copy through it
// at a time. A session's two streams share one, so it holds pinned memory
// once.
struct StagingRing {
  int device = 0;
  absl::Mutex mu;
  StagingBuffer buffers[kStagingBuffers] ABSL_GUARDED_BY(mu);
  int next ABSL_GUARDED_BY(mu) = 0;
  bool failed ABSL_GUARDED_BY(mu) = false;

  ~StagingRing();
};

// A CUDA stream plus the cuBLAS handle bound to it and its staging ring.
// Buffers allocated on the stream keep it alive, since they are freed in its
// order.
struct StreamHandle {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  absl::Mutex blas_mu;
  std::shared_ptr<StagingRing> staging;
  // The SM partition `stream` was made in (null: the primary context),
  // destroyed after the stream.
  std::shared_ptr<SmPartition> partition;

  ~StreamHandle();
};

class CudaStream final : public Stream {
 public:
  explicit CudaStream(std::shared_ptr<StreamHandle> handle) : handle_(std::move(handle)) {}
  const std::shared_ptr<StreamHandle>& handle() const { return handle_; }
  cudaStream_t get() const { return handle_->stream; }

 private:
  std::shared_ptr<StreamHandle> handle_;
};

class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(void* ptr, int64_t size, std::shared_ptr<StreamHandle> owner)
      : ptr_(ptr), size_(size), owner_(std::move(owner)) {}
  // Frees in the owner stream's order: work already queued there still
  // sees the memory.
  ~CudaBuffer() override;
  int64_t size() const override { return size_; }
  void* data() const { return ptr_; }
  // Bytes of a run's budget this buffer holds; given back after it is freed.
  void set_charge(RunCharge charge) { charge_ = std::move(charge); }

 private:
  void* ptr_;
  int64_t size_;
  std::shared_ptr<StreamHandle> owner_;
  RunCharge charge_;
};

// Sets the control of the Run executing on this thread for the scope's
// life (null outside Run). Every buffer AllocateOn makes while it is set,
// but a run's outputs, is charged to it: scratch buffers are allocated deep
// in the step runners, and this spares threading the control through each
// of them. Run never hands its work to another thread.
class RunControlScope {
 public:
  explicit RunControlScope(RunControl* control);
  ~RunControlScope();
  RunControlScope(const RunControlScope&) = delete;
  RunControlScope& operator=(const RunControlScope&) = delete;

 private:
  RunControl* const saved_;
};

class DeviceRuntime {
 public:
  // Selects options.device, creates its pool (release threshold, and
  // options.pool_reserve allocated and freed so the pool starts warm).
  // FAILED_PRECONDITION when the device does not exist.
  static absl::StatusOr<std::unique_ptr<DeviceRuntime>> Create(const CudaBackendOptions& options);

  DeviceRuntime(int device, cudaDeviceProp props, cudaMemPool_t pool,
                std::shared_ptr<SmPartition> partition = nullptr)
      : device_(device), props_(props), pool_(pool), partition_(std::move(partition)) {}
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  int device() const { return device_; }
  const cudaDeviceProp& props() const { return props_; }
  int64_t sms() const { return props_.multiProcessorCount; }
  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
  std::string description() const;
  bool healthy() const { return healthy_.load(); }

  // Converts an error, marking the device unhealthy when it is sticky.
  absl::Status Check(cudaError_t error, const char* call);

  // Queries only: a failed one leaves its figure unknown (it does not mark
  // the device unhealthy; the calls that run work do that).
  MemoryStats memory_stats() const;

  // `priority` as cudaStreamCreateWithPriority's (lower runs first); 0 is
  // the default and the lowest. Streams of priority 0 are created in the
  // SM partition when there is one (short_work_reserved_sms), others in the
  // primary context.
  // `share_staging_with` (may be null): a stream whose staging ring the new
  // one uses too.
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream(int priority = 0,
                                                       const Stream* share_staging_with = nullptr);
  // The highest priority the device offers.
  int highest_priority() const;
  // Work queued on `waiter` after this waits for work queued on `other`
  // before it (an event between them).
  absl::Status OrderAfter(CudaStream& waiter, CudaStream& other);
  // Inside Run (a RunControlScope), the buffer is charged to the run's
  // control unless `charged` is false (the run's outputs). Out of memory:
  // RESOURCE_EXHAUSTED with the sizes.
  absl::StatusOr<std::unique_ptr<CudaBuffer>> AllocateOn(int64_t bytes, CudaStream& stream,
                                                         bool charged = true);
  // Copies through the stream's staging ring (directly, and synchronously
  // for uploads, when pinned memory cannot be had).
  absl::Status CopyToDevice(const void* src, CudaBuffer& dst, int64_t offset, int64_t n,
                            CudaStream& stream);
  absl::Status CopyToHost(const CudaBuffer& src, int64_t offset, int64_t n, void* dst,
                          CudaStream& stream);
  // Until `stream`'s work is done: a short spin, then naps (no core held
  // through long kernels).
  absl::Status Synchronize(CudaStream& stream);
  // Pins host memory for direct copies (cudaHostRegister); null when it
  // cannot be pinned (the caller then stages).
  absl::StatusOr<std::unique_ptr<HostRegistration>> RegisterHost(void* base, int64_t bytes);
  // One cudaMemcpyAsync between pinned host memory and a buffer, on `stream`.
  absl::Status CopyToDeviceDirect(const void* src, CudaBuffer& dst, int64_t offset, int64_t n,
                                  CudaStream& stream);
  absl::Status CopyToHostDirect(const CudaBuffer& src, int64_t offset, int64_t n, void* dst,
                                CudaStream& stream);
  // One cudaMemcpyAsync of n bytes between device addresses, on `stream`.
  absl::Status CopyDeviceToDevice(void* dst, const void* src, int64_t n, CudaStream& stream);
  // Whether this device can read device `peer`'s memory directly
  // (cudaDeviceCanAccessPeer), enabling that access on first use; asked
  // once per peer. False: copies from it stage through host memory.
  bool CanReachPeer(int peer);
  // One cudaMemcpyPeerAsync of n bytes from `src` on device `peer` into
  // `dst` on this device, on `stream` (of this device).
  absl::Status CopyFromPeer(void* dst, const void* src, int peer, int64_t n, CudaStream& stream);
  // Opens another process's cudaIpcMemHandle_t (64 bytes) of memory on
  // this device (Backend::ImportDeviceMemory).
  absl::StatusOr<std::unique_ptr<DeviceImport>> ImportIpc(absl::string_view handle);
  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi names it.
  std::string uuid() const;

  // Launches a generated kernel, whose one parameter is the array of
  // 64-bit `words`, on `stream` (and writes it to the launch log).
  absl::Status Launch(cudaKernel_t kernel, dim3 grid, dim3 block, std::vector<uint64_t>& words,
                      CudaStream& stream);

 private:
  // The next staging buffer of the ring, once its previous copy is done;
  // nullptr when pinned memory cannot be had (copies then go direct).
  absl::StatusOr<StagingBuffer*> NextStagingBuffer(StagingRing& ring)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ring.mu);

  const int device_;
  const cudaDeviceProp props_;
  cudaMemPool_t pool_;
  // Its streams' handles hold it too: the green context outlives them.
  const std::shared_ptr<SmPartition> partition_;
  std::atomic<bool> healthy_{true};
  absl::Mutex peers_mu_;
  // Peer ordinal -> whether this device reaches its memory (CanReachPeer).
  std::vector<std::pair<int, bool>> peers_ ABSL_GUARDED_BY(peers_mu_);
};

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_DEVICE_RUNTIME_H_
