// A green context over all but a few of a device's SMs (CUDA 12.5+ driver
// entry points, through the runtime: gpuflowd does not link libcuda). The
// sessions' own streams (their long work) are created in it, so the SMs
// left out stay free for the priority streams' short requests, which run
// in the primary context on any SM: a long kernel's blocks then cannot hold
// every SM a short request needs (CudaBackendOptions::short_work_reserved_sms;
// bench/green_ctx_probe.cu measured it on the H200).
//
//   absl::StatusOr<std::unique_ptr<SmPartition>> p = SmPartition::Create(device, 4);
//   absl::StatusOr<cudaStream_t> s = (*p)->CreateStream(0);  // cudaStreamDestroy it
#ifndef GPUFLOW_ENGINE_CUDA_SM_PARTITION_H_
#define GPUFLOW_ENGINE_CUDA_SM_PARTITION_H_

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/statusor.h"

namespace gpuflow::cuda {

class SmPartition {
 public:
  // A green context of the device's SMs but at least `reserved` (the split
  // rounds to the device's granularity: 8 SMs on an H200, so 4 reserved of
  // 132 leaves 128). FAILED_PRECONDITION when the driver has no green
  // contexts or `reserved` leaves no SMs.
  static absl::StatusOr<std::unique_ptr<SmPartition>> Create(int device, int reserved);
  ~SmPartition();
  SmPartition(const SmPartition&) = delete;
  SmPartition& operator=(const SmPartition&) = delete;

  // A non-blocking stream of the green context.
  absl::StatusOr<cudaStream_t> CreateStream(int priority);
  // SMs the green context holds, and those left out of it.
  int sms() const { return sms_; }
  int left_out() const { return left_out_; }

 private:
  struct Driver;
  SmPartition(std::unique_ptr<Driver> driver, void* context, int sms, int left_out);

  std::unique_ptr<Driver> driver_;
  void* context_;  // CUgreenCtx
  int sms_;
  int left_out_;
};

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_SM_PARTITION_H_
