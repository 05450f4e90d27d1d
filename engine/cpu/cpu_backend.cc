#include "engine/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace gpuflow {

namespace {
constexpr int64_t kAlignment = 64;

class CpuStream final : public Stream {};

class CpuBackend final : public Backend {
 public:
  absl::string_view name() const override { return "cpu"; }
  std::string device_description() const override {
    return absl::StrCat("CPU (", std::thread::hardware_concurrency(), " threads)");
  }
  bool healthy() const override { return true; }

  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    return std::make_unique<CpuStream>();
  }

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(int64_t bytes,
                                                         Stream& /*stream*/) override {
    absl::StatusOr<std::unique_ptr<CpuBuffer>> buffer = CpuBuffer::Create(bytes);
    if (!buffer.ok()) return buffer.status();
    return std::unique_ptr<DeviceBuffer>(std::move(*buffer));
  }

  absl::Status CopyToDevice(const void* src, DeviceBuffer& dst, int64_t offset, int64_t n,
                            Stream& /*stream*/) override {
    if (absl::Status s = CheckCopyRange(dst.size(), offset, n); !s.ok()) return s;
    if (n > 0) std::memcpy(static_cast<CpuBuffer&>(dst).data() + offset, src, n);
    return absl::OkStatus();
  }

  absl::Status CopyToHost(const DeviceBuffer& src, int64_t offset, int64_t n, void* dst,
                          Stream& /*stream*/) override {
    if (absl::Status s = CheckCopyRange(src.size(), offset, n); !s.ok()) return s;
    if (n > 0) std::memcpy(dst, static_cast<const CpuBuffer&>(src).data() + offset, n);
    return absl::OkStatus();
  }

  absl::Status Synchronize(Stream& /*stream*/) override { return absl::OkStatus(); }
};
}  // namespace

absl::StatusOr<std::unique_ptr<CpuBuffer>> CpuBuffer::Create(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation size");
  std::byte* data = nullptr;
  if (bytes > 0) {
    const int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    data = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
    if (data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of host memory allocating ", bytes, " bytes"));
    }
  }
  return std::unique_ptr<CpuBuffer>(new CpuBuffer(data, bytes));
}

CpuBuffer::~CpuBuffer() { std::free(data_); }

std::unique_ptr<Backend> CreateCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace gpuflow
