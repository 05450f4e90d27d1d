#include "server/session_registry.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/ir/echo.h"
#include "server/retry_hint.h"

namespace gpuflow::server {

// ---------------------------------------------------------------- budget

int64_t MetadataBytes(absl::string_view name, const Shape& shape) {
  // The map node, the Array and its buffer's control block, about 256
  // bytes, plus the name and the dimensions.
  constexpr int64_t kPerArray = 256;
  return kPerArray + static_cast<int64_t>(name.size()) +
         static_cast<int64_t>(sizeof(int64_t)) * shape.rank();
}

// ---------------------------------------------------------------- reservation

MemoryReservation::MemoryReservation(MemoryReservation&& other) noexcept
    : session_(std::move(other.session_)), bytes_(other.bytes_) {
  other.bytes_ = 0;
}

MemoryReservation& MemoryReservation::operator=(MemoryReservation&& other) noexcept {
  if (this != &other) {
    Release();
    session_ = std::move(other.session_);
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

MemoryReservation::~MemoryReservation() { Release(); }

void MemoryReservation::Release() {
  if (session_ != nullptr && bytes_ > 0) session_->ReleaseReservation(bytes_);
  session_.reset();
  bytes_ = 0;
}

// ---------------------------------------------------------------- session

Session::Session(std::string id, std::string label, int64_t memory_limit_bytes,
                 absl::Duration idle_ttl, std::unique_ptr<Stream> stream, absl::Time now,
                 MemoryBudget* budget, int max_arrays, std::shared_ptr<Tenant> owner)
    : id_(std::move(id)),
      label_(std::move(label)),
      memory_limit_bytes_(memory_limit_bytes),
      idle_ttl_(idle_ttl),
      stream_(std::move(stream)),
      budget_(budget),
      max_arrays_(max_arrays),
      owner_(std::move(owner)),
      last_used_(now) {}

absl::Status Session::TakeFromBudgets(int64_t bytes) {
  if (owner_ != nullptr) {
    if (absl::Status s = owner_->memory().Take(bytes); !s.ok()) return s;
  }
  if (budget_ != nullptr) {
    if (absl::Status s = budget_->Take(bytes, owner_.get()); !s.ok()) {
      if (owner_ != nullptr) owner_->memory().Give(bytes);
      return s;
    }
  }
  return absl::OkStatus();
}

void Session::GiveToBudgets(int64_t bytes) {
  if (owner_ != nullptr) owner_->memory().Give(bytes);
  if (budget_ != nullptr) budget_->Give(bytes, owner_.get());
}

absl::Status Session::TakeLocked(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("negative reservation");
  if (closed_) return absl::NotFoundError(absl::StrCat("session ", id_, " is closed"));
  const int64_t in_use = used_bytes_ + metadata_bytes_;
  if (bytes > memory_limit_bytes_ - in_use) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "session memory quota exceeded: ", bytes, " bytes requested, ",
        memory_limit_bytes_ - in_use, " of ", memory_limit_bytes_, " bytes left (", used_bytes_,
        " in arrays, transfers and runs, ", metadata_bytes_, " in array metadata)"));
  }
  if (absl::Status s = TakeFromBudgets(bytes); !s.ok()) return s;
  used_bytes_ += bytes;
  return absl::OkStatus();
}

absl::StatusOr<MemoryReservation> Session::Reserve(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = TakeLocked(bytes); !s.ok()) return s;
  return MemoryReservation(shared_from_this(), bytes);
}

absl::Status Session::Charge(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  return TakeLocked(bytes);
}

void Session::Uncharge(int64_t bytes) { ReleaseReservation(bytes); }

void Session::ReleaseReservation(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  used_bytes_ -= bytes;
  GiveToBudgets(bytes);
}

// ---------------------------------------------------------------- close hooks

Session::CloseHook::CloseHook(CloseHook&& other) noexcept
    : session_(other.session_), key_(other.key_) {
  other.session_ = nullptr;
}

Session::CloseHook& Session::CloseHook::operator=(CloseHook&& other) noexcept {
  if (this != &other) {
    Reset();
    session_ = other.session_;
    key_ = other.key_;
    other.session_ = nullptr;
  }
  return *this;
}

Session::CloseHook::~CloseHook() { Reset(); }

