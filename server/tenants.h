// Tenants: who may call the server (--auth_tokens_file) and how much each
// may use. A tenant is named in the file with the SHA-256 of its bearer
// token and its limits; a caller presents `authorization: Bearer <token>`.
//
//   absl::StatusOr<std::unique_ptr<TenantDirectory>> tenants =
//       TenantDirectory::Load("/etc/gpuflow/tokens.json", defaults);
//   AuthResult who = (*tenants)->Authenticate(authorization_values);
//   if (who.tenant == nullptr) ... UNAUTHENTICATED, saying nothing of why
//   absl::StatusOr<Tenant::RequestSlot> slot = who.tenant->BeginRequest();
//   ...
//   TenantDirectory::Reload r = (*tenants)->ReloadIfChanged();   // every second
//
// The file (docs/security.md):
//   {"tenants": [{"name": "team-a", "token_sha256": "<64 hex digits>",
//                 "max_sessions": 8, "max_memory_bytes": 68719476736,
//                 "max_concurrent_requests": 16, "allow_raw_kernels": false,
//                 "allow_custom_kernels": false}]}
// Every limit is optional and defaults to the server's (the flags').
//
// Tokens: only their SHA-256 is kept; a presented token's digest is
// compared with every tenant's in constant time, all of them every time, so
// neither the answer nor its timing says which tenant came close. Nothing
// here logs or returns a token or a digest.
//
// Without --auth_tokens_file every caller is one anonymous tenant (name "")
// with the server's limits: the server behaves as it did before tenants.
//
// Thread-safety: Tenant and TenantDirectory may be used from any thread. A
// Tenant outlives a reload that keeps its name (its usage carries over and
// its limits change in place); one dropped from the file is revoked.
#ifndef GPUFLOW_SERVER_TENANTS_H_
#define GPUFLOW_SERVER_TENANTS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/memory_budget.h"
#include "server/reloadable_file.h"

namespace gpuflow::server {

// What one tenant may use. 0 (or less): no bound of the tenant's own (the
// server-wide limits still hold).
struct TenantLimits {
  // Sessions open at once.
  int max_sessions = 0;
  // Bytes all its sessions together may hold (the same accounting as
  // --max_memory_bytes).
  int64_t max_memory_bytes = 0;
  // Calls in flight at once (any GpuFlow RPC, from arrival to its end).
  int max_concurrent_requests = 0;
  // raw_kernel nodes (the server's --allow_raw_kernels must be on too).
  bool allow_raw_kernels = false;
  // elementwise_kernel and reduction_kernel nodes: their operation,
  // preamble and other code is compiled as given, so it can reach any device
  // memory of the server too.
  bool allow_custom_kernels = false;
};

class Tenant {
 public:
  // `name` empty: the anonymous tenant of a server without auth.
  Tenant(std::string name, TenantLimits limits);
  Tenant(const Tenant&) = delete;
  Tenant& operator=(const Tenant&) = delete;

  const std::string& name() const { return name_; }
  bool anonymous() const { return name_.empty(); }
  TenantLimits limits() const;
  // A reload: new limits apply to new requests, sessions and bytes; what is
  // held already stays.
  void set_limits(const TenantLimits& limits);

  // Bytes held by the tenant's sessions (limit: max_memory_bytes).
  MemoryBudget& memory() { return memory_; }
  const MemoryBudget& memory() const { return memory_; }

  // One call in flight; ends when destroyed. Move-only.
  class RequestSlot {
   public:
    RequestSlot() = default;
    RequestSlot(RequestSlot&& other) noexcept : tenant_(std::exchange(other.tenant_, nullptr)) {}
    RequestSlot& operator=(RequestSlot&& other) noexcept;
    RequestSlot(const RequestSlot&) = delete;
    RequestSlot& operator=(const RequestSlot&) = delete;
    ~RequestSlot() { Release(); }
    void Release();

   private:
    friend class Tenant;
    explicit RequestSlot(Tenant* tenant) : tenant_(tenant) {}
    Tenant* tenant_ = nullptr;
  };
  // RESOURCE_EXHAUSTED (retryable) when max_concurrent_requests are in
  // flight. The tenant must outlive the slot.
  absl::StatusOr<RequestSlot> BeginRequest();
  int requests_in_flight() const;

  // "tenant team-a", or "the server" for the anonymous tenant: who, in
  // refusals.
  std::string Describe() const;

