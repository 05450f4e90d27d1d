// A fixed set of threads that run Execute/Benchmark work off gRPC's own
// threads, so long computations never stall the transport.
//
//   ComputePool pool(4);
//   pool.Submit([] { ... });
//
// Thread-safe. The destructor runs every task already submitted, then joins.
#ifndef GPUFLOW_SERVER_COMPUTE_POOL_H_
#define GPUFLOW_SERVER_COMPUTE_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gpuflow::server {

class ComputePool {
 public:
  // threads <= 0: std::thread::hardware_concurrency().
  explicit ComputePool(int threads);
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  void Submit(std::function<void()> task);
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Work();

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_COMPUTE_POOL_H_
