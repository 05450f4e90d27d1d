#include "server/memory_budget.h"

#include "absl/strings/str_cat.h"
#include "server/retry_hint.h"

namespace gpuflow::server {

absl::Status MemoryBudget::Take(int64_t bytes) {
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
  used_ += bytes;
  return absl::OkStatus();
}

void MemoryBudget::Give(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  used_ -= bytes;
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
