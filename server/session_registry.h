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
// also taken from its tenant's budget (max_memory_bytes) and from the
// registry's server-wide budget (max_total_bytes), so each tenant's sessions
// and all sessions together stay within theirs. All are checked before
// anything is allocated.
//
// Tenants: a session belongs to the tenant that created it (tenants.h;
// none for a registry used without them). Get, Close and Peek find a
// session only for its own tenant: another tenant's id is NOT_FOUND, with
// the same message as an id that does not exist. A tenant may hold at most
// its max_sessions.
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
#include <list>
#include <map>
#include <memory>
#include <optional>
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
#include "server/device_set.h"
#include "server/memory_budget.h"
#include "server/tenants.h"

namespace gpuflow::server {

class Session;
// A validated, planned graph kept by a session (graph_runner.h).
struct PreparedGraph;
// A client's shared-memory object registered in a session (shared_memory.h).
class SharedMemoryRegion;

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
  // The tenant creating the session (null: none, no tenant limits).
  std::shared_ptr<Tenant> tenant = nullptr;
  // The id of the device to hold it (DeviceSet); unset: the least-loaded
  // healthy one (SessionRegistry::Create).
  std::optional<int> device = std::nullopt;
};

struct ArrayEntry {
  std::string name;
  Array array;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // Use SessionRegistry::Create. `budget` (may be null: unbounded) must
  // outlive the session; `owner` (may be null) is kept alive by it, and its
  // memory budget is drawn from as well.
  Session(std::string id, std::string label, int64_t memory_limit_bytes, absl::Duration idle_ttl,
          std::unique_ptr<Stream> stream, absl::Time now, MemoryBudget* budget = nullptr,
          int max_arrays = 65536, std::shared_ptr<Tenant> owner = nullptr);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& id() const { return id_; }
  const std::string& label() const { return label_; }
  // The tenant that created it (null: none).
  const std::shared_ptr<Tenant>& owner() const { return owner_; }
  int64_t memory_limit_bytes() const { return memory_limit_bytes_; }
  absl::Duration idle_ttl() const { return idle_ttl_; }
  // The backend of the device that holds the session: every buffer, copy
  // and run of the session goes through it.
  Backend& backend() const { return *backend_; }
  // That device's id (DeviceSet::id) and index in the registry's set.
  int device() const { return device_id_; }
  int device_index() const { return device_index_; }
  // The session's stream; work on it is ordered.
  Stream& stream() { return *stream_; }
  // Its stream for short requests, which the device runs ahead of other
  // sessions' long work (Backend::CreatePriorityStream); stream() when it
  // has none. Work moving to it waits for stream()'s first
  // (Backend::OrderAfter).
  Stream& priority_stream() { return priority_stream_ != nullptr ? *priority_stream_ : *stream_; }

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

  // Prepared graphs (PrepareGraph). Keeps `graph` under a new handle (never
  // 0), its `bytes` counted as metadata; beyond `max` graphs it forgets the
  // least recently used first (their bytes given back). RESOURCE_EXHAUSTED
  // when the quota cannot hold `bytes`; NOT_FOUND once the session is
  // closed.
  absl::StatusOr<uint64_t> AddPreparedGraph(std::shared_ptr<const PreparedGraph> graph,
                                            int64_t bytes, int max);
  // The graph of `handle`, now the most recently used; null when unknown.
  std::shared_ptr<const PreparedGraph> FindPreparedGraph(uint64_t handle);
  // Forgets it; returns the bytes given back. NOT_FOUND when unknown.
  absl::StatusOr<int64_t> ReleasePreparedGraph(uint64_t handle);
  int num_prepared_graphs() const;

  // Shared-memory regions (RegisterSharedMemory), by name; `bytes` is the
  // region's registered size. ALREADY_EXISTS for a name in use;
  // RESOURCE_EXHAUSTED beyond `max_regions` regions or `max_bytes` in all;
  // NOT_FOUND once the session is closed.
  absl::Status AddSharedMemory(const std::string& name,
                               std::shared_ptr<const SharedMemoryRegion> region, int64_t bytes,
                               int max_regions, int64_t max_bytes);
  // NOT_FOUND when the session has no region of that name.
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> FindSharedMemory(
      const std::string& name) const;
  absl::Status RemoveSharedMemory(const std::string& name);
  int num_shared_memory_regions() const;

