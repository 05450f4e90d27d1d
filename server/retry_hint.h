// A refusal worth retrying: a RESOURCE_EXHAUSTED from a shared limit (the
// server's or a tenant's sessions, memory or requests in flight) that frees
// up as other work ends, unlike a request too big for its own quota. The
// service turns the mark into the `grpc-retry-pushback-ms` trailer (gRPC's
// server pushback, gRFC A6), which clients read as "retry after this long".
//
//   return MarkRetryable(absl::ResourceExhaustedError("..."));
//   if (std::optional<absl::Duration> after = RetryAfter(status)) ...
#ifndef GPUFLOW_SERVER_RETRY_HINT_H_
#define GPUFLOW_SERVER_RETRY_HINT_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpuflow::server {

// How long a client is told to wait before retrying a shared-limit refusal.
inline constexpr absl::Duration kRetryPushback = absl::Seconds(1);

// `status` marked as retryable after kRetryPushback.
absl::Status MarkRetryable(absl::Status status);
// The pushback of a marked status; nullopt for any other.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_RETRY_HINT_H_
