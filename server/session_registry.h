// Sessions: who holds which arrays, how much memory they may use, and when
// they expire.
//
//   SessionRegistry registry(backend, options);
//   absl::StatusOr<std::shared_ptr<Session>> s = registry.Create({.label = "job"});
//   absl::StatusOr<MemoryReservation> r = (*s)->Reserve(bytes);   // quota first
//   ... allocate and fill a buffer ...
//   (*s)->PutArray("x", std::move(array), std::move(*r));         // then publish
//   registry.Close((*s)->id());
//
// Arrays by name: PutArray replaces an existing array of the same name; the
// replaced array's bytes return to the quota at once (readers that already
// hold it keep it alive until they are done). Quota is taken by reservations
// before memory is allocated, so an upload in progress counts against it; a
// reservation that is destroyed without being committed gives its bytes back.
//
// Memory: a session's quota covers its arrays' bytes, their metadata (names
// and shapes: MetadataBytes), uploads in progress (reservations) and the
// intermediates of its runs (Charge/Uncharge); every byte a session takes is
// also taken from the registry's server-wide budget (max_total_bytes), so
// all sessions together stay within it. Both are checked before anything is
// allocated.
//
// Closing: CloseSession and expiry run the session's close hooks (uploads,
// downloads and runs in progress register one to cancel themselves), then
// free every array at once.
//
// Thread-safety: every method of SessionRegistry and Session may be called
// from any thread. A Session stays valid while a caller holds its
// shared_ptr, even after it is closed or expired; a closed session refuses
// new arrays (NOT_FOUND).
#ifndef GPUFLOW_SERVER_SESSION_REGISTRY_H_
#define GPUFLOW_SERVER_SESSION_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/ir/shape.h"

namespace gpuflow::server {

class Session;

// Bytes shared by every session of a registry (--max_memory_bytes). Thread-safe.
class MemoryBudget {
 public:
  // limit <= 0: unbounded.
  explicit MemoryBudget(int64_t limit) : limit_(limit) {}
  // RESOURCE_EXHAUSTED, with what was asked and what is left, when the
  // budget cannot hold `bytes` more.
  absl::Status Take(int64_t bytes);
  void Give(int64_t bytes);
  int64_t used() const;
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  mutable absl::Mutex mu_;
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
};

// What one stored array costs its session beyond its data: its name, its
// shape and the bookkeeping around them.
int64_t MetadataBytes(absl::string_view name, const Shape& shape);

// Bytes taken from a session's quota. Move-only; gives them back on
// destruction unless Session::PutArray consumed it.
class MemoryReservation {
 public:
  MemoryReservation() = default;
  MemoryReservation(MemoryReservation&& other) noexcept;
  MemoryReservation& operator=(MemoryReservation&& other) noexcept;
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;
  ~MemoryReservation();

  int64_t bytes() const { return bytes_; }

 private:
  friend class Session;
  MemoryReservation(std::shared_ptr<Session> session, int64_t bytes)
      : session_(std::move(session)), bytes_(bytes) {}
  void Release();

  std::shared_ptr<Session> session_;
  int64_t bytes_ = 0;
};

struct SessionOptions {
  std::string label;
  // 0: the registry's default.
  int64_t memory_limit_bytes = 0;
  // Zero: the registry's default.
  absl::Duration idle_ttl = absl::ZeroDuration();
};

struct ArrayEntry {
  std::string name;
  Array array;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // Use SessionRegistry::Create. `budget` (may be null: unbounded) must
  // outlive the session.
  Session(std::string id, std::string label, int64_t memory_limit_bytes, absl::Duration idle_ttl,
          std::unique_ptr<Stream> stream, absl::Time now, MemoryBudget* budget = nullptr,
          int max_arrays = 65536);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& id() const { return id_; }
  const std::string& label() const { return label_; }
  int64_t memory_limit_bytes() const { return memory_limit_bytes_; }
  absl::Duration idle_ttl() const { return idle_ttl_; }
  // The session's stream; work on it is ordered.
  Stream& stream() { return *stream_; }

