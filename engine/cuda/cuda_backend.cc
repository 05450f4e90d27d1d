#include "engine/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/host/host_kernels.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/kernel_cache.h"
#include "engine/cuda/launch_log.h"
#include "engine/cuda/nvrtc_compiler.h"

namespace gpuflow::cuda {

namespace {

// A CUDA stream plus the cuBLAS handle bound to it. Buffers allocated on the
// stream keep it alive, since they are freed in its order.
// Pinned host buffers that stage copies between pageable memory and the
// device, so host-to-device copies are asynchronous DMA (the caller's buffer
// is free again once the bytes are staged) and device-to-host ones run at
// pinned speed. A small ring per stream, allocated on first use.
constexpr int64_t kStagingBytes = int64_t{4} << 20;
// Most NVRTC compiles Precompile runs at once.
constexpr int kCompileThreads = 8;
constexpr int kStagingBuffers = 3;
struct StagingBuffer {
  void* host = nullptr;
  cudaEvent_t done = nullptr;  // the last copy from or into `host` finished
};

struct StreamHandle {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  absl::Mutex blas_mu;
  absl::Mutex staging_mu;
  StagingBuffer staging[kStagingBuffers] ABSL_GUARDED_BY(staging_mu);
  int next_staging ABSL_GUARDED_BY(staging_mu) = 0;
  bool staging_failed ABSL_GUARDED_BY(staging_mu) = false;

  ~StreamHandle() {
    cudaSetDevice(device);
    {
      absl::MutexLock lock(&staging_mu);
      for (StagingBuffer& b : staging) {
        if (b.done != nullptr) cudaEventSynchronize(b.done);
        if (b.host != nullptr) cudaFreeHost(b.host);
        if (b.done != nullptr) cudaEventDestroy(b.done);
      }
    }
    if (blas != nullptr) cublasDestroy(blas);
    if (stream != nullptr) {
      if (cudaError_t e = cudaStreamDestroy(stream); e != cudaSuccess) {
        std::fprintf(stderr, "gpuflow: cudaStreamDestroy: %s\n", cudaGetErrorString(e));
      }
    }
  }
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
  ~CudaBuffer() override {
    if (ptr_ == nullptr) return;
    cudaSetDevice(owner_->device);
    // Stream-ordered: work already queued on the owner stream still sees it.
    if (cudaError_t e = cudaFreeAsync(ptr_, owner_->stream); e != cudaSuccess) {
      std::fprintf(stderr, "gpuflow: cudaFreeAsync: %s\n", cudaGetErrorString(e));
    }
  }
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

// The control of the Run executing on this thread (null outside Run). Every
// buffer AllocateOn makes while it is set, but a run's outputs, is charged
// to it: scratch buffers are allocated deep in the step runners, and this
// spares threading the control through each of them. Run sets and clears it
// (RunControlScope); Run never hands its work to another thread.
thread_local RunControl* t_run_control = nullptr;

class RunControlScope {
 public:
  explicit RunControlScope(RunControl* control) : saved_(t_run_control) { t_run_control = control; }
  ~RunControlScope() { t_run_control = saved_; }
  RunControlScope(const RunControlScope&) = delete;
  RunControlScope& operator=(const RunControlScope&) = delete;

 private:
  RunControl* const saved_;
};

struct LoadedKernel {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  // Its on-disk cache entry, and when that entry's LRU clock was last set.
  std::optional<KernelDigest> disk_digest;
  absl::Time disk_touched;
};

// What the backend derives from one step of a plan, kept with the plan (by
// Plan::id) so a repeated plan neither regenerates its sources nor looks
// its kernels up by their (20 KB) sources: the generators' outputs, by
// generator, and the loaded kernels, by kernel name.
struct StepCode {
  struct Kernel {
    cudaKernel_t kernel = nullptr;
    absl::Time looked_up;  // last lookup through the module cache
  };
  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<const void>> generated ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::string, Kernel> kernels ABSL_GUARDED_BY(mu);
};

struct PlanCode {
  explicit PlanCode(size_t n) : steps(std::make_unique<StepCode[]>(n)) {}
  std::unique_ptr<StepCode[]> steps;
  // Precompile has compiled every step's kernels.
  std::atomic<bool> compiled{false};
};

// How a generated reduction is launched on a device with `sms` SMs (Run
// and Precompile must agree: the grid decides which kernels exist).
struct ReductionGrid {
  int64_t blocks_x = 1;
  // Parts the reduced range is split into; above 1, a finalize kernel
  // combines them.
  int64_t splits = 1;
  // Few outputs: a block combines each output's partials; many: a thread.
  bool finalize_by_block = false;
};

ReductionGrid ReductionGridFor(const ReductionKernel& k, int64_t sms, int64_t blocks_per_sm) {
  const int64_t m = k.outputs;
  const int64_t r = k.reduced;
  const bool outer = k.strategy == ReductionKernel::Strategy::kOuter;
  ReductionGrid grid;
  grid.blocks_x = outer ? std::min<int64_t>((m + k.block - 1) / k.block, sms * 32)
                        : std::min<int64_t>(m, sms * 32);
  // Enough blocks to fill the device: split the reduced range when the
  // outputs alone do not. Contiguous (inner) ranges of many elements take up
  // to 16 blocks per SM, about 32K elements each: more blocks than fit at
  // once even out the SMs' finishing times (a 2^28-element sum: 0.260 ms at
  // 4 blocks per SM, 0.249 at 16, CUB 0.248; bench/sum_variants.cu on the
  // H200, 2026-11-29).
  if (grid.blocks_x < 2 * sms) {
    int64_t target = blocks_per_sm * sms;
    if (!outer)
      target = std::clamp<int64_t>(m * r / 32768, target, std::max<int64_t>(target, 16 * sms));
    int64_t splits = (target + grid.blocks_x - 1) / grid.blocks_x;
    splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, r / (outer ? 64 : 2048)));
    grid.splits = std::min<int64_t>(splits, 65535);
  }
  grid.finalize_by_block = m < 4 * sms;
  return grid;
}

std::string FinalizeKernelName(const ReductionKernel& k, const ReductionGrid& grid) {
  return k.name + (grid.finalize_by_block ? "_finalize_block" : "_finalize");
}

// Parts a custom reduction kernel splits its reduced range into (Run and
// Precompile must agree: above 1, a "_combine" kernel joins the parts).
int64_t CustomReductionSplits(const CustomKernel& k, int64_t sms) {
  const int64_t outputs = k.num_elements;
  int64_t splits = 1;
  if (outputs < sms * 2 && k.reduced > int64_t{k.block} * 8) {
    splits = std::min<int64_t>((sms * 4 + outputs - 1) / outputs,
                               (k.reduced + k.block * 8 - 1) / (k.block * 8));
    splits = std::clamp<int64_t>(splits, 1, 65535);
  }
  return splits;
}

// A matmul or dot (operands of rank >= 1) that cuBLAS takes: one float
// dtype throughout and batches equal or on one side only (strided batching).
struct BlasMatmul {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, batch_a = 1, batch_b = 1;
};

std::optional<BlasMatmul> BlasMatmulFor(const ValidatedNode& node) {
  if (node.op->name != "matmul" && node.op->name != "dot") return std::nullopt;
  const ValueType& ta = node.input_types[0];
  const ValueType& tb = node.input_types[1];
  const DType dtype = node.type.output.dtype;
  if (ta.dtype != dtype || tb.dtype != dtype) return std::nullopt;
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kFloat16 &&
      dtype != DType::kBFloat16) {
    return std::nullopt;
  }
  // NumPy matmul: 1-D operands become (1, k) and (k, 1).
  const Shape& sa = ta.shape;
  const Shape& sb = tb.shape;
  if (sa.rank() < 1 || sb.rank() < 1) return std::nullopt;
  BlasMatmul p;
  p.m = sa.rank() == 1 ? 1 : sa.dim(sa.rank() - 2);
  p.k = sa.dim(sa.rank() - 1);
  p.n = sb.rank() == 1 ? 1 : sb.dim(sb.rank() - 1);
  auto batch_of = [](const Shape& s) {
    int64_t batch = 1;
    for (int d = 0; d + 2 < s.rank(); ++d) batch *= s.dim(d);
    return batch;
  };
  p.batch_a = batch_of(sa);
  p.batch_b = batch_of(sb);
  p.batch = std::max(p.batch_a, p.batch_b);
  // Strided batching covers equal batches and one side without a batch;
  // other broadcasts take the generated kernel.
  if (p.batch_a != p.batch && p.batch_a != 1) return std::nullopt;
  if (p.batch_b != p.batch && p.batch_b != 1) return std::nullopt;
  if (p.batch_a != p.batch_b && sa.rank() > 2 && sb.rank() > 2) {
    for (int d = 0; d + 2 < std::min(sa.rank(), sb.rank()); ++d) {
      if (sa.dim(d) != sb.dim(d)) return std::nullopt;
    }
  }
  const int64_t limit = int64_t{1} << 31;
  if (p.m >= limit || p.n >= limit || p.k >= limit || p.batch >= limit) return std::nullopt;
  return p;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(const CudaBackendOptions& options, cudaDeviceProp props, cudaMemPool_t pool)
      : options_(options),
        props_(props),
        pool_(pool),
        disk_cache_({.directory = options.kernel_cache_dir,
                     .max_bytes = options.kernel_cache_max_bytes,
                     .warn = nullptr}),
        nvrtc_version_(NvrtcVersion()),
        header_identity_(disk_cache_.enabled() ? CudaHeaderIdentity(options.cuda_include_dir)
                                               : std::string()) {
    if (disk_cache_.enabled() && options_.kernel_cache_preload_bytes > 0) {
      preload_thread_ = std::thread([this] { Preload(); });
    }
  }

