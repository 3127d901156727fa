// Crashes at exact system calls, injected with strace into the real binary:
// kill -9 of the node plugin at every mount-family system call of a publish
// (and every unmount step of an unpublish), in local mode and in the shipped
// shared-client mode (where the mount helper, killed at its own calls, or
// left mounting by a node killed meanwhile, is part of it), kill -9 of the
// plugin manager at
// every write and sync of its SQLite store during a MountVolume and an
// UnmountVolume, and a node plugin that dies while the manager waits on a
// publish. After each crash the process is restarted and must converge:
// nothing half-made, every claim that was promised still there, a retry that
// works, and nothing left mounted at the end.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

namespace pb = ::lustre_csi::manager::v1;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kDriver[] = "azurelustre.csi.azure.com";

// Whether `dir` is on a writable mount (access(2) reports EROFS even to root).
bool Writable(const std::string& dir) { return access(dir.c_str(), W_OK) == 0; }

// Every system call that can make, change or remove a mount.
const std::vector<std::string>& MountSyscalls() {
  static const auto* calls =
      new std::vector<std::string>{"mount",  "umount2", "open_tree", "move_mount", "mount_setattr",
                                   "fsopen", "fsmount", "fsconfig",  "rmdir"};
  return *calls;
}

// ---------------------------------------------------------------------------
// The node plugin killed mid-publish and mid-unpublish.

enum class Op { kPublishReadWrite, kPublishReadOnly, kUnpublish };
// Where the kill lands: at the entry of the system call (it never runs), or
// once it has returned (it ran; the process never saw the result).
enum class When { kEntry, kExit };

struct NodeCrashCase {
  Op op;
  When when;
  // The shipped mode (one shared client per file system, every publish a
  // bind of it, the client mounted by a stand-in mount.lustre) instead of
  // local mode.
  bool shared = false;
};

std::string CaseName(const testing::TestParamInfo<NodeCrashCase>& info) {
  std::string op = info.param.op == Op::kPublishReadWrite  ? "PublishReadWrite"
                   : info.param.op == Op::kPublishReadOnly ? "PublishReadOnly"
                                                           : "Unpublish";
  return absl::StrCat(info.param.shared ? "Shared" : "", op,
                      info.param.when == When::kEntry ? "KilledAtEntry" : "KilledAfterReturn");
}

// What a crash injected into a call did.
enum class Crash {
  kNone,          // the call finished first (it makes fewer such system calls)
  kNode,          // the node died
  kHelperKilled,  // the mount helper, a child of the node, died; the node lives
};

