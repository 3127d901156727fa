#include "pkg/csimanager/internal/registration_watcher.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/base/wait_until.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/testing/fake_plugin.h"
#include "pkg/csimanager/testing/test_util.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/syscalls_wrapper.h"
#include "pkg/volume/testing/fake_dir_watch.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Phase = RegistrationWatcher::SocketState::Phase;

// The real file system, with the directory's events coming from the test.
class SteeredEvents : public volume::SyscallsWrapper {
 public:
  explicit SteeredEvents(volume::Syscalls* real) : SyscallsWrapper(real) {}
  absl::StatusOr<std::unique_ptr<volume::DirWatch>> WatchDir(const std::string&) override {
    return std::unique_ptr<volume::DirWatch>(new volume::FakeDirWatch(events));
  }
  std::shared_ptr<volume::FakeDirEvents> events = std::make_shared<volume::FakeDirEvents>();
};

class RegistrationWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reg_dir_ = dir_.Sub("plugins_registry");
    ASSERT_EQ(::mkdir(reg_dir_.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir_.Sub("plugins").c_str(), 0755), 0);
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(dir_.Sub("state.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    registry_ = std::make_unique<Registry>(store_.get(), &clock_);
  }

  void TearDown() override {
    if (watcher_) watcher_->Stop();
    plugins_.clear();
  }

  // A plugin whose registrar listens in the registration directory and whose
  // CSI socket lives elsewhere, like a node-driver-registrar sidecar.
  fakes::FakePlugin* AddPlugin(const std::string& name,
                               std::function<void(fakes::FakePluginConfig&)> tweak = {}) {
    fakes::FakePluginConfig config;
    config.name = name;
    config.registration_endpoint = CsiSocket(name);
    config.supported_versions = {"1.0.0", "1.5.0"};
    if (tweak) tweak(config);
    plugins_[name] = fakes::FakePlugin::Start({RegSocket(name), CsiSocket(name)}, config);
    return plugins_[name].get();
  }

  std::string RegSocket(const std::string& name) { return reg_dir_ + "/" + name + "-reg.sock"; }
  std::string CsiSocket(const std::string& name) { return dir_.Sub("plugins/" + name + ".sock"); }

  void StartWatcher(absl::Duration call_timeout = absl::Seconds(30)) {
    RegistrationWatcherOptions options;
    options.directory = reg_dir_;
    options.call_timeout = call_timeout;
    options.retry_interval = absl::Seconds(1);
    watcher_ = std::make_unique<RegistrationWatcher>(registry_.get(), sys_, &clock_, options);
    ASSERT_TRUE(watcher_->Start().ok());
  }

  bool Registered(const std::string& id) { return registry_->Get(id).has_value(); }

  Phase PhaseOf(const std::string& path) {
    auto sockets = watcher_->Sockets();
    auto it = sockets.find(path);
    return it == sockets.end() ? Phase::kPending : it->second.phase;
  }

  fakes::TempDir dir_;
  std::string reg_dir_;
  // Real sockets in a temporary directory, watched with inotify; the tests
  // that steer the events themselves swap in a FakeDirWatch.
  std::unique_ptr<volume::Syscalls> linux_ = volume::NewLinuxSyscalls();
  SteeredEvents steered_{linux_.get()};
  volume::Syscalls* sys_ = linux_.get();
  base::FakeClock clock_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<Registry> registry_;
  std::map<std::string, std::unique_ptr<fakes::FakePlugin>> plugins_;
  std::unique_ptr<RegistrationWatcher> watcher_;
};

TEST_F(RegistrationWatcherTest, FindsExistingSocketsAtStart) {
  fakes::FakePlugin* plugin = AddPlugin("early.csi.test");
  StartWatcher();
  ASSERT_TRUE(plugin->AwaitRegistrationStatuses(1));
  EXPECT_TRUE(plugin->RegistrationStatuses()[0].plugin_registered());
  EXPECT_EQ(plugin->RegistrationStatuses()[0].error(), "");
  std::optional<PluginRecord> record = registry_->Get(RegSocket("early.csi.test"));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->name, "early.csi.test");
  EXPECT_EQ(record->type, PluginType::kNode);
  EXPECT_EQ(record->origin, PluginOrigin::kRegistrationDir);
  EXPECT_EQ(record->endpoint, CsiSocket("early.csi.test"));
  EXPECT_THAT(record->supported_versions, ElementsAre("1.0.0", "1.5.0"));
  struct stat st;
  ASSERT_EQ(::lstat(RegSocket("early.csi.test").c_str(), &st), 0);
  EXPECT_EQ(record->registered_at, absl::TimeFromTimespec(st.st_mtim));
  EXPECT_TRUE(
      base::WaitUntil([&] { return PhaseOf(RegSocket("early.csi.test")) == Phase::kRegistered; }));
  // Persisted through the registry.
  EXPECT_EQ(store_->ListPlugins()->size(), 1u);
}

