// Data-dependent errors found on the device (an out-of-bounds index of
// take or take_along_axis): a kernel that finds one stores a nonzero word
// into pinned host memory mapped into the device's address space
// (cudaHostAllocMapped; zero copy), and the host reads the words once the
// stream has passed the run. No step waits for the device, and a run with
// no such checks pays nothing.
//
//   RunChecks checks(pool, stream.handle());
//   absl::StatusOr<uint64_t> word = checks.Add([](uint64_t v) { return Error(v); });
//   // launch a kernel that stores into the device address *word
//   ... synchronise the stream ...
//   absl::Status s = checks.Result();  // the first check's error, in Add order
//
// ErrorWordPool is thread-safe; a RunChecks belongs to one run (one thread
// at a time).
#ifndef GPUFLOW_ENGINE_CUDA_DEVICE_ERRORS_H_
#define GPUFLOW_ENGINE_CUDA_DEVICE_ERRORS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/cuda/device_runtime.h"

namespace gpuflow::cuda {

// One word a kernel may write: its host view and its device address.
struct ErrorWord {
  volatile uint64_t* host = nullptr;
  uint64_t device_address = 0;
};

// Words of pinned, mapped host memory, allocated a 4 KiB page at a time
// (pinning is slow, and freeing pinned memory synchronises the device) and
// kept for the pool's life.
class ErrorWordPool {
 public:
  explicit ErrorWordPool(int device) : device_(device) {}
  ~ErrorWordPool();  // frees the pages; failures at shutdown are ignored
  ErrorWordPool(const ErrorWordPool&) = delete;
  ErrorWordPool& operator=(const ErrorWordPool&) = delete;

  // A word set to 0. RESOURCE_EXHAUSTED when no pinned memory can be had.
  absl::StatusOr<ErrorWord> Take();
  // Back to the pool: no kernel may write them any more.
  void Return(const std::vector<ErrorWord>& words);

 private:
  const int device_;
  absl::Mutex mu_;
  std::vector<void*> pages_ ABSL_GUARDED_BY(mu_);
  std::vector<ErrorWord> free_ ABSL_GUARDED_BY(mu_);
};

// The device-side checks of one run.
class RunChecks {
 public:
  // Turns a check's nonzero word into the run's error.
  using ErrorFn = std::function<absl::Status(uint64_t word)>;

  RunChecks(std::shared_ptr<ErrorWordPool> pool, std::shared_ptr<StreamHandle> stream)
      : pool_(std::move(pool)), stream_(std::move(stream)) {}
  // Returns the words. When Result was never read (the run failed, or its
  // result was dropped) the stream's kernels may still write them, so it
  // first waits for the stream.
  ~RunChecks();
  RunChecks(const RunChecks&) = delete;
  RunChecks& operator=(const RunChecks&) = delete;

  // A zeroed word's device address for a kernel of this run to store into.
  absl::StatusOr<uint64_t> Add(ErrorFn error);
  bool empty() const { return words_.empty(); }
  // Once the stream has passed every kernel of the run: the error of the
  // first check (in Add order) whose word is nonzero, or OK.
  absl::Status Result();

 private:
  std::shared_ptr<ErrorWordPool> pool_;
  std::shared_ptr<StreamHandle> stream_;
  std::vector<ErrorWord> words_;
  std::vector<ErrorFn> errors_;
  bool read_ = false;
};

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_DEVICE_ERRORS_H_
