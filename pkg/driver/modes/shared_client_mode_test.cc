// One Lustre client per file system: the shared-client mode on fake
// syscalls and a fake mount namespace whose helper mounts a fresh "lustre"
// file system per call (its own device, as a real client mount has).
#include "pkg/driver/modes/shared_client_mode.h"

#include <sys/mount.h>

#include <algorithm>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/driver/modes/lustre_mode.h"
#include "pkg/driver/node.h"
#include "pkg/server/metrics.h"
#include "pkg/volume/left_behind.h"
#include "pkg/volume/syscalls_wrapper.h"
#include "pkg/volume/testing/fake_mount_namespace.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using volume::FakeMountNamespace;
using volume::FakeSyscalls;
using volume::ProcessResult;

constexpr char kHelper[] = "/sbin/mount.lustre";
constexpr char kClients[] = "/var/lib/kubelet/plugins/x/clients";

class SharedClientTest : public testing::Test {
 protected:
  void SetUp() override {
    sys_.SetAtomicBinds(true);
    ASSERT_TRUE(sys_.AddDir("/pods").ok());
    ns_.AddProgram(kHelper, [this](const std::vector<std::string>& argv) {
      ProcessResult r;
      if (argv.size() == 2 && argv[1] == "-V") return absl::StatusOr<ProcessResult>(r);
      if (helper_hangs_) {
        // Killed at its timeout, and still waiting for the servers.
        left_id_ = volume::ProcessLeftBehind().Add();
        return absl::StatusOr<ProcessResult>(volume::WithLeftBehind(
            absl::DeadlineExceededError("mount.lustre: did not finish within 1s, killed"),
            left_id_));
      }
      const std::string& spec = argv[argv.size() - 2];
      if (!sys_.Mount(spec, argv.back(), "lustre", 0, "").ok()) r.exit_code = 5;
      return absl::StatusOr<ProcessResult>(r);
    });
    ns_.SetFile("/proc/filesystems", "nodev\tlustre\n");
    LustreModeOptions lustre;
    lustre.working_mount_dir = "/var/lib/kubelet/plugins/x/work";
    mode_ = NewSharedClientMode(view_.get(), NewLustreMode(view_.get(), &ns_, lustre),
                                SharedClientOptions{kClients}, &metrics_);
    logic_ = std::make_unique<NodeLogic>(NodeOptions{}, view_.get(), mode_.get());
  }

  static PublishRequest Request(const std::string& target, const std::string& sub_dir,
                                const std::string& fs = "lustrefs") {
    PublishRequest req;
    req.volume_id = "pv-" + sub_dir;
    req.target_path = target;
    req.volume_context = {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", fs}, {"sub-dir", sub_dir}};
    return req;
  }

  // Runs of the helper other than -V.
  int HelperMounts() {
    int n = 0;
    for (const auto& argv : ns_.Runs()) n += argv.size() > 2 ? 1 : 0;
    return n;
  }

  std::string OptionsAt(const std::string& path) {
    std::string table = *sys_.ReadMountInfo();
    std::string options;
    for (absl::string_view line : absl::StrSplit(table, '\n')) {
      std::vector<std::string> f = absl::StrSplit(line, ' ');
      if (f.size() > 5 && f[4] == path) options = f[5];
    }
    return options;
  }

  int ClientMounts() {
    int n = 0;
    std::string table = *sys_.ReadMountInfo();
    for (absl::string_view line : absl::StrSplit(table, '\n')) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
      if (f.size() > 4 && absl::StartsWith(f[4], std::string(kClients) + "/")) ++n;
    }
    return n;
  }

  FakeSyscalls sys_;
  FakeMountNamespace ns_{&sys_};
  std::unique_ptr<volume::Syscalls> view_ = volume::UnmountingIn(&sys_, &ns_);
  server::MetricsRegistry metrics_;
  std::unique_ptr<internal::MountingMode> mode_;
  std::unique_ptr<NodeLogic> logic_;
  bool helper_hangs_ = false;
  uint64_t left_id_ = 0;  // of the last helper that hung (volume::ProcessLeftBehind)
};