  ~CudaBackend() override {
    stopping_ = true;
    if (preload_thread_.joinable()) preload_thread_.join();
    cudaSetDevice(options_.device);
    absl::MutexLock lock(&kernels_mu_);
    for (auto& [key, library] : libraries_) cudaLibraryUnload(library.library);
    for (auto& [key, library] : preloaded_) cudaLibraryUnload(library.library);
  }

  absl::string_view name() const override { return "cuda"; }
  std::string device_description() const override {
    return absl::StrCat(props_.name, " (sm_", props_.major, props_.minor, ", ",
                        props_.multiProcessorCount, " SMs, ",
                        static_cast<double>(props_.totalGlobalMem) / (1 << 30), " GiB)");
  }
  bool healthy() const override { return healthy_.load(); }
  int device() const override { return options_.device; }

  // Queries only: a failed one leaves its figure unknown (it does not mark
  // the backend unhealthy; the calls that run work do that).
  MemoryStats memory_stats() const override {
    MemoryStats stats;
    if (cudaSetDevice(options_.device) != cudaSuccess) return stats;
    uint64_t used = 0;
    if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess) {
      stats.pool_used_bytes = static_cast<int64_t>(used);
    }
    uint64_t reserved = 0;
    if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) ==
        cudaSuccess) {
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

  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    auto handle = std::make_shared<StreamHandle>();
    handle->device = options_.device;
    if (absl::Status s = Check(cudaStreamCreateWithFlags(&handle->stream, cudaStreamNonBlocking),
                               "cudaStreamCreateWithFlags");
        !s.ok()) {
      return s;
    }
    return std::unique_ptr<Stream>(std::make_unique<CudaStream>(std::move(handle)));
  }

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(int64_t bytes, Stream& stream) override {
    return AllocateOn(bytes, static_cast<CudaStream&>(stream));
  }

  absl::Status CopyToDevice(const void* src, DeviceBuffer& dst, int64_t offset, int64_t n,
                            Stream& base_stream) override {
    if (absl::Status s = CheckCopyRange(dst.size(), offset, n); !s.ok()) return s;
    if (n == 0) return absl::OkStatus();
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    auto& stream = static_cast<CudaStream&>(base_stream);
    char* const device = static_cast<char*>(static_cast<CudaBuffer&>(dst).data()) + offset;
    const char* const host = static_cast<const char*>(src);
    StreamHandle& h = *stream.handle();
    absl::MutexLock lock(&h.staging_mu);
    for (int64_t pos = 0; pos < n; pos += kStagingBytes) {
      const int64_t piece = std::min(kStagingBytes, n - pos);
      absl::StatusOr<StagingBuffer*> b = NextStagingBuffer(h);
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

  absl::Status CopyToHost(const DeviceBuffer& src, int64_t offset, int64_t n, void* dst,
                          Stream& base_stream) override {
    if (absl::Status s = CheckCopyRange(src.size(), offset, n); !s.ok()) return s;
    if (n == 0) return absl::OkStatus();
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    auto& stream = static_cast<CudaStream&>(base_stream);
    const char* const device =
        static_cast<const char*>(static_cast<const CudaBuffer&>(src).data()) + offset;
    char* const host = static_cast<char*>(dst);
    StreamHandle& h = *stream.handle();
    absl::MutexLock lock(&h.staging_mu);
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
      absl::StatusOr<StagingBuffer*> b = NextStagingBuffer(h);
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

  absl::Status Synchronize(Stream& stream) override {
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    return Check(cudaStreamSynchronize(static_cast<CudaStream&>(stream).get()),
                 "cudaStreamSynchronize");
  }

  absl::StatusOr<RunResult> Run(const ValidatedGraph& graph, const Plan& plan,
                                absl::Span<const Array> arrays, Stream& stream,
                                const RunOptions& options) override;

  absl::StatusOr<PrecompileResult> Precompile(const ValidatedGraph& graph,
                                              const Plan& plan) override;

  KernelCacheStats kernel_cache_stats() const override;

 private:
  // The next staging buffer of `h`'s ring, once its previous copy is done;
  // nullptr when pinned memory cannot be had (copies then go direct).
  absl::StatusOr<StagingBuffer*> NextStagingBuffer(StreamHandle& h)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(h.staging_mu) {
    if (h.staging_failed) return nullptr;
    StagingBuffer& b = h.staging[h.next_staging];
    h.next_staging = (h.next_staging + 1) % kStagingBuffers;
    if (b.host == nullptr) {
      if (cudaHostAlloc(&b.host, kStagingBytes, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();  // not sticky: clear it
        b.host = nullptr;
        h.staging_failed = true;
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

  // Converts an error, marking the backend unhealthy when it is sticky.
  absl::Status Check(cudaError_t error, const char* call) {
    if (error == cudaSuccess) return absl::OkStatus();
    if (IsStickyCudaError(error)) healthy_.store(false);
    return CudaStatus(error, call, __FILE__, __LINE__);
  }

  // Inside Run, the buffer is charged to the run's control unless
  // `charged` is false (the run's outputs).
  absl::StatusOr<std::unique_ptr<CudaBuffer>> AllocateOn(int64_t bytes, CudaStream& stream,
                                                         bool charged = true) {
    if (bytes < 0) return absl::InvalidArgumentError("negative allocation size");
    RunCharge charge;
    if (charged) {
      absl::StatusOr<RunCharge> taken = RunCharge::Take(t_run_control, bytes);
      if (!taken.ok()) return taken.status();
      charge = *std::move(taken);
    }
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
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
                                                         " bytes (", free_bytes, " of ",
                                                         total_bytes, " bytes free)"));
      }
      if (absl::Status s = Check(e, "cudaMallocFromPoolAsync"); !s.ok()) return s;
    }
    auto buffer = std::make_unique<CudaBuffer>(ptr, bytes, stream.handle());
    buffer->set_charge(std::move(charge));
    return buffer;
  }

  // Compiles (or finds) the kernel `name` of `source`; `extra_options` are
  // added to NVRTC's (custom kernels' options).
  absl::StatusOr<cudaKernel_t> GetKernel(const std::string& source, const std::string& name,
                                         RunResult& result,
                                         const std::vector<std::string>& extra_options = {}) {
    // A module (options + source) is compiled and loaded once, whichever of
    // its kernels is asked for first; each kernel is then looked up in it.
    const std::string module_key = absl::StrCat(absl::StrJoin(extra_options, " "), "\n", source);
    const std::string key = absl::StrCat(name, "\n", module_key);
    launch_log::Source(name, module_key);
    {
      absl::MutexLock lock(&kernels_mu_);
      if (auto it = kernels_.find(key); it != kernels_.end()) {
        ++result.kernel_cache_hits;
        NoteMemoryHit(it->second);
        return it->second.kernel;
      }
      if (auto it = libraries_.find(module_key); it != libraries_.end()) {
        LoadedKernel loaded = it->second;
        if (absl::Status s =
                Check(cudaLibraryGetKernel(&loaded.kernel, loaded.library, name.c_str()),
                      "cudaLibraryGetKernel");
            !s.ok()) {
          return s;
        }
        ++result.kernel_cache_hits;
        NoteMemoryHit(it->second);
        ++memory_entries_;
        return kernels_.emplace(key, loaded).first->second.kernel;
      }
    }
    CompileOptions compile;
    compile.arch = props_.major * 10 + props_.minor;
    compile.cuda_include_dir = options_.cuda_include_dir;
    compile.extra_options = extra_options;
    LoadedKernel loaded;
    if (has_preloaded_.load()) {
      // A module the start-up preload brought in from disk.
      const KernelDigest digest = DigestOf(KeyFor(source, compile));
      absl::MutexLock lock(&kernels_mu_);
      if (auto it = preloaded_.find(digest); it != preloaded_.end()) {
        loaded = it->second;
        preloaded_.erase(it);
        libraries_.emplace(module_key, loaded);
        if (absl::Status s =
                Check(cudaLibraryGetKernel(&loaded.kernel, loaded.library, name.c_str()),
                      "cudaLibraryGetKernel");
            !s.ok()) {
          return s;
        }
        ++disk_hits_;
        ++result.kernel_cache_hits;
        ++memory_entries_;
        return kernels_.emplace(key, loaded).first->second.kernel;
      }
    }
    absl::StatusOr<std::string> cubin = CubinFor(source, compile, result, loaded);
    if (!cubin.ok()) return cubin.status();
    if (absl::Status s = Check(cudaLibraryLoadData(&loaded.library, cubin->data(), nullptr, nullptr,
                                                   0, nullptr, nullptr, 0),
                               "cudaLibraryLoadData");
        !s.ok()) {
      return s;
    }
    absl::MutexLock lock(&kernels_mu_);
    auto [lib, lib_inserted] = libraries_.emplace(module_key, loaded);
    if (!lib_inserted) cudaLibraryUnload(loaded.library);  // another thread won the race
    loaded = lib->second;
    if (absl::Status s = Check(cudaLibraryGetKernel(&loaded.kernel, loaded.library, name.c_str()),
                               "cudaLibraryGetKernel");
        !s.ok()) {
      return s;
    }
    // Loading is lazy by default; asking for the attributes loads the
    // kernel into the context now (Precompile's point), not at first launch.
    cudaFuncAttributes attributes;
    if (cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(loaded.kernel)) !=
        cudaSuccess) {
      cudaGetLastError();
    }
    auto [it, inserted] = kernels_.emplace(key, loaded);
    if (inserted) ++memory_entries_;
    return it->second.kernel;
  }

  // Launches a fused elementwise step.
  absl::Status RunElementwise(
      StepCode* code, const ValidatedGraph& graph, const Step& step,
      const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
      void* out, RunResult& result);
  // Runs a reduction or softmax step with a generated kernel; returns false
  // (and does nothing) when no generator handles it.
  absl::StatusOr<bool> TryReduction(
      StepCode* code, const ValidatedGraph& graph, const Step& step,
      const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
      void* out, RunResult& result);
  absl::Status Launch(cudaKernel_t kernel, int64_t blocks_x, int64_t blocks_y, int block,
                      std::vector<uint64_t>& words, CudaStream& stream) {
    void* args[] = {words.data()};
    launch_log::Kernel(reinterpret_cast<const void*>(kernel),
                       dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y)),
                       dim3(block), 0, words);
    return Check(
        cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                         dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y)),
                         dim3(block), args, 0, stream.get()),
        "cudaLaunchKernel");
  }
  // Runs a cumsum/cumprod step with generated kernels; returns false (and
  // does nothing) when the generator does not handle it.
  absl::StatusOr<bool> TryScan(
      StepCode* code, const ValidatedGraph& graph, const Step& step,
      const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
      void* out, RunResult& result);
  // Runs a shape step or `full` as strided copies; false (nothing done)
  // when the generator does not handle it.
  absl::StatusOr<bool> TryLayout(
      StepCode* code, const ValidatedGraph& graph, const Step& step,
      const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
      void* out, RunResult& result);
  // Runs a custom-kernel step (elementwise_kernel, reduction_kernel,
  // raw_kernel; always on the device).
  absl::Status RunCustom(StepCode* code, const ValidatedGraph& graph, const Step& step,
                         const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr,
                         CudaStream& stream, void* out, RunResult& result);
  absl::Status RunRawKernel(StepCode* code, const ValidatedGraph& graph, const ValidatedNode& node,
                            const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr,
                            CudaStream& stream, void* out, RunResult& result);
  // Runs arange, random_uniform or random_normal with a generated kernel;
  // false (nothing done) when the generator does not handle the step.
  absl::StatusOr<bool> TryCreation(StepCode* code, const ValidatedGraph& graph, const Step& step,
                                   CudaStream& stream, void* out, RunResult& result);
  // Runs a matmul on cuBLAS when the dtypes and batching allow it; returns
  // false (and does nothing) when they do not.
  absl::StatusOr<bool> TryMatmul(const ValidatedNode& node, const void* a, const void* b, void* out,
                                 CudaStream& stream, bool allow_tf32);
  // Runs a matmul or dot cuBLAS does not take (integers, bool, mixed
  // dtypes, broadcast batches) with a generated kernel; false (nothing
  // done) when the generator does not handle it (a 0-d dot).
  absl::StatusOr<bool> TryGeneratedMatmul(
      StepCode* code, const ValidatedGraph& graph, const Step& step,
      const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
      void* out, RunResult& result);

  const CudaBackendOptions options_;
  const cudaDeviceProp props_;
  cudaMemPool_t pool_;
  std::atomic<bool> healthy_{true};
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
  // A generator's output for a step, made once per plan: `generate`
  // returns absl::StatusOr<T>; errors are not kept.
  template <typename T, typename F>
  absl::StatusOr<std::shared_ptr<const T>> Generated(StepCode* code, const char* generator,
                                                     F&& generate) {
    if (code != nullptr) {
      absl::MutexLock lock(&code->mu);
      if (auto it = code->generated.find(generator); it != code->generated.end()) {
        return std::static_pointer_cast<const T>(it->second);
      }
    }
    absl::StatusOr<T> made = generate();
    if (!made.ok()) return made.status();
    auto value = std::make_shared<const T>(*std::move(made));
    if (code != nullptr) {
      absl::MutexLock lock(&code->mu);
      auto [it, inserted] = code->generated.emplace(generator, value);
      return std::static_pointer_cast<const T>(it->second);
    }
    return value;
  }
  // GetKernel through the step's own table: a kernel the step has used is
  // found by name; every ten minutes it goes through the module cache
  // again, so its disk entry stays recent.
  absl::StatusOr<cudaKernel_t> StepKernel(StepCode* code, const std::string& source,
                                          const std::string& name, RunResult& result,
                                          const std::vector<std::string>& extra_options = {}) {
    const absl::Time now = absl::Now();
    if (code != nullptr) {
      absl::MutexLock lock(&code->mu);
      if (auto it = code->kernels.find(name);
          it != code->kernels.end() && now - it->second.looked_up < absl::Minutes(10)) {
        ++result.kernel_cache_hits;
        ++memory_hits_;
        return it->second.kernel;
      }
    }
    absl::StatusOr<cudaKernel_t> kernel = GetKernel(source, name, result, extra_options);
    if (kernel.ok() && code != nullptr) {
      absl::MutexLock lock(&code->mu);
      code->kernels[name] = StepCode::Kernel{*kernel, now};
    }
    return kernel;
  }
  // The disk cache key of a module.
  KernelKey KeyFor(const std::string& source, const CompileOptions& compile) const {
    KernelKey key;
    key.source = source;
    key.name = "gpuflow";
    key.options = NvrtcOptions(compile);
    key.arch = compile.arch;
    key.nvrtc_version = nvrtc_version_;
    key.header_identity = header_identity_;
    return key;
  }
  // Loads the most recently used disk entries into the context (the
  // start-up thread; stops early when the backend is destroyed).
  void Preload() {
    cudaSetDevice(options_.device);
    for (const KernelDigest& digest :
         disk_cache_.RecentEntries(options_.kernel_cache_preload_bytes)) {
      if (stopping_) return;
      std::optional<std::string> cubin = disk_cache_.Load(digest);
      if (!cubin) continue;
      LoadedKernel loaded;
      if (cudaLibraryLoadData(&loaded.library, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr,
                              0) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      // Load every kernel of the module now, not at its first launch.
      unsigned int count = 0;
      if (cudaLibraryGetKernelCount(&count, loaded.library) == cudaSuccess && count > 0) {
        std::vector<cudaKernel_t> kernels(count);
        if (cudaLibraryEnumerateKernels(kernels.data(), count, loaded.library) == cudaSuccess) {
          for (cudaKernel_t k : kernels) {
            cudaFuncAttributes attributes;
            cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(k));
          }
        }
      }
      cudaGetLastError();
      loaded.disk_digest = digest;
      loaded.disk_touched = absl::Now();
      absl::MutexLock lock(&kernels_mu_);
      if (!preloaded_.emplace(digest, loaded).second) cudaLibraryUnload(loaded.library);
      has_preloaded_ = true;
    }
  }
  std::thread preload_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> has_preloaded_{false};
  absl::flat_hash_map<KernelDigest, LoadedKernel> preloaded_ ABSL_GUARDED_BY(kernels_mu_);
  absl::Mutex plan_code_mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<PlanCode>> plan_code_
      ABSL_GUARDED_BY(plan_code_mu_);
  absl::Mutex kernels_mu_;
  absl::flat_hash_map<std::string, LoadedKernel> kernels_ ABSL_GUARDED_BY(kernels_mu_);
  // Loaded modules by options + source; they own the libraries.
  absl::flat_hash_map<std::string, LoadedKernel> libraries_ ABSL_GUARDED_BY(kernels_mu_);

  // The cubin for a kernel missing from memory: from the disk cache, else
  // compiled by NVRTC (and stored there). Counts into `result` and the
  // cache counters; records the disk entry in `loaded`.
  absl::StatusOr<std::string> CubinFor(const std::string& source, const CompileOptions& compile,
                                       RunResult& result, LoadedKernel& loaded);
  // Counts a memory hit; now and then sets the disk entry's LRU clock, since
  // a kernel served from memory is never loaded from disk again.
  void NoteMemoryHit(LoadedKernel& kernel) ABSL_EXCLUSIVE_LOCKS_REQUIRED(kernels_mu_);
  // Compiles (or finds) the kernels of one step, as Run would launch them.
  absl::Status PrecompileStep(StepCode* code, const ValidatedGraph& graph, const Step& step,
                              RunResult& counts);
  // Compiles (or finds) every step's kernels side by side, into `code`.
  absl::StatusOr<PrecompileResult> CompilePlan(PlanCode& code, const ValidatedGraph& graph,
                                               const Plan& plan);

  DiskKernelCache disk_cache_;
  const std::string nvrtc_version_;
  const std::string header_identity_;  // of options_.cuda_include_dir (disk cache only)
  std::atomic<int64_t> memory_hits_{0};
  std::atomic<int64_t> disk_hits_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<int64_t> compiles_{0};
  std::atomic<int64_t> compile_nanoseconds_{0};
  std::atomic<int64_t> memory_entries_{0};
};

