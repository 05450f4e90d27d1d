// Internal to the C++ client: one channel to one server and what every
// handle on it shares (client.cc), and the pool of workers behind a pool
// target (pool.cc). Not part of the client's API; tests may use it.
#ifndef GPUFLOW_CLIENTS_CPP_CONNECTION_INTERNAL_H_
#define GPUFLOW_CLIENTS_CPP_CONNECTION_INTERNAL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/cpp/client.h"
#include "clients/cpp/status_macros_internal.h"
#include "gpuflow/v1/service.grpc.pb.h"

namespace gpuflow::client::internal {

// A channel to `target` with `options`' credentials; waits up to the
// connect timeout when `wait` (UNAVAILABLE saying why it did not connect).
absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(const std::string& target,
                                                           const ClientOptions& options, bool wait);

// What every handle on one server shares. Thread-safe.
struct Connection {
  // The address it was opened with ("host:port", or any gRPC target).
  std::string target;
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::GpuFlow::Stub> stub;

  absl::Mutex mutex;
  std::optional<v1::Limits> limits ABSL_GUARDED_BY(mutex);
  // ExecuteAsync calls not yet ended. The destructor waits for them: the
  // channel must not go away under a call, nor be destroyed on one of
  // gRPC's callback threads (which a call holding the connection would do).
  int calls_in_flight ABSL_GUARDED_BY(mutex) = 0;

  // A connection on `channel` (not waited for), its target `target`.
  static std::shared_ptr<Connection> On(std::shared_ptr<grpc::Channel> channel,
                                        const ClientOptions& options, std::string target);

  ~Connection() {
    absl::MutexLock lock(&mutex);
    mutex.Await(absl::Condition(
        +[](int* in_flight) { return *in_flight == 0; }, &calls_in_flight));
  }

  void BeginCall() {
    absl::MutexLock lock(&mutex);
    ++calls_in_flight;
  }
  void EndCall() {
    absl::MutexLock lock(&mutex);
    --calls_in_flight;
  }

  // A context carrying the call deadline (the sooner of the client's
  // call_timeout and `timeout`), if any, and the bearer token.
  std::unique_ptr<grpc::ClientContext> NewContext(
      absl::Duration timeout = absl::InfiniteDuration()) const {
    auto context = std::make_unique<grpc::ClientContext>();
    const absl::Duration limit = std::min(options.call_timeout, timeout);
    if (limit != absl::InfiniteDuration()) {
      context->set_deadline(absl::ToChronoTime(absl::Now() + limit));
    }
    if (!options.token.empty()) context->AddMetadata("authorization", "Bearer " + options.token);
    return context;
  }

  // GetServerInfo, keeping the limits it reports.
  absl::StatusOr<v1::ServerInfo> Info(absl::Duration timeout = absl::InfiniteDuration()) {
    v1::ServerInfo info;
    std::unique_ptr<grpc::ClientContext> context = NewContext(timeout);
    GPUFLOW_CLIENT_RETURN_IF_ERROR(
        FromGrpcStatus(stub->GetServerInfo(context.get(), v1::GetServerInfoRequest(), &info)));
    absl::MutexLock lock(&mutex);
    limits = info.limits();
    return info;
  }

  absl::StatusOr<v1::Limits> Limits() {
    {
      absl::MutexLock lock(&mutex);
      if (limits.has_value()) return *limits;
    }
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ServerInfo info, Info());
    return info.limits();
  }

  // The chunk size for transfers: the server's largest, or 1 MiB when a
  // server reports none.
  absl::StatusOr<int64_t> ChunkBytes() {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::Limits server_limits, Limits());
    return server_limits.max_chunk_bytes() > 0 ? server_limits.max_chunk_bytes() : int64_t{1} << 20;
  }

  // Runs one unary call.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(
      grpc::Status (v1::GpuFlow::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
      const Request& request, absl::Duration timeout = absl::InfiniteDuration()) {
    Response response;
    std::unique_ptr<grpc::ClientContext> context = NewContext(timeout);
    GPUFLOW_CLIENT_RETURN_IF_ERROR(
        FromGrpcStatus(((*stub).*method)(context.get(), request, &response)));
    return response;
  }
};

}  // namespace gpuflow::client::internal

#endif  // GPUFLOW_CLIENTS_CPP_CONNECTION_INTERNAL_H_
