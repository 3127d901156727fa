#include "pkg/server/routes.h"

#include "gtest/gtest.h"
#include "proto/pluginregistration.grpc.pb.h"

namespace lustre_csi::server {
namespace {

using pluginregistration::Registration;

class Impl {
 public:
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) {
    info->set_name("routed.csi.io");
    return grpc::Status::OK;
  }
  grpc::Status Fails(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                     pluginregistration::PluginInfo* info) {
    info->set_name("not sent");
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "nothing here");
  }
  // GetInfo's request with NotifyRegistrationStatus's response: wrong.
  grpc::Status Mixed(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                     pluginregistration::RegistrationStatusResponse*) {
    return grpc::Status::OK;
  }
};

// An empty message, as it arrives on the wire.
grpc::ByteBuffer EmptyMessage() {
  grpc::Slice empty("", 0);
  return grpc::ByteBuffer(&empty, 1);
}

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

TEST(RoutesTest, RoutedHandlerParsesCallsAndSerializes) {
  Impl impl;
  Routes routes;
  routes.Unary(Registration::service_full_name(), "GetInfo", &impl, &Impl::GetInfo,
               Dispatch::kInline);
  ASSERT_TRUE(routes.status().ok()) << routes.status();
  ASSERT_EQ(routes.routes().size(), 1u);
  const Route& route = routes.routes()[0];
  EXPECT_EQ(route.path, "/pluginregistration.Registration/GetInfo");
  EXPECT_EQ(route.dispatch, Dispatch::kInline);

  grpc::ByteBuffer request = EmptyMessage(), response;  // an empty InfoRequest
  grpc::ServerContext context;
  ASSERT_TRUE(route.handler(&context, &request, &response).ok());
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(info.ParseFromString(Bytes(response)));
  EXPECT_EQ(info.name(), "routed.csi.io");
}

TEST(RoutesTest, HandlerErrorIsReturnedWithoutAResponse) {
  Impl impl;
  Routes routes;
  routes.Unary(Registration::service_full_name(), "GetInfo", &impl, &Impl::Fails,
               Dispatch::kWorker);
  ASSERT_TRUE(routes.status().ok());
  grpc::ByteBuffer request = EmptyMessage(), response;
  grpc::ServerContext context;
  grpc::Status status = routes.routes()[0].handler(&context, &request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Bytes(response), "");
}

TEST(RoutesTest, UnknownMethodIsRefused) {
  Impl impl;
  Routes routes;
  routes.Unary(Registration::service_full_name(), "GetInfos", &impl, &Impl::GetInfo,
               Dispatch::kInline);
  EXPECT_EQ(routes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(routes.status().message().find("GetInfos"), absl::string_view::npos);
  EXPECT_TRUE(routes.routes().empty());
}

TEST(RoutesTest, WrongMessageTypesAreRefused) {
  Impl impl;
  Routes routes;
  routes.Unary(Registration::service_full_name(), "GetInfo", &impl, &Impl::Mixed,
               Dispatch::kInline);
  EXPECT_EQ(routes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(routes.status().message().find("pluginregistration.PluginInfo"),
            absl::string_view::npos)
      << routes.status();
}

TEST(RoutesTest, MethodRoutedTwiceIsRefused) {
  Impl impl;
  Routes routes;
  routes.Unary(Registration::service_full_name(), "GetInfo", &impl, &Impl::GetInfo,
               Dispatch::kInline);
  ASSERT_TRUE(routes.status().ok());
  routes.Unary(Registration::service_full_name(), "GetInfo", &impl, &Impl::GetInfo,
               Dispatch::kWorker);
  EXPECT_EQ(routes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(routes.routes().size(), 1u);
}

}  // namespace
}  // namespace lustre_csi::server
