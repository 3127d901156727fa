// End-to-end: the real plugin manager (lustre-csi plugin-manager) with real
// plugins over real unix sockets and real mounts, in this test's private
// mount namespace: our node plugin found through a registration socket, and
// a small staging plugin; kill -9 of the manager between operations.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

namespace pb = ::lustre_csi::manager::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string StagingPluginPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir != nullptr ? srcdir : ".") + "/lustre_csi/e2e/staging-plugin";
}

// Runs `lustre-csi plugin-manager <args>` and returns its stdout.
std::string Cli(const std::vector<std::string>& args, int* exit_code) {
  std::string cmd;
  for (const std::string& part : BinaryCommand()) cmd += "'" + part + "' ";
  cmd += "plugin-manager";
  for (const std::string& a : args) cmd += " '" + a + "'";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class ManagerE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"lustre", "lustre/lustrefs", "registry", "mounts", "source"}) {
      ASSERT_EQ(mkdir(tmp_.Join(d).c_str(), 0755), 0) << d;
    }
    socket_ = tmp_.Join("pm.sock");
  }

  void TearDown() override {
    manager_.reset();
    for (auto& p : plugins_) p.reset();
  }

  void StartManager(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {BinaryPath(),
                                     "plugin-manager",
                                     "--endpoint=unix://" + socket_,
                                     "--state-file=" + tmp_.Join("state/pm.db"),
                                     "--mount-root=" + tmp_.Join("mounts"),
                                     "--registration-dir=" + tmp_.Join("registry"),
                                     "--fingerprint-period-seconds=1",
                                     "--node-name=node-1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    manager_ = std::make_unique<Subprocess>(argv, tmp_.Join("manager.log"));
    ASSERT_TRUE(WaitForSocket(socket_, absl::Seconds(20)).ok())
        << ReadFile(tmp_.Join("manager.log"));
    stub_ = pb::PluginManager::NewStub(UnixChannel(socket_));
  }

  void KillManager() {
    manager_->Signal(SIGKILL);
    manager_->Wait(absl::Seconds(10));
    manager_.reset();
  }

  void StartNodePlugin() {
    plugins_.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "node", "--nodeid=node-1", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + tmp_.Join("node.sock"),
                                 "--plugin-registration-dir=" + tmp_.Join("registry")},
        tmp_.Join("node.log")));
    ASSERT_TRUE(WaitForSocket(tmp_.Join("node.sock"), absl::Seconds(10)).ok());
  }

  pb::Plugin Wait(const std::string& name) {
    pb::WaitForPluginRequest req;
    req.set_name(name);
    req.set_type(pb::PLUGIN_TYPE_NODE);
    req.set_timeout_ms(20000);
    pb::Plugin res;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->WaitForPlugin(&ctx, req, &res);
    EXPECT_TRUE(s.ok()) << s.error_message() << "\n" << ReadFile(tmp_.Join("manager.log"));
    return res;
  }

  pb::MountVolumeRequest MountRequest(const std::string& plugin, const std::string& alloc,
                                      std::map<std::string, std::string> context) {
    pb::MountVolumeRequest req;
    req.set_plugin(plugin);
    req.set_namespace_("default");
    req.set_volume_id("vol-1");
    req.set_remote_id("pvc-1#lustrefs#10.0.0.4##f");
    req.set_alloc_id(alloc);
    req.mutable_usage()->set_attachment_mode(pb::ATTACHMENT_MODE_FILE_SYSTEM);
    req.mutable_usage()->set_access_mode(pb::ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
    req.mutable_volume_context()->insert(context.begin(), context.end());
    return req;
  }

  grpc::Status Mount(const pb::MountVolumeRequest& req, pb::MountInfo* info) {
    pb::MountVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->MountVolume(&ctx, req, &res);
    *info = res.mount();
    return s;
  }

  grpc::Status Unmount(const pb::MountVolumeRequest& like, bool* unstaged = nullptr) {
    pb::UnmountVolumeRequest req = UnmountRequestFor(like);
    pb::UnmountVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->UnmountVolume(&ctx, req, &res);
    if (unstaged != nullptr) *unstaged = res.unstaged();
    return s;
  }

  std::vector<pb::Claim> Claims() {
    pb::ListClaimsResponse res;
    grpc::ClientContext ctx;
    EXPECT_TRUE(stub_->ListClaims(&ctx, {}, &res).ok());
    return {res.claims().begin(), res.claims().end()};
  }

  TempDir tmp_;
  std::string socket_;
  std::unique_ptr<Subprocess> manager_;
  std::vector<std::unique_ptr<Subprocess>> plugins_;
  std::unique_ptr<pb::PluginManager::Stub> stub_;
};