  // Takes `bytes` from the quota. RESOURCE_EXHAUSTED with the sizes when the
  // quota cannot hold them; NOT_FOUND once the session is closed.
  absl::StatusOr<MemoryReservation> Reserve(int64_t bytes);

  // Publishes `array` under `name`, replacing any array of that name. The
  // reservation must come from this session and cover array.num_bytes() +
  // MetadataBytes(name, array.shape) (StoredBytes).
  absl::Status PutArray(const std::string& name, Array array, MemoryReservation reservation);
  // What storing an array of `bytes` data bytes named `name` of `shape`
  // takes from the quota.
  static int64_t StoredBytes(absl::string_view name, const Shape& shape, int64_t bytes) {
    return bytes + MetadataBytes(name, shape);
  }

  // Takes `bytes` for a run's intermediates (no reservation object: the
  // caller gives exactly as much back with Uncharge). Same errors as Reserve.
  absl::Status Charge(int64_t bytes);
  void Uncharge(int64_t bytes);

  // Runs `hook` (on the closing thread, outside every lock of the session)
  // when the session is closed or expires; at once if it already is. The
  // hook is removed when the returned registration is destroyed, which waits
  // for a hook that is running. Transfers and runs in progress use it to
  // cancel themselves.
  class CloseHook {
   public:
    CloseHook() = default;
    CloseHook(CloseHook&& other) noexcept;
    CloseHook& operator=(CloseHook&& other) noexcept;
    CloseHook(const CloseHook&) = delete;
    CloseHook& operator=(const CloseHook&) = delete;
    ~CloseHook();

   private:
    friend class Session;
    CloseHook(Session* session, uint64_t key) : session_(session), key_(key) {}
    void Reset();
    Session* session_ = nullptr;
    uint64_t key_ = 0;
  };
  [[nodiscard]] CloseHook OnClose(std::function<void()> hook);

  // NOT_FOUND when there is no such array.
  absl::StatusOr<Array> GetArray(const std::string& name) const;
  // Returns the bytes freed. NOT_FOUND when there is no such array.
  absl::StatusOr<int64_t> DeleteArray(const std::string& name);
  // Sorted by name.
  std::vector<ArrayEntry> ListArrays() const;

  // A request running in the session (Execute, Benchmark) keeps it from
  // expiring, however long it runs; its idle time counts from the end of the
  // last one. Returned by BeginRequest; ends the request when destroyed.
  class RequestScope {
   public:
    RequestScope(RequestScope&& other) noexcept : session_(std::move(other.session_)) {}
    RequestScope& operator=(RequestScope&&) = delete;
    RequestScope(const RequestScope&) = delete;
    RequestScope& operator=(const RequestScope&) = delete;
    ~RequestScope();

   private:
    friend class SessionRegistry;
    explicit RequestScope(std::shared_ptr<Session> session) : session_(std::move(session)) {}
    std::shared_ptr<Session> session_;
  };

  // Arrays plus live reservations and run charges (data bytes).
  int64_t memory_used_bytes() const;
  // The stored arrays' metadata (MetadataBytes each); counts against the
  // quota beside memory_used_bytes.
  int64_t metadata_bytes() const;
  int num_arrays() const;
  bool closed() const;

 private:
  friend class SessionRegistry;
  friend class MemoryReservation;

  void ReleaseReservation(int64_t bytes);
  // Takes `bytes` from the quota and the budget; caller holds mu_.
  absl::Status TakeLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs and clears the close hooks.
  void RunCloseHooks();
  // Drops every array; returns the bytes they held.
  int64_t CloseAndFree();
  void Touch(absl::Time now);
  absl::Time last_used() const;
  // Requests running now (RequestScope).
  int running_requests() const;

  const std::string id_;
  const std::string label_;
  const int64_t memory_limit_bytes_;
  const absl::Duration idle_ttl_;
  const std::unique_ptr<Stream> stream_;
  MemoryBudget* const budget_;
  const int max_arrays_;