class NodeCrashTest : public testing::TestWithParam<NodeCrashCase> {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(tmp_.Join("lustre").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(tmp_.Join("lustre/lustrefs").c_str(), 0755), 0);
    ASSERT_EQ(mount("tmpfs", tmp_.Join("lustre/lustrefs").c_str(), "tmpfs", 0, "size=16m"), 0);
    ASSERT_TRUE(WriteFile(tmp_.Join("lustre/lustrefs/marker"), "data").ok());
    ASSERT_EQ(mkdir(tmp_.Join("pods").c_str(), 0755), 0);
    if (GetParam().shared) {
      ASSERT_EQ(mkdir(tmp_.Join("work").c_str(), 0755), 0);
      // The kubelet directory, a shared mount as under a Bidirectional
      // volume.
      ASSERT_EQ(
          mount(tmp_.Join("pods").c_str(), tmp_.Join("pods").c_str(), nullptr, MS_BIND, nullptr),
          0);
      ASSERT_EQ(mount(nullptr, tmp_.Join("pods").c_str(), nullptr, MS_SHARED, nullptr), 0);
      // The stand-in mount.lustre: a tmpfs client filled with a copy of the
      // file system.
      ASSERT_TRUE(WriteTmpfsClientHelper(tmp_.Join("mount"), tmp_.Join("lustre/lustrefs")).ok());
      ASSERT_TRUE(PretendLustreModuleLoaded(scratch_.path()).ok());
    }
    socket_ = tmp_.Join("node.sock");
    StartNode();
  }

  void TearDown() override {
    node_.reset();
    EXPECT_THAT(ChildProcesses(), IsEmpty());
    EXPECT_THAT(ProcessesMentioning(tmp_.path()), IsEmpty());
    EXPECT_THAT(Targets(), IsEmpty());
    if (GetParam().shared) {
      EXPECT_THAT(MountsUnder(tmp_.Join("work")), IsEmpty()) << "a client left mounted";
      umount2(tmp_.Join("pods").c_str(), MNT_DETACH);
    }
  }

  // The mounts below pods/ (not pods/ itself, a mount in shared mode).
  std::vector<std::string> Targets() {
    std::vector<std::string> out;
    for (const std::string& m : MountsUnder(tmp_.Join("pods"))) {
      if (m != tmp_.Join("pods")) out.push_back(m);
    }
    return out;
  }

  void StartNode() {
    // The socket a killed node left may still accept for a moment (a task of
    // it, dying, holds its descriptors): connect only to the new node's.
    unlink(socket_.c_str());
    std::vector<std::string> argv = {BinaryPath(), "node", "--nodeid=node-1",
                                     "--endpoint=unix://" + socket_};
    if (GetParam().shared) {
      argv.insert(argv.end(), {"--mount-mode=lustre", "--lustre-client=shared",
                               "--mount-helper=" + tmp_.Join("mount"), "--mount-namespace=current",
                               "--working-mount-dir=" + tmp_.Join("work")});
    } else {
      argv.insert(argv.end(), {"--mount-mode=local", "--local-root=" + tmp_.Join("lustre")});
    }
    node_ = std::make_unique<Subprocess>(argv, tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(socket_, absl::Seconds(10)).ok()) << ReadFile(tmp_.Join("node.log"));
    stub_ = csi::v1::Node::NewStub(UnixChannel(socket_));
  }

  grpc::Status Publish(const std::string& target, bool read_only) {
    csi::v1::NodePublishVolumeRequest req =
        MakePublishRequest("pvc-1#lustrefs#10.0.0.4##f", target, LustreContext(), read_only);
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return stub_->NodePublishVolume(&ctx, req, &res);
  }

  grpc::Status Unpublish(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("pvc-1#lustrefs#10.0.0.4##f");
    req.set_target_path(target);
    grpc::ClientContext ctx;
    csi::v1::NodeUnpublishVolumeResponse res;
    return stub_->NodeUnpublishVolume(&ctx, req, &res);
  }

  grpc::Status Run(Op op, const std::string& target) {
    return op == Op::kUnpublish ? Unpublish(target) : Publish(target, op == Op::kPublishReadOnly);
  }

  // Runs `op` with strace killing the node at the n-th call of `syscall`
  // by one of its threads, tasks or children (the mount helper: then the
  // helper dies, or, held after its call returned, the node is killed
  // meanwhile and the helper goes on).
  Crash RunWithCrash(Op op, When when, const std::string& target, const std::string& syscall,
                     int n) {
    std::string inject = when == When::kEntry
                             ? absl::StrCat("inject=", syscall, ":signal=SIGKILL:when=", n)
                             // Held at the return for a minute; the test kills it meanwhile.
                             : absl::StrCat("inject=", syscall, ":delay_exit=60000000:when=", n);
    Strace strace(node_->pid(), {"-e", "trace=" + syscall, "-e", inject}, tmp_.Join("strace.log"));
    EXPECT_TRUE(strace.WaitAttached(absl::Seconds(20)).ok());
    std::atomic<bool> done{false};
    grpc::Status status;
    std::thread call([&] {
      status = Run(op, target);
      done = true;
    });
    if (when == When::kExit) {
      while (!done && strace.Log().find("(DELAYED)") == std::string::npos) {
        absl::SleepFor(absl::Milliseconds(2));
      }
      if (!done) {
        // The process dies only once strace lets go of the held thread.
        KillWithTasks(node_->pid());
        strace.Kill();
      }
    }
    call.join();
    if (status.ok()) {
      EXPECT_TRUE(node_->running());
      EXPECT_THAT(strace.Log(), testing::Not(testing::HasSubstr("(DELAYED)")));
      return Crash::kNone;
    }
    // Killed at its entry, the call may have been the helper's: the node
    // then lives on and answers for it.
    const bool maybe_helper = GetParam().shared && when == When::kEntry;
    const int exited = node_->Wait(maybe_helper ? absl::Seconds(2) : absl::Seconds(20));
    if (maybe_helper && exited == -1) {
      EXPECT_TRUE(node_->running());
      EXPECT_THAT(strace.Log(), testing::HasSubstr("+++ killed by SIGKILL"));
      EXPECT_THAT(status.error_message(), testing::HasSubstr("mount")) << syscall << " #" << n;
      return Crash::kHelperKilled;
    }
    EXPECT_EQ(exited, -SIGKILL) << syscall << " #" << n << ": " << status.error_message();
    EXPECT_EQ(status.error_code(), grpc::UNAVAILABLE) << status.error_message();
    strace.Wait(absl::Seconds(20));
    return Crash::kNode;
  }

  // The one mount at `target` is the volume, read-only exactly when asked.
  void ExpectPublished(const std::string& target, bool read_only, const std::string& where) {
    EXPECT_THAT(Targets(), ElementsAre(target)) << where;
    EXPECT_EQ(ReadFile(target + "/marker"), "data") << where;
    EXPECT_EQ(Writable(target), !read_only) << where;
  }

  TempDir tmp_;
  static inline TempDir scratch_;  // holds the /proc/filesystems stand-in
  std::string socket_;
  std::unique_ptr<Subprocess> node_;
  std::unique_ptr<csi::v1::Node::Stub> stub_;
};

