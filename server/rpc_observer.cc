#include "server/rpc_observer.h"

#include <utility>

#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "server/grpc_status.h"

namespace gpuflow::server {

RpcObserver::RpcObserver(const Telemetry& telemetry, RpcMethod method)
    : telemetry_(telemetry), method_(method), start_(absl::Now()) {}

RpcObserver::RpcObserver(RpcObserver&& other) noexcept
    : telemetry_(other.telemetry_),
      method_(other.method_),
      start_(other.start_),
      session_label_(std::move(other.session_label_)),
      session_id_(std::move(other.session_id_)),
      done_(other.done_) {
  other.done_ = true;
}

RpcObserver::~RpcObserver() {
  if (!done_) Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the call was dropped"));
}

void RpcObserver::set_session(const Session& session) {
  session_label_ = session.label();
  session_id_ = session.id();
}

grpc::Status RpcObserver::Finish(const absl::Status& status) {
  return Finish(ToGrpcStatus(status));
}

grpc::Status RpcObserver::Finish(const grpc::Status& status) {
  if (done_) return status;
  done_ = true;
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  const grpc::StatusCode code = status.error_code();
  if (telemetry_.metrics != nullptr) telemetry_.metrics->RecordRpc(method_, code, seconds);
  if (telemetry_.log != nullptr && telemetry_.log->enabled(LogLevel::kInfo)) {
    const double ms = seconds * 1e3;
    if (status.ok()) {
      telemetry_.log->Info("rpc", {{"method", RpcMethodName(method_)},
                                   {"session_label", session_label_},
                                   {"code", StatusCodeName(code)},
                                   {"duration_ms", ms}});
    } else {
      // The id is the session's only credential: keep it out of the log.
      std::string error = status.error_message();
      if (!session_id_.empty()) error = absl::StrReplaceAll(error, {{session_id_, "<session>"}});
      telemetry_.log->Info("rpc", {{"method", RpcMethodName(method_)},
                                   {"session_label", session_label_},
                                   {"code", StatusCodeName(code)},
                                   {"duration_ms", ms},
                                   {"error", error}});
    }
  }
  if (telemetry_.health != nullptr &&
      (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::INTERNAL)) {
    telemetry_.health->Check();
  }
  return status;
}

}  // namespace gpuflow::server