TEST_F(SharedClientTest, ManyPublishesOfOneFileSystemShareOneClient) {
  for (int v = 0; v < 5; ++v) {
    for (int p = 0; p < 4; ++p) {
      std::string target = absl::StrCat("/pods/p", p, "-v", v);
      absl::Status s = logic_->Publish(Request(target, absl::StrCat("team/v", v)));
      ASSERT_TRUE(s.ok()) << target << ": " << s;
    }
  }
  EXPECT_EQ(HelperMounts(), 1);
  EXPECT_EQ(ClientMounts(), 1);
  // Data written through one pod of a volume shows in another.
  ASSERT_TRUE(sys_.AddFile("/pods/p0-v3/f").ok());
  EXPECT_TRUE(sys_.Exists("/pods/p2-v3/f"));
  EXPECT_FALSE(sys_.Exists("/pods/p2-v2/f"));
  EXPECT_THAT(metrics_.Render(), HasSubstr("lustre_csi_publishes_total{client=\"new\"} 1"));
  EXPECT_THAT(metrics_.Render(), HasSubstr("lustre_csi_publishes_total{client=\"existing\"} 19"));
  EXPECT_THAT(metrics_.Render(), HasSubstr("lustre_csi_clients{fs_name=\"lustrefs\"} 1"));

  // The client stays while any bind is left, and goes with the last.
  for (int v = 0; v < 5; ++v) {
    for (int p = 0; p < 4; ++p) {
      ASSERT_TRUE(logic_->Unpublish("v", absl::StrCat("/pods/p", p, "-v", v)).ok());
      EXPECT_EQ(ClientMounts(), v == 4 && p == 3 ? 0 : 1) << p << " " << v;
    }
  }
  EXPECT_THAT(ns_.Unmounts(), SizeIs(20 + 1));
}

// Records the calls that reach a client's file system (a path under the
// client directory, named or through a descriptor) outside a
// MarkingIsolation's work.
class ClientCallsOutside : public volume::SyscallsWrapper {
 public:
  ClientCallsOutside(volume::Syscalls* target, FakeSyscalls* fake)
      : SyscallsWrapper(target), fake_(fake) {}
  absl::StatusOr<volume::FileInfo> Stat(const std::string& path) override {
    Check("stat", path);
    return SyscallsWrapper::Stat(path);
  }
  absl::StatusOr<volume::FsStats> Statfs(const std::string& path) override {
    Check("statfs", path);
    return SyscallsWrapper::Statfs(path);
  }
  absl::StatusOr<int> OpenAt(int dir_fd, const std::string& path,
                             const volume::OpenHow& how) override {
    // An O_PATH open of a client's root itself stops at the mount there
    // without asking its file system (the look at a fresh mount).
    const std::string at = At(dir_fd, path);
    const size_t root_end = std::string(kClients).size() + 1;
    if (how.access != volume::OpenAccess::kPath || at.find('/', root_end) != std::string::npos) {
      Check("open", at);
    }
    return SyscallsWrapper::OpenAt(dir_fd, path, how);
  }
  absl::StatusOr<volume::FileInfo> StatAt(int dir_fd, const std::string& name) override {
    Check("stat", At(dir_fd, name));
    return SyscallsWrapper::StatAt(dir_fd, name);
  }
  absl::Status MkdirAt(int dir_fd, const std::string& name, uint32_t mode) override {
    Check("mkdir", At(dir_fd, name));
    return SyscallsWrapper::MkdirAt(dir_fd, name, mode);
  }
  absl::Status BindBeneath(const std::string& root, const std::string& relative,
                           const std::string& target, unsigned long flags) override {
    Check("bind", root);
    return SyscallsWrapper::BindBeneath(root, relative, target, flags);
  }
  std::vector<std::string> outside;

 private:
  std::string At(int dir_fd, const std::string& name) {
    if (dir_fd == volume::kAtCwd || absl::StartsWith(name, "/")) return name;
    absl::StatusOr<std::string> dir = fake_->PathOf(dir_fd);
    return dir.ok() ? absl::StrCat(*dir, "/", name) : name;
  }
  void Check(const char* what, const std::string& path) {
    if (absl::StartsWith(path, std::string(kClients) + "/") && !volume::InMarkedIsolation()) {
      outside.push_back(absl::StrCat(what, " ", path));
    }
  }
  FakeSyscalls* const fake_;
};