TEST_P(NodeCrashTest, KilledAtEveryMountSyscallRestartConvergesAndLeavesNothing) {
  const Op op = GetParam().op;
  const bool read_only = op == Op::kPublishReadOnly;
  int crashes = 0;
  for (const std::string& syscall : MountSyscalls()) {
    for (int n = 1; n <= 8; ++n) {
      std::string where = absl::StrCat(syscall, " #", n);
      std::string target = tmp_.Join(absl::StrCat("pods/", syscall, "-", n));
      if (op == Op::kUnpublish) {
        ASSERT_TRUE(Publish(target, false).ok()) << where;
      }
      Crash crash = RunWithCrash(op, GetParam().when, target, syscall, n);
      if (HasFailure()) return;
      if (crash == Crash::kNone) {
        // The operation makes fewer than n such calls and finished.
        if (op == Op::kUnpublish) {
          EXPECT_THAT(Targets(), IsEmpty()) << where;
        } else {
          ExpectPublished(target, read_only, where);
          EXPECT_TRUE(Unpublish(target).ok()) << where;
        }
        EXPECT_NE(access(target.c_str(), F_OK), 0) << where;
        break;
      }
      ++crashes;
      // What the crash left: for a publish, nothing mounted or exactly the
      // mount asked for (never a writable mount of a read-only request); for
      // an unpublish, the mount as it was or nothing.
      std::vector<std::string> left = Targets();
      if (!left.empty()) {
        ExpectPublished(target, read_only, where + " (left by the crash)");
      }
      if (crash == Crash::kNode) StartNode();
      if (op != Op::kUnpublish) {
        grpc::Status retry = Publish(target, read_only);
        EXPECT_TRUE(retry.ok()) << where << ": " << retry.error_message() << "\n"
                                << ReadFile(tmp_.Join("node.log"));
        ExpectPublished(target, read_only, where + " (after the retry)");
      }
      grpc::Status unpublished = Unpublish(target);
      EXPECT_TRUE(unpublished.ok()) << where << ": " << unpublished.error_message();
      EXPECT_THAT(Targets(), IsEmpty()) << where;
      if (GetParam().shared) {
        EXPECT_THAT(MountsUnder(tmp_.Join("work")), IsEmpty()) << where << ": a client stayed";
      }
      EXPECT_NE(access(target.c_str(), F_OK), 0) << where << ": target left behind";
      // Nothing below a target is ever deleted.
      EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/marker")), "data") << where;
      if (HasFailure()) return;
    }
  }
  RecordProperty("crashes", crashes);
  // The test really crashed the node: at least once per mount step.
  EXPECT_GE(crashes, op == Op::kPublishReadOnly ? 2 : 1);
  EXPECT_TRUE(std::filesystem::is_empty(tmp_.Join("pods"))) << "directories left below pods/";
}