TEST_F(RegistrationWatcherTest, NewSocketsRegisterAndRemovedOnesDeregister) {
  StartWatcher();
  fakes::FakePlugin* plugin = AddPlugin("late.csi.test");
  ASSERT_TRUE(plugin->AwaitRegistrationStatuses(1));
  ASSERT_TRUE(base::WaitUntil([&] { return Registered(RegSocket("late.csi.test")); }));
  EXPECT_EQ(registry_->Active("late.csi.test", PluginType::kNode)->endpoint,
            CsiSocket("late.csi.test"));
  plugin->Stop();  // removes its sockets
  ASSERT_TRUE(base::WaitUntil([&] { return !Registered(RegSocket("late.csi.test")); }));
  EXPECT_THAT(*store_->ListPlugins(), IsEmpty());
  EXPECT_TRUE(watcher_->Sockets().empty());
}

TEST_F(RegistrationWatcherTest, EmptyEndpointMeansTheRegistrationSocket) {
  AddPlugin("one.csi.test", [](fakes::FakePluginConfig& c) { c.registration_endpoint = ""; });
  StartWatcher();
  ASSERT_TRUE(base::WaitUntil([&] { return Registered(RegSocket("one.csi.test")); }));
  EXPECT_EQ(registry_->Get(RegSocket("one.csi.test"))->endpoint, RegSocket("one.csi.test"));
}

struct RejectCase {
  std::string name;
  std::function<void(fakes::FakePluginConfig&)> tweak;
  std::string error;
};

class RegistrationRejectTest : public RegistrationWatcherTest,
                               public ::testing::WithParamInterface<RejectCase> {};

TEST_P(RegistrationRejectTest, TellsThePluginWhy) {
  fakes::FakePlugin* plugin = AddPlugin("bad.csi.test", GetParam().tweak);
  StartWatcher();
  ASSERT_TRUE(plugin->AwaitRegistrationStatuses(1));
  pluginregistration::RegistrationStatus status = plugin->RegistrationStatuses()[0];
  EXPECT_FALSE(status.plugin_registered());
  EXPECT_THAT(status.error(), HasSubstr(GetParam().error));
  EXPECT_TRUE(registry_->List().empty());
  ASSERT_TRUE(
      base::WaitUntil([&] { return PhaseOf(RegSocket("bad.csi.test")) == Phase::kRejected; }));
  // Not asked again.
  EXPECT_EQ(plugin->Calls("GetInfo"), 1);
}

INSTANTIATE_TEST_SUITE_P(
    Table, RegistrationRejectTest,
    ::testing::Values(
        RejectCase{"DevicePlugin",
                   [](fakes::FakePluginConfig& c) { c.registration_type = "DevicePlugin"; },
                   "unsupported plugin type \"DevicePlugin\""},
        RejectCase{"NoV1",
                   [](fakes::FakePluginConfig& c) {
                     c.supported_versions = {"0.3.0", "2.0"};
                   },
                   "is a CSI 1.x version"},
        RejectCase{"NoVersions", [](fakes::FakePluginConfig& c) { c.supported_versions = {}; },
                   "is a CSI 1.x version"},
        RejectCase{"BadName", [](fakes::FakePluginConfig& c) { c.registration_name = "bad name!"; },
                   "invalid plugin name"},
        RejectCase{"TcpEndpoint",
                   [](fakes::FakePluginConfig& c) { c.registration_endpoint = "tcp://1.2.3.4:5"; },
                   "only unix sockets are supported"}),
    [](const ::testing::TestParamInfo<RejectCase>& info) { return info.param.name; });

TEST_F(RegistrationWatcherTest, UnansweredSocketsAreRetriedOnTheClock) {
  fakes::FakePlugin* plugin = AddPlugin("slow.csi.test");
  plugin->FailNext("GetInfo", grpc::Status(grpc::StatusCode::UNAVAILABLE, "starting"), 2);
  StartWatcher();
  for (int attempt = 1; attempt <= 2; ++attempt) {
    // The worker asked, was refused and now sleeps on the clock: nothing
    // happens until time moves.
    ASSERT_TRUE(plugin->AwaitCalls("GetInfo", attempt));
    ASSERT_TRUE(clock_.AwaitSleepers(1)) << attempt;
    EXPECT_EQ(plugin->Calls("GetInfo"), attempt);
    EXPECT_EQ(watcher_->Sockets()[RegSocket("slow.csi.test")].phase, Phase::kPending);
    EXPECT_FALSE(Registered(RegSocket("slow.csi.test")));
    clock_.Advance(absl::Seconds(1));
  }
  ASSERT_TRUE(base::WaitUntil([&] { return Registered(RegSocket("slow.csi.test")); }));
  EXPECT_EQ(plugin->Calls("GetInfo"), 3);
  EXPECT_EQ(watcher_->Sockets()[RegSocket("slow.csi.test")].attempts, 3);
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Seconds(1), absl::Seconds(1)));
}

