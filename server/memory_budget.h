// Bytes shared by many sessions: the server-wide --max_memory_bytes, and
// each tenant's max_memory_bytes. A session takes every byte it holds from
// its tenant's budget and from the server's, before anything is allocated.
//
//   MemoryBudget budget(16 << 30, "server memory exhausted (--max_memory_bytes)");
//   if (absl::Status s = budget.Take(bytes); !s.ok()) return s;  // RESOURCE_EXHAUSTED
//   ...
//   budget.Give(bytes);
//
// Thread-safe.
#ifndef GPUFLOW_SERVER_MEMORY_BUDGET_H_
#define GPUFLOW_SERVER_MEMORY_BUDGET_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gpuflow::server {

class MemoryBudget {
 public:
  // limit <= 0: unbounded (bytes are still counted). `what` begins every
  // refusal ("server memory exhausted (--max_memory_bytes)"). With
  // show_figures false a refusal does not say how much is left, which would
  // tell one tenant how much the others hold.
  explicit MemoryBudget(int64_t limit,
                        std::string what = "server memory exhausted (--max_memory_bytes)",
                        bool show_figures = true)
      : what_(std::move(what)), show_figures_(show_figures), limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // RESOURCE_EXHAUSTED, marked retryable (retry_hint.h), when the budget
  // cannot hold `bytes` more. `owner` (a tenant; null: none) is what the
  // bytes are counted for under a tenant reserve.
  absl::Status Take(int64_t bytes, const void* owner = nullptr);
  void Give(int64_t bytes, const void* owner = nullptr);
  // Keeps memory for the tenants that hold little: with `tenants()` >= 2
  // (the server's tenants now; called outside the budget's lock), each
  // tenant's reserve is min(`reserve`, limit / tenants), and an owner that
  // would go past its own reserve may not take bytes that every other
  // tenant's unused reserve needs. So no tenant can lock another out of
  // memory, whatever its own max_memory_bytes.
  void set_tenant_reserve(std::function<int()> tenants, int64_t reserve);
  int64_t used() const;
  int64_t limit() const;
  // A new limit (a reloaded tenants file); bytes already taken stay taken,
  // and a budget over its new limit refuses until enough are given back.
  void set_limit(int64_t limit);

 private:
  const std::string what_;
  const bool show_figures_;
  mutable absl::Mutex mu_;
  int64_t limit_ ABSL_GUARDED_BY(mu_);
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<int()> tenants_;  // set before use, then read only
  int64_t reserve_ = 0;
  // Bytes by owner, while a tenant reserve is set.
  absl::flat_hash_map<const void*, int64_t> by_owner_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_MEMORY_BUDGET_H_
