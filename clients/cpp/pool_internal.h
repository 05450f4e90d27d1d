// Internal to the C++ client: a pool of gpuflowd workers behind one target
// (docs/scale-out.md), what Client::Connect builds for "h1:p1,h2:p2" or
// "dns:///name:port". Tests construct one with a resolver of their own:
//
//   absl::StatusOr<Client> pool = internal::WorkerPool::Connect(
//       "test-pool", {}, [&] { return addresses; });
#ifndef GPUFLOW_CLIENTS_CPP_POOL_INTERNAL_H_
#define GPUFLOW_CLIENTS_CPP_POOL_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/cpp/client.h"
#include "clients/cpp/connection_internal.h"

namespace gpuflow::client::internal {

// How long a worker may take to answer when a session is placed or looked
// for; slower ones are passed over.
inline constexpr absl::Duration kPoolAskTimeout = absl::Seconds(2);

// Whether `target` names a pool: a comma list, or "dns:///host:port".
bool IsPoolTarget(absl::string_view target);

// The addresses of a pool target, sorted, each once: a list's entries, or
// every address `host` of "dns:///host:port" resolves to (getaddrinfo) as
// "ip:port" or "[ip6]:port". INVALID_ARGUMENT for a dns:/// target without
// a numeric port; UNAVAILABLE when it does not resolve or names nothing.
absl::StatusOr<std::vector<std::string>> ResolvePoolTarget(const std::string& target);

// The workers of one pool target and a connection to each. Thread-safe.
// The addresses are resolved when the pool is made and again for every
// session placed or looked for, so workers that come and go are followed;
// when resolving fails, the last addresses that resolved are used.
class WorkerPool {
 public:
  using Resolver = std::function<absl::StatusOr<std::vector<std::string>>()>;

  // A client on the pool: resolves, opens a connection to every address
  // and returns once one of them connects (its info answers for the pool's
  // limits); UNAVAILABLE when none does within options.connect_timeout.
  static absl::StatusOr<Client> Connect(std::string target, const ClientOptions& options,
                                        Resolver resolve);

  WorkerPool(std::string target, ClientOptions options, Resolver resolve)
      : target_(std::move(target)), options_(std::move(options)), resolve_(std::move(resolve)) {}

  const std::string& target() const { return target_; }

  // The worker a new session goes to: of the workers that answer
  // GetServerInfo within kPoolAskTimeout (asked at once) and report
  // themselves healthy, the one with the fewest sessions, then requests in
  // flight, then bytes held; ties take turns. UNAVAILABLE when none.
  absl::StatusOr<std::shared_ptr<Connection>> Place();

  // The worker that holds session `id`: every worker is asked at once
  // (KeepAlive, which resets the session's idle timer). NOT_FOUND when no
  // worker holds it; a worker's other refusal (UNAUTHENTICATED,
  // PERMISSION_DENIED) when it gave one.
  absl::StatusOr<std::shared_ptr<Connection>> Locate(const std::string& id);

  // The connection to `address`, opened (not waited for) on first use.
  absl::StatusOr<std::shared_ptr<Connection>> ConnectionTo(const std::string& address);

 private:
  // The current workers' connections, in address order.
  absl::StatusOr<std::vector<std::shared_ptr<Connection>>> Workers();

  const std::string target_;
  const ClientOptions options_;
  const Resolver resolve_;
  absl::Mutex mutex_;
  // Only the addresses of the last resolution (sessions keep their own).
  absl::flat_hash_map<std::string, std::shared_ptr<Connection>> connections_
      ABSL_GUARDED_BY(mutex_);
  std::vector<std::string> addresses_ ABSL_GUARDED_BY(mutex_);
  std::atomic<uint64_t> turn_{0};
};

// The trailing-metadata key of an owner redirect: a FAILED_PRECONDITION
// answer to a call of a session that the worker does not hold, naming the
// session's owner ("host:port"). gpuflowd never sends one (a worker knows
// only its own sessions, docs/scale-out.md); a gateway of your own may.
inline constexpr char kSessionEndpointKey[] = "gpuflow-session-endpoint";

// The endpoint an answer redirects to, or "" when it is no redirect.
std::string RedirectEndpoint(const grpc::ClientContext& context, const grpc::Status& status);

// Where one session's calls go, shared by its handles. Thread-safe.
class SessionRoute {
 public:
  SessionRoute(std::shared_ptr<Connection> connection, std::shared_ptr<WorkerPool> pool)
      : pool_(std::move(pool)), connection_(std::move(connection)) {}

  std::shared_ptr<Connection> Current() const {
    absl::MutexLock lock(&mutex_);
    return connection_;
  }

  // After a redirect from `from` to `endpoint`: the connection the
  // session's calls use from now on (the pool's connection to it, or a new
  // one with `from`'s options), or an error when `endpoint` is where the
  // call already went or cannot be opened.
  absl::StatusOr<std::shared_ptr<Connection>> MoveTo(const std::shared_ptr<Connection>& from,
                                                     const std::string& endpoint);

  // One unary call on the current connection, following a redirect once.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::GpuFlow::Stub::*method)(grpc::ClientContext*,
                                                                          const Request&,
                                                                          Response*),
                                const Request& request) {
    std::shared_ptr<Connection> connection = Current();
    for (int attempt = 0;; ++attempt) {
      Response response;
      std::unique_ptr<grpc::ClientContext> context = connection->NewContext();
      const grpc::Status status = ((*connection->stub).*method)(context.get(), request, &response);
      if (status.ok()) return response;
      const std::string endpoint = RedirectEndpoint(*context, status);
      if (attempt > 0 || endpoint.empty()) return FromGrpcStatus(status);
      absl::StatusOr<std::shared_ptr<Connection>> owner = MoveTo(connection, endpoint);
      if (!owner.ok()) return FromGrpcStatus(status);
      connection = *std::move(owner);
    }
  }

 private:
  const std::shared_ptr<WorkerPool> pool_;
  mutable absl::Mutex mutex_;
  std::shared_ptr<Connection> connection_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace gpuflow::client::internal

#endif  // GPUFLOW_CLIENTS_CPP_POOL_INTERNAL_H_
