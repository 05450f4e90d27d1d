#include "server/reflection_service.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.pb.h"
#include "gpuflow/v1/service.pb.h"
#include "gtest/gtest.h"

namespace gpuflow::server {
namespace {

using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsSupersetOf;

class ReflectionServiceTest : public ::testing::Test {
 protected:
  ReflectionServiceTest() {
    // Links the v1 descriptors into this binary, as gpuflowd has them.
    (void)v1::ServerInfo::descriptor();
  }

  static std::vector<std::string> FileNames(const ServerReflectionResponse& response) {
    std::vector<std::string> names;
    for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
      google::protobuf::FileDescriptorProto file;
      EXPECT_TRUE(file.ParseFromString(bytes));
      names.push_back(file.name());
    }
    return names;
  }

  CallAuthenticator auth_{nullptr, std::make_shared<Tenant>("", TenantLimits{})};
  ReflectionService service_{auth_, {"gpuflow.v1.GpuFlow", "grpc.health.v1.Health"}};
};

TEST_F(ReflectionServiceTest, ListsTheServicesAndItself) {
  ServerReflectionRequest request;
  request.set_list_services("");
  const ServerReflectionResponse response = service_.Answer(request);
  std::vector<std::string> names;
  for (const auto& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names, ElementsAre("gpuflow.v1.GpuFlow", "grpc.health.v1.Health",
                                 "grpc.reflection.v1alpha.ServerReflection"));
  EXPECT_EQ(response.original_request().list_services(), "");
}

TEST_F(ReflectionServiceTest, FileBySymbolComesWithEveryImportOnce) {
  for (const char* symbol :
       {"gpuflow.v1.GpuFlow", "gpuflow.v1.GpuFlow.Execute", "gpuflow.v1.ServerInfo"}) {
    ServerReflectionRequest request;
    request.set_file_containing_symbol(symbol);
    const std::vector<std::string> names = FileNames(service_.Answer(request));
    EXPECT_EQ(names.front(), "gpuflow/v1/service.proto") << symbol;
    EXPECT_THAT(names, IsSupersetOf({"gpuflow/v1/graph.proto", "gpuflow/v1/types.proto",
                                     "google/protobuf/duration.proto"}));
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  }
  ServerReflectionRequest by_name;
  by_name.set_file_by_filename("gpuflow/v1/types.proto");
  EXPECT_THAT(FileNames(service_.Answer(by_name)), Contains("gpuflow/v1/types.proto"));
}

TEST_F(ReflectionServiceTest, UnknownNamesAreNotFound) {
  ServerReflectionRequest request;
  request.set_file_containing_symbol("gpuflow.v1.Nope");
  EXPECT_EQ(service_.Answer(request).error_response().error_code(),
            static_cast<int>(grpc::StatusCode::NOT_FOUND));
  request.set_file_by_filename("nope.proto");
  EXPECT_EQ(service_.Answer(request).error_response().error_code(),
            static_cast<int>(grpc::StatusCode::NOT_FOUND));
  request.mutable_file_containing_extension()->set_containing_type("gpuflow.v1.ServerInfo");
  request.mutable_file_containing_extension()->set_extension_number(1000);
  EXPECT_EQ(service_.Answer(request).error_response().error_code(),
            static_cast<int>(grpc::StatusCode::NOT_FOUND));
  request.set_all_extension_numbers_of_type("gpuflow.v1.ServerInfo");
  EXPECT_EQ(service_.Answer(request).all_extension_numbers_response().base_type_name(),
            "gpuflow.v1.ServerInfo");
  EXPECT_EQ(service_.Answer(ServerReflectionRequest()).error_response().error_code(),
            static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
}

// The service over gRPC, on a server with a tokens file.
TEST(ReflectionServiceAuthTest, AsksForATokenWhenTheServerHasTenants) {
  const std::string path =
      ::testing::TempDir() + "reflection_service_test_" + std::to_string(getpid()) + ".json";
  {
    std::ofstream file(path);
    // sha256("token")
    file << R"({"tenants": [{"name": "a", "token_sha256": )"
         << R"("3c469e9d6c5875d37a43f353d4f88e61fcf812c66eee3457465a40b0da4153e0"}]})";
  }
  absl::StatusOr<std::unique_ptr<TenantDirectory>> tenants = TenantDirectory::Load(path, {});
  std::remove(path.c_str());
  ASSERT_TRUE(tenants.ok()) << tenants.status();
  CallAuthenticator auth(tenants->get(), std::make_shared<Tenant>("", TenantLimits{}));
  ReflectionService service(auth, {"gpuflow.v1.GpuFlow"});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));

  auto list = [&](const std::string& authorization, ServerReflectionResponse* response) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    auto stream = stub->ServerReflectionInfo(&context);
    ServerReflectionRequest request;
    request.set_list_services("");
    stream->Write(request);
    stream->WritesDone();
    while (stream->Read(response)) {
    }
    return stream->Finish();
  };
  ServerReflectionResponse response;
  EXPECT_EQ(list("", &response).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list("Bearer wrong", &response).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  const grpc::Status ok = list("Bearer token", &response);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(response.list_services_response().service(0).name(), "gpuflow.v1.GpuFlow");
  server->Shutdown();
}

}  // namespace
}  // namespace gpuflow::server