INSTANTIATE_TEST_SUITE_P(Crashes, NodeCrashTest,
                         testing::Values(NodeCrashCase{Op::kPublishReadWrite, When::kEntry},
                                         NodeCrashCase{Op::kPublishReadWrite, When::kExit},
                                         NodeCrashCase{Op::kPublishReadOnly, When::kEntry},
                                         NodeCrashCase{Op::kPublishReadOnly, When::kExit},
                                         NodeCrashCase{Op::kUnpublish, When::kEntry},
                                         NodeCrashCase{Op::kUnpublish, When::kExit},
                                         NodeCrashCase{Op::kPublishReadWrite, When::kEntry, true},
                                         NodeCrashCase{Op::kPublishReadWrite, When::kExit, true},
                                         NodeCrashCase{Op::kPublishReadOnly, When::kEntry, true},
                                         NodeCrashCase{Op::kPublishReadOnly, When::kExit, true},
                                         NodeCrashCase{Op::kUnpublish, When::kEntry, true},
                                         NodeCrashCase{Op::kUnpublish, When::kExit, true}),
                         CaseName);

// ---------------------------------------------------------------------------
// The plugin manager, with our node plugin found through its registration
// socket.

class ManagerCrashTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"lustre", "lustre/lustrefs", "registry", "mounts", "state"}) {
      ASSERT_EQ(mkdir(tmp_.Join(d).c_str(), 0755), 0) << d;
    }
    ASSERT_TRUE(WriteFile(tmp_.Join("lustre/lustrefs/marker"), "data").ok());
    socket_ = tmp_.Join("pm.sock");
  }

  void TearDown() override {
    manager_.reset();
    node_.reset();
    EXPECT_THAT(ChildProcesses(), IsEmpty());
    EXPECT_THAT(ProcessesMentioning(tmp_.path()), IsEmpty());
    EXPECT_THAT(MountsUnder(tmp_.path()), IsEmpty());
  }

  void StartNode() {
    unlink(tmp_.Join("node.sock").c_str());  // what a killed node left (see NodeCrashTest)
    node_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "node", "--nodeid=node-1", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + tmp_.Join("node.sock"),
                                 "--plugin-registration-dir=" + tmp_.Join("registry")},
        tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join("node.sock"), absl::Seconds(10)).ok());
  }

  void StartManager(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {BinaryPath(),
                                     "plugin-manager",
                                     "--endpoint=unix://" + socket_,
                                     "--state-file=" + tmp_.Join("state/pm.db"),
                                     "--mount-root=" + tmp_.Join("mounts"),
                                     "--registration-dir=" + tmp_.Join("registry"),
                                     "--node-name=node-1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    manager_ = std::make_unique<Subprocess>(argv, tmp_.Join("manager.log"));
    ASSERT_TRUE(WaitForSocket(socket_, absl::Seconds(20)).ok())
        << ReadFile(tmp_.Join("manager.log"));
    stub_ = pb::PluginManager::NewStub(UnixChannel(socket_));
  }

  grpc::Status WaitForPlugin() {
    pb::WaitForPluginRequest req;
    req.set_name(kDriver);
    req.set_type(pb::PLUGIN_TYPE_NODE);
    req.set_timeout_ms(30000);
    pb::Plugin res;
    grpc::ClientContext ctx;
    return stub_->WaitForPlugin(&ctx, req, &res);
  }

  bool PluginHealthy() {
    pb::ListPluginsResponse res;
    grpc::ClientContext ctx;
    if (!stub_->ListPlugins(&ctx, {}, &res).ok()) return false;
    for (const pb::Plugin& p : res.plugins()) {
      if (p.name() == kDriver) return p.healthy();
    }
    return false;
  }

  static pb::MountVolumeRequest MountRequest(const std::string& alloc) {
    pb::MountVolumeRequest req;
    req.set_plugin(kDriver);
    req.set_namespace_("default");
    req.set_volume_id("vol-1");
    req.set_remote_id("pvc-1#lustrefs#10.0.0.4##f");
    req.set_alloc_id(alloc);
    req.mutable_usage()->set_attachment_mode(pb::ATTACHMENT_MODE_FILE_SYSTEM);
    req.mutable_usage()->set_access_mode(pb::ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
    (*req.mutable_volume_context())["mgs-ip-address"] = "10.0.0.4";
    (*req.mutable_volume_context())["fs-name"] = "lustrefs";
    return req;
  }

  grpc::Status Mount(const std::string& alloc, pb::MountInfo* info = nullptr) {
    pb::MountVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->MountVolume(&ctx, MountRequest(alloc), &res);
    if (info != nullptr) *info = res.mount();
    return s;
  }

  grpc::Status Unmount(const std::string& alloc) {
    pb::MountVolumeRequest like = MountRequest(alloc);
    pb::UnmountVolumeRequest req = UnmountRequestFor(like);
    req.set_alloc_id(alloc);
    pb::UnmountVolumeResponse res;
    grpc::ClientContext ctx;
    return stub_->UnmountVolume(&ctx, req, &res);
  }

  // Claims by alloc id.
  std::map<std::string, pb::Claim> Claims() {
    pb::ListClaimsResponse res;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->ListClaims(&ctx, {}, &res);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::map<std::string, pb::Claim> out;
    for (const pb::Claim& c : res.claims()) out[c.alloc_id()] = c;
    return out;
  }

  std::string Target(const std::string& alloc) {
    return tmp_.Join(absl::StrCat("mounts/", kDriver, "/per-alloc/", alloc,
                                  "/vol-1/rw-file-system-multi-node-multi-writer"));
  }

  // Every mount below the mount root belongs to a claim: a crash never
  // leaves a mount the manager has forgotten.
  void ExpectEveryMountClaimed(const std::string& where) {
    std::map<std::string, pb::Claim> claims = Claims();
    for (const std::string& m : MountsUnder(tmp_.Join("mounts"))) {
      bool claimed = std::any_of(claims.begin(), claims.end(),
                                 [&](const auto& c) { return c.second.mount().target() == m; });
      EXPECT_TRUE(claimed) << where << ": " << m << " is mounted but has no claim";
    }
  }

  TempDir tmp_;
  std::string socket_;
  std::unique_ptr<Subprocess> manager_, node_;
  std::unique_ptr<pb::PluginManager::Stub> stub_;
};

// The manager commits each claim change in its own transaction: in WAL mode
// with synchronous=FULL that is pwrite64 of the frame header, pwrite64 of the
// page, then fdatasync of the -wal file. A MountVolume commits twice (the
// claim as "mounting" before the plugin is called, as "mounted" after), an
// UnmountVolume once. Kill the manager at every one of those calls.
TEST_F(ManagerCrashTest, KilledAtEveryStoreWriteAndSyncLosesNoClaimAndLeaksNoMount) {
  StartNode();
  // No fingerprint writes in the background: every store write traced below
  // belongs to the operation under test.
  const std::vector<std::string> flags = {"--fingerprint-period-seconds=3600"};
  StartManager(flags);
  ASSERT_TRUE(WaitForPlugin().ok()) << ReadFile(tmp_.Join("manager.log"));
  // Mounts that returned success before any crash.
  std::vector<std::string> promised;
  for (const char* alloc : {"before-0", "before-1"}) {
    ASSERT_TRUE(Mount(alloc).ok()) << ReadFile(tmp_.Join("manager.log"));
    promised.push_back(alloc);
  }
  const std::string wal = tmp_.Join("state/pm.db-wal");
  ASSERT_EQ(access(wal.c_str(), F_OK), 0) << "the store is not in WAL mode";

  // Crashes by operation and system call.
  std::map<std::string, int> crashes;
  for (bool unmount : {false, true}) {
    for (const char* syscall : {"pwrite64", "fdatasync"}) {
      for (int n = 1; n <= 8; ++n) {
        const std::string alloc = absl::StrCat(unmount ? "unmount-" : "mount-", syscall, "-", n);
        const std::string where = absl::StrCat(unmount ? "UnmountVolume" : "MountVolume",
                                               ", killed at ", syscall, " #", n);
        if (unmount) {
          ASSERT_TRUE(Mount(alloc).ok()) << where;
          promised.push_back(alloc);
        }
        grpc::Status status;
        {
          // Only calls on the -wal file are counted (-P).
          Strace strace(manager_->pid(),
                        {"-y", "-P", wal, "-e", absl::StrCat("trace=", syscall), "-e",
                         absl::StrCat("inject=", syscall, ":signal=SIGKILL:when=", n)},
                        tmp_.Join("strace.log"));
          ASSERT_TRUE(strace.WaitAttached(absl::Seconds(20)).ok());
          status = unmount ? Unmount(alloc) : Mount(alloc);
          if (status.ok()) {
            // Fewer than n such calls: the operation completed.
            EXPECT_TRUE(manager_->running()) << where;
          } else {
            EXPECT_EQ(manager_->Wait(absl::Seconds(20)), -SIGKILL)
                << where << ": " << status.error_message();
            EXPECT_EQ(status.error_code(), grpc::UNAVAILABLE) << where;
            strace.Wait(absl::Seconds(20));
            EXPECT_THAT(strace.Log(), testing::HasSubstr("pm.db-wal>")) << where;
            EXPECT_THAT(strace.Log(), testing::HasSubstr("+++ killed by SIGKILL +++")) << where;
          }
        }
        if (status.ok()) {
          if (unmount) {
            promised.erase(std::find(promised.begin(), promised.end(), alloc));
          } else {
            promised.push_back(alloc);
          }
          break;
        }
        ++crashes[absl::StrCat(unmount ? "unmount " : "mount ", syscall)];
        // Restart: the store opens (it is checked at open; a corrupt one is
        // refused and nothing is served).
        StartManager(flags);
        ASSERT_TRUE(WaitForPlugin().ok()) << where << "\n" << ReadFile(tmp_.Join("manager.log"));
        std::map<std::string, pb::Claim> claims = Claims();
        for (const std::string& p : promised) {
          if (p == alloc) continue;  // its unmount was under way
          ASSERT_TRUE(claims.count(p)) << where << ": lost the claim of " << p;
          EXPECT_EQ(claims[p].state(), "mounted") << where << ": " << p;
          EXPECT_THAT(MountsUnder(Target(p)), ElementsAre(Target(p))) << where << ": " << p;
        }
        ExpectEveryMountClaimed(where);
        // A retry finishes what the crash interrupted.
        if (unmount) {
          grpc::Status retry = Unmount(alloc);
          ASSERT_TRUE(retry.ok()) << where << ": " << retry.error_message();
          EXPECT_FALSE(Claims().count(alloc)) << where;
          EXPECT_THAT(MountsUnder(Target(alloc)), IsEmpty()) << where;
          promised.erase(std::find(promised.begin(), promised.end(), alloc));
        } else {
          pb::MountInfo info;
          grpc::Status retry = Mount(alloc, &info);
          ASSERT_TRUE(retry.ok()) << where << ": " << retry.error_message();
          EXPECT_EQ(info.target(), Target(alloc));
          EXPECT_EQ(Claims()[alloc].state(), "mounted") << where;
          EXPECT_EQ(ReadFile(Target(alloc) + "/marker"), "data") << where;
          promised.push_back(alloc);
        }
      }
    }
  }
  // The test really killed the manager: at each kind of call, and at the
  // sync of both commits of a MountVolume (before and after the publish).
  EXPECT_GE(crashes["mount pwrite64"], 2);
  EXPECT_GE(crashes["mount fdatasync"], 2);
  EXPECT_GE(crashes["unmount pwrite64"], 1);
  EXPECT_GE(crashes["unmount fdatasync"], 1);

  // A final drain leaves nothing.
  pb::DrainResponse drained;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub_->Drain(&ctx, {}, &drained).ok());
  EXPECT_EQ(drained.unmounted(), static_cast<int>(promised.size()));
  EXPECT_THAT(drained.errors(), IsEmpty());
  EXPECT_THAT(Claims(), IsEmpty());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
}