absl::Status CudaBackend::RunElementwise(
    StepCode* code, const ValidatedGraph& graph, const Step& step,
    const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
    void* out, RunResult& result) {
  absl::StatusOr<std::shared_ptr<const ElementwiseKernel>> k = Generated<ElementwiseKernel>(
      code, "elementwise", [&] { return GenerateElementwise(graph, step); });
  if (!k.ok()) return k.status();
  const ElementwiseKernel* const e = k->get();
  if (e->num_elements == 0) return absl::OkStatus();
  std::vector<const void*> pointers(e->inputs.size(), nullptr);
  for (size_t i = 0; i < e->inputs.size(); ++i) {
    if (e->inputs[i].by_value) continue;
    absl::StatusOr<const void*> p = ptr(e->inputs[i].ref);
    if (!p.ok()) return p.status();
    pointers[i] = *p;
  }
  absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, e->source, e->name, result);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words;
  words.reserve(e->num_words);
  std::vector<uint64_t> scalars;
  for (size_t i = 0; i < e->inputs.size(); ++i) {
    const StepInput& in = e->inputs[i];
    if (in.by_value) {
      scalars.push_back(LiteralWord(graph.literals[in.ref.index]));
    } else {
      words.push_back(reinterpret_cast<uint64_t>(pointers[i]));
    }
  }
  words.push_back(reinterpret_cast<uint64_t>(out));
  words.push_back(static_cast<uint64_t>(e->num_elements));
  for (int64_t d : e->dims) words.push_back(static_cast<uint64_t>(d));
  for (int64_t s : e->strides) words.push_back(static_cast<uint64_t>(s));
  words.insert(words.end(), scalars.begin(), scalars.end());
  if (static_cast<int>(words.size()) != e->num_words) {
    return absl::InternalError("elementwise kernel argument layout mismatch");
  }
  const int64_t work = e->vectorized ? e->num_elements / e->elements_per_vector : e->num_elements;
  constexpr int kBlock = 256;
  const int64_t max_blocks = static_cast<int64_t>(props_.multiProcessorCount) * 32;
  const int blocks =
      static_cast<int>(std::clamp<int64_t>((work + kBlock - 1) / kBlock, 1, max_blocks));
  void* args[] = {words.data()};
  launch_log::Kernel(reinterpret_cast<const void*>(*kernel), dim3(blocks), dim3(kBlock), 0, words);
  return Check(cudaLaunchKernel(reinterpret_cast<const void*>(*kernel), dim3(blocks), dim3(kBlock),
                                args, 0, stream.get()),
               "cudaLaunchKernel");
}

