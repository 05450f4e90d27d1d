#include "server/tenants.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "server/reloadable_file.h"
#include "server/retry_hint.h"
#include "server/tenants_file.pb.h"

namespace gpuflow::server {

namespace {

bool ValidTenantName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

// 64 hex digits -> 32 bytes.
bool ParseDigest(absl::string_view hex, std::array<uint8_t, 32>* digest) {
  if (hex.size() != 64) return false;
  if (!std::all_of(hex.begin(), hex.end(),
                   [](char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); })) {
    return false;
  }
  const std::string bytes = absl::HexStringToBytes(hex);
  std::copy(bytes.begin(), bytes.end(), digest->begin());
  return true;
}

}  // namespace

// ---------------------------------------------------------------- Tenant

Tenant::Tenant(std::string name, TenantLimits limits)
    : name_(std::move(name)),
      limits_(limits),
      memory_(limits.max_memory_bytes,
              name_.empty()
                  ? std::string("memory exhausted")
                  : absl::StrCat("tenant ", name_, " memory exhausted (its max_memory_bytes)")) {}

TenantLimits Tenant::limits() const {
  absl::MutexLock lock(&mu_);
  return limits_;
}

void Tenant::set_limits(const TenantLimits& limits) {
  {
    absl::MutexLock lock(&mu_);
    limits_ = limits;
  }
  memory_.set_limit(limits.max_memory_bytes);
}

std::string Tenant::Describe() const {
  return anonymous() ? std::string("the server") : absl::StrCat("tenant ", name_);
}

absl::StatusOr<Tenant::RequestSlot> Tenant::BeginRequest() {
  absl::MutexLock lock(&mu_);
  const int limit = limits_.max_concurrent_requests;
  if (limit > 0 && in_flight_ >= limit) {
    return MarkRetryable(absl::ResourceExhaustedError(
        absl::StrCat(Describe(), " has ", in_flight_, " requests in flight, ",
                     anonymous() ? "the most it takes (--max_concurrent_requests)"
                                 : "its max_concurrent_requests",
                     "; retry when one has finished")));
  }
  ++in_flight_;
  return RequestSlot(this);
}

int Tenant::requests_in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

Tenant::RequestSlot& Tenant::RequestSlot::operator=(RequestSlot&& other) noexcept {
  if (this != &other) {
    Release();
    tenant_ = std::exchange(other.tenant_, nullptr);
  }
  return *this;
}

void Tenant::RequestSlot::Release() {
  if (tenant_ == nullptr) return;
  absl::MutexLock lock(&tenant_->mu_);
  --tenant_->in_flight_;
  tenant_ = nullptr;
}

// ---------------------------------------------------------------- parsing

absl::string_view AuthFailureName(AuthFailure failure) {
  switch (failure) {
    case AuthFailure::kNone:
      return "";
    case AuthFailure::kMissing:
      return "missing";
    case AuthFailure::kMalformed:
      return "malformed";
    case AuthFailure::kUnknownToken:
      return "unknown token";
  }
  return "";
}

std::optional<std::array<uint8_t, 32>> Sha256(absl::string_view data) {
  std::array<uint8_t, 32> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    return std::nullopt;  // OpenSSL could not allocate
  }
  return digest;
}