void Session::CloseHook::Reset() {
  if (session_ == nullptr) return;
  Session& s = *session_;
  session_ = nullptr;
  absl::MutexLock lock(&s.hooks_mu_);
  s.hooks_.erase(key_);
  // A hook being run right now must finish before its owner goes away
  // (unless the hook itself is what destroys its owner).
  struct Running {
    Session* session;
    uint64_t key;
    bool Done() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return session->running_hook_ != key ||
             session->running_thread_ == std::this_thread::get_id();
    }
  } running{&s, key_};
  s.hooks_mu_.Await(absl::Condition(&running, &Running::Done));
}

Session::CloseHook Session::OnClose(std::function<void()> hook) {
  {
    absl::MutexLock lock(&hooks_mu_);
    if (!hooks_ran_) {
      const uint64_t key = next_hook_++;
      hooks_.emplace(key, std::move(hook));
      return CloseHook(this, key);
    }
  }
  hook();  // Already closed.
  return CloseHook();
}

void Session::RunCloseHooks() {
  absl::MutexLock lock(&hooks_mu_);
  hooks_ran_ = true;
  while (!hooks_.empty()) {
    auto it = hooks_.begin();
    const uint64_t key = it->first;
    std::function<void()> hook = std::move(it->second);
    hooks_.erase(it);
    running_hook_ = key;
    running_thread_ = std::this_thread::get_id();
    hooks_mu_.Unlock();
    hook();
    hooks_mu_.Lock();
    running_hook_ = 0;
    running_thread_ = std::thread::id();
  }
}

absl::Status Session::PutArray(const std::string& name, Array array,
                               MemoryReservation reservation) {
  const int64_t bytes = array.num_bytes();
  const int64_t metadata = MetadataBytes(name, array.shape);
  if (reservation.session_.get() != this || reservation.bytes_ < bytes + metadata) {
    return absl::InternalError("PutArray: reservation does not cover the array");
  }
  // Any surplus of the reservation is given back when `reservation` dies.
  Array replaced;  // Destroyed after the lock is released.
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::NotFoundError(absl::StrCat("session ", id_, " is closed"));
    auto it = arrays_.find(name);
    if (it == arrays_.end() && static_cast<int>(arrays_.size()) >= max_arrays_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "session holds ", arrays_.size(), " arrays, the most a session may hold; delete some"));
    }
    if (it == arrays_.end()) {
      it = arrays_.try_emplace(name).first;
    } else {
      used_bytes_ -= it->second.num_bytes();
      metadata_bytes_ -= MetadataBytes(name, it->second.shape);
      GiveToBudgets(it->second.num_bytes() + MetadataBytes(name, it->second.shape));
      replaced = std::move(it->second);
    }
    it->second = std::move(array);
    // The reservation's bytes now belong to the array and its metadata.
    used_bytes_ -= metadata;
    metadata_bytes_ += metadata;
    reservation.bytes_ -= bytes + metadata;
  }
  return absl::OkStatus();
}

absl::StatusOr<Array> Session::GetArray(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = arrays_.find(name);
  if (it == arrays_.end()) {
    return absl::NotFoundError(absl::StrCat("no array named ", Echo(name), " in session ", id_));
  }
  return it->second;
}

absl::StatusOr<int64_t> Session::DeleteArray(const std::string& name) {
  Array removed;
  {
    absl::MutexLock lock(&mu_);
    auto it = arrays_.find(name);
    if (it == arrays_.end()) {
      return absl::NotFoundError(absl::StrCat("no array named ", Echo(name), " in session ", id_));
    }
    removed = std::move(it->second);
    arrays_.erase(it);
    const int64_t metadata = MetadataBytes(name, removed.shape);
    used_bytes_ -= removed.num_bytes();
    metadata_bytes_ -= metadata;
    GiveToBudgets(removed.num_bytes() + metadata);
  }
  return removed.num_bytes();
}

std::vector<ArrayEntry> Session::ListArrays() const {
  absl::MutexLock lock(&mu_);
  std::vector<ArrayEntry> out;
  out.reserve(arrays_.size());
  for (const auto& [name, array] : arrays_) out.push_back({name, array});
  return out;
}

int64_t Session::memory_used_bytes() const {
  absl::MutexLock lock(&mu_);
  return used_bytes_;
}