// What a publish asks of a client's file system (its root alive, the bind
// from beneath it, a sub-dir made there), and a repeat publish of the
// mount at its target, runs in the isolation given: where the servers stop
// answering, a task of its own waits in the kernel, not the driver.
TEST_F(SharedClientTest, APublishAsksTheClientsFileSystemOnlyInItsIsolation) {
  volume::MarkingIsolation isolation;
  ClientCallsOutside calls(view_.get(), &sys_);
  SharedClientOptions options{kClients};
  options.isolation = &isolation;
  LustreModeOptions lustre;
  lustre.working_mount_dir = "/var/lib/kubelet/plugins/x/work";
  lustre.isolation = &isolation;
  mode_ = NewSharedClientMode(&calls, NewLustreMode(&calls, &ns_, lustre), options, nullptr);
  NodeOptions node;
  node.isolation = &isolation;
  logic_ = std::make_unique<NodeLogic>(node, &calls, mode_.get());

  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "team/x")).ok()) << "a new client, a new sub-dir";
  ASSERT_TRUE(logic_->Publish(Request("/pods/b", "team/y")).ok()) << "a known client";
  sys_.ResetCalls();
  const int runs = isolation.runs();
  ASSERT_TRUE(logic_->Publish(Request("/pods/b", "team/y")).ok()) << "a repeat";
  EXPECT_EQ(isolation.runs(), runs + 1) << "one task for a repeat";
  EXPECT_GE(sys_.CallCount(volume::SyscallOp::kStat), 1);
  EXPECT_EQ(sys_.IsolatedCallCount(volume::SyscallOp::kStat),
            sys_.CallCount(volume::SyscallOp::kStat))
      << "a stat of the mounted target outside the isolation";
  ASSERT_TRUE(logic_->Publish(Request("/pods/c", "team/x")).ok());
  EXPECT_EQ(isolation.runs(), runs + 2) << "one task for a publish from a known client";
  EXPECT_THAT(calls.outside, ::testing::IsEmpty());
  EXPECT_GE(sys_.IsolatedCallCount(volume::SyscallOp::kMount), 1) << "the bind";
  EXPECT_EQ(sys_.IsolatedCallCount(volume::SyscallOp::kMount),
            sys_.CallCount(volume::SyscallOp::kMount));
  for (const char* t : {"/pods/a", "/pods/b", "/pods/c"}) {
    EXPECT_TRUE(logic_->Unpublish("v", t).ok());
  }
}

// A publish stuck in its client's file system (a bind that does not
// return) holds that client's lock, and holds up nothing else of the
// client: the unpublish of another of its targets answers at once (the
// client's release is left to the stuck call), a publish of another target
// answers UNAVAILABLE at once once the stuck one has waited past
// NodeOptions::mount_stalled_after (MountSlots), and when the stuck publish returns the client
// serves again, and goes with its last target.
TEST_F(SharedClientTest, AStuckPublishHoldsUpNoOtherTargetOfItsClient) {
  NodeOptions node;
  node.mount_stalled_after = absl::Milliseconds(50);
  logic_ = std::make_unique<NodeLogic>(node, view_.get(), mode_.get());
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());

  sys_.HangNext(volume::SyscallOp::kMount);
  absl::Status stuck_result = absl::UnknownError("not returned");
  std::thread stuck([&] { stuck_result = logic_->Publish(Request("/pods/b", "y")); });
  ASSERT_TRUE(sys_.AwaitHung(volume::SyscallOp::kMount, 1, absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(100));  // past stalled_after

  absl::Time start = absl::Now();
  EXPECT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
  absl::Status other = logic_->Publish(Request("/pods/c", "z"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "waited behind the stuck publish";
  EXPECT_EQ(other.code(), absl::StatusCode::kUnavailable) << other;
  EXPECT_THAT(other.message(), HasSubstr("has not answered the mount at /pods/b since"));
  EXPECT_FALSE(sys_.Exists("/pods/c")) << "the target it made stays";
  EXPECT_EQ(ClientMounts(), 1) << "released while a publish binds from it";

  sys_.Release(volume::SyscallOp::kMount);
  stuck.join();
  EXPECT_TRUE(stuck_result.ok()) << stuck_result;
  EXPECT_EQ(ClientMounts(), 1);
  EXPECT_TRUE(logic_->Publish(Request("/pods/c", "z")).ok()) << "the client serves again";
  EXPECT_TRUE(logic_->Unpublish("v", "/pods/b").ok());
  EXPECT_TRUE(logic_->Unpublish("v", "/pods/c").ok());
  EXPECT_EQ(ClientMounts(), 0) << "the client goes with its last target";
}

// A client's mount helper killed at its timeout that still waits for the
// servers holds its file system up: a publish of any volume of it answers
// UNAVAILABLE at once and runs no other helper, until the first has ended.
TEST_F(SharedClientTest, AClientHelperLeftWaitingHoldsItsFileSystemUpUntilItEnds) {
  helper_hangs_ = true;
  absl::Status first = logic_->Publish(Request("/pods/a", "x"));
  EXPECT_EQ(first.code(), absl::StatusCode::kDeadlineExceeded) << first;
  helper_hangs_ = false;
  absl::Status retry = logic_->Publish(Request("/pods/b", "y"));
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable) << retry;
  EXPECT_THAT(retry.message(), HasSubstr("has not answered the mount at /pods/a since"));
  EXPECT_EQ(HelperMounts(), 1) << "a retry ran another helper";
  EXPECT_TRUE(logic_->Publish(Request("/pods/c", "x", "otherfs")).ok());

  volume::ProcessLeftBehind().End(left_id_);
  EXPECT_TRUE(logic_->Publish(Request("/pods/b", "y")).ok());
  for (const char* t : {"/pods/b", "/pods/c"}) EXPECT_TRUE(logic_->Unpublish("v", t).ok());
}

// On a node with many mounts a read of the whole mount table costs
// milliseconds: who uses a client is known in memory, and the table is read
// only when a client may have become idle.
TEST_F(SharedClientTest, PublishesRepeatsAndUnpublishesReadNoMountTableWhileTheClientIsInUse) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  sys_.ResetCalls();
  for (int i = 0; i < 3; ++i) {
    std::string target = absl::StrCat("/pods/b", i);
    ASSERT_TRUE(logic_->Publish(Request(target, "y")).ok());
    ASSERT_TRUE(logic_->Publish(Request(target, "y")).ok()) << "a repeat";
    ASSERT_TRUE(logic_->Unpublish("v", target).ok());
  }
  EXPECT_EQ(sys_.CallCount(volume::SyscallOp::kReadMountInfo), 0);
  EXPECT_EQ(ClientMounts(), 1);
  EXPECT_EQ(ns_.Unmounts().size(), 3u);
  // The last user goes: the table confirms the client is idle, and it goes.
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
  EXPECT_GE(sys_.CallCount(volume::SyscallOp::kReadMountInfo), 1);
  EXPECT_EQ(ClientMounts(), 0);
}

