#include "server/reflection_service.h"

#include <set>
#include <utility>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "server/grpc_status.h"

namespace gpuflow::server {

namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;
using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;

void SetError(ServerReflectionResponse* response, grpc::StatusCode code,
              const std::string& message) {
  response->mutable_error_response()->set_error_code(static_cast<int>(code));
  response->mutable_error_response()->set_error_message(message);
}

// `file` and every file it imports, transitively, each once.
void AddFileWithImports(const FileDescriptor* file, std::set<std::string>* sent,
                        ServerReflectionResponse* response) {
  if (!sent->insert(file->name()).second) return;
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  response->mutable_file_descriptor_response()->add_file_descriptor_proto(
      proto.SerializeAsString());
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddFileWithImports(file->dependency(i), sent, response);
  }
}

}  // namespace

class ReflectionService::Reactor final
    : public grpc::ServerBidiReactor<ServerReflectionRequest, ServerReflectionResponse> {
 public:
  Reactor(const ReflectionService& service, grpc::CallbackServerContext* context)
      : service_(service) {
    if (service.auth_.Authenticate(*context).tenant == nullptr) {
      Finish(ToGrpcStatus(CallAuthenticator::Refusal()));
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);  // the client is done asking
      return;
    }
    response_ = service_.Answer(request_);
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the reflection client went away"));
      return;
    }
    StartRead(&request_);
  }

  void OnDone() override { delete this; }

 private:
  const ReflectionService& service_;
  ServerReflectionRequest request_;
  ServerReflectionResponse response_;
};

ReflectionService::ReflectionService(const CallAuthenticator& auth,
                                     std::vector<std::string> services)
    : auth_(auth), services_([&] {
        services.push_back(grpc::reflection::v1alpha::ServerReflection::service_full_name());
        return std::move(services);
      }()) {}

grpc::ServerBidiReactor<ServerReflectionRequest, ServerReflectionResponse>*
ReflectionService::ServerReflectionInfo(grpc::CallbackServerContext* context) {
  return new Reactor(*this, context);
}

ServerReflectionResponse ReflectionService::Answer(const ServerReflectionRequest& request) const {
  ServerReflectionResponse response;
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  std::set<std::string> sent;
  switch (request.message_request_case()) {
    case ServerReflectionRequest::kListServices:
      for (const std::string& name : services_) {
        response.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case ServerReflectionRequest::kFileByFilename: {
      const FileDescriptor* file = pool->FindFileByName(request.file_by_filename());
      if (file == nullptr) {
        SetError(&response, grpc::StatusCode::NOT_FOUND, "file not found");
      } else {
        AddFileWithImports(file, &sent, &response);
      }
      break;
    }
    case ServerReflectionRequest::kFileContainingSymbol: {
      const FileDescriptor* file = pool->FindFileContainingSymbol(request.file_containing_symbol());
      if (file == nullptr) {
        SetError(&response, grpc::StatusCode::NOT_FOUND, "symbol not found");
      } else {
        AddFileWithImports(file, &sent, &response);
      }
      break;
    }
    case ServerReflectionRequest::kFileContainingExtension: {
      const auto& wanted = request.file_containing_extension();
      const google::protobuf::Descriptor* type =
          pool->FindMessageTypeByName(wanted.containing_type());
      const google::protobuf::FieldDescriptor* extension =
          type == nullptr ? nullptr : pool->FindExtensionByNumber(type, wanted.extension_number());
      if (extension == nullptr) {
        SetError(&response, grpc::StatusCode::NOT_FOUND,
                 type == nullptr ? "type not found" : "extension not found");
      } else {
        AddFileWithImports(extension->file(), &sent, &response);
      }
      break;
    }
    case ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const google::protobuf::Descriptor* type =
          pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) {
        SetError(&response, grpc::StatusCode::NOT_FOUND, "type not found");
        break;
      }
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      auto* numbers = response.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(type->full_name());
      for (const auto* extension : extensions) numbers->add_extension_number(extension->number());
      break;
    }
    case ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      SetError(&response, grpc::StatusCode::INVALID_ARGUMENT, "the request asks for nothing");
      break;
  }
  return response;
}

}  // namespace gpuflow::server