constexpr char kDriver[] = "azurelustre.csi.azure.com";

TEST_F(ManagerE2eTest, DiscoversNodePluginMountsTwoAllocsSurvivesKill9) {
  StartNodePlugin();
  StartManager();
  pb::Plugin plugin = Wait(kDriver);
  EXPECT_TRUE(plugin.healthy());
  EXPECT_EQ(plugin.node_id(), "node-1");
  EXPECT_EQ(plugin.source(), pb::PLUGIN_SOURCE_REGISTRATION_DIR);

  std::map<std::string, std::string> context = {{"mgs-ip-address", "10.0.0.4"},
                                                {"fs-name", "lustrefs"}};
  pb::MountVolumeRequest a = MountRequest(kDriver, "alloc-a", context);
  pb::MountVolumeRequest b = MountRequest(kDriver, "alloc-b", context);
  pb::MountInfo ma, mb;
  ASSERT_TRUE(Mount(a, &ma).ok()) << ReadFile(tmp_.Join("manager.log"));
  ASSERT_TRUE(Mount(b, &mb).ok());
  EXPECT_FALSE(ma.staged()) << "our node plugin does not stage";
  EXPECT_EQ(ma.target(), tmp_.Join("mounts/") + kDriver +
                             "/per-alloc/alloc-a/vol-1/rw-file-system-multi-node-multi-writer");
  EXPECT_TRUE(Mount(a, &ma).ok()) << "repeat is idempotent";
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")).size(), 2u);
  ASSERT_TRUE(WriteFile(ma.target() + "/from-a", "hello b").ok());
  EXPECT_EQ(ReadFile(mb.target() + "/from-a"), "hello b");

  // kill -9, restart: both claims are still known and still mounted.
  KillManager();
  StartManager();
  Wait(kDriver);
  std::vector<pb::Claim> claims = Claims();
  ASSERT_EQ(claims.size(), 2u);
  for (const pb::Claim& c : claims) EXPECT_EQ(c.state(), "mounted") << c.alloc_id();

  // Unmount one without disturbing the other.
  ASSERT_TRUE(Unmount(a).ok());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), ElementsAre(mb.target()));
  EXPECT_EQ(ReadFile(mb.target() + "/from-a"), "hello b");
  ASSERT_TRUE(Unmount(b).ok());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
  EXPECT_THAT(Claims(), IsEmpty());
  EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/from-a")), "hello b") << "data kept";
}

TEST_F(ManagerE2eTest, StagingPluginStagesOnceUnstagesWhenTheLastUserLeaves) {
  std::string log = tmp_.Join("stager.calls");
  plugins_.push_back(std::make_unique<Subprocess>(
      std::vector<std::string>{StagingPluginPath(), "--endpoint=unix://" + tmp_.Join("st.sock"),
                               "--log=" + log},
      tmp_.Join("stager.log")));
  ASSERT_TRUE(WaitForSocket(tmp_.Join("st.sock"), absl::Seconds(10)).ok());
  StartManager({"--plugins=stager.test:node:" + tmp_.Join("st.sock")});
  EXPECT_EQ(Wait("stager.test").source(), pb::PLUGIN_SOURCE_STATIC);

  ASSERT_TRUE(WriteFile(tmp_.Join("source/data"), "staged data").ok());
  std::map<std::string, std::string> context = {{"source", tmp_.Join("source")}};
  pb::MountVolumeRequest a = MountRequest("stager.test", "alloc-a", context);
  pb::MountVolumeRequest b = MountRequest("stager.test", "alloc-b", context);
  pb::MountInfo ma, mb;
  ASSERT_TRUE(Mount(a, &ma).ok()) << ReadFile(tmp_.Join("manager.log"));
  ASSERT_TRUE(Mount(b, &mb).ok());
  EXPECT_TRUE(ma.staged());
  EXPECT_EQ(ma.source(), mb.source()) << "one staging path for one volume and usage";
  EXPECT_EQ(ma.source(), tmp_.Join("mounts/stager.test/staging/default/vol-1/"
                                   "rw-file-system-multi-node-multi-writer"));
  EXPECT_EQ(ReadFile(mb.target() + "/data"), "staged data");
  auto stages = [&] {
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(ReadFile(log), '\n', absl::SkipEmpty())) {
      if (absl::StartsWith(line, "NodeStageVolume ") ||
          absl::StartsWith(line, "NodeUnstageVolume ")) {
        lines.emplace_back(line);
      }
    }
    return lines;
  };
  EXPECT_EQ(stages().size(), 1u) << "staged more than once";

  KillManager();
  StartManager({"--plugins=stager.test:node:" + tmp_.Join("st.sock")});
  Wait("stager.test");
  ASSERT_EQ(Claims().size(), 2u);

  // The usage count was rebuilt: one leaving must not unstage.
  bool unstaged = true;
  ASSERT_TRUE(Unmount(a, &unstaged).ok());
  EXPECT_FALSE(unstaged);
  EXPECT_EQ(stages().size(), 1u) << "unstaged while alloc-b still uses the volume";
  EXPECT_EQ(ReadFile(mb.target() + "/data"), "staged data");
  ASSERT_TRUE(Unmount(b, &unstaged).ok());
  EXPECT_TRUE(unstaged);
  ASSERT_EQ(stages().size(), 2u);
  EXPECT_TRUE(absl::StartsWith(stages()[1], "NodeUnstageVolume ")) << stages()[1];
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
}

