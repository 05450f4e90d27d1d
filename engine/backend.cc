#include "engine/backend.h"

#include "absl/strings/str_cat.h"

namespace gpuflow {

absl::Status CheckCopyRange(int64_t size, int64_t offset, int64_t n) {
  if (offset < 0 || n < 0 || offset > size || n > size - offset) {
    return absl::OutOfRangeError(absl::StrCat("copy of ", n, " bytes at offset ", offset,
                                              " outside a buffer of ", size, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RunCharge> RunCharge::Take(RunControl* control, int64_t bytes) {
  if (control == nullptr || bytes <= 0) return RunCharge();
  if (absl::Status s = control->Acquire(bytes); !s.ok()) return s;
  return RunCharge(control, bytes);
}

RunCharge& RunCharge::operator=(RunCharge&& other) noexcept {
  if (this != &other) {
    Reset();
    control_ = other.control_;
    bytes_ = other.bytes_;
    other.control_ = nullptr;
  }
  return *this;
}

void RunCharge::Reset() {
  if (control_ != nullptr) control_->Release(bytes_);
  control_ = nullptr;
  bytes_ = 0;
}

}  // namespace gpuflow
