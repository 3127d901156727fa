#include "pkg/csimanager/internal/instance_manager.h"

#include <functional>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/csimanager/testing/fake_plugin.h"
#include "pkg/csimanager/testing/test_util.h"
#include "proto/csi_mock.grpc.pb.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::_;
using ::testing::DoAll;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Return;
using ::testing::SetArgPointee;

constexpr char kName[] = "mock.csi.test";

// Generated gMock stubs answering like a healthy plugin unless a case
// overrides a method.
struct MockPlugin {
  NiceMock<csi::v1::MockIdentityStub>* identity;
  NiceMock<csi::v1::MockNodeStub>* node;
  NiceMock<csi::v1::MockControllerStub>* controller;
  csi::v1::GetPluginInfoResponse info;
  csi::v1::GetPluginCapabilitiesResponse caps;
  csi::v1::ProbeResponse probe;
  csi::v1::NodeGetInfoResponse node_info;
  csi::v1::NodeGetCapabilitiesResponse node_caps;
  csi::v1::ControllerGetCapabilitiesResponse controller_caps;
};

std::unique_ptr<CsiClient> Healthy(MockPlugin& m) {
  auto identity = std::make_unique<NiceMock<csi::v1::MockIdentityStub>>();
  auto node = std::make_unique<NiceMock<csi::v1::MockNodeStub>>();
  auto controller = std::make_unique<NiceMock<csi::v1::MockControllerStub>>();
  m.identity = identity.get();
  m.node = node.get();
  m.controller = controller.get();
  m.info.set_name(kName);
  m.info.set_vendor_version("2.1.0");
  m.caps.add_capabilities()->mutable_service()->set_type(
      csi::v1::PluginCapability::Service::VOLUME_ACCESSIBILITY_CONSTRAINTS);
  m.caps.add_capabilities()->mutable_volume_expansion()->set_type(
      csi::v1::PluginCapability::VolumeExpansion::ONLINE);
  m.node_info.set_node_id("i-0abc");
  m.node_info.set_max_volumes_per_node(16);
  (*m.node_info.mutable_accessible_topology()->mutable_segments())["zone"] = "z1";
  m.node_caps.add_capabilities()->mutable_rpc()->set_type(
      csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
  m.controller_caps.add_capabilities()->mutable_rpc()->set_type(
      csi::v1::ControllerServiceCapability::RPC::CREATE_DELETE_VOLUME);
  ON_CALL(*m.identity, GetPluginInfo(_, _, _))
      .WillByDefault(DoAll(SetArgPointee<2>(m.info), Return(grpc::Status::OK)));
  ON_CALL(*m.identity, GetPluginCapabilities(_, _, _))
      .WillByDefault(DoAll(SetArgPointee<2>(m.caps), Return(grpc::Status::OK)));
  ON_CALL(*m.identity, Probe(_, _, _))
      .WillByDefault(DoAll(SetArgPointee<2>(m.probe), Return(grpc::Status::OK)));
  ON_CALL(*m.node, NodeGetInfo(_, _, _))
      .WillByDefault(DoAll(SetArgPointee<2>(m.node_info), Return(grpc::Status::OK)));
  ON_CALL(*m.node, NodeGetCapabilities(_, _, _))
      .WillByDefault(DoAll(SetArgPointee<2>(m.node_caps), Return(grpc::Status::OK)));
  ON_CALL(*m.controller, ControllerGetCapabilities(_, _, _))
      .WillByDefault(DoAll(SetArgPointee<2>(m.controller_caps), Return(grpc::Status::OK)));
  CsiClient::Stubs stubs;
  stubs.identity = std::move(identity);
  stubs.node = std::move(node);
  stubs.controller = std::move(controller);
  return std::make_unique<CsiClient>(std::move(stubs));
}

// Hands out one prepared client.
CsiClientFactory OneClient(std::unique_ptr<CsiClient> client) {
  auto holder = std::make_shared<std::unique_ptr<CsiClient>>(std::move(client));
  return [holder](const std::string&) -> absl::StatusOr<std::unique_ptr<CsiClient>> {
    if (*holder == nullptr) return absl::InternalError("client already taken");
    return std::move(*holder);
  };
}

PluginRecord Record(PluginType type, absl::string_view name = kName) {
  PluginRecord record;
  record.id = StaticPluginId(type, name);
  record.name = std::string(name);
  record.type = type;
  record.endpoint = "/unused.sock";
  record.origin = PluginOrigin::kStatic;
  return record;
}

grpc::Status Error(grpc::StatusCode code) { return grpc::Status(code, "injected"); }

struct FingerprintCase {
  std::string name;
  PluginType type;
  // Changes the healthy plugin before the fingerprint.
  std::function<void(MockPlugin&)> tweak;
  bool healthy;
  std::string reason;  // substring of the health reason
};

class FingerprintTest : public ::testing::TestWithParam<FingerprintCase> {};

TEST_P(FingerprintTest, HealthFollowsThePlugin) {
  const FingerprintCase& c = GetParam();
  MockPlugin mocks;
  std::unique_ptr<CsiClient> client = Healthy(mocks);
  if (c.tweak) c.tweak(mocks);
  base::FakeClock clock;
  std::vector<PluginStatus> seen;
  InstanceManager instance(Record(c.type), OneClient(std::move(client)), &clock, InstanceOptions(),
                           [&](const PluginStatus& s) { seen.push_back(s); });
  absl::Status result = instance.Fingerprint();
  PluginStatus status = instance.Status();
  EXPECT_EQ(status.healthy, c.healthy) << status.health_reason;
  EXPECT_EQ(result.ok(), c.healthy);
  EXPECT_THAT(status.health_reason, HasSubstr(c.reason));
  EXPECT_EQ(status.fingerprints, 1);
  EXPECT_EQ(status.last_update, clock.Now());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].healthy, c.healthy);
  if (!c.healthy) {
    EXPECT_EQ(result.code(), absl::StatusCode::kUnavailable);
    EXPECT_FALSE(status.fingerprinted);
  }
}

