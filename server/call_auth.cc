#include "server/call_auth.h"

#include <vector>

namespace gpuflow::server {

AuthResult CallAuthenticator::Authenticate(const grpc::ServerContextBase& context) const {
  if (tenants_ == nullptr) return {anonymous_, AuthFailure::kNone};
  std::vector<absl::string_view> values;
  const auto range = context.client_metadata().equal_range("authorization");
  for (auto it = range.first; it != range.second; ++it) {
    values.emplace_back(it->second.data(), it->second.size());
  }
  return tenants_->Authenticate(values);
}

absl::Status CallAuthenticator::Refusal() {
  return absl::UnauthenticatedError(
      "this server requires a bearer token: send the metadata 'authorization: Bearer <token>'");
}

}  // namespace gpuflow::server
