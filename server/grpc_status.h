// The one mapping from absl::Status to grpc::Status, used only in server/.
// Codes map 1:1 (gRPC and absl share the canonical code space); the message
// is kept as is.
#ifndef GPUFLOW_SERVER_GRPC_STATUS_H_
#define GPUFLOW_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace gpuflow::server {

grpc::StatusCode ToGrpcCode(absl::StatusCode code);
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_GRPC_STATUS_H_
