// A fixed set of threads that run Execute/Benchmark/Precompile work off
// gRPC's own threads, so long computations never stall the transport, and
// shared fairly: each task belongs to a key (its session; "" for work of no
// session), keys take turns (round robin), and no key runs on more than
// `max_per_key` threads at once, so one session's long work cannot hold
// every thread while others wait.
//
//   ComputePool pool(4);                     // at most 3 threads per session
//   pool.Submit(session_id, [] { ... });
//
// Thread-safe. The destructor runs every task already submitted, then joins.
#ifndef GPUFLOW_SERVER_COMPUTE_POOL_H_
#define GPUFLOW_SERVER_COMPUTE_POOL_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpuflow::server {

class ComputePool {
 public:
  // threads <= 0: std::thread::hardware_concurrency(). max_per_key <= 0:
  // threads - 1 (at least 1), so another session always finds a thread.
  explicit ComputePool(int threads, int max_per_key = 0);
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  void Submit(const std::string& key, std::function<void()> task);
  // Work of no session.
  void Submit(std::function<void()> task) { Submit("", std::move(task)); }

  int size() const { return static_cast<int>(threads_.size()); }
  int max_per_key() const { return max_per_key_; }
  // Tasks running or queued now.
  int pending() const;
  // Waits until no task runs or is queued, or `timeout` passes; true when
  // idle.
  bool WaitIdle(absl::Duration timeout) const;

 private:
  struct Queue {
    std::deque<std::function<void()>> tasks;
    int running = 0;
  };
  void Work();
  // A key whose next task may start now, in round-robin order; "" has no
  // special meaning here. Null when none.
  Queue* NextRunnable(std::string* key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasRunnable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_per_key_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Queue> queues_ ABSL_GUARDED_BY(mu_);
  // Keys in turn order; a key goes to the back when one of its tasks starts.
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_COMPUTE_POOL_H_