absl::StatusOr<bool> CudaBackend::TryLayout(
    StepCode* code, const ValidatedGraph& graph, const Step& step,
    const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
    void* out, RunResult& result) {
  absl::StatusOr<std::shared_ptr<const std::optional<std::vector<LayoutCopy>>>> copies =
      Generated<std::optional<std::vector<LayoutCopy>>>(
          code, "layout", [&] { return GenerateLayoutCopies(graph, step); });
  if (!copies.ok()) return copies.status();
  if (!(*copies)->has_value()) return false;
  const ValidatedNode& node = graph.nodes[step.root];
  const int64_t item = ItemSize(node.type.output.dtype);
  const int64_t sms = props_.multiProcessorCount;
  for (const LayoutCopy& c : ***copies) {
    if (c.num_elements == 0) continue;
    absl::StatusOr<const void*> src = ptr(node.inputs[c.input]);
    if (!src.ok()) return src.status();
    if (c.memcpy) {
      const auto src_base = static_cast<int64_t>(c.words[3]);
      const auto dst_base = static_cast<int64_t>(c.words[4]);
      launch_log::Note(absl::StrCat("memcpy d2d ", c.num_elements * item, " from ", src_base * item,
                                    " to ", dst_base * item));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(out) + dst_base * item,
                                                   static_cast<const char*>(*src) + src_base * item,
                                                   c.num_elements * item, cudaMemcpyDeviceToDevice,
                                                   stream.get()));
      continue;
    }
    absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, c.source, c.name, result);
    if (!kernel.ok()) return kernel.status();
    std::vector<uint64_t> words = c.words;
    words[0] = reinterpret_cast<uint64_t>(*src);
    words[1] = reinterpret_cast<uint64_t>(out);
    const int64_t blocks = std::clamp<int64_t>((c.num_elements + 255) / 256, 1, sms * 32);
    if (absl::Status st = Launch(*kernel, blocks, 1, 256, words, stream); !st.ok()) return st;
  }
  return true;
}

absl::Status CudaBackend::RunCustom(
    StepCode* code, const ValidatedGraph& graph, const Step& step,
    const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
    void* out, RunResult& result) {
  const ValidatedNode& node = graph.nodes[step.root];
  if (node.op->name == "raw_kernel") {
    return RunRawKernel(code, graph, node, ptr, stream, out, result);
  }
  absl::StatusOr<std::shared_ptr<const CustomKernel>> k = Generated<CustomKernel>(
      code, "custom", [&] { return GenerateCustomKernel(graph, step.root); });
  if (!k.ok()) return k.status();
  const CustomKernel* const c = k->get();
  const bool reduction = node.op->name == "reduction_kernel";
  if (c->num_elements == 0) return absl::OkStatus();
  absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, c->source, c->name, result);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words = c->words;
  for (size_t i = 0; i < c->input_slots.size(); ++i) {
    if (c->input_slots[i] < 0) continue;
    absl::StatusOr<const void*> p = ptr(node.inputs[i]);
    if (!p.ok()) return p.status();
    words[c->input_slots[i]] = reinterpret_cast<uint64_t>(*p);
  }
  // The kernel is the plan's; the scalars are this graph's.
  for (const auto& [input, word] : c->literal_words) {
    words[word] = LiteralWord(graph.literals[node.inputs[input].index]);
  }
  // The node's value is one output; the others go to scratch buffers, freed
  // in stream order after the launch.
  std::vector<std::unique_ptr<CudaBuffer>> scratch;
  const int64_t wanted = reduction ? 0 : std::get<int64_t>(node.attrs.at("output"));
  for (size_t o = 0; o < c->output_slots.size(); ++o) {
    if (static_cast<int64_t>(o) == wanted) {
      words[c->output_slots[o]] = reinterpret_cast<uint64_t>(out);
      continue;
    }
    absl::StatusOr<std::unique_ptr<CudaBuffer>> b =
        AllocateOn(c->num_elements * ItemSize(c->output_dtypes[o]), stream);
    if (!b.ok()) return b.status();
    words[c->output_slots[o]] = reinterpret_cast<uint64_t>((*b)->data());
    scratch.push_back(*std::move(b));
  }
  const int64_t sms = props_.multiProcessorCount;
  if (!reduction) {
    const int64_t work = (c->num_elements + c->elements_per_thread - 1) / c->elements_per_thread;
    const int64_t blocks = std::clamp<int64_t>((work + c->block - 1) / c->block, 1, sms * 32);
    return Launch(*kernel, blocks, 1, c->block, words, stream);
  }
  // Reductions: split the reduced range over more blocks when the outputs
  // alone do not fill the GPU.
  const int64_t outputs = c->num_elements;
  const int64_t splits = CustomReductionSplits(*c, sms);
  const int64_t chunk = (c->reduced + splits - 1) / std::max<int64_t>(splits, 1);
  words[c->splits_slot] = static_cast<uint64_t>(splits);
  words[c->chunk_slot] = static_cast<uint64_t>(std::max<int64_t>(chunk, 1));
  if (splits > 1) {
    absl::StatusOr<std::unique_ptr<CudaBuffer>> b =
        AllocateOn(outputs * splits * c->accumulator_bytes, stream);
    if (!b.ok()) return b.status();
    words[c->scratch_slot] = reinterpret_cast<uint64_t>((*b)->data());
    scratch.push_back(*std::move(b));
  }
  const int64_t blocks = std::min<int64_t>(outputs, int64_t{1} << 30);
  if (absl::Status s = Launch(*kernel, blocks, splits, c->block, words, stream); !s.ok()) return s;
  if (splits == 1) return absl::OkStatus();
  absl::StatusOr<cudaKernel_t> combine = StepKernel(code, c->source, c->name + "_combine", result);
  if (!combine.ok()) return combine.status();
  return Launch(*combine, std::clamp<int64_t>((outputs + 255) / 256, 1, sms * 32), 1, 256, words,
                stream);
}