// A repeat is answered from the target itself: another sub-dir of the same
// client, other per-mount flags or another client are a different mount.
TEST_F(SharedClientTest, ARepeatMustBeTheSameDirectoryFlagsAndClient) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/other", "y")).ok());
  EXPECT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  EXPECT_EQ(logic_->Publish(Request("/pods/a", "y")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(logic_->Publish(Request("/pods/a", "")).code(), absl::StatusCode::kAlreadyExists);
  PublishRequest ro = Request("/pods/a", "x");
  ro.read_only = true;
  EXPECT_EQ(logic_->Publish(ro).code(), absl::StatusCode::kAlreadyExists);
  PublishRequest noexec = Request("/pods/a", "x");
  noexec.mount_flags = {"noexec"};
  EXPECT_EQ(logic_->Publish(noexec).code(), absl::StatusCode::kAlreadyExists);
  PublishRequest flock = Request("/pods/a", "x");
  flock.mount_flags = {"flock"};
  EXPECT_EQ(logic_->Publish(flock).code(), absl::StatusCode::kAlreadyExists);
  // And the other way: a read-only bind asked again read-only is the same.
  PublishRequest ro_b = Request("/pods/ro", "x");
  ro_b.read_only = true;
  ro_b.mount_flags = {"noatime"};
  ASSERT_TRUE(logic_->Publish(ro_b).ok());
  EXPECT_TRUE(logic_->Publish(ro_b).ok());
  for (const char* t : {"/pods/a", "/pods/other", "/pods/ro"}) {
    ASSERT_TRUE(logic_->Unpublish("v", t).ok()) << t;
  }
  EXPECT_EQ(ClientMounts(), 0);
}

// An unpublish whose unmount failed leaves the target a user: the client
// stays until the target really goes.
TEST_F(SharedClientTest, AFailedUnmountKeepsItsClient) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  sys_.FailNext(volume::SyscallOp::kUnmount, EIO, 100);
  EXPECT_FALSE(logic_->Unpublish("v", "/pods/a").ok());
  EXPECT_EQ(ClientMounts(), 1);
  EXPECT_TRUE(sys_.Exists("/pods/a/"));
  sys_.FailNext(volume::SyscallOp::kUnmount, EIO, 0);
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
  EXPECT_EQ(ClientMounts(), 0);
}