  // Arrays plus live reservations and run charges (data bytes).
  int64_t memory_used_bytes() const;
  // The stored arrays' metadata (MetadataBytes each) and the prepared
  // graphs'; counts against the quota beside memory_used_bytes.
  int64_t metadata_bytes() const;
  int num_arrays() const;
  bool closed() const;

 private:
  friend class SessionRegistry;
  friend class MemoryReservation;

  void ReleaseReservation(int64_t bytes);
  // Takes `bytes` from the quota and the budgets; caller holds mu_.
  absl::Status TakeLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `bytes` from the tenant's budget and the server's (both or
  // neither), and gives them back.
  absl::Status TakeFromBudgets(int64_t bytes);
  void GiveToBudgets(int64_t bytes);
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
  // Set by SessionRegistry::Create before the session is shared.
  std::unique_ptr<Stream> priority_stream_;
  Backend* backend_ = nullptr;
  int device_index_ = 0;
  int device_id_ = 0;
  MemoryBudget* const budget_;
  const int max_arrays_;
  const std::shared_ptr<Tenant> owner_;

  mutable absl::Mutex mu_;
  std::map<std::string, Array> arrays_ ABSL_GUARDED_BY(mu_);
  // Data bytes (arrays, reservations, charges) and metadata bytes; both
  // are also taken from budget_.
  int64_t used_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t metadata_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_used_ ABSL_GUARDED_BY(mu_);
  int running_requests_ ABSL_GUARDED_BY(mu_) = 0;
  struct PreparedEntry {
    std::shared_ptr<const PreparedGraph> graph;
    int64_t bytes = 0;
    std::list<uint64_t>::iterator lru;
  };
  absl::flat_hash_map<uint64_t, PreparedEntry> prepared_ ABSL_GUARDED_BY(mu_);
  // Most recently used first.
  std::list<uint64_t> prepared_lru_ ABSL_GUARDED_BY(mu_);
  uint64_t next_prepared_ ABSL_GUARDED_BY(mu_) = 1;
  struct RegionEntry {
    std::shared_ptr<const SharedMemoryRegion> region;
    int64_t bytes = 0;
  };
  absl::flat_hash_map<std::string, RegionEntry> regions_ ABSL_GUARDED_BY(mu_);
  int64_t region_bytes_ ABSL_GUARDED_BY(mu_) = 0;
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
  // Refusals of server-wide limits (max_sessions, max_total_bytes) leave out
  // how much is in use, which would tell one tenant what the others hold
  // (set when the server has tenants).
  bool hide_totals = false;
  // Arrays one session may hold at once.
  int max_arrays_per_session = 65536;
  // How many tenants the server has now (the tokens file's; empty: none).
  // With two or more, a tenant that holds a session already cannot take one
  // of the last free sessions while other tenants hold none: each of them
  // can always open its first. And each tenant keeps a reserve of
  // max_total_bytes, min(default_memory_limit_bytes, max_total_bytes /
  // tenants), that the others cannot take (MemoryBudget). So one tenant
  // never locks the others out, whatever its own limits.
  std::function<int()> tenant_count;
  // Injected for tests; absl::Now by default.
  std::function<absl::Time()> clock;
};

// Placement: a session that names no device goes to the healthy device
// with the fewest open sessions; among those, the one whose sessions hold the
// fewest bytes; among those, the first in the set. Sessions being created
// count as open.
class SessionRegistry {
 public:
  // One device: `backend`.
  SessionRegistry(Backend& backend, SessionRegistryOptions options);
  // Sessions placed on `devices` (which must outlive the registry).
  SessionRegistry(const DeviceSet& devices, SessionRegistryOptions options);
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  // INVALID_ARGUMENT for a quota or TTL over the maximum (or negative), a
  // label over 128 characters or a device that is not in the set;
  // UNAVAILABLE when the device asked for is unhealthy, or no device is
  // healthy; RESOURCE_EXHAUSTED (retryable) when max_sessions are open, or
  // the tenant's max_sessions.
  absl::StatusOr<std::shared_ptr<Session>> Create(const SessionOptions& options);

