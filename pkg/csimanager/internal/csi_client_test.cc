#include "pkg/csimanager/internal/csi_client.h"

#include <chrono>
#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/csimanager/testing/fake_plugin.h"
#include "pkg/csimanager/testing/test_util.h"
#include "proto/csi_mock.grpc.pb.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Invoke;
using ::testing::Return;

struct Mocks {
  csi::v1::MockIdentityStub* identity;
  csi::v1::MockNodeStub* node;
  std::unique_ptr<CsiClient> client;
};

Mocks MakeMockClient() {
  auto identity = std::make_unique<csi::v1::MockIdentityStub>();
  auto node = std::make_unique<csi::v1::MockNodeStub>();
  Mocks mocks{identity.get(), node.get(), nullptr};
  CsiClient::Stubs stubs;
  stubs.identity = std::move(identity);
  stubs.node = std::move(node);
  mocks.client = std::make_unique<CsiClient>(std::move(stubs));
  return mocks;
}

TEST(CsiClientTest, ResponsesAndDeadlines) {
  Mocks mocks = MakeMockClient();
  EXPECT_CALL(*mocks.identity, GetPluginInfo(_, _, _))
      .WillOnce(Invoke([](grpc::ClientContext* context, const csi::v1::GetPluginInfoRequest&,
                          csi::v1::GetPluginInfoResponse* response) {
        // A deadline no further away than asked for is set on each call.
        auto limit = std::chrono::system_clock::now() + std::chrono::seconds(7);
        EXPECT_LE(context->deadline(), limit);
        EXPECT_GT(context->deadline(), std::chrono::system_clock::now());
        response->set_name("x.csi.io");
        return grpc::Status::OK;
      }));
  CallOptions options;
  options.timeout = absl::Seconds(7);
  absl::StatusOr<PluginInfo> info = mocks.client->GetPluginInfo(options);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name, "x.csi.io");
}

// The plain requests become the csi.v1 messages the spec describes.
TEST(CsiClientTest, StageAndPublishRequestsOnTheWire) {
  Mocks mocks = MakeMockClient();
  csi::v1::NodeStageVolumeRequest staged;
  std::vector<csi::v1::NodePublishVolumeRequest> published;
  EXPECT_CALL(*mocks.node, NodeStageVolume(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const csi::v1::NodeStageVolumeRequest& request,
                           csi::v1::NodeStageVolumeResponse*) {
        staged = request;
        return grpc::Status::OK;
      }));
  EXPECT_CALL(*mocks.node, NodePublishVolume(_, _, _))
      .Times(2)
      .WillRepeatedly(
          Invoke([&](grpc::ClientContext*, const csi::v1::NodePublishVolumeRequest& request,
                     csi::v1::NodePublishVolumeResponse*) {
            published.push_back(request);
            return grpc::Status::OK;
          }));
  VolumeUsage usage;
  usage.read_only = true;
  usage.attachment_mode = AttachmentMode::kFileSystem;
  usage.access_mode = AccessMode::kMultiNodeReaderOnly;
  usage.fs_type = "lustre";
  usage.mount_flags = {"noatime"};
  StageRequest stage{"remote-1", "/csi/staging/v", usage, {{"p", "1"}}, {{"c", "2"}}, {{"s", "3"}}};
  ASSERT_TRUE(mocks.client->NodeStageVolume(stage, CallOptions()).ok());
  EXPECT_EQ(staged.volume_id(), "remote-1");
  EXPECT_EQ(staged.staging_target_path(), "/csi/staging/v");
  EXPECT_EQ(staged.volume_capability().mount().fs_type(), "lustre");
  EXPECT_THAT(staged.volume_capability().mount().mount_flags(), ::testing::ElementsAre("noatime"));
  EXPECT_EQ(staged.volume_capability().access_mode().mode(),
            csi::v1::VolumeCapability::AccessMode::MULTI_NODE_READER_ONLY);
  EXPECT_EQ(staged.publish_context().at("p"), "1");
  EXPECT_EQ(staged.volume_context().at("c"), "2");
  EXPECT_EQ(staged.secrets().at("s"), "3");

  PublishRequest publish{"remote-1", "/csi/staging/v", "/csi/per-alloc/a/v", usage, {}, {}, {}};
  ASSERT_TRUE(mocks.client->NodePublishVolume(publish, CallOptions()).ok());
  usage.read_only = false;
  usage.attachment_mode = AttachmentMode::kBlockDevice;
  usage.access_mode = AccessMode::kSingleNodeWriter;
  PublishRequest unstaged{"remote-2", "", "/csi/per-alloc/b/v", usage, {}, {}, {}};
  ASSERT_TRUE(mocks.client->NodePublishVolume(unstaged, CallOptions()).ok());
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published[0].staging_target_path(), "/csi/staging/v");
  EXPECT_EQ(published[0].target_path(), "/csi/per-alloc/a/v");
  EXPECT_TRUE(published[0].readonly());
  EXPECT_TRUE(published[0].volume_capability().has_mount());
  EXPECT_EQ(published[1].staging_target_path(), "");
  EXPECT_FALSE(published[1].readonly());
  EXPECT_TRUE(published[1].volume_capability().has_block());
  EXPECT_EQ(published[1].volume_capability().access_mode().mode(),
            csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
}

