#include "pkg/csimanager/manager_service.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <chrono>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/csimanager/manager_proto.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/testing/fake_node.h"
#include "pkg/csimanager/testing/fake_plugin.h"
#include "pkg/csimanager/testing/test_util.h"
#include "pkg/server/grpc_server.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kPlugin[] = "fake.csi.test";

pb::Usage RwUsage() {
  pb::Usage usage;
  usage.set_attachment_mode(pb::ATTACHMENT_MODE_FILE_SYSTEM);
  usage.set_access_mode(pb::ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
  usage.set_fs_type("lustre");
  usage.add_mount_flags("flock");
  return usage;
}

class ManagerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(dir_.Sub("state.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);

    fakes::FakePluginConfig config;
    config.name = kPlugin;
    config.stage_unstage = true;
    config.node_id = "i-123";
    config.topology = {{"zone", "z1"}};
    plugin_ = fakes::FakePlugin::Start({dir_.Sub("csi.sock")}, config, &mounts_);

    ManagerOptions options;
    options.mount_root = "/mnt/csi";
    options.node_name = "worker-1";
    ManagerDeps deps;
    deps.store = store_.get();
    deps.mounts = mounts_.inspector();
    deps.clock = &clock_;
    manager_ = std::make_unique<Manager>(options, deps);
    ASSERT_TRUE(manager_->Start().ok());
    ASSERT_TRUE(manager_
                    ->SetStaticPlugins(
                        {*ParseStaticPlugin(absl::StrCat(kPlugin, ":node:", dir_.Sub("csi.sock")))})
                    .ok());

    // Served as the daemon serves it: its routes on the project's server.
    server::Routes routes;
    service_ = NewManagerService(manager_.get(), routes);
    absl::StatusOr<std::unique_ptr<server::UnixGrpcServer>> server =
        server::UnixGrpcServer::Start(dir_.Sub("manager.sock"), routes);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = pb::PluginManager::NewStub(grpc::CreateChannel("unix:" + dir_.Sub("manager.sock"),
                                                           grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    server_->Shutdown(absl::Seconds(5));
    manager_.reset();
    plugin_.reset();
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return context;
  }

  pb::Plugin WaitHealthy() {
    pb::WaitForPluginRequest request;
    request.set_name(kPlugin);
    request.set_timeout_ms(30000);
    pb::Plugin plugin;
    grpc::Status status = stub_->WaitForPlugin(Context().get(), request, &plugin);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return plugin;
  }

  pb::MountVolumeRequest MountRequest(const std::string& alloc) {
    pb::MountVolumeRequest request;
    request.set_plugin(kPlugin);
    request.set_namespace_("default");
    request.set_volume_id("vol-1");
    request.set_remote_id("remote-1");
    request.set_alloc_id(alloc);
    *request.mutable_usage() = RwUsage();
    (*request.mutable_volume_context())["fs-name"] = "lustrefs";
    return request;
  }

  fakes::TempDir dir_;
  base::FakeClock clock_;
  fakes::FakeNode mounts_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<fakes::FakePlugin> plugin_;
  std::unique_ptr<Manager> manager_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<server::UnixGrpcServer> server_;
  std::unique_ptr<pb::PluginManager::Stub> stub_;
};

// Every method of the API is routed, and to the workers: each may wait on
// a plugin or the store.
TEST(ManagerServiceRoutesTest, EveryMethodIsRoutedToTheWorkers) {
  server::Routes routes;
  std::unique_ptr<grpc::Service> service = NewManagerService(nullptr, routes);
  ASSERT_TRUE(routes.status().ok()) << routes.status();
  const google::protobuf::ServiceDescriptor* api =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          pb::PluginManager::service_full_name());
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(static_cast<int>(routes.routes().size()), api->method_count());
  for (const server::Route& route : routes.routes()) {
    EXPECT_EQ(route.dispatch, server::Dispatch::kWorker) << route.path;
  }
}

TEST_F(ManagerServiceTest, PluginsAndNodeInfo) {
  pb::Plugin waited = WaitHealthy();
  EXPECT_TRUE(waited.healthy());
  EXPECT_EQ(waited.type(), pb::PLUGIN_TYPE_NODE);

  pb::ListPluginsResponse list;
  ASSERT_TRUE(stub_->ListPlugins(Context().get(), pb::ListPluginsRequest(), &list).ok());
  ASSERT_EQ(list.plugins_size(), 1);
  const pb::Plugin& p = list.plugins(0);
  EXPECT_EQ(p.name(), kPlugin);
  EXPECT_EQ(p.source(), pb::PLUGIN_SOURCE_STATIC);
  EXPECT_EQ(p.endpoint(), dir_.Sub("csi.sock"));
  EXPECT_EQ(p.health_reason(), "healthy");
  EXPECT_EQ(p.node_id(), "i-123");
  EXPECT_EQ(p.last_fingerprint_unix_ms(), absl::ToUnixMillis(clock_.Now()));
  EXPECT_THAT(p.node_capabilities(), ElementsAre("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"));
  EXPECT_EQ(p.accessible_topology().segments().at("zone"), "z1");

  pb::ListPluginsRequest controllers;
  controllers.set_type(pb::PLUGIN_TYPE_CONTROLLER);
  pb::ListPluginsResponse none;
  ASSERT_TRUE(stub_->ListPlugins(Context().get(), controllers, &none).ok());
  EXPECT_EQ(none.plugins_size(), 0);

  pb::NodeInfo info;
  ASSERT_TRUE(stub_->GetNodeInfo(Context().get(), pb::GetNodeInfoRequest(), &info).ok());
  EXPECT_EQ(info.node_name(), "worker-1");
  ASSERT_EQ(info.drivers_size(), 1);
  EXPECT_EQ(info.drivers(0).name(), kPlugin);
  EXPECT_EQ(info.drivers(0).node_id(), "i-123");
  EXPECT_THAT(info.drivers(0).topology_keys(), ElementsAre("zone"));
  EXPECT_TRUE(info.drivers(0).available());
}

TEST_F(ManagerServiceTest, WaitForPluginErrors) {
  pb::WaitForPluginRequest request;
  pb::Plugin plugin;
  grpc::Status status = stub_->WaitForPlugin(Context().get(), request, &plugin);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  request.set_name("missing.csi.test");
  request.set_timeout_ms(0);
  status = stub_->WaitForPlugin(Context().get(), request, &plugin);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("is not registered"));
  request.set_type(static_cast<pb::PluginType>(42));
  status = stub_->WaitForPlugin(Context().get(), request, &plugin);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ManagerServiceTest, MountLifecycle) {
  WaitHealthy();
  pb::MountVolumeResponse mounted;
  grpc::Status status = stub_->MountVolume(Context().get(), MountRequest("a1"), &mounted);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(mounted.mount().staged());
  EXPECT_EQ(mounted.mount().target(),
            "/mnt/csi/fake.csi.test/per-alloc/a1/vol-1/rw-file-system-multi-node-multi-writer");
  EXPECT_EQ(plugin_->PublishRequests()[0].volume_context().at("fs-name"), "lustrefs");

  pb::HasMountRequest has;
  has.set_plugin(kPlugin);
  *has.mutable_mount() = mounted.mount();
  pb::HasMountResponse has_response;
  ASSERT_TRUE(stub_->HasMount(Context().get(), has, &has_response).ok());
  EXPECT_TRUE(has_response.mounted());

  pb::ListClaimsResponse claims;
  ASSERT_TRUE(stub_->ListClaims(Context().get(), pb::ListClaimsRequest(), &claims).ok());
  ASSERT_EQ(claims.claims_size(), 1);
  const pb::Claim& claim = claims.claims(0);
  EXPECT_EQ(claim.plugin(), kPlugin);
  EXPECT_EQ(claim.alloc_id(), "a1");
  EXPECT_EQ(claim.remote_id(), "remote-1");
  EXPECT_EQ(claim.state(), "mounted");
  EXPECT_EQ(claim.usage().SerializeAsString(), RwUsage().SerializeAsString());
  EXPECT_EQ(claim.created_unix_ms(), absl::ToUnixMillis(clock_.Now()));

  pb::UnmountVolumeRequest unmount;
  unmount.set_plugin(kPlugin);
  unmount.set_namespace_("default");
  unmount.set_volume_id("vol-1");
  unmount.set_alloc_id("a1");
  *unmount.mutable_usage() = RwUsage();
  pb::UnmountVolumeResponse unmounted;
  ASSERT_TRUE(stub_->UnmountVolume(Context().get(), unmount, &unmounted).ok());
  EXPECT_TRUE(unmounted.unstaged());
  ASSERT_TRUE(stub_->HasMount(Context().get(), has, &has_response).ok());
  EXPECT_FALSE(has_response.mounted());
}

// A plugin that does not answer: the mount is answered by the manager,
// before the caller's deadline, with what it was waiting for, instead of
// the caller's transport giving up with nothing (and the manager going on
// with its retries for minutes, holding the volume).
TEST_F(ManagerServiceTest, AMountIsAnsweredBeforeTheCallersDeadline) {
  WaitHealthy();
  plugin_->SetHang("NodeStageVolume", true);
  grpc::ClientContext context;
  const absl::Time start = absl::Now();
  // (Answered 1 s before it: margin enough on a loaded machine.)
  context.set_deadline(absl::ToChronoTime(start + absl::Seconds(10)));
  pb::MountVolumeResponse mounted;
  grpc::Status status = stub_->MountVolume(&context, MountRequest("a1"), &mounted);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("mounting"));
  EXPECT_LT(took, absl::Seconds(10));
  EXPECT_GE(took, absl::Milliseconds(8500));
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 1) << "retried past the caller's deadline";

  // The volume is not held: the next mount goes through once the plugin
  // answers.
  plugin_->SetHang("NodeStageVolume", false);
  status = stub_->MountVolume(Context().get(), MountRequest("a2"), &mounted);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(ManagerServiceTest, DrainOverTheApi) {
  WaitHealthy();
  pb::MountVolumeResponse mounted;
  ASSERT_TRUE(stub_->MountVolume(Context().get(), MountRequest("a1"), &mounted).ok());
  ASSERT_TRUE(stub_->MountVolume(Context().get(), MountRequest("a2"), &mounted).ok());
  pb::DrainResponse drained;
  ASSERT_TRUE(stub_->Drain(Context().get(), pb::DrainRequest(), &drained).ok());
  EXPECT_EQ(drained.unmounted(), 2);
  EXPECT_EQ(drained.errors_size(), 0);
  EXPECT_TRUE(mounts_.mounts().empty());
}