INSTANTIATE_TEST_SUITE_P(
    States, FingerprintTest,
    ::testing::Values(
        FingerprintCase{"HealthyNode", PluginType::kNode, nullptr, true, "healthy"},
        FingerprintCase{
            "ProbeReadyUnsetIsReady", PluginType::kNode,
            [](MockPlugin& m) {
              ON_CALL(*m.identity, Probe(_, _, _)).WillByDefault(Return(grpc::Status::OK));
            },
            true, "healthy"},
        FingerprintCase{"ProbeNotReady", PluginType::kNode,
                        [](MockPlugin& m) {
                          csi::v1::ProbeResponse not_ready;
                          not_ready.mutable_ready()->set_value(false);
                          ON_CALL(*m.identity, Probe(_, _, _))
                              .WillByDefault(
                                  DoAll(SetArgPointee<2>(not_ready), Return(grpc::Status::OK)));
                        },
                        false, "not ready"},
        FingerprintCase{"ProbeDeadline", PluginType::kNode,
                        [](MockPlugin& m) {
                          ON_CALL(*m.identity, Probe(_, _, _))
                              .WillByDefault(Return(Error(grpc::StatusCode::DEADLINE_EXCEEDED)));
                        },
                        false, "Probe: injected"},
        FingerprintCase{"InfoUnavailable", PluginType::kNode,
                        [](MockPlugin& m) {
                          ON_CALL(*m.identity, GetPluginInfo(_, _, _))
                              .WillByDefault(Return(Error(grpc::StatusCode::UNAVAILABLE)));
                        },
                        false, "GetPluginInfo: injected"},
        FingerprintCase{"WrongName", PluginType::kNode,
                        [](MockPlugin& m) {
                          csi::v1::GetPluginInfoResponse other;
                          other.set_name("other.csi.test");
                          ON_CALL(*m.identity, GetPluginInfo(_, _, _))
                              .WillByDefault(
                                  DoAll(SetArgPointee<2>(other), Return(grpc::Status::OK)));
                        },
                        false, "reports name \"other.csi.test\""},
        FingerprintCase{"CapabilitiesFail", PluginType::kNode,
                        [](MockPlugin& m) {
                          ON_CALL(*m.identity, GetPluginCapabilities(_, _, _))
                              .WillByDefault(Return(Error(grpc::StatusCode::INTERNAL)));
                        },
                        false, "GetPluginCapabilities"},
        FingerprintCase{"NodeInfoFails", PluginType::kNode,
                        [](MockPlugin& m) {
                          ON_CALL(*m.node, NodeGetInfo(_, _, _))
                              .WillByDefault(Return(Error(grpc::StatusCode::UNIMPLEMENTED)));
                        },
                        false, "NodeGetInfo: injected"},
        FingerprintCase{
            "NoNodeId", PluginType::kNode,
            [](MockPlugin& m) {
              ON_CALL(*m.node, NodeGetInfo(_, _, _)).WillByDefault(Return(grpc::Status::OK));
            },
            false, "no node id"},
        FingerprintCase{"NodeCapabilitiesFail", PluginType::kNode,
                        [](MockPlugin& m) {
                          ON_CALL(*m.node, NodeGetCapabilities(_, _, _))
                              .WillByDefault(Return(Error(grpc::StatusCode::UNAVAILABLE)));
                        },
                        false, "NodeGetCapabilities"},
        FingerprintCase{"ControllerWithoutService", PluginType::kController, nullptr, false,
                        "does not advertise CONTROLLER_SERVICE"},
        FingerprintCase{"HealthyController", PluginType::kController,
                        [](MockPlugin& m) {
                          m.caps.add_capabilities()->mutable_service()->set_type(
                              csi::v1::PluginCapability::Service::CONTROLLER_SERVICE);
                          ON_CALL(*m.identity, GetPluginCapabilities(_, _, _))
                              .WillByDefault(
                                  DoAll(SetArgPointee<2>(m.caps), Return(grpc::Status::OK)));
                          EXPECT_CALL(*m.node, NodeGetInfo(_, _, _)).Times(0);
                        },
                        true, "healthy"},
        FingerprintCase{"ControllerCapabilitiesFail", PluginType::kMonolith,
                        [](MockPlugin& m) {
                          m.caps.add_capabilities()->mutable_service()->set_type(
                              csi::v1::PluginCapability::Service::CONTROLLER_SERVICE);
                          ON_CALL(*m.identity, GetPluginCapabilities(_, _, _))
                              .WillByDefault(
                                  DoAll(SetArgPointee<2>(m.caps), Return(grpc::Status::OK)));
                          ON_CALL(*m.controller, ControllerGetCapabilities(_, _, _))
                              .WillByDefault(Return(Error(grpc::StatusCode::INTERNAL)));
                        },
                        false, "ControllerGetCapabilities"},
        FingerprintCase{"NodeDoesNotAskController", PluginType::kNode,
                        [](MockPlugin& m) {
                          EXPECT_CALL(*m.controller, ControllerGetCapabilities(_, _, _)).Times(0);
                        },
                        true, "healthy"}),
    [](const ::testing::TestParamInfo<FingerprintCase>& info) { return info.param.name; });

