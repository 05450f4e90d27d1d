#include "server/proto_convert.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/echo.h"
#include "engine/ir/graph.h"

namespace gpuflow::server {

namespace {
// Indexed by engine DType; the proto enum starts at 1 for bool.
constexpr v1::DType kProtoDTypes[kNumDTypes] = {
    v1::DTYPE_BOOL,    v1::DTYPE_INT8,      v1::DTYPE_INT16,      v1::DTYPE_INT32,
    v1::DTYPE_INT64,   v1::DTYPE_UINT8,     v1::DTYPE_UINT16,     v1::DTYPE_UINT32,
    v1::DTYPE_UINT64,  v1::DTYPE_FLOAT16,   v1::DTYPE_BFLOAT16,   v1::DTYPE_FLOAT32,
    v1::DTYPE_FLOAT64, v1::DTYPE_COMPLEX64, v1::DTYPE_COMPLEX128,
};
}  // namespace

absl::StatusOr<DType> DTypeFromProto(int proto_dtype) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kProtoDTypes[i] == proto_dtype) return static_cast<DType>(i);
  }
  if (proto_dtype == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError("dtype is not set");
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype value ", proto_dtype));
}

v1::DType DTypeToProto(DType dtype) { return kProtoDTypes[static_cast<int>(dtype)]; }

absl::StatusOr<Shape> ShapeFromProto(const google::protobuf::RepeatedField<int64_t>& dims) {
  if (dims.size() > kMaxRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", dims.size(), " is over the most, ", kMaxRank));
  }
  return Shape::Create(absl::Span<const int64_t>(dims.data(), dims.size()));
}

void FillArrayInfo(const std::string& name, const Array& array, v1::ArrayInfo* info) {
  info->set_name(name);
  info->set_dtype(DTypeToProto(array.dtype));
  info->mutable_shape()->Assign(array.shape.dims().begin(), array.shape.dims().end());
  info->set_num_elements(array.shape.num_elements());
  info->set_num_bytes(array.num_bytes());
}

absl::Duration DurationFromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

void DurationToProto(absl::Duration d, google::protobuf::Duration* out) {
  const int64_t seconds = absl::IDivDuration(d, absl::Seconds(1), &d);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d)));
}

absl::Status ValidateName(absl::string_view name, absl::string_view what) {
  return CheckName(name, what);
}

}  // namespace gpuflow::server
