#include "pkg/server/reflection.h"

#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/support/status.h>

#include "gtest/gtest.h"
#include "proto/health.pb.h"
#include "proto/pluginregistration.pb.h"

namespace lustre_csi::server {
namespace {

using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;

std::vector<std::string> FileNames(const ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromString(bytes));
    names.push_back(file.name());
  }
  return names;
}

TEST(ReflectionIndexTest, ListsTheServicesInOrderAndEchoesTheRequest) {
  ReflectionIndex index({"pluginregistration.Registration", "grpc.health.v1.Health"});
  ServerReflectionRequest request;
  request.set_host("localhost");
  request.set_list_services("*");
  ServerReflectionResponse response = index.Answer(request);
  EXPECT_EQ(response.valid_host(), "localhost");
  EXPECT_EQ(response.original_request().list_services(), "*");
  ASSERT_EQ(response.list_services_response().service_size(), 2);
  EXPECT_EQ(response.list_services_response().service(0).name(), "pluginregistration.Registration");
  EXPECT_EQ(response.list_services_response().service(1).name(), "grpc.health.v1.Health");
}

TEST(ReflectionIndexTest, SymbolAndFileNameGiveTheDefiningFile) {
  ReflectionIndex index({});
  const std::string file = pluginregistration::PluginInfo::descriptor()->file()->name();
  for (const std::string& symbol :
       {"pluginregistration.Registration", "pluginregistration.Registration.GetInfo",
        "pluginregistration.PluginInfo"}) {
    ServerReflectionRequest request;
    request.set_file_containing_symbol(symbol);
    ServerReflectionResponse response = index.Answer(request);
    EXPECT_FALSE(response.has_error_response()) << symbol;
    EXPECT_EQ(FileNames(response), std::vector<std::string>{file}) << symbol;
  }
  ServerReflectionRequest by_name;
  by_name.set_file_by_filename(file);
  ServerReflectionResponse response = index.Answer(by_name);
  ASSERT_EQ(FileNames(response), std::vector<std::string>{file});
  // The descriptor is the real one: the service and its methods are in it.
  google::protobuf::FileDescriptorProto proto;
  ASSERT_TRUE(proto.ParseFromString(response.file_descriptor_response().file_descriptor_proto(0)));
  ASSERT_EQ(proto.service_size(), 1);
  EXPECT_EQ(proto.service(0).name(), "Registration");
  EXPECT_EQ(proto.service(0).method_size(), 2);
}

TEST(ReflectionIndexTest, DependenciesComeBeforeTheFileThatImportsThem) {
  ReflectionIndex index({});
  ServerReflectionRequest request;
  request.set_file_containing_symbol("google.protobuf.FileDescriptorSet");
  std::vector<std::string> names = FileNames(index.Answer(request));
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "google/protobuf/descriptor.proto");
}

TEST(ReflectionIndexTest, UnknownNamesAndEmptyRequestsAreErrors) {
  ReflectionIndex index({});
  ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("no.such.Symbol");
  EXPECT_EQ(index.Answer(symbol).error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  ServerReflectionRequest file;
  file.set_file_by_filename("no/such.proto");
  EXPECT_EQ(index.Answer(file).error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  ServerReflectionRequest type;
  type.set_all_extension_numbers_of_type("no.such.Type");
  EXPECT_EQ(index.Answer(type).error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  ServerReflectionRequest extension;
  extension.mutable_file_containing_extension()->set_containing_type(
      grpc::health::v1::HealthCheckRequest::descriptor()->full_name());
  extension.mutable_file_containing_extension()->set_extension_number(1000);
  EXPECT_EQ(index.Answer(extension).error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(index.Answer(ServerReflectionRequest()).error_response().error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(ReflectionIndexTest, ATypeWithoutExtensionsHasNoNumbers) {
  ReflectionIndex index({});
  // Named through its descriptor, so that the linker keeps it.
  const std::string type = grpc::health::v1::HealthCheckRequest::descriptor()->full_name();
  ServerReflectionRequest request;
  request.set_all_extension_numbers_of_type(type);
  ServerReflectionResponse response = index.Answer(request);
  EXPECT_FALSE(response.has_error_response()) << response.error_response().error_message();
  EXPECT_EQ(response.all_extension_numbers_response().base_type_name(), type);
  EXPECT_EQ(response.all_extension_numbers_response().extension_number_size(), 0);
}

}  // namespace
}  // namespace lustre_csi::server