int64_t Session::metadata_bytes() const {
  absl::MutexLock lock(&mu_);
  return metadata_bytes_;
}

int Session::num_arrays() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(arrays_.size());
}

bool Session::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

absl::StatusOr<uint64_t> Session::AddPreparedGraph(std::shared_ptr<const PreparedGraph> graph,
                                                   int64_t bytes, int max) {
  std::vector<std::shared_ptr<const PreparedGraph>> forgotten;  // Freed outside the lock.
  absl::MutexLock lock(&mu_);
  if (max <= 0) return absl::FailedPreconditionError("this server keeps no prepared graphs");
  while (static_cast<int>(prepared_.size()) >= max) {
    auto it = prepared_.find(prepared_lru_.back());
    metadata_bytes_ -= it->second.bytes;
    GiveToBudgets(it->second.bytes);
    forgotten.push_back(std::move(it->second.graph));
    prepared_.erase(it);
    prepared_lru_.pop_back();
  }
  if (absl::Status s = TakeLocked(bytes); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("keeping a prepared graph: ", s.message()));
  }
  // The bytes belong to the graph's metadata, not to data in use.
  used_bytes_ -= bytes;
  metadata_bytes_ += bytes;
  const uint64_t handle = next_prepared_++;
  prepared_lru_.push_front(handle);
  prepared_.emplace(
      handle,
      PreparedEntry{.graph = std::move(graph), .bytes = bytes, .lru = prepared_lru_.begin()});
  return handle;
}

std::shared_ptr<const PreparedGraph> Session::FindPreparedGraph(uint64_t handle) {
  absl::MutexLock lock(&mu_);
  auto it = prepared_.find(handle);
  if (it == prepared_.end()) return nullptr;
  prepared_lru_.splice(prepared_lru_.begin(), prepared_lru_, it->second.lru);
  return it->second.graph;
}

absl::StatusOr<int64_t> Session::ReleasePreparedGraph(uint64_t handle) {
  std::shared_ptr<const PreparedGraph> graph;  // Freed outside the lock.
  absl::MutexLock lock(&mu_);
  auto it = prepared_.find(handle);
  if (it == prepared_.end()) {
    return absl::NotFoundError(absl::StrCat("session holds no prepared graph ", handle));
  }
  const int64_t bytes = it->second.bytes;
  metadata_bytes_ -= bytes;
  GiveToBudgets(bytes);
  graph = std::move(it->second.graph);
  prepared_lru_.erase(it->second.lru);
  prepared_.erase(it);
  return bytes;
}

int Session::num_prepared_graphs() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(prepared_.size());
}

absl::Status Session::AddSharedMemory(const std::string& name,
                                      std::shared_ptr<const SharedMemoryRegion> region,
                                      int64_t bytes, int max_regions, int64_t max_bytes) {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::NotFoundError(absl::StrCat("session ", id_, " is closed"));
  if (regions_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("the session has a shared-memory region ", Echo(name), " already"));
  }
  if (static_cast<int>(regions_.size()) >= max_regions) {
    return absl::ResourceExhaustedError(absl::StrCat("the session has ", regions_.size(),
                                                     " shared-memory regions, the most it may "
                                                     "register; unregister some"));
  }
  if (bytes > max_bytes - region_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "registering ", bytes, " more bytes of shared memory would take the session over ",
        max_bytes, " (--max_shared_memory_bytes; ", region_bytes_, " registered)"));
  }
  regions_.emplace(name, RegionEntry{.region = std::move(region), .bytes = bytes});
  region_bytes_ += bytes;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> Session::FindSharedMemory(
    const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("the session has no shared-memory region ", Echo(name)));
  }
  return it->second.region;
}

absl::Status Session::RemoveSharedMemory(const std::string& name) {
  std::shared_ptr<const SharedMemoryRegion> region;  // Released outside the lock.
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("the session has no shared-memory region ", Echo(name)));
  }
  region = std::move(it->second.region);
  region_bytes_ -= it->second.bytes;
  regions_.erase(it);
  return absl::OkStatus();
}

int Session::num_shared_memory_regions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(regions_.size());
}

