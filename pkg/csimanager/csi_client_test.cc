#include "pkg/csimanager/csi_client.h"

#include <chrono>
#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/csimanager/fake_plugin.h"
#include "pkg/csimanager/test_util.h"
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
  absl::StatusOr<csi::v1::GetPluginInfoResponse> info = mocks.client->GetPluginInfo(options);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name(), "x.csi.io");
}

struct ErrorCase {
  grpc::StatusCode code;
};

class CsiClientErrorTest : public ::testing::TestWithParam<grpc::StatusCode> {};

TEST_P(CsiClientErrorTest, CodesAreKeptAndMethodNamed) {
  Mocks mocks = MakeMockClient();
  EXPECT_CALL(*mocks.node, NodeUnpublishVolume(_, _, _))
      .WillOnce(Return(grpc::Status(GetParam(), "boom")));
  absl::Status status =
      mocks.client->NodeUnpublishVolume(csi::v1::NodeUnpublishVolumeRequest(), CallOptions());
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
  EXPECT_EQ(mocks.client->Probe(options).status().code(), absl::StatusCode::kCancelled);
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
  absl::StatusOr<csi::v1::GetPluginInfoResponse> info = client_->GetPluginInfo(CallOptions());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name(), "fake.csi.test");
  absl::StatusOr<csi::v1::NodeGetInfoResponse> node = client_->NodeGetInfo(CallOptions());
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->node_id(), "node-1");
}

TEST_F(CsiClientFakePluginTest, HungCallEndsAtItsDeadline) {
  plugin_->SetHang("Probe", true);
  CallOptions options;
  options.timeout = absl::Milliseconds(100);
  EXPECT_EQ(client_->Probe(options).status().code(), absl::StatusCode::kDeadlineExceeded);
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
  EXPECT_EQ(client_->Probe(options).status().code(), absl::StatusCode::kCancelled);
  canceller.join();
}

TEST_F(CsiClientFakePluginTest, VanishedPluginIsUnavailable) {
  ASSERT_TRUE(client_->Probe(CallOptions()).ok());
  plugin_->Stop();
  EXPECT_EQ(client_->Probe(CallOptions()).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(fakes::PathExists(socket_));
}

}  // namespace
}  // namespace lustre_csi::csimanager
