// The services as a server serves them: their route tables, and calls over a
// real unix socket through the project's gRPC server.
#include "pkg/driver/services.h"

#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>

#include "gtest/gtest.h"
#include "pkg/driver/modes/local_mode.h"
#include "pkg/server/grpc_server.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::driver {
namespace {

using server::Dispatch;

class ServicesTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sys_.AddDir("/lustre/lustrefs").ok());
    mode_ = NewLocalMode(&sys_, "/lustre");
    NodeOptions options;
    options.node_id = "node-1";
    node_logic_ = std::make_unique<NodeLogic>(options, &sys_, mode_.get());
    controller_logic_ = std::make_unique<ControllerLogic>(nullptr);
    identity_ = std::make_unique<IdentityService>(
        IdentityOptions{"azurelustre.csi.azure.com", "v1", true, nullptr}, nullptr);
    node_ = std::make_unique<NodeService>(node_logic_.get(), nullptr);
    controller_ = std::make_unique<ControllerService>(controller_logic_.get(), nullptr);
    identity_->AddRoutes(routes_);
    node_->AddRoutes(routes_);
    controller_->AddRoutes(routes_);
  }

  volume::FakeSyscalls sys_;
  std::unique_ptr<MountMode> mode_;
  std::unique_ptr<NodeLogic> node_logic_;
  std::unique_ptr<ControllerLogic> controller_logic_;
  std::unique_ptr<IdentityService> identity_;
  std::unique_ptr<NodeService> node_;
  std::unique_ptr<ControllerService> controller_;
  server::Routes routes_;
};

// Only the calls that answer from fixed data run on the polling thread;
// everything that may touch a file system runs on a worker.
TEST_F(ServicesTest, OnlyFixedAnswersRunInline) {
  ASSERT_TRUE(routes_.status().ok()) << routes_.status();
  std::map<std::string, Dispatch> got;
  for (const server::Route& route : routes_.routes()) got[route.path] = route.dispatch;
  std::map<std::string, Dispatch> want = {
      {"/csi.v1.Identity/GetPluginInfo", Dispatch::kInline},
      {"/csi.v1.Identity/GetPluginCapabilities", Dispatch::kInline},
      {"/csi.v1.Identity/Probe", Dispatch::kInline},
      {"/csi.v1.Node/NodePublishVolume", Dispatch::kWorker},
      {"/csi.v1.Node/NodeUnpublishVolume", Dispatch::kWorker},
      {"/csi.v1.Node/NodeGetVolumeStats", Dispatch::kWorker},
      {"/csi.v1.Node/NodeGetCapabilities", Dispatch::kInline},
      {"/csi.v1.Node/NodeGetInfo", Dispatch::kInline},
      {"/csi.v1.Controller/CreateVolume", Dispatch::kWorker},
      {"/csi.v1.Controller/DeleteVolume", Dispatch::kWorker},
      {"/csi.v1.Controller/ValidateVolumeCapabilities", Dispatch::kWorker},
      {"/csi.v1.Controller/ControllerGetCapabilities", Dispatch::kInline},
      {"/csi.v1.Controller/ControllerExpandVolume", Dispatch::kWorker},
  };
  EXPECT_EQ(got, want);
}

TEST_F(ServicesTest, ServedOverASocketUnroutedCallsAreUnimplemented) {
  char tmpl[] = "/tmp/services_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::string socket = dir + "/csi.sock";
  auto server = server::UnixGrpcServer::Start(socket, routes_);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());

  auto identity = csi::v1::Identity::NewStub(channel);
  grpc::ClientContext info_ctx;
  csi::v1::GetPluginInfoResponse info;
  ASSERT_TRUE(identity->GetPluginInfo(&info_ctx, {}, &info).ok());
  EXPECT_EQ(info.name(), "azurelustre.csi.azure.com");

  auto node = csi::v1::Node::NewStub(channel);
  grpc::ClientContext node_ctx;
  csi::v1::NodeGetInfoResponse node_info;
  ASSERT_TRUE(node->NodeGetInfo(&node_ctx, {}, &node_info).ok());
  EXPECT_EQ(node_info.node_id(), "node-1");

  // A worker call, with bad input: the code of the handler comes through.
  grpc::ClientContext publish_ctx;
  csi::v1::NodePublishVolumeResponse published;
  EXPECT_EQ(node->NodePublishVolume(&publish_ctx, {}, &published).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // Lustre is not staged: NodeStageVolume is not served.
  grpc::ClientContext stage_ctx;
  csi::v1::NodeStageVolumeResponse staged;
  EXPECT_EQ(node->NodeStageVolume(&stage_ctx, {}, &staged).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  auto controller = csi::v1::Controller::NewStub(channel);
  grpc::ClientContext publish_volume_ctx;
  csi::v1::ControllerPublishVolumeResponse controller_published;
  EXPECT_EQ(controller->ControllerPublishVolume(&publish_volume_ctx, {}, &controller_published)
                .error_code(),
            grpc::StatusCode::UNIMPLEMENTED);

  (*server)->Shutdown(absl::Seconds(5));
  rmdir(dir.c_str());
}

// Expansion is online and advertised both ways a CO looks; its protocol
// fields are checked before the logic.
TEST_F(ServicesTest, ExpansionIsOnlineAndChecksItsFields) {
  grpc::ServerContext ctx;
  csi::v1::GetPluginCapabilitiesResponse plugin;
  ASSERT_TRUE(identity_->GetPluginCapabilities(&ctx, nullptr, &plugin).ok());
  bool online = false;
  for (const auto& cap : plugin.capabilities()) {
    online = online ||
             (cap.has_volume_expansion() &&
              cap.volume_expansion().type() == csi::v1::PluginCapability::VolumeExpansion::ONLINE);
  }
  EXPECT_TRUE(online);
  csi::v1::ControllerGetCapabilitiesResponse caps;
  ASSERT_TRUE(controller_->ControllerGetCapabilities(&ctx, nullptr, &caps).ok());
  bool expand = false;
  for (const auto& cap : caps.capabilities()) {
    expand = expand || cap.rpc().type() == csi::v1::ControllerServiceCapability::RPC::EXPAND_VOLUME;
  }
  EXPECT_TRUE(expand);

  csi::v1::ControllerExpandVolumeRequest req;
  csi::v1::ControllerExpandVolumeResponse res;
  req.mutable_capacity_range()->set_required_bytes(int64_t{11} << 30);
  EXPECT_EQ(controller_->ControllerExpandVolume(&ctx, &req, &res).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // no volume id
  req.set_volume_id("pv#lustrefs#10.0.0.4##f");
  req.clear_capacity_range();
  EXPECT_EQ(controller_->ControllerExpandVolume(&ctx, &req, &res).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // no capacity range
  req.mutable_capacity_range()->set_required_bytes(int64_t{11} << 30);
  req.mutable_volume_capability()->mutable_block();
  req.mutable_volume_capability()->mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
  EXPECT_EQ(controller_->ControllerExpandVolume(&ctx, &req, &res).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // block: not a capability of ours
  req.mutable_volume_capability()->mutable_mount();
  grpc::Status ok = controller_->ControllerExpandVolume(&ctx, &req, &res);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(res.capacity_bytes(), int64_t{11} << 30);
  EXPECT_FALSE(res.node_expansion_required());
  req.set_volume_id("no-such-volume");
  EXPECT_EQ(controller_->ControllerExpandVolume(&ctx, &req, &res).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace lustre_csi::driver
