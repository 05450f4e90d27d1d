// The one mapping from absl::Status to grpc::Status, used only in server/.
// Codes map 1:1 (gRPC and absl share the canonical code space); the message
// is kept, cut to kMaxStatusMessageBytes (a safety net: every echo of client
// input is already cut to 256 bytes, engine/ir/echo.h, but a message can
// hold several, or a long compiler log).
#ifndef GPUFLOW_SERVER_GRPC_STATUS_H_
#define GPUFLOW_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gpuflow::server {

// The longest status message the server sends or logs.
inline constexpr size_t kMaxStatusMessageBytes = 16384;

grpc::StatusCode ToGrpcCode(absl::StatusCode code);
grpc::Status ToGrpcStatus(const absl::Status& status);
// `message`, cut to kMaxStatusMessageBytes with a note of its full size.
std::string BoundedMessage(absl::string_view message);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_GRPC_STATUS_H_