absl::StatusOr<std::vector<TenantEntry>> ParseTenantsFile(absl::string_view contents,
                                                          const TenantLimits& defaults) {
  TenantsFile file;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(contents.data(), contents.size()), &file, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a tokens file ({\"tenants\": [{\"name\": ..., \"token_sha256\": ...}]}): ",
        parsed.message().ToString()));
  }
  if (file.tenants_size() == 0) {
    return absl::InvalidArgumentError("lists no tenants, so every call would be refused");
  }
  std::vector<TenantEntry> entries;
  absl::flat_hash_set<std::string> names;
  absl::flat_hash_set<std::string> digests;
  for (int i = 0; i < file.tenants_size(); ++i) {
    const TenantsFileEntry& in = file.tenants(i);
    const std::string where = absl::StrCat("tenants[", i, "]");
    if (!ValidTenantName(in.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": name must be 1 to 64 of [A-Za-z0-9_.-]"));
    }
    const std::string who = absl::StrCat(where, " (", in.name(), ")");
    if (!names.insert(in.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": the name is used twice"));
    }
    TenantEntry entry;
    entry.name = in.name();
    if (!ParseDigest(in.token_sha256(), &entry.token_sha256)) {
      return absl::InvalidArgumentError(absl::StrCat(
          who,
          ": token_sha256 must be 64 hex digits, the SHA-256 of the token (printf %s \"$TOKEN\" "
          "| sha256sum)"));
    }
    const std::string digest(entry.token_sha256.begin(), entry.token_sha256.end());
    if (!digests.insert(digest).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": the same token_sha256 as another tenant; each needs its own token"));
    }
    auto at_least_one = [&](absl::string_view field) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": ", field, " must be at least 1 (leave it out for the server's)"));
    };
    entry.limits = defaults;
    if (in.has_max_sessions()) {
      if (in.max_sessions() < 1) return at_least_one("max_sessions");
      entry.limits.max_sessions = in.max_sessions();
    }
    if (in.has_max_memory_bytes()) {
      if (in.max_memory_bytes() < 1) return at_least_one("max_memory_bytes");
      entry.limits.max_memory_bytes = in.max_memory_bytes();
    }
    if (in.has_max_concurrent_requests()) {
      if (in.max_concurrent_requests() < 1) return at_least_one("max_concurrent_requests");
      entry.limits.max_concurrent_requests = in.max_concurrent_requests();
    }
    if (in.has_allow_raw_kernels()) entry.limits.allow_raw_kernels = in.allow_raw_kernels();
    if (in.has_allow_custom_kernels()) {
      entry.limits.allow_custom_kernels = in.allow_custom_kernels();
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::vector<std::string> LockoutWarnings(const std::vector<std::shared_ptr<Tenant>>& tenants,
                                         int64_t server_max_memory_bytes) {
  std::vector<std::string> warnings;
  if (tenants.size() < 2) return warnings;
  for (const std::shared_ptr<Tenant>& tenant : tenants) {
    const TenantLimits limits = tenant->limits();
    if (server_max_memory_bytes > 0 &&
        (limits.max_memory_bytes <= 0 || limits.max_memory_bytes >= server_max_memory_bytes)) {
      warnings.push_back(
          absl::StrCat("tenant ", tenant->name(), " may take all ", server_max_memory_bytes,
                       " bytes of --max_memory_bytes but the other tenants' reserves (each the "
                       "smaller of the default session quota and an equal share): give it a "
                       "max_memory_bytes below that in --auth_tokens_file to share more evenly"));
    }
  }
  return warnings;
}

// ---------------------------------------------------------------- directory

absl::StatusOr<std::unique_ptr<TenantDirectory>> TenantDirectory::Load(std::string path,
                                                                       TenantLimits defaults) {
  absl::StatusOr<std::string> contents = ReadSmallFile("auth_tokens_file", path);
  if (!contents.ok()) return contents.status();
  absl::StatusOr<std::vector<TenantEntry>> entries = ParseTenantsFile(*contents, defaults);
  if (!entries.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_tokens_file=", path, ": ", entries.status().message()));
  }
  auto directory = std::unique_ptr<TenantDirectory>(
      new TenantDirectory(std::move(path), defaults, *std::move(contents)));
  absl::MutexLock lock(&directory->mu_);
  Reload ignored;
  directory->Apply(*std::move(entries), &ignored);
  return directory;
}

AuthResult TenantDirectory::Authenticate(absl::Span<const absl::string_view> authorization) const {
  if (authorization.empty()) return {nullptr, AuthFailure::kMissing};
  if (authorization.size() != 1) return {nullptr, AuthFailure::kMalformed};
  absl::string_view value = absl::StripAsciiWhitespace(authorization[0]);
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return {nullptr, AuthFailure::kMalformed};
  }
  const absl::string_view token = absl::StripLeadingAsciiWhitespace(value.substr(kScheme.size()));
  if (token.empty()) return {nullptr, AuthFailure::kMalformed};
  const std::optional<std::array<uint8_t, 32>> digest = Sha256(token);
  if (!digest.has_value()) return {nullptr, AuthFailure::kUnknownToken};
  std::shared_ptr<Tenant> found;
  absl::ReaderMutexLock lock(&mu_);
  // Every credential is compared, each in constant time: no early exit.
  for (const Credential& credential : credentials_) {
    const bool match =
        CRYPTO_memcmp(credential.token_sha256.data(), digest->data(), digest->size()) == 0;
    if (match) found = credential.tenant;
  }
  if (found == nullptr) return {nullptr, AuthFailure::kUnknownToken};
  return {std::move(found), AuthFailure::kNone};
}