// A kernel where binds with flags cannot be made (no mount API and no
// staging mount): not ready, saying why, and every publish refused the same
// way rather than bound without its flags.
TEST_F(SharedClientTest, NotReadyWhereBindsWithFlagsCannotBeMade) {
  EXPECT_TRUE(mode_->CheckReady().status.ok());
  sys_.SetAtomicBinds(false);
  Readiness r = mode_->CheckReady();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.reason, "bind-mounts");
  EXPECT_THAT(r.status.message(), HasSubstr("--lustre-client=per-volume"));
  absl::Status s = logic_->Publish(Request("/pods/a", "x"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_FALSE(sys_.Exists("/pods/a/x"));
  EXPECT_EQ(OptionsAt("/pods/a"), "");
}

// From a container the binds go out only through a shared mount: one
// holding the client directory that is not shared (a kubelet directory not
// mounted Bidirectional) is not ready, and says so. In the driver's own
// namespace nothing needs to go out, and it is not asked.
TEST_F(SharedClientTest, BindsThatCannotReachTheHostAreNotReady) {
  LustreModeOptions lustre;
  lustre.working_mount_dir = "/var/lib/kubelet/plugins/x/work";
  SharedClientOptions options{kClients};
  options.binds_must_propagate = true;
  auto from_container =
      NewSharedClientMode(view_.get(), NewLustreMode(view_.get(), &ns_, lustre), options, nullptr);
  // The fake's root mount is shared: the client directory's holder.
  Readiness shared = from_container->CheckReady();
  EXPECT_TRUE(shared.status.ok()) << shared.status;
  // A private mount over the kubelet directory now holds it.
  ASSERT_TRUE(sys_.AddDir("/var/lib/kubelet").ok());
  ASSERT_TRUE(sys_.Mount("kubelet", "/var/lib/kubelet", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys_.AddDir("/var/lib/kubelet/plugins/x/work").ok());
  Readiness r = from_container->CheckReady();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition) << r.status;
  EXPECT_EQ(r.reason, "propagation");
  EXPECT_THAT(r.status.message(), HasSubstr("/var/lib/kubelet) is not shared"));
  EXPECT_THAT(r.status.message(), HasSubstr("Bidirectional"));
  // The same mounts, in the driver's own namespace: ready.
  EXPECT_TRUE(mode_->CheckReady().status.ok()) << mode_->CheckReady().status;
}

TEST_F(SharedClientTest, FileSystemsAndClientOptionsGetTheirOwnClients) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/b", "x", "otherfs")).ok());
  PublishRequest flock = Request("/pods/c", "x");
  flock.mount_flags = {"flock"};
  ASSERT_TRUE(logic_->Publish(flock).ok());
  // Per-mount flags act on the bind alone: no new client.
  PublishRequest noatime = Request("/pods/d", "x");
  noatime.mount_flags = {"noatime", "nosuid"};
  ASSERT_TRUE(logic_->Publish(noatime).ok());
  PublishRequest ro = Request("/pods/e", "x");
  ro.read_only = true;
  ASSERT_TRUE(logic_->Publish(ro).ok());
  EXPECT_EQ(HelperMounts(), 3);
  EXPECT_EQ(ClientMounts(), 3);
  EXPECT_TRUE(absl::StartsWith(OptionsAt("/pods/e"), "ro")) << OptionsAt("/pods/e");
  EXPECT_THAT(OptionsAt("/pods/d"), HasSubstr("nosuid"));
  EXPECT_THAT(OptionsAt("/pods/d"), HasSubstr("noatime"));
  EXPECT_TRUE(absl::StartsWith(OptionsAt("/pods/a"), "rw")) << OptionsAt("/pods/a");
  // A repeat is OK; the same target with another client-wide option is not.
  EXPECT_TRUE(logic_->Publish(flock).ok());
  PublishRequest other = Request("/pods/c", "x");
  EXPECT_EQ(logic_->Publish(other).code(), absl::StatusCode::kAlreadyExists);
  for (const char* t : {"/pods/a", "/pods/b", "/pods/c", "/pods/d", "/pods/e"}) {
    ASSERT_TRUE(logic_->Unpublish("v", t).ok()) << t;
  }
  EXPECT_EQ(ClientMounts(), 0);
}

