#include "pkg/server/reflection.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/support/status.h>

#include <set>

#include "absl/strings/str_cat.h"

namespace lustre_csi::server {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;
using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;

namespace {

// `file` and, before it, everything it imports (each file once).
void AddWithDependencies(const FileDescriptor* file, std::set<std::string>& seen,
                         ServerReflectionResponse& response) {
  if (!seen.insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddWithDependencies(file->dependency(i), seen, response);
  }
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(response.mutable_file_descriptor_response()->add_file_descriptor_proto());
}

void Fail(ServerReflectionResponse& response, grpc::StatusCode code, std::string message) {
  response.mutable_error_response()->set_error_code(code);
  response.mutable_error_response()->set_error_message(std::move(message));
}

}  // namespace

ReflectionIndex::ReflectionIndex(std::vector<std::string> services)
    : services_(std::move(services)) {}

ServerReflectionResponse ReflectionIndex::Answer(const ServerReflectionRequest& request) const {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  ServerReflectionResponse response;
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  std::set<std::string> seen;
  switch (request.message_request_case()) {
    case ServerReflectionRequest::kListServices:
      for (const std::string& name : services_) {
        response.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case ServerReflectionRequest::kFileByFilename:
      if (const FileDescriptor* file = pool->FindFileByName(request.file_by_filename())) {
        AddWithDependencies(file, seen, response);
      } else {
        Fail(response, grpc::StatusCode::NOT_FOUND,
             absl::StrCat("no file ", request.file_by_filename()));
      }
      break;
    case ServerReflectionRequest::kFileContainingSymbol:
      if (const FileDescriptor* file =
              pool->FindFileContainingSymbol(request.file_containing_symbol())) {
        AddWithDependencies(file, seen, response);
      } else {
        Fail(response, grpc::StatusCode::NOT_FOUND,
             absl::StrCat("no symbol ", request.file_containing_symbol()));
      }
      break;
    case ServerReflectionRequest::kFileContainingExtension: {
      const auto& wanted = request.file_containing_extension();
      const google::protobuf::Descriptor* type =
          pool->FindMessageTypeByName(wanted.containing_type());
      const google::protobuf::FieldDescriptor* extension =
          type == nullptr ? nullptr : pool->FindExtensionByNumber(type, wanted.extension_number());
      if (extension != nullptr) {
        AddWithDependencies(extension->file(), seen, response);
      } else {
        Fail(response, grpc::StatusCode::NOT_FOUND,
             absl::StrCat("no extension ", wanted.extension_number(), " of ",
                          wanted.containing_type()));
      }
      break;
    }
    case ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const std::string& name = request.all_extension_numbers_of_type();
      const google::protobuf::Descriptor* type = pool->FindMessageTypeByName(name);
      if (type == nullptr) {
        Fail(response, grpc::StatusCode::NOT_FOUND, absl::StrCat("no type ", name));
        break;
      }
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      auto* numbers = response.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(name);
      for (const auto* e : extensions) numbers->add_extension_number(e->number());
      break;
    }
    case ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      Fail(response, grpc::StatusCode::INVALID_ARGUMENT, "the request asks for nothing");
      break;
  }
  return response;
}

}  // namespace lustre_csi::server