  // Finds a live session of `tenant` (null: a session of no tenant) and
  // resets its idle timer. NOT_FOUND for an unknown, closed or expired id
  // (an expired session found here is freed at once) and for another
  // tenant's session, which is left as it was.
  absl::StatusOr<std::shared_ptr<Session>> Get(const std::string& id,
                                               const Tenant* tenant = nullptr);

  // Resets the idle timer of a session the caller already holds (long
  // transfers call it as they progress).
  void Touch(Session& session) { session.Touch(Now()); }

  // Marks a request as running in `session` until the scope is destroyed:
  // the session does not expire meanwhile (see Session::RequestScope).
  Session::RequestScope BeginRequest(std::shared_ptr<Session> session);

  // Closes the session of `tenant` and frees its arrays; returns the bytes
  // freed. NOT_FOUND as for Get.
  absl::StatusOr<int64_t> Close(const std::string& id, const Tenant* tenant = nullptr);

  // Closes every session of `tenant` (one removed from the tokens file);
  // returns how many.
  int CloseTenant(const Tenant* tenant);

  // Frees every session idle for longer than its TTL; returns how many.
  int ExpireIdle();

  // Closes every session (server shutdown).
  void CloseAll();

  // The live session of `tenant` with this id, or null; unlike Get it
  // neither resets the idle timer nor expires the session (logging).
  std::shared_ptr<Session> Peek(const std::string& id, const Tenant* tenant = nullptr) const;

  // Sessions open now of `tenant` (null: of no tenant).
  int sessions_of(const Tenant* tenant) const;

  // Figures over every registered session (metrics).
  struct Totals {
    int sessions = 0;
    int64_t arrays = 0;
    // Arrays plus live reservations.
    int64_t bytes = 0;
  };
  Totals totals() const;

  // Figures per device, by index in devices() (placement, ServerInfo,
  // metrics).
  struct DeviceLoad {
    int sessions = 0;
    // Bytes the device's sessions hold (data and metadata).
    int64_t bytes = 0;
  };
  std::vector<DeviceLoad> device_loads() const;
  const DeviceSet& devices() const { return devices_; }

  int size() const;
  int64_t expired_total() const;
  const SessionRegistryOptions& options() const { return options_; }
  // The server-wide budget every session draws from.
  const MemoryBudget& budget() const { return budget_; }

 private:
  SessionRegistry(std::unique_ptr<DeviceSet> own, const DeviceSet* devices,
                  SessionRegistryOptions options);
  absl::Time Now() const { return options_.clock(); }
  static bool IsExpired(const Session& session, absl::Time now);
  // Removes a session from sessions_ and its tenant's count.
  std::shared_ptr<Session> EraseLocked(
      absl::flat_hash_map<std::string, std::shared_ptr<Session>>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The index of the device a new session goes to (see the class comment),
  // counted in placing_ until Create registers or drops it; or the refusal.
  absl::StatusOr<int> Place(const std::optional<int>& device_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Set when the registry was given one backend (before devices_, which
  // refers to it).
  const std::unique_ptr<DeviceSet> own_devices_;
  const DeviceSet& devices_;
  const SessionRegistryOptions options_;
  MemoryBudget budget_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  // Open sessions per owning tenant (null: of no tenant), for max_sessions.
  absl::flat_hash_map<const Tenant*, int> sessions_per_tenant_ ABSL_GUARDED_BY(mu_);
  int64_t expired_total_ ABSL_GUARDED_BY(mu_) = 0;
  // Sessions being created per device index (placed, not yet registered).
  std::vector<int> placing_ ABSL_GUARDED_BY(mu_);
};

// 32 lowercase hex digits from the kernel's CSPRNG (getrandom(2)).
std::string NewSessionId();

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_SESSION_REGISTRY_H_
