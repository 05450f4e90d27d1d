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

}  // namespace gpuflow::client::internal

#endif  // GPUFLOW_CLIENTS_CPP_POOL_INTERNAL_H_
