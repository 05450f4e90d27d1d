#include "engine/cuda/device_runtime.h"

#include <cuda.h>  // CUdeviceptr, CUresult: cuMemGetAddressRange's types

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/launch_log.h"

namespace gpuflow::cuda {

namespace {

// The control of the Run executing on this thread (RunControlScope).
thread_local RunControl* t_run_control = nullptr;

}  // namespace

RunControlScope::RunControlScope(RunControl* control) : saved_(t_run_control) {
  t_run_control = control;
}

RunControlScope::~RunControlScope() { t_run_control = saved_; }

StagingRing::~StagingRing() {
  cudaSetDevice(device);
  absl::MutexLock lock(&mu);
  for (StagingBuffer& b : buffers) {
    if (b.done != nullptr) cudaEventSynchronize(b.done);
    if (b.host != nullptr) cudaFreeHost(b.host);
    if (b.done != nullptr) cudaEventDestroy(b.done);
  }
}

StreamHandle::~StreamHandle() {
  cudaSetDevice(device);
  staging.reset();  // waits for its copies, if this was its last stream
  if (blas != nullptr) cublasDestroy(blas);
  if (stream != nullptr) {
    if (cudaError_t e = cudaStreamDestroy(stream); e != cudaSuccess) {
      std::fprintf(stderr, "gpuflow: cudaStreamDestroy: %s\n", cudaGetErrorString(e));
    }
  }
}

CudaBuffer::~CudaBuffer() {
  if (ptr_ == nullptr) return;
  cudaSetDevice(owner_->device);
  if (cudaError_t e = cudaFreeAsync(ptr_, owner_->stream); e != cudaSuccess) {
    std::fprintf(stderr, "gpuflow: cudaFreeAsync: %s\n", cudaGetErrorString(e));
  }
}

absl::StatusOr<std::unique_ptr<DeviceRuntime>> DeviceRuntime::Create(
    const CudaBackendOptions& options) {
  int count = 0;
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  if (options.device < 0 || options.device >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device=", options.device, " but ", count, " CUDA device(s) are visible"));
  }
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  cudaDeviceProp props{};
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&props, options.device));
  cudaMemPoolProps pool_props{};
  pool_props.allocType = cudaMemAllocationTypePinned;
  pool_props.location.type = cudaMemLocationTypeDevice;
  pool_props.location.id = options.device;
  cudaMemPool_t pool = nullptr;
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemPoolCreate(&pool, &pool_props));
  uint64_t threshold = static_cast<uint64_t>(options.pool_release_threshold);
  GPUFLOW_CUDA_RETURN_IF_ERROR(
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  const int64_t reserve = std::min(options.pool_reserve, options.pool_release_threshold);
  if (reserve > 0) {
    void* warm = nullptr;
    if (cudaMallocFromPoolAsync(&warm, static_cast<size_t>(reserve), pool, nullptr) ==
        cudaSuccess) {
      cudaFreeAsync(warm, nullptr);
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr));
    } else {
      cudaGetLastError();  // not sticky: a smaller device simply starts cold
    }
  }
  std::shared_ptr<SmPartition> partition;
  if (options.short_work_reserved_sms > 0) {
    absl::StatusOr<std::unique_ptr<SmPartition>> p =
        SmPartition::Create(options.device, options.short_work_reserved_sms);
    if (!p.ok()) return p.status();
    partition = *std::move(p);
  }
  return std::make_unique<DeviceRuntime>(options.device, props, pool, std::move(partition));
}

std::string DeviceRuntime::uuid() const {
  const auto* b = reinterpret_cast<const unsigned char*>(props_.uuid.bytes);
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    absl::StrAppend(&out, absl::Hex(b[i], absl::kZeroPad2));
  }
  return out;
}

std::string DeviceRuntime::description() const {
  return absl::StrCat(
      props_.name, " (sm_", props_.major, props_.minor, ", ", props_.multiProcessorCount, " SMs, ",
      static_cast<double>(props_.totalGlobalMem) / (1 << 30), " GiB",
      partition_ == nullptr ? std::string()
                            : absl::StrCat("; long work on ", partition_->sms(), " SMs, ",
                                           partition_->left_out(), " kept for short requests"),
      ")");
}