TEST(InstanceManagerTest, RecordsTheFingerprint) {
  MockPlugin mocks;
  std::unique_ptr<CsiClient> client = Healthy(mocks);
  base::FakeClock clock;
  InstanceManager instance(Record(PluginType::kNode), OneClient(std::move(client)), &clock,
                           InstanceOptions());
  ASSERT_TRUE(instance.Fingerprint().ok());
  PluginStatus s = instance.Status();
  EXPECT_TRUE(s.fingerprinted);
  EXPECT_EQ(s.vendor_name, kName);
  EXPECT_EQ(s.vendor_version, "2.1.0");
  EXPECT_THAT(s.plugin_capabilities,
              ElementsAre("VOLUME_ACCESSIBILITY_CONSTRAINTS", "VOLUME_EXPANSION_ONLINE"));
  EXPECT_THAT(s.node_capabilities, ElementsAre("STAGE_UNSTAGE_VOLUME"));
  EXPECT_TRUE(s.stage_unstage);
  EXPECT_FALSE(s.controller_service);
  EXPECT_EQ(s.node_id, "i-0abc");
  EXPECT_EQ(s.max_volumes, 16);
  EXPECT_EQ(s.topology, (std::map<std::string, std::string>{{"zone", "z1"}}));
}

TEST(InstanceManagerTest, FailedFingerprintKeepsLastGoodCapabilities) {
  MockPlugin mocks;
  std::unique_ptr<CsiClient> client = Healthy(mocks);
  base::FakeClock clock;
  InstanceManager instance(Record(PluginType::kNode), OneClient(std::move(client)), &clock,
                           InstanceOptions());
  ASSERT_TRUE(instance.Fingerprint().ok());
  ON_CALL(*mocks.identity, Probe(_, _, _))
      .WillByDefault(Return(Error(grpc::StatusCode::UNAVAILABLE)));
  clock.Advance(absl::Seconds(30));
  EXPECT_FALSE(instance.Fingerprint().ok());
  PluginStatus s = instance.Status();
  EXPECT_FALSE(s.healthy);
  EXPECT_TRUE(s.fingerprinted);
  EXPECT_TRUE(s.stage_unstage);
  EXPECT_EQ(s.node_id, "i-0abc");
  EXPECT_EQ(s.last_update, clock.Now());
}

