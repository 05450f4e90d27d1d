// Who a gRPC call comes from: the tenant whose token its `authorization`
// metadata carries (--auth_tokens_file), or, on a server without tenants,
// the one anonymous tenant every caller shares.
//
//   CallAuthenticator auth(tenants.get(), anonymous);   // tenants may be null
//   AuthResult who = auth.Authenticate(*context);
//   if (who.tenant == nullptr) return CallAuthenticator::Refusal();
//
// Shared by the GpuFlow service and reflection; gRPC health does not ask.
// Thread-safe.
#ifndef GPUFLOW_SERVER_CALL_AUTH_H_
#define GPUFLOW_SERVER_CALL_AUTH_H_

#include <grpcpp/server_context.h>

#include <memory>

#include "absl/status/status.h"
#include "server/tenants.h"

namespace gpuflow::server {

class CallAuthenticator {
 public:
  // `tenants` null: no auth, every call is `anonymous`'s. Both must outlive
  // the authenticator.
  CallAuthenticator(const TenantDirectory* tenants, std::shared_ptr<Tenant> anonymous)
      : tenants_(tenants), anonymous_(std::move(anonymous)) {}

  bool enabled() const { return tenants_ != nullptr; }
  AuthResult Authenticate(const grpc::ServerContextBase& context) const;

  // What every refused caller is told, whatever the reason: UNAUTHENTICATED
  // and how to authenticate, nothing about what was wrong.
  static absl::Status Refusal();

 private:
  const TenantDirectory* const tenants_;
  const std::shared_ptr<Tenant> anonymous_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_CALL_AUTH_H_