absl::Status CudaBackend::RunRawKernel(
    StepCode* code, const ValidatedGraph& graph, const ValidatedNode& node,
    const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
    void* out, RunResult& result) {
  const std::string& source = std::get<std::string>(node.attrs.at("code"));
  const std::string& name = std::get<std::string>(node.attrs.at("name"));
  const auto& options = std::get<std::vector<std::string>>(node.attrs.at("options"));
  const int64_t output = std::get<int64_t>(node.attrs.at("output"));
  absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, source, name, result, options);
  if (!kernel.ok()) return kernel.status();
  const void* func = reinterpret_cast<const void*>(*kernel);

  // The kernel's parameter sizes, to check (and fit) the arguments.
  std::vector<size_t> param_sizes;
  bool know_params = true;
  for (size_t i = 0;; ++i) {
    size_t offset = 0;
    size_t size = 0;
    const cudaError_t e = cudaFuncGetParamInfo(func, i, &offset, &size);
    if (e == cudaSuccess) {
      param_sizes.push_back(size);
      continue;
    }
    cudaGetLastError();  // not sticky: clear it
    if (e != cudaErrorInvalidValue) know_params = false;
    break;
  }
  const size_t n = node.inputs.size();
  if (know_params && param_sizes.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", name, "' takes ", param_sizes.size(),
                                                   " arguments, but ", n, " were given"));
  }
  // One 8-byte slot per argument: a device address or a scalar's bytes.
  std::vector<uint64_t> values(n, 0);
  std::vector<void*> args(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const ValueRef& ref = node.inputs[i];
    const ValueType& type = node.input_types[i];
    const bool by_value = ref.kind == ValueRef::Kind::kLiteral && type.shape.rank() == 0 &&
                          static_cast<int64_t>(i) != output;
    if (by_value) {
      const LiteralArray& literal = graph.literals[ref.index];
      const size_t size = literal.bytes.size();
      values[i] = LiteralWord(literal);
      if (know_params && param_sizes[i] != size) {
        // A Python scalar fits the parameter it is passed to (CuPy would
        // pass its 8 bytes regardless); a typed scalar must match.
        if (!type.weak || param_sizes[i] > 8) {
          return absl::InvalidArgumentError(absl::StrCat(
              "argument ", i, " of kernel '", name, "' is a ", DTypeName(type.dtype), " scalar (",
              size, " bytes) but the parameter takes ", param_sizes[i], " bytes"));
        }
        if (type.dtype == DType::kFloat64 && param_sizes[i] == 4) {
          double d = 0;
          std::memcpy(&d, &values[i], sizeof(d));
          const float f = static_cast<float>(d);
          values[i] = 0;
          std::memcpy(&values[i], &f, sizeof(f));
        } else if (type.dtype == DType::kInt64 || type.dtype == DType::kUInt64) {
          const int bits = static_cast<int>(param_sizes[i] * 8);
          const int64_t v = static_cast<int64_t>(values[i]);
          const bool fits =
              bits >= 64 || (type.dtype == DType::kInt64
                                 ? (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << bits))
                                 : values[i] < (uint64_t{1} << bits));
          if (!fits) {
            return absl::InvalidArgumentError(absl::StrCat("argument ", i, " of kernel '", name,
                                                           "' (", v, ") does not fit its ",
                                                           param_sizes[i], "-byte parameter"));
          }
          if (bits < 64) values[i] &= (uint64_t{1} << bits) - 1;
        }
      }
    } else {
      const void* p = nullptr;
      if (static_cast<int64_t>(i) == output) {
        // The output starts as a copy of its argument: arrays are immutable.
        absl::StatusOr<const void*> src = ptr(ref);
        if (!src.ok()) return src.status();
        const int64_t bytes = type.shape.num_elements() * ItemSize(type.dtype);
        if (bytes > 0) {
          launch_log::Note(absl::StrCat("memcpy d2d ", bytes, " raw_kernel output"));
          GPUFLOW_CUDA_RETURN_IF_ERROR(
              cudaMemcpyAsync(out, *src, bytes, cudaMemcpyDeviceToDevice, stream.get()));
        }
        p = out;
      } else {
        absl::StatusOr<const void*> src = ptr(ref);
        if (!src.ok()) return src.status();
        p = *src;
      }
      if (know_params && param_sizes[i] != sizeof(void*)) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", i, " of kernel '", name, "' is an array (a pointer) but ",
                         "the parameter takes ", param_sizes[i], " bytes"));
      }
      values[i] = reinterpret_cast<uint64_t>(p);
    }
    args[i] = &values[i];
  }
  const auto& grid = std::get<std::vector<int64_t>>(node.attrs.at("grid"));
  const auto& block = std::get<std::vector<int64_t>>(node.attrs.at("block"));
  auto dim = [](const std::vector<int64_t>& v) {
    return dim3(static_cast<unsigned>(v[0]), v.size() > 1 ? static_cast<unsigned>(v[1]) : 1u,
                v.size() > 2 ? static_cast<unsigned>(v[2]) : 1u);
  };
  const int64_t shared_mem = std::get<int64_t>(node.attrs.at("shared_mem"));
  if (shared_mem > 48 * 1024) {
    if (shared_mem > static_cast<int64_t>(props_.sharedMemPerBlockOptin)) {
      return absl::InvalidArgumentError(absl::StrCat("shared_mem ", shared_mem,
                                                     " exceeds the device's ",
                                                     props_.sharedMemPerBlockOptin, " bytes"));
    }
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        func, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_mem)));
  }
  launch_log::Kernel(func, dim(grid), dim(block), static_cast<size_t>(shared_mem), values);
  const cudaError_t e = cudaLaunchKernel(func, dim(grid), dim(block), args.data(),
                                         static_cast<size_t>(shared_mem), stream.get());
  if (e == cudaErrorInvalidConfiguration || e == cudaErrorInvalidValue ||
      e == cudaErrorLaunchOutOfResources) {
    cudaGetLastError();
    return absl::InvalidArgumentError(absl::StrCat(
        "launching kernel '", name, "': ", cudaGetErrorName(e), ": ", cudaGetErrorString(e)));
  }
  return Check(e, "cudaLaunchKernel");
}

absl::StatusOr<bool> CudaBackend::TryCreation(StepCode* code, const ValidatedGraph& graph,
                                              const Step& step, CudaStream& stream, void* out,
                                              RunResult& result) {
  absl::StatusOr<std::shared_ptr<const std::optional<CreationKernel>>> k =
      Generated<std::optional<CreationKernel>>(
          code, "creation", [&]() -> absl::StatusOr<std::optional<CreationKernel>> {
            return GenerateCreation(graph, step);
          });
  if (!k.ok()) return k.status();
  if (!(*k)->has_value()) return false;
  const CreationKernel& c = ***k;
  const auto n = static_cast<int64_t>(c.words[1]);
  if (n == 0) return true;
  absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, c.source, c.name, result);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words = c.words;
  words[0] = reinterpret_cast<uint64_t>(out);
  const int64_t blocks =
      std::clamp<int64_t>((n + 255) / 256, 1, int64_t{props_.multiProcessorCount} * 32);
  if (absl::Status s = Launch(*kernel, blocks, 1, 256, words, stream); !s.ok()) return s;
  return true;
}

absl::StatusOr<bool> CudaBackend::TryReduction(
    StepCode* code, const ValidatedGraph& graph, const Step& step,
    const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
    void* out, RunResult& result) {
  // An empty output needs no kernel.
  if (graph.nodes[step.root].type.output.shape.num_elements() == 0) return true;
  const int64_t sms = props_.multiProcessorCount;
  auto pointer_words = [&](const std::vector<StepInput>& inputs,
                           std::vector<uint64_t>& words) -> absl::Status {
    for (const StepInput& in : inputs) {
      if (in.by_value) continue;
      absl::StatusOr<const void*> p = ptr(in.ref);
      if (!p.ok()) return p.status();
      words.push_back(reinterpret_cast<uint64_t>(*p));
    }
    return absl::OkStatus();
  };
  auto scalar_words = [&](const std::vector<StepInput>& inputs, std::vector<uint64_t>& words) {
    for (const StepInput& in : inputs) {
      if (in.by_value) words.push_back(LiteralWord(graph.literals[in.ref.index]));
    }
  };

  absl::StatusOr<std::shared_ptr<const std::optional<SoftmaxKernel>>> softmax =
      Generated<std::optional<SoftmaxKernel>>(code, "softmax",
                                              [&] { return GenerateSoftmax(graph, step); });
  if (!softmax.ok()) return softmax.status();
  if ((*softmax)->has_value()) {
    const SoftmaxKernel& k = ***softmax;
    absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, k.source, k.name, result);
    if (!kernel.ok()) return kernel.status();
    std::vector<uint64_t> words;
    if (absl::Status s = pointer_words(k.inputs, words); !s.ok()) return s;
    words.push_back(reinterpret_cast<uint64_t>(out));
    words.push_back(static_cast<uint64_t>(k.rows));
    if (!k.split) {
      scalar_words(k.inputs, words);
      const int64_t blocks = k.thread_per_row
                                 ? std::min<int64_t>((k.rows + 31) / 32, int64_t{1} << 30)
                                 : std::min<int64_t>(k.rows, int64_t{1} << 30);
      if (absl::Status s = Launch(*kernel, blocks, 1, k.block, words, stream); !s.ok()) return s;
      return true;
    }
    // Long rows: about four blocks per SM over all the rows' parts, parts
    // of at least 16K elements.
    const int64_t parts = std::clamp<int64_t>((4 * sms + k.rows - 1) / k.rows, 1,
                                              std::max<int64_t>(1, k.row_length / 16384));
    absl::StatusOr<std::unique_ptr<CudaBuffer>> scratch =
        AllocateOn(2 * k.rows * parts * k.accumulator_bytes, stream);
    if (!scratch.ok()) return scratch.status();
    words.push_back(static_cast<uint64_t>(parts));
    words.push_back(reinterpret_cast<uint64_t>((*scratch)->data()));
    scalar_words(k.inputs, words);
    const int64_t blocks = std::min<int64_t>(k.rows * parts, int64_t{1} << 30);
    for (const char* suffix : {"_pmax", "_psum"}) {
      absl::StatusOr<cudaKernel_t> pass = StepKernel(code, k.source, k.name + suffix, result);
      if (!pass.ok()) return pass.status();
      if (absl::Status s = Launch(*pass, blocks, 1, k.block, words, stream); !s.ok()) return s;
    }
    // `scratch` is freed in stream order, after the kernels that use it.
    if (absl::Status s = Launch(*kernel, blocks, 1, k.block, words, stream); !s.ok()) return s;
    return true;
  }

  absl::StatusOr<std::shared_ptr<const std::optional<ReductionKernel>>> reduction =
      Generated<std::optional<ReductionKernel>>(code, "reduction",
                                                [&] { return GenerateReduction(graph, step); });
  if (!reduction.ok()) return reduction.status();
  if (!(*reduction)->has_value()) return false;
  const ReductionKernel& k = ***reduction;
  const int64_t m = k.outputs;
  const int64_t r = k.reduced;
  const ReductionGrid grid = ReductionGridFor(k, sms, options_.reduction_blocks_per_sm);
  const int64_t blocks_x = grid.blocks_x;
  const int64_t splits = grid.splits;
  const int64_t chunk = (r + splits - 1) / splits;
  std::unique_ptr<CudaBuffer> scratch;
  if (splits > 1) {
    absl::StatusOr<std::unique_ptr<CudaBuffer>> buffer =
        AllocateOn(splits * m * k.accumulator_bytes, stream);
    if (!buffer.ok()) return buffer.status();
    scratch = *std::move(buffer);
  }
  absl::StatusOr<cudaKernel_t> partial = StepKernel(code, k.source, k.name, result);
  if (!partial.ok()) return partial.status();
  std::vector<uint64_t> words;
  if (absl::Status s = pointer_words(k.prologue_inputs, words); !s.ok()) return s;
  if (absl::Status s = pointer_words(k.epilogue_inputs, words); !s.ok()) return s;
  words.push_back(reinterpret_cast<uint64_t>(out));
  words.push_back(reinterpret_cast<uint64_t>(scratch ? scratch->data() : nullptr));
  words.push_back(static_cast<uint64_t>(m));
  words.push_back(static_cast<uint64_t>(r));
  words.push_back(static_cast<uint64_t>(splits));
  words.push_back(static_cast<uint64_t>(chunk));
  for (size_t d = 0; d < k.kept_dims.size(); ++d) {
    words.push_back(static_cast<uint64_t>(k.kept_dims[d]));
    words.push_back(static_cast<uint64_t>(k.kept_strides[d]));
  }
  for (size_t d = 0; d < k.reduced_dims.size(); ++d) {
    words.push_back(static_cast<uint64_t>(k.reduced_dims[d]));
    words.push_back(static_cast<uint64_t>(k.reduced_strides[d]));
  }
  scalar_words(k.prologue_inputs, words);
  scalar_words(k.epilogue_inputs, words);
  if (absl::Status s = Launch(*partial, blocks_x, splits, k.block, words, stream); !s.ok()) {
    return s;
  }
  if (splits > 1) {
    const bool by_block = grid.finalize_by_block;
    absl::StatusOr<cudaKernel_t> finalize =
        StepKernel(code, k.source, FinalizeKernelName(k, grid), result);
    if (!finalize.ok()) return finalize.status();
    const int64_t finalize_blocks = by_block ? m : std::min<int64_t>((m + 255) / 256, sms * 32);
    if (absl::Status s = Launch(*finalize, finalize_blocks, 1, 256, words, stream); !s.ok()) {
      return s;
    }
  }
  // `scratch` is freed in stream order, after the kernels that use it.
  return true;
}

