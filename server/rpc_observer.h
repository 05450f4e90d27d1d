// Observes one GpuFlow RPC from arrival to finish: counts it by method and
// status code, times it, writes the request's log line, and asks the health
// monitor to look again when a call fails UNAVAILABLE or INTERNAL.
//
//   RpcObserver call(telemetry_, RpcMethod::kKeepAlive);
//   call.set_session(*session);                   // its label goes in the log
//   reactor->Finish(call.Finish(status));         // records and converts
//
// The line, at info (JSON with --log_format=json):
//   ... gpuflowd: rpc method=KeepAlive session_label=job code=OK duration_ms=0.042
// Failures add error="<message>" with the session id written as <session>.
// With tenants (--auth_tokens_file) the line and the request count carry
// tenant=<name>; a refused caller's line adds auth=<why> and peer=<address>
// (never the token). A call that came with a W3C traceparent logs it as
// traceparent=<value> (trace_context.h).
//
// Movable, not thread-safe: one call's code path owns it. An observer
// destroyed without Finish (a task dropped unrun) records CANCELLED.
#ifndef GPUFLOW_SERVER_RPC_OBSERVER_H_
#define GPUFLOW_SERVER_RPC_OBSERVER_H_

#include <grpcpp/support/status.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/health_monitor.h"
#include "server/logging.h"
#include "server/server_metrics.h"
#include "server/session_registry.h"
#include "server/tenants.h"

namespace gpuflow::server {

// Where RPCs are reported. Each pointer may be null (tests, tools), and must
// otherwise outlive the service.
struct Telemetry {
  ServerMetrics* metrics = nullptr;
  Logger* log = nullptr;
  HealthMonitor* health = nullptr;
};

class RpcObserver {
 public:
  RpcObserver(const Telemetry& telemetry, RpcMethod method);
  RpcObserver(RpcObserver&& other) noexcept;
  RpcObserver& operator=(RpcObserver&&) = delete;
  RpcObserver(const RpcObserver&) = delete;
  RpcObserver& operator=(const RpcObserver&) = delete;
  ~RpcObserver();

  // The session the call works in: its label is logged, its id kept out of
  // logged error messages.
  void set_session(const Session& session);
  void set_session_label(std::string label) { session_label_ = std::move(label); }
  void set_session_id(std::string id) { session_id_ = std::move(id); }

  // The authenticated caller, and its request slot, held until Finish.
  void set_tenant(std::shared_ptr<Tenant> tenant) { tenant_ = std::move(tenant); }
  void set_request_slot(Tenant::RequestSlot slot) { slot_ = std::move(slot); }
  // The caller (null before set_tenant).
  const std::shared_ptr<Tenant>& tenant() const { return tenant_; }
  // A refused caller: why (for the log only) and from where.
  void set_auth_failure(AuthFailure failure, std::string peer) {
    auth_failure_ = failure;
    peer_ = std::move(peer);
  }

  // The caller's W3C traceparent (trace_context.h), logged with the call.
  void set_traceparent(std::string traceparent) { traceparent_ = std::move(traceparent); }

  // Records the call with `status` and returns it as a grpc::Status. Call
  // once.
  grpc::Status Finish(const absl::Status& status);
  grpc::Status Finish(const grpc::Status& status);

 private:
  Telemetry telemetry_;
  RpcMethod method_;
  absl::Time start_;
  std::string session_label_;
  std::string session_id_;
  std::shared_ptr<Tenant> tenant_;
  Tenant::RequestSlot slot_;
  AuthFailure auth_failure_ = AuthFailure::kNone;
  std::string peer_;
  std::string traceparent_;
  bool done_ = false;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_RPC_OBSERVER_H_
