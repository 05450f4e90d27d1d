// A fixed set of threads that run Execute/Benchmark/Precompile work off
// gRPC's own threads, so long computations never stall the transport, and
// shared fairly at two levels: each task belongs to a group (its tenant;
// "" without tenants) and a key within it (its session; "" for work of no
// session). Groups take turns (round robin), then the keys of a group take
// turns; no key runs on more than `max_per_key` threads at once and no
// group on more than `max_per_group`, so neither one session's nor one
// tenant's long work can hold every thread while others wait.
//
//   ComputePool pool(4);                     // at most 3 threads per session
//   pool.Submit(session_id, [] { ... });
//   ComputePool shared(8, 0, 7);             // ... and 7 per tenant
//   shared.Submit(tenant, session_id, [] { ... });
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
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpuflow::server {

class ComputePool {
 public:
  // threads <= 0: std::thread::hardware_concurrency(). max_per_key <= 0:
  // threads - 1 (at least 1), so another session always finds a thread.
  // max_per_group <= 0: no bound per group.
  explicit ComputePool(int threads, int max_per_key = 0, int max_per_group = 0);
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  void Submit(const std::string& group, const std::string& key, std::function<void()> task);
  // In the group "".
  void Submit(const std::string& key, std::function<void()> task) {
    Submit("", key, std::move(task));
  }
  // Work of no session, in the group "".
  void Submit(std::function<void()> task) { Submit("", "", std::move(task)); }

  int size() const { return static_cast<int>(threads_.size()); }
  int max_per_key() const { return max_per_key_; }
  // 0: no bound.
  int max_per_group() const { return max_per_group_; }
  // Runs `task` on the calling thread now, as a task of `group` and `key`,
  // when that takes no turn from anyone: nothing is queued, the key and group
  // are under their bounds, and fewer than size() tasks run this way at
  // once. False (and `task` not run) otherwise, or when stopping.
  bool TryRunInline(const std::string& group, const std::string& key,
                    absl::FunctionRef<void()> task);
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
  struct Group {
    absl::flat_hash_map<std::string, Queue> queues;
    // Keys in turn order; a key goes to the back when one of its tasks
    // starts.
    std::deque<std::string> order;
    int running = 0;
  };
  void Work();
  // Counts a task of `group` and `key` as started, making either if new.
  void Start(const std::string& group, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts it as ended, forgetting a key or group with nothing left.
  void End(const std::string& group, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool GroupMayStart(const Group& group) const;
  // The group and key whose next task may start now, in round-robin order;
  // "" has no special meaning here. False when none.
  bool NextRunnable(std::string* group, std::string* key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasRunnable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_per_key_;
  const int max_per_group_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Group> groups_ ABSL_GUARDED_BY(mu_);
  // Groups in turn order, likewise.
  std::deque<std::string> group_order_ ABSL_GUARDED_BY(mu_);
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  // Of pending_, those not started yet.
  int queued_ ABSL_GUARDED_BY(mu_) = 0;
  int running_inline_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_COMPUTE_POOL_H_