absl::Status DeviceRuntime::Check(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return absl::OkStatus();
  if (IsStickyCudaError(error)) healthy_.store(false);
  return CudaStatus(error, call, __FILE__, __LINE__);
}

MemoryStats DeviceRuntime::memory_stats() const {
  MemoryStats stats;
  if (cudaSetDevice(device_) != cudaSuccess) return stats;
  uint64_t used = 0;
  if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess) {
    stats.pool_used_bytes = static_cast<int64_t>(used);
  }
  uint64_t reserved = 0;
  if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess) {
    stats.pool_reserved_bytes = static_cast<int64_t>(reserved);
  }
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    stats.device_free_bytes = static_cast<int64_t>(free_bytes);
    stats.device_total_bytes = static_cast<int64_t>(total_bytes);
  }
  return stats;
}

absl::StatusOr<std::unique_ptr<Stream>> DeviceRuntime::CreateStream(
    int priority, const Stream* share_staging_with) {
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  auto handle = std::make_shared<StreamHandle>();
  handle->device = device_;
  if (share_staging_with != nullptr) {
    handle->staging = static_cast<const CudaStream*>(share_staging_with)->handle()->staging;
  } else {
    handle->staging = std::make_shared<StagingRing>();
    handle->staging->device = device_;
  }
  if (partition_ != nullptr && priority == 0) {
    absl::StatusOr<cudaStream_t> stream = partition_->CreateStream(priority);
    if (!stream.ok()) return stream.status();
    handle->stream = *stream;
    handle->partition = partition_;
  } else if (absl::Status s = Check(
                 cudaStreamCreateWithPriority(&handle->stream, cudaStreamNonBlocking, priority),
                 "cudaStreamCreateWithPriority");
             !s.ok()) {
    return s;
  }
  return std::unique_ptr<Stream>(std::make_unique<CudaStream>(std::move(handle)));
}

int DeviceRuntime::highest_priority() const {
  int least = 0;
  int greatest = 0;
  if (cudaSetDevice(device_) != cudaSuccess ||
      cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) {
    cudaGetLastError();  // a query: not sticky
    return 0;
  }
  return greatest;
}

absl::Status DeviceRuntime::OrderAfter(CudaStream& waiter, CudaStream& other) {
  if (waiter.get() == other.get()) return absl::OkStatus();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  cudaEvent_t event = nullptr;
  if (absl::Status s = Check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                             "cudaEventCreateWithFlags");
      !s.ok()) {
    return s;
  }
  absl::Status s = Check(cudaEventRecord(event, other.get()), "cudaEventRecord");
  if (s.ok()) s = Check(cudaStreamWaitEvent(waiter.get(), event, 0), "cudaStreamWaitEvent");
  cudaEventDestroy(event);  // released once the wait is done
  return s;
}

absl::StatusOr<std::unique_ptr<CudaBuffer>> DeviceRuntime::AllocateOn(int64_t bytes,
                                                                      CudaStream& stream,
                                                                      bool charged) {
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation size");
  RunCharge charge;
  if (charged) {
    absl::StatusOr<RunCharge> taken = RunCharge::Take(t_run_control, bytes);
    if (!taken.ok()) return taken.status();
    charge = *std::move(taken);
  }
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  void* ptr = nullptr;
  if (bytes > 0) {
    const cudaError_t e =
        cudaMallocFromPoolAsync(&ptr, static_cast<size_t>(bytes), pool_, stream.get());
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      return absl::ResourceExhaustedError(absl::StrCat("out of device memory allocating ", bytes,
                                                       " bytes (", free_bytes, " of ", total_bytes,
                                                       " bytes free)"));
    }
    if (absl::Status s = Check(e, "cudaMallocFromPoolAsync"); !s.ok()) return s;
  }
  auto buffer = std::make_unique<CudaBuffer>(ptr, bytes, stream.handle());
  buffer->set_charge(std::move(charge));
  return buffer;
}