// The node plugin dies (kill -9) while the manager waits on its publish: the
// manager answers with an error after its retries, keeps serving, keeps no
// claim or mount, and works again once the plugin is back.
TEST_F(ManagerCrashTest, PluginKilledDuringPublishThenBack) {
  StartNode();
  StartManager(
      {"--fingerprint-period-seconds=1", "--retry-attempts=2", "--attempt-timeout-seconds=5"});
  ASSERT_TRUE(WaitForPlugin().ok()) << ReadFile(tmp_.Join("manager.log"));
  ASSERT_TRUE(Mount("alloc-kept").ok());

  grpc::Status status;
  {
    // The publish hangs at its first mount system call (move_mount(2), or
    // mount(2) before Linux 5.12), held by strace.
    Strace strace(node_->pid(),
                  {"-e", "trace=mount,move_mount", "-e",
                   "inject=mount,move_mount:delay_enter=60000000:when=1"},
                  tmp_.Join("strace.log"));
    ASSERT_TRUE(strace.WaitAttached(absl::Seconds(20)).ok());
    std::thread call([&] { status = Mount("alloc-a"); });
    EXPECT_TRUE(strace.WaitForLog("mount(", absl::Seconds(30))) << strace.Log();
    KillWithTasks(node_->pid());
    strace.Kill();
    call.join();
  }
  EXPECT_EQ(node_->Wait(absl::Seconds(20)), -SIGKILL);
  EXPECT_TRUE(status.error_code() == grpc::UNAVAILABLE ||
              status.error_code() == grpc::DEADLINE_EXCEEDED)
      << status.error_code() << ": " << status.error_message();
  EXPECT_THAT(status.error_message(), testing::HasSubstr("gave up after 2 attempts"));

  // The manager keeps serving; it kept nothing of the failed mount.
  EXPECT_TRUE(manager_->running());
  std::map<std::string, pb::Claim> claims = Claims();
  EXPECT_FALSE(claims.count("alloc-a"));
  EXPECT_TRUE(claims.count("alloc-kept"));
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), ElementsAre(Target("alloc-kept")));
  EXPECT_NE(access(Target("alloc-a").c_str(), F_OK), 0) << "target directory left behind";
  // It notices the plugin is gone.
  absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (PluginHealthy() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(PluginHealthy());
  EXPECT_NE(Mount("alloc-b").error_code(), grpc::OK) << "mounted through a dead plugin";

  // The plugin comes back: a retry works.
  StartNode();
  ASSERT_TRUE(WaitForPlugin().ok()) << ReadFile(tmp_.Join("manager.log"));
  pb::MountInfo info;
  grpc::Status retry = Mount("alloc-a", &info);
  ASSERT_TRUE(retry.ok()) << retry.error_message();
  EXPECT_EQ(ReadFile(info.target() + "/marker"), "data");
  EXPECT_TRUE(Unmount("alloc-a").ok());
  EXPECT_TRUE(Unmount("alloc-kept").ok());
  EXPECT_TRUE(Unmount("alloc-b").ok());  // never mounted: nothing to do
  EXPECT_THAT(Claims(), IsEmpty());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
}

}  // namespace
}  // namespace lustre_csi::e2e
