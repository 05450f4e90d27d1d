// The CUDA backend: one device, a stream-ordered memory pool, one
// non-blocking stream per session, NVRTC-compiled fused kernels with an
// in-memory kernel cache in front of an optional on-disk one
// (kernel_cache.h), cuBLAS for matmul, and CUDA events for GPU time.
//
//   absl::StatusOr<std::unique_ptr<Backend>> cuda = CreateCudaBackend({.device = 0});
//   if (!cuda.ok()) ... // FAILED_PRECONDITION: no driver or no device
//
// Steps without a generated kernel yet run on the host through the CPU
// reference kernels (staged through host memory), so every plan runs;
// RunResult's per-step kind shows which ran where ("host:" prefix).
// Thread-safe. A sticky device error marks the backend unhealthy for good.
#ifndef GPUFLOW_ENGINE_CUDA_CUDA_BACKEND_H_
#define GPUFLOW_ENGINE_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend.h"

namespace gpuflow::cuda {

struct CudaBackendOptions {
  int device = 0;
  // Bytes the pool keeps reserved after frees (cudaMemPoolAttrReleaseThreshold).
  int64_t pool_release_threshold = int64_t{1} << 34;
  // Bytes allocated and freed at start so the pool holds them reserved:
  // the first requests then find memory without growing the pool (a few
  // milliseconds each time it grows). Capped by the release threshold.
  int64_t pool_reserve = int64_t{1} << 30;
  // A reduction whose outputs do not fill the device splits its reduced
  // range until about this many blocks per SM run (a tuning knob).
  int64_t reduction_blocks_per_sm = 4;
  // About how many elements of a row each thread of a row program holds,
  // for rows of 2-byte data (float16, bfloat16); others hold 16 (a tuning
  // knob).
  int rows_elements_per_thread_16bit = 16;
  // SMs kept out of the sessions' own streams (their long work), which then
  // run in a green context of the other SMs (sm_partition.h), so that the
  // priority streams' short requests find SMs free beside a long kernel;
  // long work runs on that many fewer SMs. 0: off (all streams in the
  // primary context).
  int short_work_reserved_sms = 0;
  // Headers for NVRTC (cuda_fp16.h, cub/).
  std::string cuda_include_dir = "/usr/local/cuda/include";
  // The on-disk kernel cache behind the in-memory one (kernel_cache.h);
  // empty: memory only. ResolveKernelCacheDir() gives the server's default.
  std::string kernel_cache_dir;
  // Bound on the on-disk cache's size (least recently used entries are
  // evicted); 0: unbounded.
  int64_t kernel_cache_max_bytes = int64_t{1} << 30;
  // At start, a background thread loads the most recently used disk entries
  // (up to this many bytes of cubins) into the context, so a restarted
  // server's first requests find their kernels loaded. 0: off.
  int64_t kernel_cache_preload_bytes = int64_t{256} << 20;
};

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& options);

// How many CUDA devices this process sees (cudaGetDeviceCount, after
// CUDA_VISIBLE_DEVICES). FAILED_PRECONDITION without a driver, or in a build
// without the CUDA backend. Each device a server drives gets a backend of
// its own: CreateCudaBackend({.device = ordinal}).
absl::StatusOr<int> VisibleDeviceCount();

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_CUDA_BACKEND_H_