int64_t Session::CloseAndFree() {
  std::map<std::string, Array> arrays;
  absl::flat_hash_map<uint64_t, PreparedEntry> prepared;
  absl::flat_hash_map<std::string, RegionEntry> regions;
  int64_t freed = 0;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    arrays.swap(arrays_);
    prepared.swap(prepared_);
    prepared_lru_.clear();
    regions.swap(regions_);
    region_bytes_ = 0;
    for (const auto& [name, array] : arrays) freed += array.num_bytes();
    used_bytes_ -= freed;
    GiveToBudgets(freed + metadata_bytes_);
    metadata_bytes_ = 0;
  }
  // Transfers and runs in progress cancel themselves and give back what
  // they hold.
  RunCloseHooks();
  return freed;  // `arrays` and their buffers go here, outside the lock.
}

void Session::Touch(absl::Time now) {
  absl::MutexLock lock(&mu_);
  last_used_ = now;
}

int Session::running_requests() const {
  absl::MutexLock lock(&mu_);
  return running_requests_;
}

Session::RequestScope::~RequestScope() {
  if (session_ == nullptr) return;
  const absl::Time now = session_->clock_ ? session_->clock_() : absl::Now();
  absl::MutexLock lock(&session_->mu_);
  --session_->running_requests_;
  session_->last_used_ = now;
}

absl::Time Session::last_used() const {
  absl::MutexLock lock(&mu_);
  return last_used_;
}

// ---------------------------------------------------------------- registry

SessionRegistry::SessionRegistry(Backend& backend, SessionRegistryOptions options)
    : SessionRegistry(std::make_unique<DeviceSet>(backend), nullptr, std::move(options)) {}

SessionRegistry::SessionRegistry(const DeviceSet& devices, SessionRegistryOptions options)
    : SessionRegistry(nullptr, &devices, std::move(options)) {}

SessionRegistry::SessionRegistry(std::unique_ptr<DeviceSet> own, const DeviceSet* devices,
                                 SessionRegistryOptions options)
    : own_devices_(std::move(own)),
      devices_(devices != nullptr ? *devices : *own_devices_),
      options_([&] {
        if (!options.clock) options.clock = [] { return absl::Now(); };
        return std::move(options);
      }()),
      budget_(options_.max_total_bytes, "server memory exhausted (--max_memory_bytes)",
              /*show_figures=*/!options_.hide_totals) {
  {
    absl::MutexLock lock(&mu_);
    placing_.assign(devices_.size(), 0);
  }
  // With tenants, each keeps a reserve of the server's memory (up to a
  // default session quota), as each keeps a session.
  if (options_.tenant_count) {
    budget_.set_tenant_reserve(options_.tenant_count, options_.default_memory_limit_bytes);
  }
}