TEST(CsiClientTest, CapabilitiesAndReadiness) {
  Mocks mocks = MakeMockClient();
  EXPECT_CALL(*mocks.identity, GetPluginCapabilities(_, _, _))
      .WillOnce(Invoke([](grpc::ClientContext*, const csi::v1::GetPluginCapabilitiesRequest&,
                          csi::v1::GetPluginCapabilitiesResponse* response) {
        response->add_capabilities()->mutable_service()->set_type(
            csi::v1::PluginCapability::Service::CONTROLLER_SERVICE);
        response->add_capabilities()->mutable_volume_expansion()->set_type(
            csi::v1::PluginCapability::VolumeExpansion::OFFLINE);
        return grpc::Status::OK;
      }));
  EXPECT_CALL(*mocks.node, NodeGetCapabilities(_, _, _))
      .WillOnce(Invoke([](grpc::ClientContext*, const csi::v1::NodeGetCapabilitiesRequest&,
                          csi::v1::NodeGetCapabilitiesResponse* response) {
        response->add_capabilities()->mutable_rpc()->set_type(
            csi::v1::NodeServiceCapability::RPC::GET_VOLUME_STATS);
        return grpc::Status::OK;
      }));
  EXPECT_CALL(*mocks.identity, Probe(_, _, _))
      .WillOnce(Return(grpc::Status::OK))
      .WillOnce(Invoke(
          [](grpc::ClientContext*, const csi::v1::ProbeRequest&, csi::v1::ProbeResponse* response) {
            response->mutable_ready()->set_value(false);
            return grpc::Status::OK;
          }));
  absl::StatusOr<PluginCapabilities> caps = mocks.client->GetPluginCapabilities(CallOptions());
  ASSERT_TRUE(caps.ok()) << caps.status();
  EXPECT_THAT(caps->names,
              ::testing::ElementsAre("CONTROLLER_SERVICE", "VOLUME_EXPANSION_OFFLINE"));
  EXPECT_TRUE(caps->controller_service);
  absl::StatusOr<NodeCapabilities> node = mocks.client->NodeGetCapabilities(CallOptions());
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_THAT(node->names, ::testing::ElementsAre("GET_VOLUME_STATS"));
  EXPECT_FALSE(node->stage_unstage);
  EXPECT_TRUE(mocks.client->Probe(CallOptions()).ok());  // silent about readiness: ready
  EXPECT_EQ(mocks.client->Probe(CallOptions()).code(), absl::StatusCode::kUnavailable);
}

struct ErrorCase {
  grpc::StatusCode code;
};

