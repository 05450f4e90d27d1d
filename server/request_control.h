// The RunControl of one Execute, Benchmark or Precompile call: stops the
// work between steps (and between Benchmark's runs) once the client has
// cancelled, its deadline or --max_request_duration has passed, the server
// is shutting down past its grace, or the session was closed; and charges
// the run's intermediates to the session's quota (and so the server-wide
// budget) before they are allocated.
//
//   RequestControl control(context, session.get(), options.max_request_duration);
//   RunOptions run{.control = &control};
//   backend.Run(graph, plan, arrays, stream, run);   // CANCELLED / DEADLINE_EXCEEDED /
//                                                    // RESOURCE_EXHAUSTED between steps
//
// Used by the thread running the request (Backend::Run's contract); the
// destructor gives back any bytes still charged.
#ifndef GPUFLOW_SERVER_REQUEST_CONTROL_H_
#define GPUFLOW_SERVER_REQUEST_CONTROL_H_

#include <grpcpp/server_context.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "server/session_registry.h"

namespace gpuflow::server {

class RequestControl final : public RunControl {
 public:
  // `context` (the call; null: no client to watch) and `session` (null: no
  // quota to charge, e.g. Precompile) must outlive the control. The request
  // may run until the client's deadline or `max_duration` from now,
  // whichever comes first (max_duration <= 0: no server cap).
  RequestControl(grpc::CallbackServerContext* context, Session* session,
                 absl::Duration max_duration);
  ~RequestControl() override;
  RequestControl(const RequestControl&) = delete;
  RequestControl& operator=(const RequestControl&) = delete;

  absl::Status CheckContinue() override;
  absl::Status Acquire(int64_t bytes) override;
  void Release(int64_t bytes) override;

  // When the request must stop.
  absl::Time deadline() const { return deadline_; }
  // Bytes charged now.
  int64_t charged() const { return charged_; }

 private:
  grpc::CallbackServerContext* const context_;
  Session* const session_;
  const absl::Time start_;
  absl::Time deadline_;
  // Whether deadline_ is the server's cap (for the message).
  bool deadline_is_server_cap_ = false;
  int64_t charged_ = 0;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_REQUEST_CONTROL_H_