absl::StatusOr<std::shared_ptr<Session>> SessionRegistry::Create(const SessionOptions& options) {
  if (options.label.size() > 128) {
    return absl::InvalidArgumentError("session label is longer than 128 characters");
  }
  if (options.memory_limit_bytes < 0 ||
      options.memory_limit_bytes > options_.max_memory_limit_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("session memory limit ",
                                                   options.memory_limit_bytes, " is outside [0, ",
                                                   options_.max_memory_limit_bytes, "] bytes"));
  }
  if (options.idle_ttl < absl::ZeroDuration() || options.idle_ttl > options_.max_idle_ttl) {
    return absl::InvalidArgumentError(
        absl::StrCat("session idle TTL ", absl::FormatDuration(options.idle_ttl),
                     " is outside [0, ", absl::FormatDuration(options_.max_idle_ttl), "]"));
  }
  const int64_t limit = options.memory_limit_bytes == 0 ? options_.default_memory_limit_bytes
                                                        : options.memory_limit_bytes;
  const absl::Duration ttl =
      options.idle_ttl == absl::ZeroDuration() ? options_.default_idle_ttl : options.idle_ttl;

  ExpireIdle();  // Expired sessions must not count against max_sessions.
  absl::StatusOr<int> device = Place(options.device);
  if (!device.ok()) return device.status();
  // No longer being placed once registered, or refused.
  absl::Cleanup placed = [this, index = *device] {
    absl::MutexLock lock(&mu_);
    --placing_[index];
  };
  Backend& backend = devices_.backend(*device);
  absl::StatusOr<std::unique_ptr<Stream>> stream = backend.CreateStream();
  if (!stream.ok()) return stream.status();
  absl::StatusOr<std::unique_ptr<Stream>> priority_stream = backend.CreatePriorityStream(**stream);
  if (!priority_stream.ok()) return priority_stream.status();

  const Tenant* tenant = options.tenant.get();
  const bool named_tenant = tenant != nullptr && !tenant->anonymous();
  const int tenants = named_tenant && options_.tenant_count ? options_.tenant_count() : 0;
  absl::MutexLock lock(&mu_);
  if (named_tenant) {
    const int limit = tenant->limits().max_sessions;
    const int open = sessions_per_tenant_[tenant];
    if (limit > 0 && open >= limit) {
      return MarkRetryable(absl::ResourceExhaustedError(
          absl::StrCat("too many sessions: ", tenant->Describe(), " has ", open,
                       " open, its max_sessions; close one, or retry when one closes or expires")));
    }
    // The last free sessions are kept for the tenants that hold none, so
    // each can always open its first.
    if (open > 0 && tenants > 1) {
      int others_holding = 0;
      for (const auto& [other, count] : sessions_per_tenant_) {
        if (other != tenant && other != nullptr && !other->anonymous() && count > 0) {
          ++others_holding;
        }
      }
      const int others_without = std::max(0, tenants - 1 - others_holding);
      const int free = options_.max_sessions - static_cast<int>(sessions_.size());
      if (others_without > 0 && free <= others_without) {
        return MarkRetryable(absl::ResourceExhaustedError(absl::StrCat(
            "too many sessions: the server keeps its last free sessions for tenants that hold "
            "none (",
            tenant->Describe(), " has ", open,
            " open); close one, or retry when one closes or expires")));
      }
    }
  }
  if (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
    return MarkRetryable(absl::ResourceExhaustedError(
        options_.hide_totals
            ? std::string("too many sessions: the server has as many open as it takes "
                          "(--max_sessions); retry when one closes or expires")
            : absl::StrCat("too many sessions: ", options_.max_sessions,
                           " are open (--max_sessions)")));
  }
  std::string id = NewSessionId();
  auto session =
      std::make_shared<Session>(id, options.label, limit, ttl, std::move(*stream), Now(), &budget_,
                                options_.max_arrays_per_session, options.tenant);
  session->clock_ = options_.clock;
  session->priority_stream_ = *std::move(priority_stream);
  session->backend_ = &backend;
  session->device_index_ = *device;
  session->device_id_ = devices_.id(*device);
  sessions_.emplace(std::move(id), session);
  ++sessions_per_tenant_[tenant];
  return session;
}

Session::RequestScope SessionRegistry::BeginRequest(std::shared_ptr<Session> session) {
  {
    absl::MutexLock lock(&session->mu_);
    ++session->running_requests_;
    session->last_used_ = Now();
  }
  return Session::RequestScope(std::move(session));
}

bool SessionRegistry::IsExpired(const Session& session, absl::Time now) {
  // A session with a request running is in use, not idle.
  return session.running_requests() == 0 && now - session.last_used() > session.idle_ttl();
}

std::shared_ptr<Session> SessionRegistry::EraseLocked(
    absl::flat_hash_map<std::string, std::shared_ptr<Session>>::iterator it) {
  std::shared_ptr<Session> session = std::move(it->second);
  sessions_.erase(it);
  auto count = sessions_per_tenant_.find(session->owner().get());
  if (count != sessions_per_tenant_.end() && --count->second <= 0) {
    sessions_per_tenant_.erase(count);
  }
  return session;
}

absl::StatusOr<std::shared_ptr<Session>> SessionRegistry::Get(const std::string& id,
                                                              const Tenant* tenant) {
  const absl::Time now = Now();
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    // Another tenant's session is not there for this caller: untouched, and
    // refused exactly as an unknown id.
    if (it != sessions_.end() && it->second->owner().get() == tenant) {
      if (IsExpired(*it->second, now)) {
        EraseLocked(it)->CloseAndFree();
        ++expired_total_;
      } else {
        session = it->second;
      }
    }
  }
  if (session == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown or expired session ", Echo(id)));
  }
  session->Touch(now);
  return session;
}

absl::StatusOr<int64_t> SessionRegistry::Close(const std::string& id, const Tenant* tenant) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->owner().get() != tenant) {
      return absl::NotFoundError(absl::StrCat("unknown or expired session ", Echo(id)));
    }
    session = EraseLocked(it);
  }
  return session->CloseAndFree();
}

