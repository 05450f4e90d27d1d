// CreateCudaBackend for builds without the CUDA toolkit (GPUFLOW_CUDA=OFF or
// no toolkit found): the server then runs on the CPU backend.
#include "absl/status/status.h"
#include "engine/cuda/cuda_backend.h"

namespace gpuflow::cuda {

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& /*options*/) {
  return absl::FailedPreconditionError(
      "this build of gpuflow has no CUDA backend (configure with GPUFLOW_CUDA=ON and the CUDA "
      "toolkit)");
}

absl::StatusOr<int> VisibleDeviceCount() {
  return absl::FailedPreconditionError("this build of gpuflow has no CUDA backend");
}

}  // namespace gpuflow::cuda