TEST_F(SharedClientTest, StateComesFromTheMountTableAfterARestart) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/b", "y")).ok());
  // A new process: nothing in memory.
  LustreModeOptions lustre;
  lustre.working_mount_dir = "/var/lib/kubelet/plugins/x/work";
  auto restarted = NewSharedClientMode(view_.get(), NewLustreMode(view_.get(), &ns_, lustre),
                                       SharedClientOptions{kClients}, nullptr);
  NodeLogic logic(NodeOptions{}, view_.get(), restarted.get());
  ASSERT_TRUE(logic.Publish(Request("/pods/c", "x")).ok());
  EXPECT_EQ(HelperMounts(), 1) << "the existing client is found in the mount table";
  ASSERT_TRUE(logic.Unpublish("v", "/pods/a").ok());
  ASSERT_TRUE(logic.Unpublish("v", "/pods/b").ok());
  EXPECT_EQ(ClientMounts(), 1) << "pod c still uses the client";
  ASSERT_TRUE(logic.Unpublish("v", "/pods/c").ok());
  EXPECT_EQ(ClientMounts(), 0);
}

// The parameter: whether the node restarts before the unpublishes.
// Where the namespace bounds every unmount itself, the unpublish of a bind
// of a live client (each of its steps asks no file system) is made on the
// calling thread: no hand-over to a worker. Otherwise, and for a target
// that may be its client's last mount, the cleanup's worker makes it.
TEST_F(SharedClientTest, AnUnpublishInPlaceStaysOnTheCallingThreadWhereUnmountsAreBounded) {
  for (bool bounded : {false, true}) {
    SharedClientOptions options{kClients};
    options.unmounts_bounded = bounded;
    logic_.reset();
    mode_ =
        NewSharedClientMode(view_.get(), NewLustreMode(view_.get(), &ns_, {}), options, nullptr);
    logic_ = std::make_unique<NodeLogic>(NodeOptions{}, view_.get(), mode_.get());
    const std::string target = bounded ? "/pods/bounded" : "/pods/unbounded";
    ASSERT_TRUE(logic_->Publish(Request(target, "x")).ok()) << bounded;
    const size_t before = sys_.UnmountCalls().size();
    ASSERT_TRUE(mode_->Unpublish(target).ok()) << bounded;  // here, not on a call's worker
    std::vector<volume::FakeSyscalls::UnmountCall> calls = sys_.UnmountCalls();
    int made = 0;
    for (size_t i = before; i < calls.size(); ++i) {
      if (calls[i].target != target) continue;  // the client's, now unused
      ++made;
      EXPECT_TRUE(calls[i].in_place);
      EXPECT_EQ(calls[i].thread == std::this_thread::get_id(), bounded) << bounded;
    }
    EXPECT_EQ(made, 1) << bounded;
  }
}

class DeadClientTest : public SharedClientTest, public testing::WithParamInterface<bool> {};
INSTANTIATE_TEST_SUITE_P(Restart, DeadClientTest, testing::Bool());

TEST_P(DeadClientTest, DeadClientIsReplacedForTheNextPublish) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  std::string client;
  std::string table = *sys_.ReadMountInfo();
  for (absl::string_view line : absl::StrSplit(table, '\n')) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() > 4 && absl::StartsWith(f[4], std::string(kClients) + "/")) client = f[4];
  }
  ASSERT_FALSE(client.empty());
  ASSERT_TRUE(sys_.BreakMount(client, ESTALE).ok());
  absl::Status s = logic_->Publish(Request("/pods/b", "x"));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(HelperMounts(), 2);
  if (GetParam()) {
    // A restart: what is known of the clients comes from the mount table,
    // which shows no client of the old target's device.
    LustreModeOptions lustre;
    lustre.working_mount_dir = "/var/lib/kubelet/plugins/x/work";
    logic_.reset();
    mode_ = NewSharedClientMode(view_.get(), NewLustreMode(view_.get(), &ns_, lustre),
                                SharedClientOptions{kClients}, nullptr);
    logic_ = std::make_unique<NodeLogic>(NodeOptions{}, view_.get(), mode_.get());
  }
  // The old target is now the last mount of the detached client: its
  // unmount ends that client and is not made in place; the new client's
  // bind is.
  for (const std::string target : {"/pods/a", "/pods/b"}) {
    const size_t before = sys_.UnmountCalls().size();
    ASSERT_TRUE(logic_->Unpublish("v", target).ok()) << target;
    std::vector<volume::FakeSyscalls::UnmountCall> calls = sys_.UnmountCalls();
    ASSERT_GT(calls.size(), before) << target;
    for (size_t i = before; i < calls.size(); ++i) {
      if (calls[i].target != target) continue;
      EXPECT_EQ(calls[i].in_place, target == "/pods/b") << target;
    }
  }
}