int SessionRegistry::CloseTenant(const Tenant* tenant) {
  std::vector<std::shared_ptr<Session>> closing;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto next = std::next(it);
      if (it->second->owner().get() == tenant) closing.push_back(EraseLocked(it));
      it = next;
    }
  }
  for (const auto& session : closing) session->CloseAndFree();
  return static_cast<int>(closing.size());
}

int SessionRegistry::ExpireIdle() {
  const absl::Time now = Now();
  std::vector<std::shared_ptr<Session>> expired;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto next = std::next(it);
      if (IsExpired(*it->second, now)) expired.push_back(EraseLocked(it));
      it = next;
    }
    expired_total_ += static_cast<int64_t>(expired.size());
  }
  for (const auto& session : expired) session->CloseAndFree();
  return static_cast<int>(expired.size());
}

void SessionRegistry::CloseAll() {
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
    sessions_per_tenant_.clear();
  }
  for (auto& [id, session] : sessions) session->CloseAndFree();
}

std::shared_ptr<Session> SessionRegistry::Peek(const std::string& id, const Tenant* tenant) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() || it->second->owner().get() != tenant ? nullptr : it->second;
}

int SessionRegistry::sessions_of(const Tenant* tenant) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_per_tenant_.find(tenant);
  return it == sessions_per_tenant_.end() ? 0 : it->second;
}

absl::StatusOr<int> SessionRegistry::Place(const std::optional<int>& device_id) {
  int index = -1;
  if (device_id.has_value()) {
    index = devices_.IndexOf(*device_id);
    if (index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", *device_id, " does not exist: this server has ", devices_.size(),
                       " device(s) (ServerInfo.devices lists them)"));
    }
    if (!devices_.backend(index).healthy()) {
      return absl::UnavailableError(
          absl::StrCat(devices_.Describe(index),
                       " is unhealthy (a sticky device error); ask for another "
                       "device, or for none"));
    }
  } else {
    const std::vector<DeviceLoad> loads = device_loads();
    for (int i = 0; i < devices_.size(); ++i) {
      if (!devices_.backend(i).healthy()) continue;
      if (index < 0 || loads[i].sessions < loads[index].sessions ||
          (loads[i].sessions == loads[index].sessions && loads[i].bytes < loads[index].bytes)) {
        index = i;
      }
    }
    if (index < 0) {
      return absl::UnavailableError(
          devices_.size() == 1
              ? absl::StrCat("the ", devices_.backend(0).name(), " backend is unhealthy")
              : absl::StrCat("every device of this server is unhealthy (", devices_.size(),
                             " devices)"));
    }
  }
  absl::MutexLock lock(&mu_);
  ++placing_[index];
  return index;
}

std::vector<SessionRegistry::DeviceLoad> SessionRegistry::device_loads() const {
  std::vector<std::shared_ptr<Session>> sessions;
  std::vector<DeviceLoad> loads(devices_.size());
  {
    absl::MutexLock lock(&mu_);
    sessions.reserve(sessions_.size());
    for (const auto& [id, session] : sessions_) sessions.push_back(session);
    for (int i = 0; i < devices_.size(); ++i) loads[i].sessions = placing_[i];
  }
  for (const auto& session : sessions) {
    DeviceLoad& load = loads[session->device_index()];
    ++load.sessions;
    load.bytes += session->memory_used_bytes() + session->metadata_bytes();
  }
  return loads;
}

SessionRegistry::Totals SessionRegistry::totals() const {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.reserve(sessions_.size());
    for (const auto& [id, session] : sessions_) sessions.push_back(session);
  }
  Totals totals;
  totals.sessions = static_cast<int>(sessions.size());
  for (const auto& session : sessions) {
    totals.arrays += session->num_arrays();
    totals.bytes += session->memory_used_bytes();
  }
  return totals;
}

int SessionRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sessions_.size());
}

int64_t SessionRegistry::expired_total() const {
  absl::MutexLock lock(&mu_);
  return expired_total_;
}

std::string NewSessionId() {
  std::array<unsigned char, 16> bytes{};
  size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t n = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (n > 0) {
      filled += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      // getrandom only fails on ancient kernels; there is no safe fallback
      // for an unguessable id, so refuse to run rather than hand out weak ids.
      std::abort();
    }
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace gpuflow::server