TEST_F(RegistrationWatcherTest, StopEndsARetryThatWaitsOnTheClock) {
  fakes::FakePlugin* plugin = AddPlugin("down.csi.test");
  plugin->FailNext("GetInfo", grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"), 100);
  StartWatcher();
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  watcher_->Stop();  // returns although the clock never moves
  EXPECT_EQ(plugin->Calls("GetInfo"), 1);
  EXPECT_EQ(clock_.sleepers(), 0);
}

TEST_F(RegistrationWatcherTest, LostEventsMeanARescan) {
  sys_ = &steered_;
  StartWatcher();
  ASSERT_TRUE(steered_.events->AwaitDrained());
  // Sockets appear, but their events are lost.
  fakes::FakePlugin* plugin = AddPlugin("unseen.csi.test");
  EXPECT_TRUE(watcher_->Sockets().empty());
  steered_.events->Push({volume::DirEvent::Kind::kOverflow, ""});
  ASSERT_TRUE(plugin->AwaitRegistrationStatuses(1));
  ASSERT_TRUE(base::WaitUntil([&] { return Registered(RegSocket("unseen.csi.test")); }));
  // Gone without an event, then a rescan forgets it.
  plugin->Stop();
  ASSERT_TRUE(steered_.events->AwaitDrained());
  EXPECT_TRUE(Registered(RegSocket("unseen.csi.test")));
  steered_.events->Push({volume::DirEvent::Kind::kOverflow, ""});
  ASSERT_TRUE(steered_.events->AwaitDrained());
  EXPECT_FALSE(Registered(RegSocket("unseen.csi.test")));
  EXPECT_TRUE(watcher_->Sockets().empty());
}

TEST_F(RegistrationWatcherTest, AnAddedEventForSomethingElseIsIgnored) {
  sys_ = &steered_;
  StartWatcher();
  ASSERT_TRUE(fakes::WriteFile(reg_dir_ + "/file.sock", "not a socket").ok());
  steered_.events->Push({volume::DirEvent::Kind::kAdded, "file.sock"});
  steered_.events->Push({volume::DirEvent::Kind::kAdded, "missing.sock"});
  ASSERT_TRUE(steered_.events->AwaitDrained());
  EXPECT_TRUE(watcher_->Sockets().empty());
}

TEST_F(RegistrationWatcherTest, TheDirectoryGoingAwayDeregistersEverything) {
  AddPlugin("a.csi.test");
  AddPlugin("b.csi.test");
  sys_ = &steered_;
  StartWatcher();
  ASSERT_TRUE(base::WaitUntil(
      [&] { return Registered(RegSocket("a.csi.test")) && Registered(RegSocket("b.csi.test")); }));
  steered_.events->Push({volume::DirEvent::Kind::kDirectoryGone, ""});
  ASSERT_TRUE(steered_.events->AwaitDrained());
  EXPECT_TRUE(registry_->List().empty());
  EXPECT_TRUE(watcher_->Sockets().empty());
}

TEST_F(RegistrationWatcherTest, ABrokenWatchStopsDiscoveryButNotTheWatcher) {
  sys_ = &steered_;
  StartWatcher();
  ASSERT_TRUE(steered_.events->AwaitDrained());
  EXPECT_EQ(steered_.events->WaitCalls(), 1);
  steered_.events->Break(absl::InternalError("inotify went away"));
  watcher_->Stop();  // the watching thread has ended or ends now; Stop returns
  // The watching thread did not keep asking a broken watch.
  EXPECT_EQ(steered_.events->WaitCalls(), 1);
}

TEST_F(RegistrationWatcherTest, ASymlinkToTheDirectoryIsWatched) {
  ASSERT_EQ(::symlink(reg_dir_.c_str(), dir_.Sub("registry-link").c_str()), 0);
  reg_dir_ = dir_.Sub("registry-link");
  AddPlugin("linked.csi.test");
  StartWatcher();
  ASSERT_TRUE(base::WaitUntil([&] { return Registered(RegSocket("linked.csi.test")); }));
  fakes::FakePlugin* late = AddPlugin("late.csi.test");
  ASSERT_TRUE(late->AwaitRegistrationStatuses(1));
  EXPECT_TRUE(late->RegistrationStatuses()[0].plugin_registered());
}

TEST_F(RegistrationWatcherTest, AFileIsNoDirectory) {
  ASSERT_TRUE(fakes::WriteFile(dir_.Sub("file"), "x").ok());
  RegistrationWatcherOptions options;
  options.directory = dir_.Sub("file");
  RegistrationWatcher watcher(registry_.get(), sys_, &clock_, options);
  EXPECT_EQ(watcher.Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(RegistrationWatcherTest, IgnoresFilesThatAreNotSockets) {
  ASSERT_TRUE(fakes::WriteFile(reg_dir_ + "/plain.sock", "not a socket").ok());
  fakes::FakePlugin* plugin = AddPlugin("real.csi.test");
  // A socket without the .sock suffix is ignored too.
  fakes::FakePluginConfig config;
  config.name = "unsuffixed.csi.test";
  auto unsuffixed = fakes::FakePlugin::Start({reg_dir_ + "/unsuffixed.socket"}, config);
  StartWatcher();
  ASSERT_TRUE(plugin->AwaitRegistrationStatuses(1));
  EXPECT_THAT(watcher_->Sockets(), ::testing::SizeIs(1));
  EXPECT_EQ(unsuffixed->Calls("GetInfo"), 0);
}

TEST_F(RegistrationWatcherTest, HungRegistrarDoesNotBlockOthers) {
  fakes::FakePlugin* hung = AddPlugin("hung.csi.test");
  hung->SetHang("GetInfo", true);
  // A deadline far beyond the test's own timeout: if Stop waited for it
  // rather than cancelling, the test would time out.
  StartWatcher(/*call_timeout=*/absl::Hours(1));
  ASSERT_TRUE(hung->AwaitCalls("GetInfo", 1));
  fakes::FakePlugin* good = AddPlugin("good.csi.test");
  ASSERT_TRUE(good->AwaitRegistrationStatuses(1));
  EXPECT_TRUE(Registered(RegSocket("good.csi.test")));
  EXPECT_FALSE(Registered(RegSocket("hung.csi.test")));
  // Stop cancels the hung call rather than waiting for its deadline.
  watcher_->Stop();
  hung->SetHang("GetInfo", false);
}

TEST_F(RegistrationWatcherTest, UpgradeOverlapResolvesToNewestSocket) {
  AddPlugin("p.csi.test", [&](fakes::FakePluginConfig& c) { c.registration_name = "p.csi.test"; });
  StartWatcher();
  ASSERT_TRUE(base::WaitUntil([&] { return Registered(RegSocket("p.csi.test")); }));
  // The new version's registrar appears under another socket name.
  fakes::FakePluginConfig config;
  config.name = "p.csi.test";
  config.registration_endpoint = CsiSocket("p-v2");
  // The newer registration socket wins; make the order certain.
  ASSERT_TRUE(fakes::MakeOlder(RegSocket("p.csi.test")).ok());
  auto v2 = fakes::FakePlugin::Start({reg_dir_ + "/p-v2-reg.sock", CsiSocket("p-v2")}, config);
  ASSERT_TRUE(base::WaitUntil([&] { return Registered(reg_dir_ + "/p-v2-reg.sock"); }));
  EXPECT_EQ(registry_->Active("p.csi.test", PluginType::kNode)->endpoint, CsiSocket("p-v2"));
  // The old one leaves; the new one stays active.
  plugins_["p.csi.test"]->Stop();
  ASSERT_TRUE(base::WaitUntil([&] { return !Registered(RegSocket("p.csi.test")); }));
  EXPECT_EQ(registry_->Active("p.csi.test", PluginType::kNode)->endpoint, CsiSocket("p-v2"));
  v2->Stop();
}

TEST_F(RegistrationWatcherTest, RestartForgetsRegistrationsWhoseSocketIsGone) {
  AddPlugin("stays.csi.test");
  AddPlugin("goes.csi.test");
  StartWatcher();
  ASSERT_TRUE(base::WaitUntil([&] {
    return Registered(RegSocket("stays.csi.test")) && Registered(RegSocket("goes.csi.test"));
  }));
  watcher_->Stop();
  watcher_.reset();
  plugins_["goes.csi.test"]->Stop();  // vanishes while the manager is down

  registry_ = std::make_unique<Registry>(store_.get(), &clock_);
  ASSERT_TRUE(registry_->Restore().ok());
  EXPECT_EQ(registry_->List().size(), 2u);
  StartWatcher();
  EXPECT_FALSE(Registered(RegSocket("goes.csi.test")));
  ASSERT_TRUE(base::WaitUntil([&] {
    std::optional<PluginRecord> r = registry_->Get(RegSocket("stays.csi.test"));
    return r.has_value() && !r->restored;
  }));
  EXPECT_EQ(store_->ListPlugins()->size(), 1u);
}

TEST_F(RegistrationWatcherTest, MissingDirectoryIsAnError) {
  RegistrationWatcherOptions options;
  options.directory = dir_.Sub("nope");
  RegistrationWatcher watcher(registry_.get(), sys_, &clock_, options);
  absl::Status status = watcher.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("does not exist"));
}

}  // namespace
}  // namespace lustre_csi::csimanager