// A plugin that stages without mounting at the staging path, whose first
// publish and second unstage fail: the manager's book, not the staging path,
// decides what is staged. Exact sequence of calls the plugin received,
// across a kill -9 of the manager.
TEST_F(ManagerE2eTest, StagingIsDecidedByTheBookFailuresAreUndoneInOrder) {
  std::string log = tmp_.Join("stager.calls");
  plugins_.push_back(std::make_unique<Subprocess>(
      std::vector<std::string>{StagingPluginPath(), "--endpoint=unix://" + tmp_.Join("st.sock"),
                               "--log=" + log, "--stage-mode=record",
                               "--fail-once=NodePublishVolume,NodeUnstageVolume@2"},
      tmp_.Join("stager.log")));
  ASSERT_TRUE(WaitForSocket(tmp_.Join("st.sock"), absl::Seconds(10)).ok());
  const std::string plugin_flag = "--plugins=stager.test:node:" + tmp_.Join("st.sock");
  StartManager({plugin_flag});
  Wait("stager.test");

  ASSERT_TRUE(WriteFile(tmp_.Join("source/data"), "staged data").ok());
  std::map<std::string, std::string> context = {{"source", tmp_.Join("source")}};
  std::vector<pb::MountVolumeRequest> allocs;
  for (const char* alloc : {"alloc-a", "alloc-b", "alloc-c"}) {
    allocs.push_back(MountRequest("stager.test", alloc, context));
  }
  pb::MountInfo info;
  // The first publish fails after a successful stage: the stage is undone.
  EXPECT_FALSE(Mount(allocs[0], &info).ok());
  EXPECT_THAT(Claims(), IsEmpty());
  // The next mount of the volume succeeds; the others only publish.
  for (const pb::MountVolumeRequest& req : allocs) {
    ASSERT_TRUE(Mount(req, &info).ok()) << req.alloc_id() << "\n"
                                        << ReadFile(tmp_.Join("manager.log"));
    EXPECT_EQ(ReadFile(info.target() + "/data"), "staged data");
  }
  const std::string staging = info.source();
  EXPECT_THAT(MountsUnder(staging), IsEmpty()) << "this plugin leaves no mount there";

  KillManager();
  StartManager({plugin_flag});
  Wait("stager.test");
  ASSERT_EQ(Claims().size(), 3u);
  ASSERT_TRUE(Unmount(allocs[0]).ok());
  ASSERT_TRUE(Unmount(allocs[1]).ok());
  // The unstage fails once: the claim and the stage stay recorded, and the
  // next unmount finishes it.
  bool unstaged = false;
  EXPECT_FALSE(Unmount(allocs[2], &unstaged).ok());
  ASSERT_EQ(Claims().size(), 1u);
  EXPECT_EQ(Claims()[0].state(), "unpublished");
  ASSERT_TRUE(Unmount(allocs[2], &unstaged).ok());
  EXPECT_TRUE(unstaged);
  EXPECT_THAT(Claims(), IsEmpty());

  std::string rid = allocs[0].remote_id();
  auto target = [&](const std::string& alloc) {
    return tmp_.Join("mounts/stager.test/per-alloc/") + alloc +
           "/vol-1/rw-file-system-multi-node-multi-writer";
  };
  std::vector<std::string> calls = absl::StrSplit(ReadFile(log), '\n', absl::SkipEmpty());
  EXPECT_THAT(calls, ElementsAre("NodeStageVolume " + rid + " " + staging,
                                 "NodePublishVolume " + rid + " " + target("alloc-a") + " failed",
                                 "NodeUnstageVolume " + rid + " " + staging,
                                 "NodeStageVolume " + rid + " " + staging,
                                 "NodePublishVolume " + rid + " " + target("alloc-a"),
                                 "NodePublishVolume " + rid + " " + target("alloc-b"),
                                 "NodePublishVolume " + rid + " " + target("alloc-c"),
                                 "NodeUnpublishVolume " + rid + " " + target("alloc-a"),
                                 "NodeUnpublishVolume " + rid + " " + target("alloc-b"),
                                 "NodeUnpublishVolume " + rid + " " + target("alloc-c"),
                                 "NodeUnstageVolume " + rid + " " + staging + " failed",
                                 "NodeUnstageVolume " + rid + " " + staging));
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
}