class CsiClientErrorTest : public ::testing::TestWithParam<grpc::StatusCode> {};

TEST_P(CsiClientErrorTest, CodesAreKeptAndMethodNamed) {
  Mocks mocks = MakeMockClient();
  EXPECT_CALL(*mocks.node, NodeUnpublishVolume(_, _, _))
      .WillOnce(Return(grpc::Status(GetParam(), "boom")));
  absl::Status status = mocks.client->NodeUnpublishVolume("v", "/t", CallOptions());
  EXPECT_EQ(static_cast<int>(status.code()), static_cast<int>(GetParam()));
  EXPECT_EQ(status.message(), "NodeUnpublishVolume: boom");
}

INSTANTIATE_TEST_SUITE_P(Codes, CsiClientErrorTest,
                         ::testing::Values(grpc::StatusCode::NOT_FOUND,
                                           grpc::StatusCode::UNAVAILABLE,
                                           grpc::StatusCode::DEADLINE_EXCEEDED,
                                           grpc::StatusCode::RESOURCE_EXHAUSTED,
                                           grpc::StatusCode::INTERNAL));

TEST(CsiClientTest, MissingStubAndCancelledToken) {
  Mocks mocks = MakeMockClient();
  EXPECT_EQ(mocks.client->ControllerGetCapabilities(CallOptions()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  base::CancelToken token;
  token.Cancel();
  CallOptions options;
  options.cancel = &token;
  EXPECT_CALL(*mocks.identity, Probe(_, _, _)).Times(0);
  EXPECT_EQ(mocks.client->Probe(options).code(), absl::StatusCode::kCancelled);
}

TEST(CsiClientTest, DialRejectsBadEndpoints) {
  EXPECT_EQ(CsiClient::Dial("tcp://1.2.3.4:5").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CsiClient::Dial("relative.sock").status().code(), absl::StatusCode::kInvalidArgument);
}

class CsiClientFakePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.Sub("csi.sock");
    plugin_ = fakes::FakePlugin::Start({socket_}, fakes::FakePluginConfig());
    absl::StatusOr<std::unique_ptr<CsiClient>> client = CsiClient::Dial("unix://" + socket_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  fakes::TempDir dir_;
  std::string socket_;
  std::unique_ptr<fakes::FakePlugin> plugin_;
  std::unique_ptr<CsiClient> client_;
};

TEST_F(CsiClientFakePluginTest, RealCalls) {
  absl::StatusOr<PluginInfo> info = client_->GetPluginInfo(CallOptions());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name, "fake.csi.test");
  absl::StatusOr<PluginNodeInfo> node = client_->NodeGetInfo(CallOptions());
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->node_id, "node-1");
}

TEST_F(CsiClientFakePluginTest, HungCallEndsAtItsDeadline) {
  plugin_->SetHang("Probe", true);
  CallOptions options;
  options.timeout = absl::Milliseconds(100);
  EXPECT_EQ(client_->Probe(options).code(), absl::StatusCode::kDeadlineExceeded);
  plugin_->SetHang("Probe", false);
}

TEST_F(CsiClientFakePluginTest, HungCallEndsWhenCancelled) {
  plugin_->SetHang("Probe", true);
  base::CancelToken token;
  CallOptions options;
  options.timeout = absl::Hours(1);
  options.cancel = &token;
  std::thread canceller([&] {
    plugin_->AwaitCalls("Probe", 1);
    token.Cancel();
  });
  EXPECT_EQ(client_->Probe(options).code(), absl::StatusCode::kCancelled);
  canceller.join();
}

TEST_F(CsiClientFakePluginTest, VanishedPluginIsUnavailable) {
  ASSERT_TRUE(client_->Probe(CallOptions()).ok());
  plugin_->Stop();
  EXPECT_EQ(client_->Probe(CallOptions()).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(fakes::PathExists(socket_));
}

}  // namespace
}  // namespace lustre_csi::csimanager
