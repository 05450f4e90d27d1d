#include "engine/cuda/device_errors.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_status.h"

namespace gpuflow::cuda {
namespace {

constexpr int kPageBytes = 4096;

}  // namespace

ErrorWordPool::~ErrorWordPool() {
  absl::MutexLock lock(&mu_);
  for (void* page : pages_) (void)cudaFreeHost(page);
}

absl::StatusOr<ErrorWord> ErrorWordPool::Take() {
  absl::MutexLock lock(&mu_);
  if (free_.empty()) {
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    void* page = nullptr;
    if (cudaHostAlloc(&page, kPageBytes, cudaHostAllocMapped | cudaHostAllocPortable) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return absl::ResourceExhaustedError(
          absl::StrCat("no pinned host memory for device error checks (", kPageBytes, " bytes)"));
    }
    void* device = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&device, page, 0); e != cudaSuccess) {
      (void)cudaFreeHost(page);
      GPUFLOW_CUDA_RETURN_IF_ERROR(e);
    }
    pages_.push_back(page);
    auto* host = static_cast<uint64_t*>(page);
    const auto base = reinterpret_cast<uint64_t>(device);
    for (int i = kPageBytes / 8 - 1; i >= 0; --i) {
      free_.push_back(ErrorWord{host + i, base + static_cast<uint64_t>(i) * 8});
    }
  }
  ErrorWord word = free_.back();
  free_.pop_back();
  *word.host = 0;
  return word;
}

void ErrorWordPool::Return(const std::vector<ErrorWord>& words) {
  absl::MutexLock lock(&mu_);
  free_.insert(free_.end(), words.begin(), words.end());
}

RunChecks::~RunChecks() {
  if (words_.empty()) return;
  if (!read_) {
    // A word given back while a kernel may still store into it could fail
    // another run. A failing stream has nothing left to write.
    (void)cudaSetDevice(stream_->device);
    (void)cudaStreamSynchronize(stream_->stream);
  }
  pool_->Return(words_);
}

absl::StatusOr<uint64_t> RunChecks::Add(ErrorFn error) {
  absl::StatusOr<ErrorWord> word = pool_->Take();
  if (!word.ok()) return word.status();
  words_.push_back(*word);
  errors_.push_back(std::move(error));
  return word->device_address;
}

absl::Status RunChecks::Result() {
  read_ = true;
  for (size_t i = 0; i < words_.size(); ++i) {
    const uint64_t v = *words_[i].host;
    if (v != 0) return errors_[i](v);
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::cuda
