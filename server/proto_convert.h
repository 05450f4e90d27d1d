// Conversions between the v1 protobuf messages and engine types. The engine
// never sees protobuf; this is the edge where the server translates.
#ifndef GPUFLOW_SERVER_PROTO_CONVERT_H_
#define GPUFLOW_SERVER_PROTO_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"
#include "google/protobuf/duration.pb.h"
#include "gpuflow/v1/types.pb.h"

namespace gpuflow::server {

// INVALID_ARGUMENT for DTYPE_UNSPECIFIED or an unknown value.
absl::StatusOr<DType> DTypeFromProto(int proto_dtype);
v1::DType DTypeToProto(DType dtype);

// Validates the dimensions (see Shape::Create).
absl::StatusOr<Shape> ShapeFromProto(const google::protobuf::RepeatedField<int64_t>& dims);

void FillArrayInfo(const std::string& name, const Array& array, v1::ArrayInfo* info);

absl::Duration DurationFromProto(const google::protobuf::Duration& d);
void DurationToProto(absl::Duration d, google::protobuf::Duration* out);

// Session and array names: [A-Za-z0-9_.:-], 1 to 128 characters.
// INVALID_ARGUMENT naming `what` otherwise.
absl::Status ValidateName(absl::string_view name, absl::string_view what);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_PROTO_CONVERT_H_