TEST(InstanceManagerTest, ClientFactoryErrorIsUnhealthy) {
  base::FakeClock clock;
  InstanceManager instance(
      Record(PluginType::kNode),
      [](const std::string&) -> absl::StatusOr<std::unique_ptr<CsiClient>> {
        return absl::InvalidArgumentError("bad endpoint");
      },
      &clock, InstanceOptions());
  EXPECT_FALSE(instance.Fingerprint().ok());
  EXPECT_THAT(instance.Status().health_reason, HasSubstr("bad endpoint"));
}

// Real plugins on real sockets, driven by the fake clock.
class InstanceManagerFakePluginTest : public ::testing::Test {
 protected:
  std::unique_ptr<fakes::FakePlugin> StartPlugin(const std::string& socket,
                                                 const std::string& name = "fake.csi.test") {
    fakes::FakePluginConfig config;
    config.name = name;
    return fakes::FakePlugin::Start({socket}, config);
  }

  PluginRecord SocketRecord(const std::string& socket, const std::string& name = "fake.csi.test") {
    PluginRecord record = Record(PluginType::kNode, name);
    record.endpoint = socket;
    return record;
  }

  absl::Time Soon() { return absl::Now() + absl::Seconds(30); }  // hang guard only

  fakes::TempDir dir_;
  base::FakeClock clock_;
};