// Holds every unmount of `target` until Let() (or the wrapper goes).
class HeldUnmounts : public volume::SyscallsWrapper {
 public:
  HeldUnmounts(volume::Syscalls* sys, std::string target)
      : SyscallsWrapper(sys), target_(std::move(target)) {}
  ~HeldUnmounts() override { Let(); }
  absl::Status Unmount(const std::string& target, int flags) override {
    if (target == target_) {
      absl::MutexLock lock(&mu_);
      held_ = true;
      mu_.Await(absl::Condition(&let_));
    }
    return SyscallsWrapper::Unmount(target, flags);
  }
  bool AwaitHeld() {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&held_), absl::Seconds(10));
  }
  void Let() {
    absl::MutexLock lock(&mu_);
    let_ = true;
  }

 private:
  const std::string target_;
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool let_ ABSL_GUARDED_BY(mu_) = false;
};

// A publish that finds its client dead detaches it only once the
// unpublishes that were unmounting its binds in place have: detached first,
// the client would end with such an unmount (its last reference), on the
// unmounting thread. Past its wait, the publish answers UNAVAILABLE and
// leaves the client; the retry detaches it.
TEST_F(SharedClientTest, ADeadClientIsDetachedOnlyAfterItsBindsBeingUnmountedInPlace) {
  for (bool let_go : {true, false}) {
    SCOPED_TRACE(let_go ? "let go" : "held past the wait");
    const std::string a = let_go ? "/pods/a1" : "/pods/a2";
    const std::string b = let_go ? "/pods/b1" : "/pods/b2";
    sys_.ResetCounters();
    HeldUnmounts held(view_.get(), a);
    SharedClientOptions options{kClients};
    options.in_place_unmount_wait = let_go ? absl::Seconds(10) : absl::Milliseconds(200);
    logic_.reset();
    mode_ = NewSharedClientMode(&held, NewLustreMode(view_.get(), &ns_, {}), options, nullptr);
    logic_ = std::make_unique<NodeLogic>(NodeOptions{}, &held, mode_.get());
    ASSERT_TRUE(logic_->Publish(Request(a, "x")).ok());
    std::string client;
    for (absl::string_view line : absl::StrSplit(*sys_.ReadMountInfo(), '\n')) {
      std::vector<std::string> f = absl::StrSplit(line, ' ');
      if (f.size() > 4 && absl::StartsWith(f[4], std::string(kClients) + "/")) client = f[4];
    }
    ASSERT_FALSE(client.empty());

    std::thread unpublish([&] { EXPECT_TRUE(mode_->Unpublish(a).ok()); });
    ASSERT_TRUE(held.AwaitHeld());
    ASSERT_TRUE(sys_.BreakMount(client, ESTALE).ok());
    auto client_detached = [&] {
      for (const auto& call : sys_.UnmountCalls()) {
        if (call.target == client) return true;
      }
      return false;
    };
    if (let_go) {
      absl::Status published;
      std::thread publish([&] { published = logic_->Publish(Request(b, "x")); });
      absl::SleepFor(absl::Milliseconds(300));
      EXPECT_FALSE(client_detached()) << "detached under an unmount in place of its bind";
      held.Let();
      unpublish.join();
      publish.join();
      EXPECT_TRUE(published.ok()) << published;
      EXPECT_TRUE(client_detached());
      // The held unmount was made in place, before the client went.
      std::vector<volume::FakeSyscalls::UnmountCall> calls = sys_.UnmountCalls();
      auto of_a =
          std::find_if(calls.begin(), calls.end(), [&](const auto& c) { return c.target == a; });
      auto of_client = std::find_if(calls.begin(), calls.end(),
                                    [&](const auto& c) { return c.target == client; });
      ASSERT_NE(of_a, calls.end());
      EXPECT_TRUE(of_a->in_place);
      EXPECT_LT(of_a - calls.begin(), of_client - calls.begin());
    } else {
      absl::Status published = logic_->Publish(Request(b, "x"));
      EXPECT_EQ(published.code(), absl::StatusCode::kUnavailable) << published;
      EXPECT_THAT(published.message(), HasSubstr("still unmounting"));
      EXPECT_FALSE(client_detached());
      held.Let();
      unpublish.join();
      published = logic_->Publish(Request(b, "x"));
      EXPECT_TRUE(published.ok()) << published;
      EXPECT_TRUE(client_detached());
    }
    ASSERT_TRUE(logic_->Unpublish("v", b).ok());
    logic_.reset();
    mode_.reset();
  }
}