  mutable absl::Mutex mu_;
  std::map<std::string, Array> arrays_ ABSL_GUARDED_BY(mu_);
  // Data bytes (arrays, reservations, charges) and metadata bytes; both
  // are also taken from budget_.
  int64_t used_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t metadata_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_used_ ABSL_GUARDED_BY(mu_);
  int running_requests_ ABSL_GUARDED_BY(mu_) = 0;
  // The registry's clock, for the end of a request (set by the registry).
  std::function<absl::Time()> clock_;

  // Close hooks; a separate lock so a hook may call back into the session.
  absl::Mutex hooks_mu_;
  absl::flat_hash_map<uint64_t, std::function<void()>> hooks_ ABSL_GUARDED_BY(hooks_mu_);
  uint64_t next_hook_ ABSL_GUARDED_BY(hooks_mu_) = 1;
  bool hooks_ran_ ABSL_GUARDED_BY(hooks_mu_) = false;
  // The hook being run (0: none), so unregistering it waits.
  uint64_t running_hook_ ABSL_GUARDED_BY(hooks_mu_) = 0;
  std::thread::id running_thread_ ABSL_GUARDED_BY(hooks_mu_);
};

struct SessionRegistryOptions {
  int max_sessions = 64;
  int64_t default_memory_limit_bytes = int64_t{4} << 30;
  int64_t max_memory_limit_bytes = int64_t{64} << 30;
  absl::Duration default_idle_ttl = absl::Minutes(10);
  absl::Duration max_idle_ttl = absl::Hours(24);
  // Bytes all sessions together may hold (--max_memory_bytes); <= 0: no bound.
  int64_t max_total_bytes = 0;
  // Arrays one session may hold at once.
  int max_arrays_per_session = 65536;
  // Injected for tests; absl::Now by default.
  std::function<absl::Time()> clock;
};

class SessionRegistry {
 public:
  SessionRegistry(Backend& backend, SessionRegistryOptions options);
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  // INVALID_ARGUMENT for a quota or TTL over the maximum (or negative) or a
  // label over 128 characters; RESOURCE_EXHAUSTED when max_sessions are open.
  absl::StatusOr<std::shared_ptr<Session>> Create(const SessionOptions& options);

  // Finds a live session and resets its idle timer. NOT_FOUND for an unknown,
  // closed or expired id (an expired session found here is freed at once).
  absl::StatusOr<std::shared_ptr<Session>> Get(const std::string& id);

  // Resets the idle timer of a session the caller already holds (long
  // transfers call it as they progress).
  void Touch(Session& session) { session.Touch(Now()); }

  // Marks a request as running in `session` until the scope is destroyed:
  // the session does not expire meanwhile (see Session::RequestScope).
  Session::RequestScope BeginRequest(std::shared_ptr<Session> session);

  // Closes the session and frees its arrays; returns the bytes freed.
  absl::StatusOr<int64_t> Close(const std::string& id);

  // Frees every session idle for longer than its TTL; returns how many.
  int ExpireIdle();

  // Closes every session (server shutdown).
  void CloseAll();

  // The live session with this id, or null; unlike Get it neither resets
  // the idle timer nor expires the session (logging, metrics).
  std::shared_ptr<Session> Peek(const std::string& id) const;

  // Figures over every registered session (metrics).
  struct Totals {
    int sessions = 0;
    int64_t arrays = 0;
    // Arrays plus live reservations.
    int64_t bytes = 0;
  };
  Totals totals() const;

  int size() const;
  int64_t expired_total() const;
  const SessionRegistryOptions& options() const { return options_; }
  // The server-wide budget every session draws from.
  const MemoryBudget& budget() const { return budget_; }

 private:
  absl::Time Now() const { return options_.clock(); }
  static bool IsExpired(const Session& session, absl::Time now);

  Backend& backend_;
  const SessionRegistryOptions options_;
  MemoryBudget budget_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  int64_t expired_total_ ABSL_GUARDED_BY(mu_) = 0;
};

// 32 lowercase hex digits from the kernel's CSPRNG (getrandom(2)).
std::string NewSessionId();

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_SESSION_REGISTRY_H_
