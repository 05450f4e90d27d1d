#include "engine/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace gpuflow::cuda {

bool IsStickyCudaError(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorUnknown:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

absl::Status CudaStatus(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(call, " failed at ", file, ":", line, ": ", cudaGetErrorName(error), " (",
                   cudaGetErrorString(error), ")");
  if (error == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(message);
  if (IsStickyCudaError(error)) return absl::UnavailableError(message);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    return absl::FailedPreconditionError(message);
  }
  return absl::InternalError(message);
}

absl::Status NvrtcStatus(nvrtcResult result, const char* call, const char* file, int line) {
  if (result == NVRTC_SUCCESS) return absl::OkStatus();
  const std::string message =
      absl::StrCat(call, " failed at ", file, ":", line, ": ", nvrtcGetErrorString(result));
  if (result == NVRTC_ERROR_OUT_OF_MEMORY) return absl::ResourceExhaustedError(message);
  if (result == NVRTC_ERROR_COMPILATION) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

absl::Status CublasStatus(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string message =
      absl::StrCat(call, " failed at ", file, ":", line, ": ", cublasGetStatusName(status), " (",
                   cublasGetStatusString(status), ")");
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  if (status == CUBLAS_STATUS_EXECUTION_FAILED) return absl::UnavailableError(message);
  return absl::InternalError(message);
}

}  // namespace gpuflow::cuda
