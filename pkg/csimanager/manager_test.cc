#include "pkg/csimanager/manager.h"

#include <sys/stat.h>

#include <functional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/base/wait_until.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/testing/fake_node.h"
#include "pkg/csimanager/testing/fake_plugin.h"
#include "pkg/csimanager/testing/test_util.h"
#include "pkg/server/metrics.h"
#include "pkg/volume/linux/linux_syscalls.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kRoot[] = "/var/lib/lustre-csi/mounts";

absl::Time Guard() { return absl::Now() + absl::Seconds(30); }  // hang guard, not a measurement

VolumeUsage Usage() {
  VolumeUsage usage;
  usage.attachment_mode = AttachmentMode::kFileSystem;
  usage.access_mode = AccessMode::kMultiNodeMultiWriter;
  return usage;
}

MountRequest Mount(const std::string& alloc, const std::string& volume = "vol-1") {
  MountRequest request;
  request.namespace_ = "default";
  request.volume_id = volume;
  request.remote_id = "remote-" + volume;
  request.alloc_id = alloc;
  request.usage = Usage();
  return request;
}

UnmountRequest Unmount(const std::string& alloc, const std::string& volume = "vol-1") {
  UnmountRequest request;
  request.namespace_ = "default";
  request.volume_id = volume;
  request.alloc_id = alloc;
  request.usage = Usage();
  return request;
}

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reg_dir_ = dir_.Sub("registry");
    ASSERT_EQ(::mkdir(reg_dir_.c_str(), 0755), 0);
    OpenStore();
  }

  void TearDown() override {
    manager_.reset();
    plugins_.clear();
  }

  void OpenStore() {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(dir_.Sub("state.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // A node plugin registering through the registration directory.
  fakes::FakePlugin* AddPlugin(const std::string& name, const std::string& tag = "",
                               std::function<void(fakes::FakePluginConfig&)> tweak = {}) {
    fakes::FakePluginConfig config;
    config.name = name;
    config.stage_unstage = true;
    config.node_id = "node-" + name;
    config.max_volumes = 8;
    config.topology = {{"topology.example.com/zone", "z1"}};
    std::string key = name + tag;
    config.registration_endpoint = dir_.Sub(key + ".csi.sock");
    if (tweak) tweak(config);
    plugins_[key] = fakes::FakePlugin::Start(
        {reg_dir_ + "/" + key + "-reg.sock", dir_.Sub(key + ".csi.sock")}, config, &mounts_);
    return plugins_[key].get();
  }

  void StartManager(absl::Duration grace = absl::Seconds(30)) {
    ManagerOptions options;
    options.mount_root = kRoot;
    options.registration_dir = reg_dir_;
    options.registration.retry_interval = absl::Milliseconds(10);
    options.node_name = "worker-1";
    options.shutdown_grace = grace;
    ManagerDeps deps;
    deps.store = store_.get();
    deps.mounts = mounts_.inspector();
    deps.sys = sys_.get();
    deps.clock = &clock_;
    metrics_ = std::make_unique<server::MetricsRegistry>();
    deps.metrics = metrics_.get();
    manager_ = std::make_unique<Manager>(options, deps);
    absl::StatusOr<StartReport> report = manager_->Start();
    ASSERT_TRUE(report.ok()) << report.status();
    report_ = *report;
  }

  void Restart() {
    manager_.reset();
    store_.reset();
    OpenStore();
    StartManager();
  }

  fakes::TempDir dir_;
  // The registration directory holds real sockets.
  std::unique_ptr<volume::Syscalls> sys_ = volume::NewLinuxSyscalls();
  std::string reg_dir_;
  base::FakeClock clock_;  // never advanced: each instance fingerprints once, at start
  fakes::FakeNode mounts_;
  std::unique_ptr<StateStore> store_;
  std::map<std::string, std::unique_ptr<fakes::FakePlugin>> plugins_;
  std::unique_ptr<server::MetricsRegistry> metrics_;  // outlives manager_
  std::unique_ptr<Manager> manager_;
  StartReport report_;
};

TEST_F(ManagerTest, DiscoversFingerprintsAndReports) {
  AddPlugin("a.csi.test");
  StartManager();
  fakes::FakePluginConfig monolith;
  monolith.name = "m.csi.test";
  monolith.controller_service = true;
  auto m = fakes::FakePlugin::Start({dir_.Sub("m.sock")}, monolith);
  ASSERT_TRUE(
      manager_->SetStaticPlugins({*ParseStaticPlugin("m.csi.test:monolith:" + dir_.Sub("m.sock"))})
          .ok());

  absl::StatusOr<PluginStatus> a =
      manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->node_id, "node-a.csi.test");
  EXPECT_TRUE(a->stage_unstage);
  absl::StatusOr<PluginStatus> mc =
      manager_->WaitForPlugin(PluginType::kController, "m.csi.test", Guard());
  ASSERT_TRUE(mc.ok()) << mc.status();
  EXPECT_THAT(mc->controller_capabilities, ElementsAre("CREATE_DELETE_VOLUME"));

  std::vector<PluginStatus> all = manager_->ListPlugins();
  ASSERT_THAT(all, SizeIs(2));
  EXPECT_EQ(all[0].record.name, "a.csi.test");
  EXPECT_EQ(all[0].record.origin, PluginOrigin::kRegistrationDir);
  EXPECT_EQ(all[1].record.origin, PluginOrigin::kStatic);
  EXPECT_THAT(manager_->ListPlugins(PluginType::kController), SizeIs(1));
  EXPECT_THAT(manager_->ListPlugins(PluginType::kNode), SizeIs(2));

  NodeInfo info = manager_->GetNodeInfo();
  EXPECT_EQ(info.node_name, "worker-1");
  ASSERT_THAT(info.drivers, SizeIs(2));
  EXPECT_EQ(info.drivers[0].name, "a.csi.test");
  EXPECT_EQ(info.drivers[0].node_id, "node-a.csi.test");
  EXPECT_EQ(info.drivers[0].allocatable_count, 8);
  EXPECT_THAT(info.drivers[0].topology_keys, ElementsAre("topology.example.com/zone"));
  EXPECT_TRUE(info.drivers[0].available);
  EXPECT_EQ(info.drivers[0].status, "available");
  EXPECT_TRUE(manager_->Health().ok());
  m->Stop();
}

TEST_F(ManagerTest, WaitForPluginWaitsForRegistration) {
  StartManager();
  absl::Status early =
      manager_->WaitForPlugin(PluginType::kNode, "late.csi.test", absl::InfinitePast()).status();
  EXPECT_EQ(early.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(early.message()), HasSubstr("is not registered"));
  std::thread later([&] { AddPlugin("late.csi.test"); });
  absl::StatusOr<PluginStatus> status =
      manager_->WaitForPlugin(PluginType::kNode, "late.csi.test", Guard());
  later.join();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->healthy);
}