absl::Status DeviceRuntime::CopyToDevice(const void* src, CudaBuffer& dst, int64_t offset,
                                         int64_t n, CudaStream& stream) {
  if (absl::Status s = CheckCopyRange(dst.size(), offset, n); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  char* const device = static_cast<char*>(dst.data()) + offset;
  const char* const host = static_cast<const char*>(src);
  StreamHandle& h = *stream.handle();
  StagingRing& ring = *h.staging;
  absl::MutexLock lock(&ring.mu);
  for (int64_t pos = 0; pos < n; pos += kStagingBytes) {
    const int64_t piece = std::min(kStagingBytes, n - pos);
    absl::StatusOr<StagingBuffer*> b = NextStagingBuffer(ring);
    if (!b.ok()) return b.status();
    if (*b == nullptr) {
      // No pinned memory: copy directly, and wait so `src` is free on return.
      GPUFLOW_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(device + pos, host + pos, piece, cudaMemcpyHostToDevice, stream.get()));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
      continue;
    }
    std::memcpy((*b)->host, host + pos, piece);
    GPUFLOW_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(device + pos, (*b)->host, piece, cudaMemcpyHostToDevice, stream.get()));
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord((*b)->done, stream.get()));
  }
  return absl::OkStatus();
}

namespace {

class PinnedHost final : public HostRegistration {
 public:
  PinnedHost(int device, void* base) : device_(device), base_(base) {}
  ~PinnedHost() override {
    cudaSetDevice(device_);
    cudaHostUnregister(base_);
  }

 private:
  const int device_;
  void* const base_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HostRegistration>> DeviceRuntime::RegisterHost(void* base,
                                                                              int64_t bytes) {
  if (bytes <= 0) return std::unique_ptr<HostRegistration>();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  if (cudaHostRegister(base, static_cast<size_t>(bytes), cudaHostRegisterDefault) != cudaSuccess) {
    // Over the locked-memory limit, or memory the driver cannot pin: the
    // caller stages instead. Clear the error so it is not reported later.
    cudaGetLastError();
    return std::unique_ptr<HostRegistration>();
  }
  return std::make_unique<PinnedHost>(device_, base);
}

absl::Status DeviceRuntime::CopyToDeviceDirect(const void* src, CudaBuffer& dst, int64_t offset,
                                               int64_t n, CudaStream& stream) {
  if (absl::Status s = CheckCopyRange(dst.size(), offset, n); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(dst.data()) + offset, src, n,
                                               cudaMemcpyHostToDevice, stream.get()));
  return absl::OkStatus();
}

absl::Status DeviceRuntime::CopyToHostDirect(const CudaBuffer& src, int64_t offset, int64_t n,
                                             void* dst, CudaStream& stream) {
  if (absl::Status s = CheckCopyRange(src.size(), offset, n); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, static_cast<const char*>(src.data()) + offset,
                                               n, cudaMemcpyDeviceToHost, stream.get()));
  return absl::OkStatus();
}

