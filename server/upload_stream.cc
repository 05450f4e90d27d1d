#include "server/upload_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/ir/echo.h"
#include "server/proto_convert.h"

namespace gpuflow::server {

absl::Status ParseUploadMessage(absl::string_view serialized, v1::UploadArrayRequest* request) {
  if (!request->ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("upload message of ", serialized.size(),
                                                   " bytes is not a valid UploadArrayRequest"));
  }
  return absl::OkStatus();
}

UploadStream::UploadStream(SessionRegistry& registry, UploadLimits limits)
    : registry_(registry), limits_(limits) {}

UploadStream::~UploadStream() { Abort(); }

void UploadStream::Abort() {
  state_ = State::kDone;
  buffer_.reset();
  reservation_ = MemoryReservation();
}

absl::Status UploadStream::OnMessage(const v1::UploadArrayRequest& request) {
  absl::Status status;
  switch (state_) {
    case State::kExpectHeader:
      status = request.has_header()
                   ? HandleHeader(request.header())
                   : absl::InvalidArgumentError("the first upload message must be a header");
      if (status.ok()) state_ = State::kReceiving;
      break;
    case State::kReceiving:
      if (request.has_header()) {
        status = absl::InvalidArgumentError("only the first upload message may be a header");
      } else if (request.message_case() != v1::UploadArrayRequest::kChunk) {
        status = absl::InvalidArgumentError("an upload message after the header must be a chunk");
      } else {
        status = HandleChunk(request.chunk());
      }
      break;
    case State::kDone:
      status = absl::FailedPreconditionError("the upload has ended");
      break;
  }
  if (!status.ok()) Abort();
  return status;
}

absl::Status UploadStream::HandleHeader(const v1::UploadHeader& header) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Get(header.session_id(), tenant_);
  if (!session.ok()) return session.status();
  if (absl::Status s = CheckServing(registry_.devices(), (*session)->device_index()); !s.ok()) {
    return s;
  }
  session_ = *std::move(session);
  if (absl::Status s = ValidateName(header.name(), "array name"); !s.ok()) return s;
  name_ = header.name();
  absl::StatusOr<DType> dtype = DTypeFromProto(header.dtype());
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<Shape> shape = ShapeFromProto(header.shape());
  if (!shape.ok()) return shape.status();
  absl::StatusOr<int64_t> bytes = ByteSize(*shape, *dtype);
  if (!bytes.ok()) return bytes.status();
  if (*bytes > limits_.max_array_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("array ", Echo(name_), " of ", *bytes,
                                                     " bytes exceeds --max_array_bytes (",
                                                     limits_.max_array_bytes, ")"));
  }
  absl::StatusOr<MemoryReservation> reservation =
      session_->Reserve(Session::StoredBytes(name_, *shape, *bytes));
  if (!reservation.ok()) return reservation.status();
  reservation_ = *std::move(reservation);
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
      session_->backend().Allocate(*bytes, session_->stream());
  if (!buffer.ok()) return buffer.status();
  buffer_ = *std::move(buffer);
  array_.dtype = *dtype;
  array_.shape = *std::move(shape);
  return absl::OkStatus();
}

absl::Status UploadStream::HandleChunk(const std::string& chunk) {
  const auto n = static_cast<int64_t>(chunk.size());
  if (n > limits_.max_chunk_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk of ", n, " bytes exceeds the limit of ", limits_.max_chunk_bytes));
  }
  if (n > buffer_->size() - received_) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload of ", Echo(name_), " sent more than the ", buffer_->size(),
                     " bytes its header announced (dtype ", DTypeName(array_.dtype), ", shape ",
                     array_.shape.ToString(), ")"));
  }
  if (absl::Status s = session_->backend().CopyToDevice(chunk.data(), *buffer_, received_, n,
                                                        session_->stream());
      !s.ok()) {
    return s;
  }
  // CopyToDevice has staged the bytes, so the caller may reuse `chunk`.
  received_ += n;
  registry_.Touch(*session_);
  return absl::OkStatus();
}

absl::Status UploadStream::Finish(v1::ArrayInfo* info) {
  absl::Status status;
  if (state_ == State::kExpectHeader) {
    status = absl::InvalidArgumentError("upload stream ended before its header");
  } else if (state_ == State::kDone) {
    status = absl::FailedPreconditionError("the upload has ended");
  } else if (received_ != buffer_->size()) {
    status = absl::InvalidArgumentError(
        absl::StrCat("upload of ", Echo(name_), " ended after ", received_, " of the ",
                     buffer_->size(), " bytes its header announced (dtype ",
                     DTypeName(array_.dtype), ", shape ", array_.shape.ToString(), ")"));
  } else if (absl::Status s = session_->backend().Synchronize(session_->stream()); !s.ok()) {
    // Copy errors surface here, before the array is visible.
    status = s;
  } else {
    array_.buffer = std::move(buffer_);
    FillArrayInfo(name_, array_, info);
    status = session_->PutArray(name_, std::move(array_), std::move(reservation_));
  }
  Abort();
  return status;
}

}  // namespace gpuflow::server