TEST_F(ManagerTest, UnhealthyPluginIsReportedWhileWaiting) {
  AddPlugin("sick.csi.test", "", [](fakes::FakePluginConfig& c) { c.ready = false; });
  StartManager();
  // Wait for its first fingerprint, then ask with a deadline already past.
  ASSERT_TRUE(base::WaitUntil([&] {
    std::vector<PluginStatus> plugins = manager_->ListPlugins();
    return plugins.size() == 1 && plugins[0].fingerprints > 0;
  }));
  absl::Status status =
      manager_->WaitForPlugin(PluginType::kNode, "sick.csi.test", absl::InfinitePast()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(status.message()), HasSubstr("not ready"));
  NodeInfo info = manager_->GetNodeInfo();
  ASSERT_THAT(info.drivers, SizeIs(1));
  EXPECT_FALSE(info.drivers[0].available);
  EXPECT_THAT(info.drivers[0].status, HasSubstr("not ready"));
}

TEST_F(ManagerTest, MountsThroughTheActivePluginAndCounts) {
  fakes::FakePlugin* plugin = AddPlugin("a.csi.test");
  StartManager();
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  absl::StatusOr<MountInfo> info = manager_->MountVolume("a.csi.test", Mount("alloc-1"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->target, std::string(kRoot) +
                              "/a.csi.test/per-alloc/alloc-1/vol-1/"
                              "rw-file-system-multi-node-multi-writer");
  EXPECT_EQ(info->source, std::string(kRoot) +
                              "/a.csi.test/staging/default/vol-1/"
                              "rw-file-system-multi-node-multi-writer");
  EXPECT_TRUE(*manager_->HasMount("a.csi.test", *info));
  EXPECT_EQ(plugin->Calls("NodePublishVolume"), 1);
  EXPECT_THAT(manager_->ListClaims(), SizeIs(1));
  EXPECT_THAT(manager_->ListClaims("other"), IsEmpty());

  EXPECT_EQ(manager_->MountVolume("nope.csi.test", Mount("alloc-1")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_->UnmountVolume("nope.csi.test", Unmount("alloc-1")).status().code(),
            absl::StatusCode::kNotFound);

  std::string metrics = metrics_->Render();
  EXPECT_THAT(metrics, HasSubstr("\nlustre_csi_plugin_manager_plugins{health=\"healthy\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nlustre_csi_plugin_manager_operations_total{operation=\"mount\","
                                 "result=\"OK\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nlustre_csi_plugin_manager_operations_total{operation=\"mount\","
                                 "result=\"NOT_FOUND\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nlustre_csi_plugin_manager_claims{state=\"mounted\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nlustre_csi_plugin_manager_operation_duration_seconds_count{"
                                 "operation=\"mount\"} 2\n"));

  absl::StatusOr<UnmountResult> result = manager_->UnmountVolume("a.csi.test", Unmount("alloc-1"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->unstaged);
  EXPECT_FALSE(*manager_->HasMount("a.csi.test", *info));
  EXPECT_THAT(manager_->ListClaims(), IsEmpty());
}

// The Nomad bug, end to end: after a restart of the manager, one
// allocation leaving must not unstage a volume another still uses.
TEST_F(ManagerTest, RestartRestoresClaimsAndUsageCounts_NomadUnstageBug) {
  fakes::FakePlugin* plugin = AddPlugin("a.csi.test");
  StartManager();
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  ASSERT_TRUE(manager_->MountVolume("a.csi.test", Mount("alloc-1")).ok());
  ASSERT_TRUE(manager_->MountVolume("a.csi.test", Mount("alloc-2")).ok());

  Restart();
  EXPECT_EQ(report_.plugins_restored, 1);
  ASSERT_EQ(report_.volumes.count("a.csi.test"), 1u);
  const RestoreReport& restored = report_.volumes["a.csi.test"];
  EXPECT_EQ(restored.claims, 2);
  EXPECT_EQ(restored.mounted, 2);
  EXPECT_THAT(restored.problems, IsEmpty());
  ASSERT_THAT(restored.usage_counts, SizeIs(1));
  EXPECT_EQ(restored.usage_counts.begin()->second, 2);
  EXPECT_THAT(manager_->ListClaims("a.csi.test"), SizeIs(2));

  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  absl::StatusOr<UnmountResult> first = manager_->UnmountVolume("a.csi.test", Unmount("alloc-1"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->unstaged);
  EXPECT_EQ(plugin->Calls("NodeUnstageVolume"), 0);
  absl::StatusOr<UnmountResult> last = manager_->UnmountVolume("a.csi.test", Unmount("alloc-2"));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->unstaged);
}

TEST_F(ManagerTest, UpgradeOverlapUsesTheNewestInstance) {
  fakes::FakePlugin* old_plugin = AddPlugin("p.csi.test", "-v1");
  StartManager();
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "p.csi.test", Guard()).ok());
  // The newer registration socket wins; make the order certain.
  ASSERT_TRUE(fakes::MakeOlder(reg_dir_ + "/p.csi.test-v1-reg.sock").ok());
  fakes::FakePlugin* new_plugin = AddPlugin("p.csi.test", "-v2");
  ASSERT_TRUE(new_plugin->AwaitRegistrationStatuses(1));
  ASSERT_TRUE(new_plugin->AwaitCalls("NodeGetCapabilities", 1));
  std::vector<PluginStatus> listed = manager_->ListPlugins();
  ASSERT_THAT(listed, SizeIs(2));
  int standby = 0;
  for (const PluginStatus& s : listed) {
    if (absl::StrContains(s.health_reason, "standby")) ++standby;
  }
  EXPECT_EQ(standby, 1);
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "p.csi.test", Guard()).ok());
  ASSERT_TRUE(manager_->MountVolume("p.csi.test", Mount("alloc-1")).ok());
  EXPECT_EQ(new_plugin->Calls("NodePublishVolume"), 1);
  EXPECT_EQ(old_plugin->Calls("NodePublishVolume"), 0);
}

