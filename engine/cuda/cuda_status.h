// The one place CUDA runtime, NVRTC and cuBLAS return codes become
// absl::Status values that name the call, file:line and the error.
//   GPUFLOW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
// Out of memory becomes RESOURCE_EXHAUSTED. A sticky error (illegal address,
// launch failure, ...) becomes UNAVAILABLE: the context is unusable, and
// IsStickyCudaError tells the backend to mark itself unhealthy.
#ifndef GPUFLOW_ENGINE_CUDA_CUDA_STATUS_H_
#define GPUFLOW_ENGINE_CUDA_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "absl/status/status.h"

namespace gpuflow::cuda {

absl::Status CudaStatus(cudaError_t error, const char* call, const char* file, int line);
absl::Status NvrtcStatus(nvrtcResult result, const char* call, const char* file, int line);
absl::Status CublasStatus(cublasStatus_t status, const char* call, const char* file, int line);

// Errors after which the CUDA context cannot be used again.
bool IsStickyCudaError(cudaError_t error);

}  // namespace gpuflow::cuda

#define GPUFLOW_CUDA_STATUS(expr) ::gpuflow::cuda::CudaStatus((expr), #expr, __FILE__, __LINE__)
#define GPUFLOW_CUDA_RETURN_IF_ERROR(expr)                                         \
  do {                                                                             \
    if (absl::Status _gf_s = GPUFLOW_CUDA_STATUS(expr); !_gf_s.ok()) return _gf_s; \
  } while (0)
#define GPUFLOW_NVRTC_RETURN_IF_ERROR(expr)                                                   \
  do {                                                                                        \
    if (absl::Status _gf_s = ::gpuflow::cuda::NvrtcStatus((expr), #expr, __FILE__, __LINE__); \
        !_gf_s.ok())                                                                          \
      return _gf_s;                                                                           \
  } while (0)
#define GPUFLOW_CUBLAS_RETURN_IF_ERROR(expr)                                                   \
  do {                                                                                         \
    if (absl::Status _gf_s = ::gpuflow::cuda::CublasStatus((expr), #expr, __FILE__, __LINE__); \
        !_gf_s.ok())                                                                           \
      return _gf_s;                                                                            \
  } while (0)

#endif  // GPUFLOW_ENGINE_CUDA_CUDA_STATUS_H_