 private:
  const std::string name_;
  mutable absl::Mutex mu_;
  TenantLimits limits_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  MemoryBudget memory_;
};

// Why a caller was refused, for the server's log only: the caller is told
// nothing but UNAUTHENTICATED.
enum class AuthFailure {
  kNone,
  // No authorization metadata.
  kMissing,
  // Not one "Bearer <token>" value.
  kMalformed,
  // A token no tenant has.
  kUnknownToken,
};
// "missing", "malformed", "unknown token" ("" for kNone).
absl::string_view AuthFailureName(AuthFailure failure);

struct AuthResult {
  // Null when refused.
  std::shared_ptr<Tenant> tenant = nullptr;
  AuthFailure failure = AuthFailure::kNone;
};

// One entry of the tokens file.
struct TenantEntry {
  std::string name;
  std::array<uint8_t, 32> token_sha256{};
  TenantLimits limits;
};

// Parses a tokens file's contents; omitted limits take `defaults`' values.
// INVALID_ARGUMENT naming the entry and the field at fault (never quoting a
// digest): JSON that does not parse, an unknown field, no tenants, a name
// outside [A-Za-z0-9_.-]{1,64} or used twice, a token_sha256 that is not 64
// hex digits or is shared by two tenants, a limit below 1.
absl::StatusOr<std::vector<TenantEntry>> ParseTenantsFile(absl::string_view contents,
                                                          const TenantLimits& defaults);

// SHA-256 of `data`; nullopt only when OpenSSL cannot allocate.
std::optional<std::array<uint8_t, 32>> Sha256(absl::string_view data);

// With several tenants, one line for each tenant whose own max_memory_bytes
// does not keep it below the server's: that tenant alone could take all of
// it but the other tenants' reserves (MemoryBudget::set_tenant_reserve), so
// the others could use little. For the log, at start and on reload.
// (Sessions need no warning: the registry keeps the last free ones for
// tenants that hold none, SessionRegistryOptions::tenant_count.)
std::vector<std::string> LockoutWarnings(const std::vector<std::shared_ptr<Tenant>>& tenants,
                                         int64_t server_max_memory_bytes);

class TenantDirectory {
 public:
  // Reads and parses `path` (at most 1 MiB). Errors name the file.
  static absl::StatusOr<std::unique_ptr<TenantDirectory>> Load(std::string path,
                                                               TenantLimits defaults);
  TenantDirectory(const TenantDirectory&) = delete;
  TenantDirectory& operator=(const TenantDirectory&) = delete;

  // The tenant whose token `authorization` (every value of the call's
  // `authorization` metadata) carries: exactly one value, "Bearer <token>"
  // (the scheme in any case).
  AuthResult Authenticate(absl::Span<const absl::string_view> authorization) const;

  // What a reload did.
  struct Reload {
    // Something to report (false: nothing else is set).
    bool changed = false;
    // Not OK: the new contents are not valid; the tenants in force stay as
    // they were. The message names the file and the fault, never a secret.
    absl::Status status;
    std::vector<std::string> added;
    std::vector<std::string> updated;
    // Tenants no longer in the file: their tokens no longer authenticate;
    // the caller closes their sessions.
    std::vector<std::shared_ptr<Tenant>> removed;
  };
  // Reads the file again and, when its contents changed and are valid, puts
  // them in force: tenants keep their usage by name, limits change in place,
  // new tokens work and old ones stop at once. Contents that are not valid
  // (or a file that cannot be read) change nothing; they are reported once
  // they have stayed the same for two calls in a row, so a file caught
  // halfway through being written is not reported.
  Reload ReloadIfChanged();

  // The tenants in force, by name.
  std::vector<std::shared_ptr<Tenant>> tenants() const;
  // How many tenants there are now (cheap: no copy).
  int size() const;
  const std::string& path() const { return path_; }

 private:
  struct Credential {
    std::array<uint8_t, 32> token_sha256;
    std::shared_ptr<Tenant> tenant;
  };
  TenantDirectory(std::string path, TenantLimits defaults, std::string contents)
      : path_(std::move(path)), defaults_(defaults), tracker_(std::move(contents)) {}
  // Puts `entries` in force; fills what changed.
  void Apply(std::vector<TenantEntry> entries, Reload* reload) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const TenantLimits defaults_;
  mutable absl::Mutex mu_;
  // The file's contents in force, and which bad ones to report.
  ReloadTracker tracker_ ABSL_GUARDED_BY(mu_);
  std::vector<Credential> credentials_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_TENANTS_H_
