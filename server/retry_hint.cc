#include "server/retry_hint.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"

namespace gpuflow::server {

namespace {
// The payload's type URL; its value is the pushback in milliseconds.
constexpr absl::string_view kRetryPayload = "type.gpuflow.dev/retry_pushback_ms";
}  // namespace

absl::Status MarkRetryable(absl::Status status) {
  status.SetPayload(kRetryPayload,
                    absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(kRetryPushback))));
  return status;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kRetryPayload);
  int64_t ms = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &ms)) return std::nullopt;
  return absl::Milliseconds(ms);
}

}  // namespace gpuflow::server