absl::Status DeviceRuntime::CopyToHost(const CudaBuffer& src, int64_t offset, int64_t n, void* dst,
                                       CudaStream& stream) {
  if (absl::Status s = CheckCopyRange(src.size(), offset, n); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const char* const device = static_cast<const char*>(src.data()) + offset;
  char* const host = static_cast<char*>(dst);
  StreamHandle& h = *stream.handle();
  StagingRing& ring = *h.staging;
  absl::MutexLock lock(&ring.mu);
  // Pieces go device -> pinned (DMA) -> dst; the next piece's DMA runs
  // while this one is copied out.
  struct Pending {
    StagingBuffer* buffer;
    int64_t pos;
    int64_t size;
  };
  std::vector<Pending> pending;
  auto drain_one = [&]() -> absl::Status {
    const Pending p = pending.front();
    pending.erase(pending.begin());
    if (absl::Status s = Check(cudaEventSynchronize(p.buffer->done), "cudaEventSynchronize");
        !s.ok()) {
      return s;
    }
    std::memcpy(host + p.pos, p.buffer->host, p.size);
    return absl::OkStatus();
  };
  for (int64_t pos = 0; pos < n; pos += kStagingBytes) {
    const int64_t piece = std::min(kStagingBytes, n - pos);
    if (static_cast<int>(pending.size()) == kStagingBuffers - 1) {
      if (absl::Status s = drain_one(); !s.ok()) return s;
    }
    absl::StatusOr<StagingBuffer*> b = NextStagingBuffer(ring);
    if (!b.ok()) return b.status();
    if (*b == nullptr) {
      GPUFLOW_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(host + pos, device + pos, piece, cudaMemcpyDeviceToHost, stream.get()));
      continue;
    }
    GPUFLOW_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync((*b)->host, device + pos, piece, cudaMemcpyDeviceToHost, stream.get()));
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord((*b)->done, stream.get()));
    pending.push_back({*b, pos, piece});
  }
  while (!pending.empty()) {
    if (absl::Status s = drain_one(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status DeviceRuntime::Synchronize(CudaStream& stream) {
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // Spins through a short wait, as cudaStreamSynchronize would (a small
  // request's reply leaves at once), then polls with naps of 1/32 of the
  // wait so far (at most 500 us): a thread waiting on long kernels holds no
  // core, for at most ~3% more latency on long waits.
  const absl::Time start = absl::Now();
  for (;;) {
    const cudaError_t query = cudaStreamQuery(stream.get());
    if (query != cudaErrorNotReady) return Check(query, "cudaStreamQuery");
    const absl::Duration waited = absl::Now() - start;
    if (waited < absl::Microseconds(200)) continue;
    absl::SleepFor(std::min(waited / 32, absl::Microseconds(500)));
  }
}

absl::Status DeviceRuntime::Launch(cudaKernel_t kernel, dim3 grid, dim3 block,
                                   std::vector<uint64_t>& words, CudaStream& stream) {
  void* args[] = {words.data()};
  launch_log::Kernel(reinterpret_cast<const void*>(kernel), grid, block, 0, words);
  return Check(
      cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, 0, stream.get()),
      "cudaLaunchKernel");
}

absl::StatusOr<StagingBuffer*> DeviceRuntime::NextStagingBuffer(StagingRing& ring) {
  if (ring.failed) return nullptr;
  StagingBuffer& b = ring.buffers[ring.next];
  ring.next = (ring.next + 1) % kStagingBuffers;
  if (b.host == nullptr) {
    if (cudaHostAlloc(&b.host, kStagingBytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it
      b.host = nullptr;
      ring.failed = true;
      return nullptr;
    }
    if (absl::Status s = Check(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming),
                               "cudaEventCreateWithFlags");
        !s.ok()) {
      return s;
    }
    return &b;
  }
  if (absl::Status s = Check(cudaEventSynchronize(b.done), "cudaEventSynchronize"); !s.ok()) {
    return s;
  }
  return &b;
}

}  // namespace gpuflow::cuda

namespace gpuflow::cuda {
namespace {

// Another process's allocation, mapped by cudaIpcOpenMemHandle.
class IpcImport final : public DeviceImport {
 public:
  IpcImport(DeviceRuntime& device, void* base, int64_t bytes)
      : device_(device), base_(base), bytes_(bytes) {}
  ~IpcImport() override {
    cudaSetDevice(device_.device());
    cudaIpcCloseMemHandle(base_);
    cudaGetLastError();  // nothing to report it to
  }
  IpcImport(const IpcImport&) = delete;
  IpcImport& operator=(const IpcImport&) = delete;

  int64_t byte_size() const override { return bytes_; }
  absl::Status CopyToDevice(int64_t offset, int64_t n, DeviceBuffer& dst,
                            Stream& stream) const override {
    return device_.CopyDeviceToDevice(static_cast<CudaBuffer&>(dst).data(),
                                      static_cast<const char*>(base_) + offset, n,
                                      static_cast<CudaStream&>(stream));
  }
  absl::Status CopyFromDevice(const DeviceBuffer& src, int64_t n, int64_t offset,
                              Stream& stream) const override {
    return device_.CopyDeviceToDevice(static_cast<char*>(base_) + offset,
                                      static_cast<const CudaBuffer&>(src).data(), n,
                                      static_cast<CudaStream&>(stream));
  }

 private:
  DeviceRuntime& device_;
  void* const base_;
  const int64_t bytes_;
};

// cuMemGetAddressRange through the runtime's driver entry points (gpuflowd
// does not link libcuda itself): the base and size of the allocation
// holding `ptr`.
absl::Status AllocationRange(const void* ptr, CUdeviceptr& base, size_t& size) {
  using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || fn == nullptr) {
    cudaGetLastError();
    return absl::InternalError("the CUDA driver has no cuMemGetAddressRange");
  }
  const CUresult r =
      reinterpret_cast<GetRange>(fn)(&base, &size, reinterpret_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS) {
    return absl::InternalError(absl::StrCat("cuMemGetAddressRange failed (CUresult ", r, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DeviceRuntime::CopyDeviceToDevice(void* dst, const void* src, int64_t n,
                                               CudaStream& stream) {
  if (n <= 0) return absl::OkStatus();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return Check(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(n), cudaMemcpyDeviceToDevice, stream.get()),
      "cudaMemcpyAsync (device to device)");
}

bool DeviceRuntime::CanReachPeer(int peer) {
  absl::MutexLock lock(&peers_mu_);
  for (const auto& [ordinal, reachable] : peers_) {
    if (ordinal == peer) return reachable;
  }
  bool reachable = false;
  int can = 0;
  if (cudaSetDevice(device_) == cudaSuccess &&
      cudaDeviceCanAccessPeer(&can, device_, peer) == cudaSuccess && can != 0) {
    // Access from this device (the current one) to the peer's memory.
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    reachable = e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled;
  }
  cudaGetLastError();  // queries and an already-enabled access: nothing sticky to keep
  peers_.emplace_back(peer, reachable);
  return reachable;
}

absl::Status DeviceRuntime::CopyFromPeer(void* dst, const void* src, int peer, int64_t n,
                                         CudaStream& stream) {
  if (n <= 0) return absl::OkStatus();
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return Check(cudaMemcpyPeerAsync(dst, device_, src, peer, static_cast<size_t>(n), stream.get()),
               "cudaMemcpyPeerAsync");
}

absl::StatusOr<std::unique_ptr<DeviceImport>> DeviceRuntime::ImportIpc(absl::string_view handle) {
  cudaIpcMemHandle_t h{};
  if (handle.size() != sizeof(h)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a CUDA IPC memory handle has ", sizeof(h), " bytes, got ", handle.size()));
  }
  std::memcpy(&h, handle.data(), sizeof(h));
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  void* base = nullptr;
  if (const cudaError_t e = cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess);
      e != cudaSuccess) {
    if (IsStickyCudaError(e)) return Check(e, "cudaIpcOpenMemHandle");
    cudaGetLastError();  // not sticky: clear it
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot open the CUDA IPC handle (", cudaGetErrorString(e),
        "): it must be cudaIpcGetMemHandle's of memory a live process on this host allocated "
        "with cudaMalloc on this server's GPU (",
        uuid(), ")"));
  }
  // Closed again unless it is handed over below.
  absl::Cleanup close = [base] {
    cudaIpcCloseMemHandle(base);
    cudaGetLastError();
  };
  cudaPointerAttributes attributes{};
  if (const cudaError_t e = cudaPointerGetAttributes(&attributes, base); e != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot inspect the CUDA IPC memory: ", cudaGetErrorString(e)));
  }
  if (attributes.device != device_) {
    return absl::FailedPreconditionError(
        absl::StrCat("the CUDA IPC handle is memory of device ", attributes.device,
                     ", not of this server's (", device_, ", ", uuid(),
                     "): copy it to the server's GPU first, or use a server on that GPU"));
  }
  CUdeviceptr range_base = 0;
  size_t size = 0;
  if (absl::Status s = AllocationRange(base, range_base, size); !s.ok()) return s;
  if (range_base != reinterpret_cast<CUdeviceptr>(base)) {
    return absl::FailedPreconditionError("the CUDA IPC handle does not map an allocation's base");
  }
  std::move(close).Cancel();
  return std::make_unique<IpcImport>(*this, base, static_cast<int64_t>(size));
}

}  // namespace gpuflow::cuda
