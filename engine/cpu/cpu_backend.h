// The CPU backend: buffers in host memory, work done on the calling thread.
// It is the reference the CUDA backend is checked against.
//
//   std::unique_ptr<Backend> cpu = CreateCpuBackend();
#ifndef GPUFLOW_ENGINE_CPU_CPU_BACKEND_H_
#define GPUFLOW_ENGINE_CPU_CPU_BACKEND_H_

#include <cstddef>
#include <memory>

#include "engine/backend.h"

namespace gpuflow {

// A 64-byte-aligned host allocation.
class CpuBuffer final : public DeviceBuffer {
 public:
  // RESOURCE_EXHAUSTED when the allocation fails.
  static absl::StatusOr<std::unique_ptr<CpuBuffer>> Create(int64_t bytes);
  ~CpuBuffer() override;
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

  int64_t size() const override { return size_; }
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }

 private:
  CpuBuffer(std::byte* data, int64_t size) : data_(data), size_(size) {}
  std::byte* data_;
  int64_t size_;
};

struct CpuBackendOptions {
  // The virtual device this instance stands for (Backend::device()); -1:
  // none, the CPU backend of a server of one device. A server with
  // --devices=N on the CPU backend makes N independent instances, 0 .. N-1,
  // so placement and per-device failures can be tested without GPUs.
  int virtual_device = -1;
  // Test-only fault injection: a raw_kernel node whose function name is
  // kInjectedFaultKernel makes Run fail with UNAVAILABLE and marks this
  // instance unhealthy for good, as a sticky CUDA error does a device.
  bool fault_injection = false;
};

// The raw kernel name CpuBackendOptions::fault_injection reacts to.
inline constexpr char kInjectedFaultKernel[] = "gpuflow_injected_device_fault";

std::unique_ptr<Backend> CreateCpuBackend();
std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_CPU_CPU_BACKEND_H_
