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
      tenant_(std::move(other.tenant_)),
      slot_(std::move(other.slot_)),
      auth_failure_(other.auth_failure_),
      peer_(std::move(other.peer_)),
      traceparent_(std::move(other.traceparent_)),
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
  slot_.Release();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  const grpc::StatusCode code = status.error_code();
  // The anonymous tenant of a server without auth is not named.
  const std::string tenant = tenant_ == nullptr ? std::string() : tenant_->name();
  if (telemetry_.metrics != nullptr) telemetry_.metrics->RecordRpc(method_, code, seconds, tenant);
  if (telemetry_.log != nullptr && telemetry_.log->enabled(LogLevel::kInfo)) {
    std::vector<LogField> fields = {{"method", RpcMethodName(method_)}};
    if (!tenant.empty()) fields.emplace_back("tenant", tenant);
    fields.emplace_back("session_label", session_label_);
    fields.emplace_back("code", StatusCodeName(code));
    fields.emplace_back("duration_ms", seconds * 1e3);
    if (!status.ok()) {
      // The id is the session's only credential: keep it out of the log.
      std::string error = status.error_message();
      if (!session_id_.empty()) error = absl::StrReplaceAll(error, {{session_id_, "<session>"}});
      fields.emplace_back("error", std::move(error));
    }
    if (auth_failure_ != AuthFailure::kNone) {
      fields.emplace_back("auth", AuthFailureName(auth_failure_));
      fields.emplace_back("peer", peer_);
    }
    if (!traceparent_.empty()) fields.emplace_back("traceparent", traceparent_);
    telemetry_.log->Log(LogLevel::kInfo, "rpc", fields);
  }
  if (telemetry_.health != nullptr &&
      (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::INTERNAL)) {
    telemetry_.health->Check();
  }
  return status;
}

}  // namespace gpuflow::server