struct ErrorCase {
  std::string name;
  std::function<void(pb::MountVolumeRequest&, fakes::FakePlugin&)> tweak;
  grpc::StatusCode code;
  std::string message;
};

class ManagerServiceErrorTest : public ManagerServiceTest,
                                public ::testing::WithParamInterface<ErrorCase> {};

TEST_P(ManagerServiceErrorTest, StatusesCarryTheirCode) {
  WaitHealthy();
  pb::MountVolumeRequest request = MountRequest("a1");
  GetParam().tweak(request, *plugin_);
  pb::MountVolumeResponse response;
  grpc::Status status = stub_->MountVolume(Context().get(), request, &response);
  EXPECT_EQ(status.error_code(), GetParam().code) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ManagerServiceErrorTest,
    ::testing::Values(
        ErrorCase{"NoPlugin",
                  [](pb::MountVolumeRequest& r, fakes::FakePlugin&) { r.clear_plugin(); },
                  grpc::StatusCode::INVALID_ARGUMENT, "plugin is empty"},
        ErrorCase{"UnknownPlugin",
                  [](pb::MountVolumeRequest& r, fakes::FakePlugin&) { r.set_plugin("x.csi.test"); },
                  grpc::StatusCode::NOT_FOUND, "no node plugin named x.csi.test"},
        ErrorCase{"NoUsage", [](pb::MountVolumeRequest& r, fakes::FakePlugin&) { r.clear_usage(); },
                  grpc::StatusCode::INVALID_ARGUMENT, "attachment mode"},
        ErrorCase{"BadAccessMode",
                  [](pb::MountVolumeRequest& r, fakes::FakePlugin&) {
                    r.mutable_usage()->set_access_mode(static_cast<pb::AccessMode>(99));
                  },
                  grpc::StatusCode::INVALID_ARGUMENT, "usage.access_mode"},
        ErrorCase{"NoAlloc",
                  [](pb::MountVolumeRequest& r, fakes::FakePlugin&) { r.clear_alloc_id(); },
                  grpc::StatusCode::INVALID_ARGUMENT, "alloc id is empty"},
        ErrorCase{"PluginFails",
                  [](pb::MountVolumeRequest&, fakes::FakePlugin& plugin) {
                    plugin.FailNext("NodeStageVolume",
                                    grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "denied"));
                  },
                  grpc::StatusCode::PERMISSION_DENIED, "NodeStageVolume: denied"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(ManagerProtoTest, UsageRoundTrips) {
  for (pb::AttachmentMode attachment :
       {pb::ATTACHMENT_MODE_FILE_SYSTEM, pb::ATTACHMENT_MODE_BLOCK_DEVICE}) {
    for (int access = pb::ACCESS_MODE_SINGLE_NODE_READER_ONLY;
         access <= pb::ACCESS_MODE_MULTI_NODE_MULTI_WRITER; ++access) {
      pb::Usage usage;
      usage.set_read_only(access % 2 == 0);
      usage.set_attachment_mode(attachment);
      usage.set_access_mode(static_cast<pb::AccessMode>(access));
      usage.add_mount_flags("a");
      absl::StatusOr<VolumeUsage> plain = FromProto(usage);
      ASSERT_TRUE(plain.ok()) << plain.status();
      EXPECT_TRUE(UsageName(*plain).ok());
      EXPECT_EQ(ToProto(*plain).SerializeAsString(), usage.SerializeAsString());
    }
  }
  pb::Usage bad;
  bad.set_attachment_mode(static_cast<pb::AttachmentMode>(7));
  EXPECT_EQ(FromProto(bad).status().code(), absl::StatusCode::kInvalidArgument);
  pb::Usage bad_access;
  bad_access.set_attachment_mode(pb::ATTACHMENT_MODE_FILE_SYSTEM);
  bad_access.set_access_mode(static_cast<pb::AccessMode>(99));
  EXPECT_EQ(FromProto(bad_access).status().message(), "usage.access_mode: unknown value 99");
}

TEST(ManagerProtoTest, PluginSourceAndTypes) {
  PluginStatus status;
  status.record.name = "p";
  status.record.type = PluginType::kMonolith;
  status.record.origin = PluginOrigin::kRegistrationDir;
  EXPECT_EQ(ToProto(status).source(), pb::PLUGIN_SOURCE_REGISTRATION_DIR);
  EXPECT_EQ(ToProto(status).type(), pb::PLUGIN_TYPE_MONOLITH);
  EXPECT_EQ(ToProto(status).last_fingerprint_unix_ms(), 0);
  status.record.restored = true;
  EXPECT_EQ(ToProto(status).source(), pb::PLUGIN_SOURCE_RESTORED);
  EXPECT_FALSE(FromProto(pb::PLUGIN_TYPE_UNSPECIFIED)->has_value());
  EXPECT_EQ(**FromProto(pb::PLUGIN_TYPE_CONTROLLER), PluginType::kController);
}

}  // namespace
}  // namespace lustre_csi::csimanager
