#include "server/memory_budget.h"

#include "absl/strings/str_cat.h"
#include "server/retry_hint.h"

namespace gpuflow::server {

void MemoryBudget::set_tenant_reserve(std::function<int()> tenants, int64_t reserve) {
  tenants_ = std::move(tenants);
  reserve_ = reserve;
}

absl::Status MemoryBudget::Take(int64_t bytes, const void* owner) {
  const int tenants = owner != nullptr && tenants_ ? tenants_() : 0;
  absl::MutexLock lock(&mu_);
  if (limit_ > 0 && bytes > limit_ - used_) {
    if (!show_figures_) {
      return MarkRetryable(absl::ResourceExhaustedError(absl::StrCat(
          what_, ": ", bytes, " bytes requested; retry when other work has freed memory")));
    }
    return MarkRetryable(absl::ResourceExhaustedError(absl::StrCat(
        what_, ": ", bytes, " bytes requested, ", std::max<int64_t>(0, limit_ - used_), " of ",
        limit_, " bytes left; free arrays or close sessions, or retry later")));
  }
  if (tenants > 1 && limit_ > 0) {
    const int64_t reserve = std::min(reserve_, limit_ / tenants);
    auto mine = by_owner_.find(owner);
    const int64_t held = mine == by_owner_.end() ? 0 : mine->second;
    if (held + bytes > reserve) {
      // Past its own reserve: the others' unused reserves stay free.
      int64_t kept = 0;
      int others = 0;
      for (const auto& [other, used] : by_owner_) {
        if (other == owner) continue;
        ++others;
        kept += std::max<int64_t>(0, reserve - used);
      }
      kept += std::max(0, tenants - 1 - others) * reserve;
      if (limit_ - used_ - bytes < kept) {
        return MarkRetryable(absl::ResourceExhaustedError(absl::StrCat(
            what_, ": ", bytes,
            " bytes requested; the rest is kept for tenants that hold less than their share; "
            "free arrays or close sessions, or retry later")));
      }
    }
  }
  used_ += bytes;
  if (owner != nullptr && tenants_) by_owner_[owner] += bytes;
  return absl::OkStatus();
}

void MemoryBudget::Give(int64_t bytes, const void* owner) {
  absl::MutexLock lock(&mu_);
  used_ -= bytes;
  if (owner != nullptr && tenants_) {
    auto it = by_owner_.find(owner);
    if (it != by_owner_.end() && (it->second -= bytes) <= 0) by_owner_.erase(it);
  }
}

int64_t MemoryBudget::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

int64_t MemoryBudget::limit() const {
  absl::MutexLock lock(&mu_);
  return limit_;
}

void MemoryBudget::set_limit(int64_t limit) {
  absl::MutexLock lock(&mu_);
  limit_ = limit;
}

}  // namespace gpuflow::server
