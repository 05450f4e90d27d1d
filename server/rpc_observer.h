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
//
// Movable, not thread-safe: one call's code path owns it. An observer
// destroyed without Finish (a task dropped unrun) records CANCELLED.
#ifndef GPUFLOW_SERVER_RPC_OBSERVER_H_
#define GPUFLOW_SERVER_RPC_OBSERVER_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/health_monitor.h"
#include "server/logging.h"
#include "server/server_metrics.h"
#include "server/session_registry.h"

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
  bool done_ = false;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_RPC_OBSERVER_H_