absl::StatusOr<bool> CudaBackend::TryScan(
    StepCode* code, const ValidatedGraph& graph, const Step& step,
    const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
    void* out, RunResult& result) {
  // An empty output needs no kernel.
  if (graph.nodes[step.root].type.output.shape.num_elements() == 0) return true;
  absl::StatusOr<std::shared_ptr<const std::optional<ScanKernel>>> scan =
      Generated<std::optional<ScanKernel>>(code, "scan", [&] { return GenerateScan(graph, step); });
  if (!scan.ok()) return scan.status();
  if (!(*scan)->has_value()) return false;
  const ScanKernel& k = ***scan;
  const ScanLaunch launch = ScanLaunchFor(k, props_.multiProcessorCount);
  absl::StatusOr<const void*> in = ptr(k.input.ref);
  if (!in.ok()) return in.status();
  std::unique_ptr<CudaBuffer> carry;
  if (launch.chunks > 1) {
    absl::StatusOr<std::unique_ptr<CudaBuffer>> buffer =
        AllocateOn(k.rows * launch.chunks * k.accumulator_bytes, stream);
    if (!buffer.ok()) return buffer.status();
    carry = *std::move(buffer);
  }
  std::vector<uint64_t> words = {reinterpret_cast<uint64_t>(*in),
                                 reinterpret_cast<uint64_t>(out),
                                 reinterpret_cast<uint64_t>(carry ? carry->data() : nullptr),
                                 static_cast<uint64_t>(k.rows),
                                 static_cast<uint64_t>(k.length),
                                 static_cast<uint64_t>(k.stride),
                                 static_cast<uint64_t>(launch.chunks),
                                 static_cast<uint64_t>(launch.chunk)};
  if (launch.chunks > 1) {
    absl::StatusOr<cudaKernel_t> reduce = StepKernel(code, k.split_source, k.reduce_name, result);
    if (!reduce.ok()) return reduce.status();
    if (absl::Status s = Launch(*reduce, launch.blocks, 1, k.block, words, stream); !s.ok()) {
      return s;
    }
    absl::StatusOr<cudaKernel_t> prefixes = StepKernel(code, k.split_source, k.carry_name, result);
    if (!prefixes.ok()) return prefixes.status();
    if (absl::Status s = Launch(*prefixes, launch.carry_blocks, 1, k.block, words, stream);
        !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, k.source, k.name, result);
  if (!kernel.ok()) return kernel.status();
  if (absl::Status s = Launch(*kernel, launch.blocks, 1, k.block, words, stream); !s.ok()) {
    return s;
  }
  // `carry` is freed in stream order, after the kernels that use it.
  return true;
}

absl::StatusOr<bool> CudaBackend::TryMatmul(const ValidatedNode& node, const void* a, const void* b,
                                            void* out, CudaStream& stream, bool allow_tf32) {
  const std::optional<BlasMatmul> plan = BlasMatmulFor(node);
  if (!plan.has_value()) return false;
  const BlasMatmul& p = *plan;
  const int64_t m = p.m;
  const int64_t n = p.n;
  const int64_t k = p.k;
  if (m == 0 || n == 0 || p.batch == 0) return true;
  const DType dtype = node.type.output.dtype;
  cudaDataType_t data_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (dtype) {
    case DType::kFloat32:
      compute = allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case DType::kFloat64:
      data_type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case DType::kFloat16:
      data_type = CUDA_R_16F;
      break;
    default:  // bfloat16 (BlasMatmulFor takes no other dtype)
      data_type = CUDA_R_16BF;
      break;
  }
  auto* s = &stream;
  absl::MutexLock lock(&s->handle()->blas_mu);
  if (s->handle()->blas == nullptr) {
    GPUFLOW_CUBLAS_RETURN_IF_ERROR(cublasCreate(&s->handle()->blas));
  }
  cublasHandle_t blas = s->handle()->blas;
  GPUFLOW_CUBLAS_RETURN_IF_ERROR(cublasSetStream(blas, stream.get()));
  const float alpha32 = 1.0f;
  const float beta32 = 0.0f;
  const double alpha64 = 1.0;
  const double beta64 = 0.0;
  const void* alpha = dtype == DType::kFloat64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = dtype == DType::kFloat64 ? static_cast<const void*>(&beta64) : &beta32;
  launch_log::Note(absl::StrCat("cublas ", DTypeName(dtype), " m=", m, " n=", n, " k=", k,
                                " batch=", p.batch, ",", p.batch_a, ",", p.batch_b,
                                " tf32=", allow_tf32));
  if (k == 0) {
    GPUFLOW_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(out, 0, p.batch * m * n * ItemSize(dtype), stream.get()));
    return true;
  }
  // Row-major C = A B is column-major C^T = B^T A^T.
  GPUFLOW_CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
      blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
      alpha, b, data_type, static_cast<int>(n), p.batch_b == 1 ? 0 : k * n, a, data_type,
      static_cast<int>(k), p.batch_a == 1 ? 0 : m * k, beta, out, data_type, static_cast<int>(n),
      m * n, static_cast<int>(p.batch), compute, CUBLAS_GEMM_DEFAULT));
  return true;
}

absl::StatusOr<bool> CudaBackend::TryGeneratedMatmul(
    StepCode* code, const ValidatedGraph& graph, const Step& step,
    const std::function<absl::StatusOr<const void*>(const ValueRef&)>& ptr, CudaStream& stream,
    void* out, RunResult& result) {
  absl::StatusOr<std::shared_ptr<const std::optional<MatmulKernel>>> k =
      Generated<std::optional<MatmulKernel>>(code, "matmul",
                                             [&] { return GenerateMatmul(graph, step); });
  if (!k.ok()) return k.status();
  if (!(*k)->has_value()) return false;
  const MatmulKernel& mk = ***k;
  const ValidatedNode& node = graph.nodes[step.root];
  if (node.type.output.shape.num_elements() == 0) return true;
  absl::StatusOr<cudaKernel_t> kernel = StepKernel(code, mk.source, mk.name, result);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words = mk.words;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<const void*> p = ptr(node.inputs[i]);
    if (!p.ok()) return p.status();
    words[i] = reinterpret_cast<uint64_t>(*p);
  }
  words[2] = reinterpret_cast<uint64_t>(out);
  void* args[] = {words.data()};
  const dim3 grid(static_cast<unsigned>(mk.grid_x), static_cast<unsigned>(mk.grid_y),
                  static_cast<unsigned>(mk.grid_z));
  launch_log::Kernel(reinterpret_cast<const void*>(*kernel), grid, dim3(mk.block_x, mk.block_y), 0,
                     words);
  if (absl::Status s = Check(cudaLaunchKernel(reinterpret_cast<const void*>(*kernel), grid,
                                              dim3(mk.block_x, mk.block_y), args, 0, stream.get()),
                             "cudaLaunchKernel");
      !s.ok()) {
    return s;
  }
  return true;
}

