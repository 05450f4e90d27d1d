#include "server/request_control.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace gpuflow::server {

RequestControl::RequestControl(grpc::CallbackServerContext* context, Session* session,
                               absl::Duration max_duration)
    : context_(context), session_(session), start_(absl::Now()), deadline_(absl::InfiniteFuture()) {
  if (max_duration > absl::ZeroDuration()) {
    deadline_ = start_ + max_duration;
    deadline_is_server_cap_ = true;
  }
  if (context_ != nullptr && context_->deadline() != std::chrono::system_clock::time_point::max()) {
    const absl::Time client = absl::FromChrono(context_->deadline());
    if (client < deadline_) {
      deadline_ = client;
      deadline_is_server_cap_ = false;
    }
  }
}

RequestControl::~RequestControl() {
  if (session_ != nullptr && charged_ > 0) session_->Uncharge(charged_);
}

absl::Status RequestControl::CheckContinue() {
  if (context_ != nullptr && context_->IsCancelled()) {
    return absl::CancelledError(
        "the call was cancelled (the client went away, or the server is shutting down)");
  }
  if (session_ != nullptr && session_->closed()) {
    return absl::CancelledError("the session was closed while the request ran");
  }
  const absl::Time now = absl::Now();
  if (now >= deadline_) {
    return absl::DeadlineExceededError(absl::StrCat(
        "stopped after ", absl::FormatDuration(absl::Trunc(now - start_, absl::Milliseconds(1))),
        deadline_is_server_cap_ ? ": the request ran past --max_request_duration"
                                : ": the client's deadline passed"));
  }
  return absl::OkStatus();
}

absl::Status RequestControl::Acquire(int64_t bytes) {
  if (session_ == nullptr || bytes <= 0) return absl::OkStatus();
  if (absl::Status s = session_->Charge(bytes); !s.ok()) return s;
  charged_ += bytes;
  return absl::OkStatus();
}

void RequestControl::Release(int64_t bytes) {
  if (session_ == nullptr || bytes <= 0) return;
  session_->Uncharge(bytes);
  charged_ -= bytes;
}

}  // namespace gpuflow::server
