// One UploadArray stream's state machine, apart from gRPC: a header, then
// data chunks in order, then the client's half-close. Strict: a message that
// does not decode, a second header, a chunk before the header, a message
// with neither field, a chunk over the limit or more bytes than announced
// fail the upload; only a half-close after exactly the announced bytes
// publishes the array.
//
//   UploadStream upload(backend, registry, {.max_array_bytes = ..., .max_chunk_bytes = ...});
//   for each message:  status = ParseUploadMessage(bytes, &request);
//                      status = upload.OnMessage(request);    // stop at the first error
//   at half-close:     status = upload.Finish(&info);          // publishes the array
//   on any failure or cancellation: upload.Abort();            // frees buffer and quota
//
// The header reserves the array's bytes (and its metadata) from the
// session's quota before anything is allocated. Destroying the stream
// without Finish leaves nothing behind (Abort is implied).
//
// Not thread-safe: one stream is driven by one call at a time.
#ifndef GPUFLOW_SERVER_UPLOAD_STREAM_H_
#define GPUFLOW_SERVER_UPLOAD_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/backend.h"
#include "gpuflow/v1/service.pb.h"
#include "server/session_registry.h"

namespace gpuflow::server {

struct UploadLimits {
  int64_t max_array_bytes = int64_t{16} << 30;
  int64_t max_chunk_bytes = int64_t{4} << 20;
};

// Decodes one message as the wire carried it. INVALID_ARGUMENT when the
// bytes are not a valid UploadArrayRequest.
absl::Status ParseUploadMessage(absl::string_view serialized, v1::UploadArrayRequest* request);

class UploadStream {
 public:
  // `registry` must outlive the stream. The array goes to the device of
  // the session the header names (Session::backend()).
  UploadStream(SessionRegistry& registry, UploadLimits limits);
  ~UploadStream();
  UploadStream(const UploadStream&) = delete;
  UploadStream& operator=(const UploadStream&) = delete;

  // The tenant whose session the header may name (null: a session of no
  // tenant); another tenant's session is NOT_FOUND. Call before the header.
  void set_tenant(const Tenant* tenant) { tenant_ = tenant; }

  // The next message of the stream. After an error the stream is aborted
  // and every later call fails.
  absl::Status OnMessage(const v1::UploadArrayRequest& request);

  // The client half-closed: publishes the array if exactly the announced
  // bytes arrived (and fills `info`), else fails and aborts.
  absl::Status Finish(v1::ArrayInfo* info);

  // Gives back the buffer and the reservation now. Idempotent.
  void Abort();

  // The session named by the header (null before it).
  const std::shared_ptr<Session>& session() const { return session_; }
  // Bytes received so far.
  int64_t received() const { return received_; }

 private:
  absl::Status HandleHeader(const v1::UploadHeader& header);
  absl::Status HandleChunk(const std::string& chunk);

  SessionRegistry& registry_;
  const UploadLimits limits_;
  const Tenant* tenant_ = nullptr;
  enum class State { kExpectHeader, kReceiving, kDone } state_ = State::kExpectHeader;
  std::shared_ptr<Session> session_;
  std::string name_;
  MemoryReservation reservation_;
  std::unique_ptr<DeviceBuffer> buffer_;
  Array array_;
  int64_t received_ = 0;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_UPLOAD_STREAM_H_