TenantDirectory::Reload TenantDirectory::ReloadIfChanged() {
  Reload reload;
  absl::StatusOr<std::string> contents = ReadSmallFile("auth_tokens_file", path_);
  // What the file holds now, or why it cannot be read.
  const std::string seen = contents.ok() ? *contents : UnreadableFingerprint(contents.status());
  absl::MutexLock lock(&mu_);
  if (tracker_.InForce(seen)) return reload;
  absl::Status status = contents.status();
  absl::StatusOr<std::vector<TenantEntry>> entries;
  if (status.ok()) {
    entries = ParseTenantsFile(*contents, defaults_);
    if (!entries.ok()) {
      status = absl::InvalidArgumentError(
          absl::StrCat("--auth_tokens_file=", path_, ": ", entries.status().message()));
    }
  }
  if (status.ok()) {
    tracker_.Applied(seen);
    reload.changed = true;
    Apply(*std::move(entries), &reload);
  } else if (tracker_.ShouldReport(seen)) {
    reload.changed = true;
    reload.status = status;
  }
  return reload;
}

void TenantDirectory::Apply(std::vector<TenantEntry> entries, Reload* reload) {
  absl::flat_hash_map<std::string, Credential> old;
  for (Credential& credential : credentials_) {
    std::string name = credential.tenant->name();
    old.emplace(std::move(name), std::move(credential));
  }
  std::vector<Credential> credentials;
  credentials.reserve(entries.size());
  for (TenantEntry& entry : entries) {
    std::shared_ptr<Tenant> tenant;
    if (auto it = old.find(entry.name); it != old.end()) {
      tenant = std::move(it->second.tenant);
      const TenantLimits before = tenant->limits();
      const TenantLimits& after = entry.limits;
      if (it->second.token_sha256 != entry.token_sha256 ||
          before.max_sessions != after.max_sessions ||
          before.max_memory_bytes != after.max_memory_bytes ||
          before.max_concurrent_requests != after.max_concurrent_requests ||
          before.allow_raw_kernels != after.allow_raw_kernels ||
          before.allow_custom_kernels != after.allow_custom_kernels) {
        reload->updated.push_back(entry.name);
      }
      tenant->set_limits(entry.limits);
      old.erase(it);
    } else {
      tenant = std::make_shared<Tenant>(entry.name, entry.limits);
      reload->added.push_back(entry.name);
    }
    credentials.push_back({entry.token_sha256, std::move(tenant)});
  }
  for (auto& [name, credential] : old) reload->removed.push_back(std::move(credential.tenant));
  std::sort(reload->removed.begin(), reload->removed.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  credentials_ = std::move(credentials);
}

int TenantDirectory::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return static_cast<int>(credentials_.size());
}

std::vector<std::shared_ptr<Tenant>> TenantDirectory::tenants() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::shared_ptr<Tenant>> out;
  out.reserve(credentials_.size());
  for (const Credential& credential : credentials_) out.push_back(credential.tenant);
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return out;
}

}  // namespace gpuflow::server
