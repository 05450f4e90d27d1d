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

std::unique_ptr<Backend> CreateCpuBackend();

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_CPU_CPU_BACKEND_H_