absl::StatusOr<RunResult> CudaBackend::Run(const ValidatedGraph& graph, const Plan& plan,
                                           absl::Span<const Array> arrays, Stream& base_stream,
                                           const RunOptions& options) {
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
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
  std::vector<std::shared_ptr<CudaBuffer>> values(graph.nodes.size());
  std::vector<std::unique_ptr<CudaBuffer>> literal_buffers(graph.literals.size());

  cudaEvent_t start_event = nullptr;
  cudaEvent_t end_event = nullptr;
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start_event));
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&end_event));
  struct EventGuard {
    cudaEvent_t a, b;
    ~EventGuard() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } guard{start_event, end_event};

  // The device address of a value (a literal is uploaded on first use).
  auto device_ptr = [&](const ValueRef& ref) -> absl::StatusOr<const void*> {
    switch (ref.kind) {
      case ValueRef::Kind::kArray:
        return static_cast<const CudaBuffer&>(*arrays[ref.index].buffer).data();
      case ValueRef::Kind::kNode:
        return values[ref.index]->data();
      case ValueRef::Kind::kLiteral: {
        auto& buf = literal_buffers[ref.index];
        if (buf == nullptr) {
          const std::string& bytes = graph.literals[ref.index].bytes;
          absl::StatusOr<std::unique_ptr<CudaBuffer>> b =
              AllocateOn(static_cast<int64_t>(bytes.size()), stream);
          if (!b.ok()) return b.status();
          buf = *std::move(b);
          if (!bytes.empty()) {
            launch_log::Note(absl::StrCat("memcpy h2d ", bytes.size(), " literal"));
            GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(buf->data(), bytes.data(), bytes.size(),
                                                         cudaMemcpyHostToDevice, stream.get()));
          }
        }
        return buf->data();
      }
    }
    return absl::InternalError("bad value reference");
  };

  std::vector<std::vector<int>> free_after(num_steps);
  for (int node = 0; node < static_cast<int>(graph.nodes.size()); ++node) {
    const int last =
        plan.last_use_step[node] >= 0 ? plan.last_use_step[node] : plan.node_step[node];
    if (last >= 0 && last < num_steps) free_after[last].push_back(node);
  }

  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(start_event, stream.get()));
  for (int s = 0; s < num_steps; ++s) {
    if (options.control != nullptr) {
      if (absl::Status st = options.control->CheckContinue(); !st.ok()) return st;
    }
    const Step& step = plan.steps[s];
    const absl::Time step_start = absl::Now();
    cudaEvent_t step_begin = nullptr;
    cudaEvent_t step_end = nullptr;
    if (options.profile) {
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_begin));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_end));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_begin, stream.get()));
    }
    const ValidatedNode& root = graph.nodes[step.root];
    absl::StatusOr<int64_t> root_bytes = ByteSize(root.type.output.shape, root.type.output.dtype);
    if (!root_bytes.ok()) return root_bytes.status();
    absl::StatusOr<std::unique_ptr<CudaBuffer>> root_buffer =
        AllocateOn(*root_bytes, stream, /*charged=*/!is_output[step.root]);
    if (!root_buffer.ok()) {
      return absl::Status(
          root_buffer.status().code(),
          absl::StrCat("step ", s, " (", step.description, "): ", root_buffer.status().message()));
    }
    values[step.root] = *std::move(root_buffer);
    StepCode* const step_code = &code->steps[s];
    void* const out = values[step.root]->data();
    auto step_error = [&](const absl::Status& st) {
      return absl::Status(st.code(),
                          absl::StrCat("step ", s, " (", step.description, "): ", st.message()));
    };
    bool on_device = false;
    if (step.kind == StepKind::kElementwise) {
      if (absl::Status st = RunElementwise(step_code, graph, step, device_ptr, stream, out, result);
          !st.ok()) {
        return step_error(st);
      }
      on_device = true;
    } else if (step.kind == StepKind::kCustom) {
      if (absl::Status st = RunCustom(step_code, graph, step, device_ptr, stream, out, result);
          !st.ok()) {
        return absl::Status(
            st.code(), absl::StrCat("node '", root.id, "' (", root.op->name, "): ", st.message()));
      }
      on_device = true;
    } else if (step.kind == StepKind::kMatmul && BlasMatmulFor(root).has_value()) {
      absl::StatusOr<const void*> a = device_ptr(root.inputs[0]);
      if (!a.ok()) return a.status();
      absl::StatusOr<const void*> b = device_ptr(root.inputs[1]);
      if (!b.ok()) return b.status();
      absl::StatusOr<bool> ran = TryMatmul(root, *a, *b, out, stream, options.allow_tf32);
      if (!ran.ok()) return ran.status();
      on_device = *ran;
    } else {
      absl::StatusOr<bool> ran = false;
      if (step.kind == StepKind::kReduction) {
        ran = TryReduction(step_code, graph, step, device_ptr, stream, out, result);
      } else if (step.kind == StepKind::kScan) {
        ran = TryScan(step_code, graph, step, device_ptr, stream, out, result);
      } else if (step.kind == StepKind::kShape ||
                 (step.kind == StepKind::kCreation && root.op->name == "full")) {
        ran = TryLayout(step_code, graph, step, device_ptr, stream, out, result);
      } else if (step.kind == StepKind::kCreation) {
        ran = TryCreation(step_code, graph, step, stream, out, result);
      } else if (step.kind == StepKind::kMatmul) {
        ran = TryGeneratedMatmul(step_code, graph, step, device_ptr, stream, out, result);
      }
      if (!ran.ok()) return step_error(ran.status());
      on_device = *ran;
    }
    if (!on_device) {
      // Host path: stage the step's inputs through host memory and run the
      // reference kernels.
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
      absl::flat_hash_map<int, std::vector<std::byte>> host_nodes;
      std::vector<std::vector<std::byte>> staged;
      std::vector<HostConstView> inputs;
      for (int n : step.nodes) {
        const ValidatedNode& node = graph.nodes[n];
        launch_log::Note(absl::StrCat("host ", node.op->name));
        inputs.clear();
        for (size_t i = 0; i < node.inputs.size(); ++i) {
          const ValueRef& ref = node.inputs[i];
          const ValueType& type = node.input_types[i];
          HostConstView view{type.dtype, type.shape, nullptr};
          if (ref.kind == ValueRef::Kind::kLiteral) {
            view.data = reinterpret_cast<const std::byte*>(graph.literals[ref.index].bytes.data());
          } else if (ref.kind == ValueRef::Kind::kNode && host_nodes.contains(ref.index)) {
            view.data = host_nodes[ref.index].data();
          } else {
            absl::StatusOr<const void*> p = device_ptr(ref);
            if (!p.ok()) return p.status();
            const int64_t bytes = type.shape.num_elements() * ItemSize(type.dtype);
            staged.emplace_back(bytes);
            if (bytes > 0) {
              GPUFLOW_CUDA_RETURN_IF_ERROR(
                  cudaMemcpy(staged.back().data(), *p, bytes, cudaMemcpyDeviceToHost));
            }
            view.data = staged.back().data();
          }
          inputs.push_back(view);
        }
        const ValueType& out_type = node.type.output;
        std::vector<std::byte>& out = host_nodes[n];
        out.resize(out_type.shape.num_elements() * ItemSize(out_type.dtype));
        const HostView out_view{out_type.dtype, out_type.shape, out.data()};
        // RunNodeOnHost's errors name the node already.
        if (absl::Status st = RunNodeOnHost(node, inputs, out_view, {}); !st.ok()) return st;
      }
      const std::vector<std::byte>& root_host = host_nodes[step.root];
      if (!root_host.empty()) {
        GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(values[step.root]->data(), root_host.data(),
                                                     root_host.size(), cudaMemcpyHostToDevice,
                                                     stream.get()));
        GPUFLOW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
      }
    }
    if (options.profile) {
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_end, stream.get()));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(step_end));
      float ms = 0;
      cudaEventElapsedTime(&ms, step_begin, step_end);
      cudaEventDestroy(step_begin);
      cudaEventDestroy(step_end);
      StepTiming timing;
      timing.index = s;
      timing.kind = step.kind;
      timing.description = on_device ? step.description : absl::StrCat("host: ", step.description);
      timing.host_seconds = absl::ToDoubleSeconds(absl::Now() - step_start);
      timing.gpu_seconds = ms / 1e3;
      result.steps.push_back(std::move(timing));
    }
    for (int n : free_after[s]) values[n].reset();
  }
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventRecord(end_event, stream.get()));
  if (absl::Status st = Check(cudaEventSynchronize(end_event), "cudaEventSynchronize"); !st.ok()) {
    return st;
  }
  float ms = 0;
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_event, end_event));
  result.gpu_seconds = ms / 1e3;
  for (int o : plan.output_nodes) {
    const ValueType& type = graph.nodes[o].type.output;
    result.outputs.push_back(Array{type.dtype, type.shape, values[o]});
  }
  return result;
}