// kill -9 of the manager between a finished stage and the publish: after the
// restart the book says staged, so the mount is finished with a publish
// alone, and the unmount unstages once.
TEST_F(ManagerE2eTest, KillBetweenStageAndPublishIsFinishedAfterRestart) {
  std::string log = tmp_.Join("stager.calls");
  plugins_.push_back(std::make_unique<Subprocess>(
      std::vector<std::string>{StagingPluginPath(), "--endpoint=unix://" + tmp_.Join("st.sock"),
                               "--log=" + log, "--stage-mode=record", "--hang=NodePublishVolume@1"},
      tmp_.Join("stager.log")));
  ASSERT_TRUE(WaitForSocket(tmp_.Join("st.sock"), absl::Seconds(10)).ok());
  const std::string plugin_flag = "--plugins=stager.test:node:" + tmp_.Join("st.sock");
  StartManager({plugin_flag});
  Wait("stager.test");
  ASSERT_TRUE(WriteFile(tmp_.Join("source/data"), "staged data").ok());
  pb::MountVolumeRequest a =
      MountRequest("stager.test", "alloc-a", {{"source", tmp_.Join("source")}});

  std::thread first([&] {
    pb::MountInfo ignored;
    EXPECT_FALSE(Mount(a, &ignored).ok()) << "the manager was killed during this call";
  });
  // The stage is done and the publish is in the plugin: kill the manager.
  absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!absl::StrContains(ReadFile(log), " hung") && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(absl::StrContains(ReadFile(log), " hung")) << ReadFile(log);
  KillManager();
  first.join();

  StartManager({plugin_flag});
  Wait("stager.test");
  ASSERT_EQ(Claims().size(), 1u);
  EXPECT_EQ(Claims()[0].state(), "mounting");
  pb::MountInfo info;
  ASSERT_TRUE(Mount(a, &info).ok()) << ReadFile(tmp_.Join("manager.log"));
  EXPECT_EQ(ReadFile(info.target() + "/data"), "staged data");
  bool unstaged = false;
  ASSERT_TRUE(Unmount(a, &unstaged).ok());
  EXPECT_TRUE(unstaged);

  std::string rid = a.remote_id();
  std::string target = info.target();
  std::string staging = info.source();
  std::vector<std::string> calls = absl::StrSplit(ReadFile(log), '\n', absl::SkipEmpty());
  EXPECT_THAT(calls, ElementsAre("NodeStageVolume " + rid + " " + staging,
                                 "NodePublishVolume " + rid + " " + target + " hung",
                                 "NodePublishVolume " + rid + " " + target,
                                 "NodeUnpublishVolume " + rid + " " + target,
                                 "NodeUnstageVolume " + rid + " " + staging));
  EXPECT_THAT(Claims(), IsEmpty());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
}