TEST_F(InstanceManagerFakePluginTest, PeriodicFingerprintSeesTransitions) {
  std::string socket = dir_.Sub("p.sock");
  auto plugin = StartPlugin(socket);
  InstanceOptions options;
  options.fingerprint_period = absl::Seconds(30);
  InstanceManager instance(SocketRecord(socket), DialingClientFactory(), &clock_, options);
  instance.Start();
  ASSERT_TRUE(instance.AwaitFingerprints(1, Soon()));
  EXPECT_TRUE(instance.Status().healthy) << instance.Status().health_reason;
  EXPECT_TRUE(instance.WaitForHealthy(absl::InfinitePast()).ok());

  ASSERT_TRUE(clock_.AwaitSleepers(1));
  plugin->Update([](fakes::FakePluginConfig& c) { c.ready = false; });
  clock_.Advance(absl::Seconds(30));
  ASSERT_TRUE(instance.AwaitFingerprints(2, Soon()));
  EXPECT_FALSE(instance.Status().healthy);
  EXPECT_THAT(instance.Status().health_reason, HasSubstr("not ready"));
  absl::Status wait = instance.WaitForHealthy(absl::InfinitePast());
  EXPECT_EQ(wait.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(wait.message()), HasSubstr("not ready"));

  // The plugin vanishes.
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  plugin->Stop();
  clock_.Advance(absl::Seconds(30));
  ASSERT_TRUE(instance.AwaitFingerprints(3, Soon()));
  EXPECT_FALSE(instance.Status().healthy);
  EXPECT_THAT(instance.Status().health_reason, HasSubstr("GetPluginInfo"));

  // It comes back on the same socket; the channel reconnects by itself.
  plugin = StartPlugin(socket);
  int64_t n = 3;
  while (!instance.Status().healthy && n < 200) {
    ASSERT_TRUE(clock_.AwaitSleepers(1));
    clock_.Advance(absl::Seconds(30));
    ASSERT_TRUE(instance.AwaitFingerprints(++n, Soon()));
    if (!instance.Status().healthy) absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(instance.Status().healthy) << instance.Status().health_reason;
  for (absl::Duration d : clock_.sleeps()) EXPECT_EQ(d, absl::Seconds(30));
  instance.Stop();
}

TEST_F(InstanceManagerFakePluginTest, HungPluginBlocksOnlyItself) {
  std::string hung_socket = dir_.Sub("hung.sock");
  std::string good_socket = dir_.Sub("good.sock");
  auto hung = StartPlugin(hung_socket, "hung.csi.test");
  auto good = StartPlugin(good_socket, "good.csi.test");
  hung->SetHang("Probe", true);
  InstanceOptions options;
  options.fingerprint_timeout = absl::Hours(1);
  InstanceManager hung_instance(SocketRecord(hung_socket, "hung.csi.test"), DialingClientFactory(),
                                &clock_, options);
  InstanceManager good_instance(SocketRecord(good_socket, "good.csi.test"), DialingClientFactory(),
                                &clock_, options);
  hung_instance.Start();
  good_instance.Start();
  ASSERT_TRUE(hung->AwaitCalls("Probe", 1));
  ASSERT_TRUE(good_instance.AwaitFingerprints(1, Soon()));
  EXPECT_TRUE(good_instance.Status().healthy);
  EXPECT_EQ(hung_instance.Status().fingerprints, 0);
  EXPECT_FALSE(hung_instance.Status().healthy);
  // Stopping cancels the hung call instead of waiting an hour for it.
  hung_instance.Stop();
  EXPECT_EQ(hung_instance.Status().fingerprints, 1);
  EXPECT_THAT(hung_instance.Status().health_reason, HasSubstr("Probe"));
  good_instance.Stop();
}

TEST_F(InstanceManagerFakePluginTest, HungCallMakesUnhealthyAtItsDeadline) {
  std::string socket = dir_.Sub("slow.sock");
  auto plugin = StartPlugin(socket);
  plugin->SetHang("NodeGetInfo", true);
  InstanceOptions options;
  options.fingerprint_timeout = absl::Milliseconds(50);
  InstanceManager instance(SocketRecord(socket), DialingClientFactory(), &clock_, options);
  EXPECT_FALSE(instance.Fingerprint().ok());
  EXPECT_THAT(instance.Status().health_reason, HasSubstr("NodeGetInfo"));
  plugin->SetHang("NodeGetInfo", false);
  EXPECT_TRUE(instance.Fingerprint().ok());
}

TEST_F(InstanceManagerFakePluginTest, StopEndsWaiters) {
  std::string socket = dir_.Sub("p.sock");
  InstanceManager instance(SocketRecord(socket), DialingClientFactory(), &clock_,
                           InstanceOptions());
  instance.Stop();
  EXPECT_EQ(instance.WaitForHealthy(absl::InfiniteFuture()).code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace lustre_csi::csimanager