absl::StatusOr<std::string> CudaBackend::CubinFor(const std::string& source,
                                                  const CompileOptions& compile, RunResult& result,
                                                  LoadedKernel& loaded) {
  // The program name does not change the cubin; one name for all keeps one
  // disk entry per module whichever kernel is asked for first.
  const KernelKey key = KeyFor(source, compile);
  const std::string& name = key.name;
  double compile_seconds = 0;
  absl::StatusOr<CachedCubin> cubin =
      disk_cache_.GetOrCompile(key, [&]() -> absl::StatusOr<std::string> {
        ++misses_;
        absl::StatusOr<CompiledModule> module = CompileToCubin(source, name + ".cu", compile);
        if (!module.ok()) return module.status();
        compile_seconds = module->compile_seconds;
        return std::move(module->cubin);
      });
  if (!cubin.ok()) return cubin.status();
  if (cubin->from_disk) {
    ++disk_hits_;
    ++result.kernel_cache_hits;
  } else {
    ++compiles_;
    compile_nanoseconds_ += static_cast<int64_t>(compile_seconds * 1e9);
    result.compile_seconds += compile_seconds;
    ++result.kernels_compiled;
  }
  if (disk_cache_.enabled()) {
    loaded.disk_digest = DigestOf(key);
    loaded.disk_touched = absl::Now();
  }
  return std::move(cubin->cubin);
}

void CudaBackend::NoteMemoryHit(LoadedKernel& kernel) {
  ++memory_hits_;
  // Often enough for LRU order (eviction is rare and coarse), rarely enough
  // to cost nothing.
  constexpr absl::Duration kTouchInterval = absl::Minutes(10);
  if (!kernel.disk_digest.has_value()) return;
  const absl::Time now = absl::Now();
  if (now - kernel.disk_touched < kTouchInterval) return;
  kernel.disk_touched = now;
  disk_cache_.Touch(*kernel.disk_digest);
}

KernelCacheStats CudaBackend::kernel_cache_stats() const {
  const DiskKernelCache::Stats disk = disk_cache_.stats();
  KernelCacheStats stats;
  stats.memory_hits = memory_hits_.load();
  stats.disk_hits = disk_hits_.load();
  stats.misses = misses_.load();
  stats.compiles = compiles_.load();
  stats.compile_seconds = static_cast<double>(compile_nanoseconds_.load()) / 1e9;
  stats.evictions = disk.evictions;
  stats.memory_entries = memory_entries_.load();
  stats.disk_entries = disk.entries;
  stats.disk_bytes = disk.bytes;
  return stats;
}

absl::Status CudaBackend::PrecompileStep(StepCode* code, const ValidatedGraph& graph,
                                         const Step& step, RunResult& counts) {
  // Generates and loads what Run would, under the same generator names, so
  // Run finds it all in `code`.
  if (step.kind == StepKind::kElementwise) {
    absl::StatusOr<std::shared_ptr<const ElementwiseKernel>> k = Generated<ElementwiseKernel>(
        code, "elementwise", [&] { return GenerateElementwise(graph, step); });
    if (!k.ok()) return k.status();
    if ((*k)->num_elements == 0) return absl::OkStatus();  // Run launches nothing
    return StepKernel(code, (*k)->source, (*k)->name, counts).status();
  }
  if (step.kind == StepKind::kScan) {
    absl::StatusOr<std::shared_ptr<const std::optional<ScanKernel>>> scan =
        Generated<std::optional<ScanKernel>>(code, "scan",
                                             [&] { return GenerateScan(graph, step); });
    if (!scan.ok()) return scan.status();
    if (!(*scan)->has_value()) return absl::OkStatus();  // runs on the host
    const ScanKernel& k = ***scan;
    if (ScanLaunchFor(k, props_.multiProcessorCount).chunks > 1) {
      if (absl::Status s = StepKernel(code, k.split_source, k.reduce_name, counts).status();
          !s.ok()) {
        return s;
      }
      if (absl::Status s = StepKernel(code, k.split_source, k.carry_name, counts).status();
          !s.ok()) {
        return s;
      }
    }
    return StepKernel(code, k.source, k.name, counts).status();
  }
  const ValidatedNode& root = graph.nodes[step.root];
  if (step.kind == StepKind::kShape ||
      (step.kind == StepKind::kCreation && root.op->name == "full")) {
    absl::StatusOr<std::shared_ptr<const std::optional<std::vector<LayoutCopy>>>> copies =
        Generated<std::optional<std::vector<LayoutCopy>>>(
            code, "layout", [&] { return GenerateLayoutCopies(graph, step); });
    if (!copies.ok()) return copies.status();
    if (!(*copies)->has_value()) return absl::OkStatus();  // runs on the host
    for (const LayoutCopy& c : ***copies) {
      if (c.num_elements == 0 || c.memcpy) continue;  // Run launches nothing
      if (absl::Status s = StepKernel(code, c.source, c.name, counts).status(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (step.kind == StepKind::kCreation) {
    absl::StatusOr<std::shared_ptr<const std::optional<CreationKernel>>> k =
        Generated<std::optional<CreationKernel>>(
            code, "creation", [&]() -> absl::StatusOr<std::optional<CreationKernel>> {
              return GenerateCreation(graph, step);
            });
    if (!k.ok()) return k.status();
    if (!(*k)->has_value() || root.type.output.shape.num_elements() == 0) return absl::OkStatus();
    return StepKernel(code, (**k)->source, (**k)->name, counts).status();
  }
  if (step.kind == StepKind::kCustom) {
    if (root.op->name == "raw_kernel") {
      return StepKernel(code, std::get<std::string>(root.attrs.at("code")),
                        std::get<std::string>(root.attrs.at("name")), counts,
                        std::get<std::vector<std::string>>(root.attrs.at("options")))
          .status();
    }
    absl::StatusOr<std::shared_ptr<const CustomKernel>> k = Generated<CustomKernel>(
        code, "custom", [&] { return GenerateCustomKernel(graph, step.root); });
    if (!k.ok()) return k.status();
    if ((*k)->num_elements == 0) return absl::OkStatus();  // Run launches nothing
    if (absl::Status s = StepKernel(code, (*k)->source, (*k)->name, counts).status(); !s.ok()) {
      return s;
    }
    if (root.op->name != "reduction_kernel" ||
        CustomReductionSplits(**k, props_.multiProcessorCount) == 1) {
      return absl::OkStatus();
    }
    return StepKernel(code, (*k)->source, (*k)->name + "_combine", counts).status();
  }
  if (step.kind == StepKind::kMatmul) {
    if (BlasMatmulFor(root).has_value()) return absl::OkStatus();  // cuBLAS
    absl::StatusOr<std::shared_ptr<const std::optional<MatmulKernel>>> k =
        Generated<std::optional<MatmulKernel>>(code, "matmul",
                                               [&] { return GenerateMatmul(graph, step); });
    if (!k.ok()) return k.status();
    if (!(*k)->has_value() || root.type.output.shape.num_elements() == 0) {
      return absl::OkStatus();  // the host, or nothing to launch
    }
    return StepKernel(code, (**k)->source, (**k)->name, counts).status();
  }
  if (step.kind != StepKind::kReduction) return absl::OkStatus();           // the host
  if (root.type.output.shape.num_elements() == 0) return absl::OkStatus();  // nothing to launch
  absl::StatusOr<std::shared_ptr<const std::optional<SoftmaxKernel>>> softmax =
      Generated<std::optional<SoftmaxKernel>>(code, "softmax",
                                              [&] { return GenerateSoftmax(graph, step); });
  if (!softmax.ok()) return softmax.status();
  if ((*softmax)->has_value()) {
    const SoftmaxKernel& k = ***softmax;
    if (k.split) {
      for (const char* suffix : {"_pmax", "_psum"}) {
        if (absl::Status s = StepKernel(code, k.source, k.name + suffix, counts).status();
            !s.ok()) {
          return s;
        }
      }
    }
    return StepKernel(code, k.source, k.name, counts).status();
  }
  absl::StatusOr<std::shared_ptr<const std::optional<ReductionKernel>>> reduction =
      Generated<std::optional<ReductionKernel>>(code, "reduction",
                                                [&] { return GenerateReduction(graph, step); });
  if (!reduction.ok()) return reduction.status();
  if (!(*reduction)->has_value()) return absl::OkStatus();  // runs on the host
  const ReductionKernel& k = ***reduction;
  if (absl::Status s = StepKernel(code, k.source, k.name, counts).status(); !s.ok()) return s;
  const ReductionGrid grid =
      ReductionGridFor(k, props_.multiProcessorCount, options_.reduction_blocks_per_sm);
  if (grid.splits == 1) return absl::OkStatus();
  return StepKernel(code, k.source, FinalizeKernelName(k, grid), counts).status();
}

absl::StatusOr<PrecompileResult> CudaBackend::Precompile(const ValidatedGraph& graph,
                                                         const Plan& plan) {
  return CompilePlan(*CodeFor(plan), graph, plan);
}

absl::StatusOr<PrecompileResult> CudaBackend::CompilePlan(PlanCode& code,
                                                          const ValidatedGraph& graph,
                                                          const Plan& plan) {
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
  // NVRTC is slow (seconds for a kernel with CUB) and single-threaded, so the
  // steps compile side by side, on at most kCompileThreads threads.
  const int n = static_cast<int>(plan.steps.size());
  const int threads = std::clamp<int>(
      std::min<int>(n, static_cast<int>(std::thread::hardware_concurrency())), 1, kCompileThreads);
  std::vector<RunResult> partial(threads);
  std::vector<absl::Status> errors(n);
  std::atomic<int> next{0};
  auto work = [&](int t) {
    cudaSetDevice(options_.device);
    for (int s = next++; s < n; s = next++) {
      errors[s] = PrecompileStep(&code.steps[s], graph, plan.steps[s], partial[t]);
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

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& options) {
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
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(options, props, pool));
}

}  // namespace gpuflow::cuda