// mount.lustre turns a host name into its NID before mounting, so the mount
// table shows another MGS spelling than the volume's: the client is still
// found, and a repeat is still the same mount.
TEST_F(SharedClientTest, TheHelpersSpellingOfTheMgsDoesNotMatter) {
  ns_.AddProgram(kHelper, [this](const std::vector<std::string>& argv) {
    ProcessResult r;
    std::string spec = argv[argv.size() - 2];
    spec.replace(0, spec.find(":/"), "10.9.9.9@tcp");
    if (!sys_.Mount(spec, argv.back(), "lustre", 0, "").ok()) r.exit_code = 5;
    return absl::StatusOr<ProcessResult>(r);
  });
  PublishRequest a = Request("/pods/a", "x");
  a.volume_context["mgs-ip-address"] = "mgs.example.com";
  ASSERT_TRUE(logic_->Publish(a).ok());
  PublishRequest b = a;
  b.target_path = "/pods/b";
  absl::Status s = logic_->Publish(b);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(logic_->Publish(a).ok()) << "a repeat is the same mount";
  EXPECT_EQ(HelperMounts(), 1);
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/b").ok());
  EXPECT_EQ(ClientMounts(), 0);
}

// MNT_FORCE on one bind would abort the shared client for every other bind.
TEST_F(SharedClientTest, UnpublishNeverForcesTheSharedClient) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/b", "x")).ok());
  ASSERT_TRUE(sys_.SetBusy("/pods/a", true).ok());
  absl::Status s = logic_->Unpublish("v", "/pods/a");
  EXPECT_TRUE(s.ok()) << s << " (a busy bind is detached)";
  ASSERT_FALSE(sys_.UnmountCalls().empty());
  for (const auto& call : sys_.UnmountCalls()) {
    EXPECT_EQ(call.flags & MNT_FORCE, 0) << call.target;
  }
  EXPECT_TRUE(sys_.Exists("/pods/b/")) << "the other bind is untouched";
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/b").ok());
}

// A target of a file system that does not answer is detached, and so is its
// client when it was the last user: nothing is stat'ed or unmounted plainly
// (which would wait for the file system).
TEST_F(SharedClientTest, DetachingTheLastTargetDetachesItsClient) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  ASSERT_EQ(ClientMounts(), 1);
  const size_t before = sys_.UnmountCalls().size();
  absl::Status s = mode_->Detach("/pods/a");
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(ClientMounts(), 0);
  EXPECT_FALSE(sys_.Exists("/pods/a"));
  std::vector<volume::FakeSyscalls::UnmountCall> calls = sys_.UnmountCalls();
  ASSERT_EQ(calls.size(), before + 2) << "the target and the client";
  for (size_t i = before; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].flags, MNT_DETACH) << calls[i].target;
  }
  // The bind asks the file system nothing: made in place. The client's
  // unmount ends it: not in place.
  EXPECT_TRUE(calls[before].in_place) << calls[before].target;
  EXPECT_FALSE(calls[before + 1].in_place) << calls[before + 1].target;
}

TEST_F(SharedClientTest, SubDirsNeverEscapeTheClientRoot) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a", "x")).ok());
  for (const char* hostile : {"../../../etc", "x/../../..", "/../etc"}) {
    absl::Status s = logic_->Publish(Request("/pods/h", hostile));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << hostile << ": " << s;
  }
  EXPECT_FALSE(sys_.Exists("/pods/h"));
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
  EXPECT_EQ(ClientMounts(), 0);
}

TEST_F(SharedClientTest, FailedBindLeavesNoIdleClient) {
  sys_.SetAtomicBinds(false);  // no mount API and no staging mount
  PublishRequest ro = Request("/pods/a", "x");
  ro.read_only = true;
  absl::Status s = logic_->Publish(ro);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("--lustre-client=per-volume"));
  EXPECT_EQ(ClientMounts(), 0);
  EXPECT_FALSE(sys_.Exists("/pods/a"));
}

}  // namespace
}  // namespace lustre_csi::driver