TEST_F(ManagerE2eTest, CliListsPluginsClaimsAndNodeInfo) {
  StartNodePlugin();
  StartManager();
  Wait(kDriver);
  int rc = 0;
  std::string endpoint = "--endpoint=unix://" + socket_;
  std::string plugins = Cli({"plugins", endpoint}, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_THAT(plugins, HasSubstr("NAME"));
  EXPECT_THAT(plugins, HasSubstr(kDriver));
  EXPECT_THAT(plugins, HasSubstr("yes"));

  std::string mounted = Cli({"mount", endpoint, kDriver, "vol-9", "alloc-z",
                             "--volume-context=mgs-ip-address=10.0.0.4,fs-name=lustrefs",
                             "--remote-id=pvc-9#lustrefs#10.0.0.4##f"},
                            &rc);
  EXPECT_EQ(rc, 0) << ReadFile(tmp_.Join("manager.log"));
  EXPECT_THAT(mounted, HasSubstr("mounted " + tmp_.Join("mounts/")));
  std::string claims = Cli({"claims", endpoint, "--json"}, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_THAT(claims, HasSubstr("\"alloc_id\": \"alloc-z\""));
  std::string info = Cli({"node-info", endpoint}, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_THAT(info, HasSubstr("node node-1"));
  EXPECT_THAT(info, HasSubstr(kDriver));
  std::string drained = Cli({"drain", endpoint}, &rc);
  EXPECT_EQ(rc, 0) << drained;
  EXPECT_THAT(drained, HasSubstr("unmounted 1 claim"));
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
  Cli({"unmount", endpoint, "nosuch", "v", "a"}, &rc);
  EXPECT_EQ(rc, 1);
}

TEST_F(ManagerE2eTest, MetricsAndHealthOverHttp) {
  StartNodePlugin();
  int port = FreePort();
  StartManager({absl::StrCat("--metrics-address=127.0.0.1:", port)});
  Wait(kDriver);
  pb::MountInfo info;
  ASSERT_TRUE(Mount(MountRequest(kDriver, "alloc-m",
                                 {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "lustrefs"}}),
                    &info)
                  .ok());
  EXPECT_THAT(HttpGet(port, "/healthz"), testing::StartsWith("HTTP/1.1 200"));
  std::string metrics = HttpGet(port, "/metrics");
  EXPECT_THAT(metrics, testing::StartsWith("HTTP/1.1 200"));
  // Plugins by health, operations by result, claims by state.
  EXPECT_THAT(metrics, HasSubstr("\nlustre_csi_plugin_manager_plugins{health=\"healthy\"} 1\n"));
  EXPECT_THAT(
      metrics,
      HasSubstr(
          "lustre_csi_plugin_manager_operations_total{operation=\"mount\",result=\"OK\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nlustre_csi_plugin_manager_claims{state=\"mounted\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("lustre_csi_plugin_manager_operation_duration_seconds_count{"));
  // The kernel's interfaces, as the driver shows them: openat2 is there
  // from 5.6 on (older-kernel emulates 4.18, 5.4 and 5.11).
  const std::string kernel = EmulatedKernel();
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat(
                           "lustre_csi_kernel_interface{interface=\"openat2\",since=\"5.6\"} ",
                           kernel.empty() || kernel == "5.11" ? 1 : 0)));
  ASSERT_TRUE(Unmount(MountRequest(kDriver, "alloc-m", {})).ok());
}

TEST_F(ManagerE2eTest, CorruptStoreIsRefusedClearly) {
  ASSERT_EQ(mkdir(tmp_.Join("state").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(tmp_.Join("state/pm.db"), std::string(8192, 'x')).ok());
  Subprocess manager(
      {BinaryPath(), "plugin-manager", "--endpoint=unix://" + socket_,
       "--state-file=" + tmp_.Join("state/pm.db"), "--mount-root=" + tmp_.Join("mounts")},
      tmp_.Join("corrupt.log"));
  EXPECT_EQ(manager.Wait(absl::Seconds(20)), 1);
  EXPECT_THAT(ReadFile(tmp_.Join("corrupt.log")), HasSubstr("FAILED_PRECONDITION"));
  EXPECT_NE(access(socket_.c_str(), F_OK), 0) << "served despite a corrupt store";
}

TEST_F(ManagerE2eTest, SigtermKeepsMountsUnmountOnShutdownRemovesThem) {
  StartNodePlugin();
  StartManager();
  Wait(kDriver);
  std::map<std::string, std::string> context = {{"mgs-ip-address", "10.0.0.4"},
                                                {"fs-name", "lustrefs"}};
  pb::MountInfo info;
  ASSERT_TRUE(Mount(MountRequest(kDriver, "alloc-a", context), &info).ok());
  manager_->Signal(SIGTERM);
  EXPECT_EQ(manager_->Wait(absl::Seconds(30)), 0);
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), ElementsAre(info.target()));
  EXPECT_NE(access(socket_.c_str(), F_OK), 0) << "socket left behind";

  StartManager({"--unmount-on-shutdown"});
  Wait(kDriver);
  manager_->Signal(SIGTERM);
  EXPECT_EQ(manager_->Wait(absl::Seconds(30)), 0);
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
}

}  // namespace
}  // namespace lustre_csi::e2e