TEST_F(ManagerTest, DrainUnmountsEverything) {
  AddPlugin("a.csi.test");
  StartManager();
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  ASSERT_TRUE(manager_->MountVolume("a.csi.test", Mount("alloc-1")).ok());
  ASSERT_TRUE(manager_->MountVolume("a.csi.test", Mount("alloc-2", "vol-2")).ok());
  absl::StatusOr<DrainResult> drained = manager_->Drain();
  ASSERT_TRUE(drained.ok()) << drained.status();
  EXPECT_EQ(drained->unmounted, 2);
  EXPECT_THAT(drained->errors, IsEmpty());
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_THAT(*store_->ListClaims(), IsEmpty());
}

TEST_F(ManagerTest, ShutdownKeepsMountsAndRefusesNewWork) {
  AddPlugin("a.csi.test");
  StartManager();
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  ASSERT_TRUE(manager_->MountVolume("a.csi.test", Mount("alloc-1")).ok());
  manager_->Shutdown(absl::Seconds(30));
  EXPECT_THAT(mounts_.mounts(), SizeIs(2));  // staging + target
  EXPECT_THAT(*store_->ListClaims(), SizeIs(1));
  EXPECT_EQ(manager_->MountVolume("a.csi.test", Mount("alloc-2")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(manager_->Health().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(ManagerTest, ShutdownWithUnmountAllUnmounts) {
  AddPlugin("a.csi.test");
  StartManager();
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  ASSERT_TRUE(manager_->MountVolume("a.csi.test", Mount("alloc-1")).ok());
  manager_->Shutdown(absl::Seconds(30), /*unmount_all=*/true);
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_THAT(*store_->ListClaims(), IsEmpty());
}

TEST_F(ManagerTest, ShutdownCancelsOperationsAfterTheGracePeriod) {
  fakes::FakePlugin* plugin = AddPlugin("a.csi.test");
  StartManager(/*grace=*/absl::Milliseconds(20));
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  plugin->SetHang("NodePublishVolume", true);
  absl::Status status;
  std::thread mount([&] { status = manager_->MountVolume("a.csi.test", Mount("a1")).status(); });
  ASSERT_TRUE(plugin->AwaitCalls("NodePublishVolume", 1));
  manager_->Shutdown(absl::Milliseconds(20));
  mount.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  plugin->SetHang("NodePublishVolume", false);
}

TEST_F(ManagerTest, DeregisteredPluginStopsBeingActive) {
  fakes::FakePlugin* plugin = AddPlugin("a.csi.test");
  StartManager();
  ASSERT_TRUE(manager_->WaitForPlugin(PluginType::kNode, "a.csi.test", Guard()).ok());
  ASSERT_TRUE(manager_->MountVolume("a.csi.test", Mount("alloc-1")).ok());
  plugin->Stop();
  ASSERT_TRUE(base::WaitUntil([&] { return manager_->ListPlugins().empty(); }));
  // Its claims remain; unmounting waits for the plugin to come back.
  EXPECT_THAT(manager_->ListClaims(), SizeIs(1));
  EXPECT_EQ(manager_->UnmountVolume("a.csi.test", Unmount("alloc-1")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(manager_->GetNodeInfo().drivers.empty());
}

}  // namespace
}  // namespace lustre_csi::csimanager
