// gRPC server reflection (grpc.reflection.v1alpha, what grpcurl speaks),
// served by gpuflowd itself so that on a server with tenants it asks for a
// token like every other call (grpc++_reflection's service cannot).
//
//   ReflectionService reflection(auth, {"gpuflow.v1.GpuFlow", "grpc.health.v1.Health"});
//   builder.RegisterService(&reflection);
//
// It describes the services named and every protobuf file compiled into
// the server (the generated descriptor pool): the API's schema, nothing of
// any tenant's data. Thread-safe.
#ifndef GPUFLOW_SERVER_REFLECTION_SERVICE_H_
#define GPUFLOW_SERVER_REFLECTION_SERVICE_H_

#include <string>
#include <vector>

#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/call_auth.h"

namespace gpuflow::server {

class ReflectionService final
    : public grpc::reflection::v1alpha::ServerReflection::CallbackService {
 public:
  // `auth` must outlive the service. `services` are listed, with this one.
  ReflectionService(const CallAuthenticator& auth, std::vector<std::string> services);

  grpc::ServerBidiReactor<grpc::reflection::v1alpha::ServerReflectionRequest,
                          grpc::reflection::v1alpha::ServerReflectionResponse>*
  ServerReflectionInfo(grpc::CallbackServerContext* context) override;

  // The answer to one request (exposed for tests).
  grpc::reflection::v1alpha::ServerReflectionResponse Answer(
      const grpc::reflection::v1alpha::ServerReflectionRequest& request) const;

 private:
  class Reactor;
  const CallAuthenticator& auth_;
  const std::vector<std::string> services_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_REFLECTION_SERVICE_H_
