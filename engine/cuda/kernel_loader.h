// The kernel loader: turns a kernel's source and name into a loaded kernel
// handle. A module (NVRTC options + source) is compiled once, whichever of
// its kernels is asked for first, and kept loaded in memory; in front of
// NVRTC sits the on-disk cache of cubins (kernel_cache.h), and at start a
// background thread preloads the most recently used disk entries
// (--kernel_cache_preload) so a restarted server's first requests find
// their kernels ready. Counts hits, misses and compile time for the metrics.
//
//   KernelLoader loader(device, options);
//   absl::StatusOr<cudaKernel_t> k = loader.GetKernel(source, "gf_reduce", result);
//
// Thread-safe. Knows nothing of plans or steps (step_runner.h keeps a
// plan's kernels by name in front of this).
#ifndef GPUFLOW_ENGINE_CUDA_KERNEL_LOADER_H_
#define GPUFLOW_ENGINE_CUDA_KERNEL_LOADER_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_runtime.h"
#include "engine/cuda/kernel_cache.h"
#include "engine/cuda/nvrtc_compiler.h"

namespace gpuflow::cuda {

class KernelLoader {
 public:
  // Uses options' kernel cache directory, size bound, preload budget and
  // include directory; starts the preload thread when there is a disk
  // cache and a preload budget.
  KernelLoader(DeviceRuntime& device, const CudaBackendOptions& options);
  // Stops the preload thread and unloads every module.
  ~KernelLoader();
  KernelLoader(const KernelLoader&) = delete;
  KernelLoader& operator=(const KernelLoader&) = delete;

  // Compiles (or finds) the kernel `name` of `source`; `extra_options` are
  // added to NVRTC's (custom kernels' options). Counts into `result`
  // (kernel_cache_hits, kernels_compiled, compile_seconds).
  absl::StatusOr<cudaKernel_t> GetKernel(const std::string& source, const std::string& name,
                                         RunResult& result,
                                         const std::vector<std::string>& extra_options = {});
  // A kernel found in front of the loader (a plan's own table) counts as a
  // memory hit.
  void CountMemoryHit() { ++memory_hits_; }

  KernelCacheStats stats() const;

 private:
  struct LoadedKernel {
    cudaLibrary_t library = nullptr;
    cudaKernel_t kernel = nullptr;
    // Its on-disk cache entry, and when that entry's LRU clock was last set.
    std::optional<KernelDigest> disk_digest;
    absl::Time disk_touched;
  };

  // The disk cache key of a module.
  KernelKey KeyFor(const std::string& source, const CompileOptions& compile) const;
  // Loads the most recently used disk entries into the context (the
  // start-up thread; stops early when the loader is destroyed).
  void Preload();
  // The cubin for a kernel missing from memory: from the disk cache, else
  // compiled by NVRTC (and stored there). Counts into `result` and the
  // cache counters; records the disk entry in `loaded`.
  absl::StatusOr<std::string> CubinFor(const std::string& source, const CompileOptions& compile,
                                       RunResult& result, LoadedKernel& loaded);
  // Counts a memory hit; now and then sets the disk entry's LRU clock, since
  // a kernel served from memory is never loaded from disk again.
  void NoteMemoryHit(LoadedKernel& kernel) ABSL_EXCLUSIVE_LOCKS_REQUIRED(kernels_mu_);

  DeviceRuntime& device_;
  const CudaBackendOptions options_;
  DiskKernelCache disk_cache_;
  const std::string nvrtc_version_;
  const std::string header_identity_;  // of options_.cuda_include_dir (disk cache only)

  std::thread preload_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> has_preloaded_{false};
  absl::Mutex kernels_mu_;
  absl::flat_hash_map<KernelDigest, LoadedKernel> preloaded_ ABSL_GUARDED_BY(kernels_mu_);
  absl::flat_hash_map<std::string, LoadedKernel> kernels_ ABSL_GUARDED_BY(kernels_mu_);
  // Loaded modules by options + source; they own the libraries.
  absl::flat_hash_map<std::string, LoadedKernel> libraries_ ABSL_GUARDED_BY(kernels_mu_);

  std::atomic<int64_t> memory_hits_{0};
  std::atomic<int64_t> disk_hits_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<int64_t> compiles_{0};
  std::atomic<int64_t> compile_nanoseconds_{0};
  std::atomic<int64_t> memory_entries_{0};
};

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_KERNEL_LOADER_H_
