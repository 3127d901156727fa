// A file system whose server stops answering, against the real binary in
// each mount mode. The file system "lustrefs" is a FUSE mount (bindfs, with
// attribute and entry caching off, so every stat reaches its daemon) that
// the test freezes (SIGSTOP of the daemon: every call into it then waits)
// and thaws; "otherfs" beside it stays healthy. The stand-in mount.lustre
// serves both. What is checked: NodeGetVolumeStats of a frozen volume
// answers within seconds with an abnormal volume condition and no figures,
// retries add no threads, the other file system is unaffected, SIGTERM ends
// the node with a look still stuck, and everything recovers after the thaw.
// A negative control freezes the driver itself and shows the checks see
// that. Also run as on older kernels (e2e/older-kernel).
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kStandin[] = "/run/lustre-standin";
constexpr char kServers[] = "/run/lustre-standin/servers";

// The node's threads now (/proc/<pid>/status).
int Threads(pid_t pid) {
  for (absl::string_view line :
       absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/status")), '\n')) {
    if (absl::ConsumePrefix(&line, "Threads:")) {
      int n = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n)) return n;
    }
  }
  return -1;
}

// Whether task `dir` (/proc/<pid> or /proc/<pid>/task/<tid>) waits for a
// FUSE daemon's answer.
bool WaitsOnFuse(const std::string& dir) {
  std::string wchan = ReadFile(dir + "/wchan");
  return wchan == "request_wait_answer" ||
         absl::StrContains(ReadFile(dir + "/stack"), "request_wait_answer");
}

// Threads of process `pid` waiting for a FUSE answer.
int ThreadsOnFuse(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    n += WaitsOnFuse(task.path().string());
  }
  return n;
}

// Children of `pid` (its isolated tasks) waiting for a FUSE answer.
std::vector<pid_t> ChildrenOnFuse(pid_t pid) {
  std::vector<pid_t> out;
  for (pid_t child : ChildrenOf(pid)) {
    if (WaitsOnFuse(absl::StrCat("/proc/", child))) out.push_back(child);
  }
  return out;
}

class DeadServerE2eTest : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    // A private /run for the stand-in's state, in this process's own mount
    // namespace.
    run_is_private_ = mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") == 0;
    ASSERT_TRUE(run_is_private_) << strerror(errno);
    ASSERT_TRUE(PretendLustreModuleLoaded(scratch_.path()).ok());
  }

  void SetUp() override {
    ASSERT_TRUE(run_is_private_);
    for (const std::string& d :
         {std::string(kServers) + "/lustrefs", std::string(kServers) + "/otherfs",
          tmp_.Join("a-data/vol"), tmp_.Join("pods"), tmp_.Join("work")}) {
      std::filesystem::create_directories(d);
    }
    ASSERT_EQ(mount("10.0.0.4@tcp:/otherfs", (std::string(kServers) + "/otherfs").c_str(), "tmpfs",
                    0, "mode=0755"),
              0);
    std::filesystem::create_directories(std::string(kServers) + "/otherfs/vol");
    // The file system that will stop answering.
    const std::string lustrefs = std::string(kServers) + "/lustrefs";
    if (hung_) {
      daemon_ = std::make_unique<Subprocess>(
          std::vector<std::string>{Runfile("e2e/hung-fuse"), lustrefs}, tmp_.Join("server.log"));
    } else {
      daemon_ = std::make_unique<Subprocess>(
          std::vector<std::string>{"/usr/bin/bindfs", "-f", "-o",
                                   "attr_timeout=0,entry_timeout=0,negative_timeout=0",
                                   tmp_.Join("a-data"), lustrefs},
          tmp_.Join("server.log"));
    }
    ASSERT_TRUE(WaitUntil([&] { return !MountsAt(lustrefs).empty(); }, absl::Seconds(20)))
        << ReadFile(tmp_.Join("server.log"));
    if (hung_) std::filesystem::create_directories(lustrefs + "/vol");

    StartNode("node");
  }

  // Starts the node on <tmp>/<name>.sock, logging to <tmp>/<name>.log. Calls
  // bounded at 8 s (100 s shipped), SIGTERM's grace 5 s (30 s shipped), so
  // the suite waits for them in seconds.
  void StartNode(const std::string& name) {
    metrics_port_ = FreePort();
    node_ = std::make_unique<Subprocess>(
        Argv("node", name,
             {"--nodeid=n1", absl::StrCat("--metrics-address=127.0.0.1:", metrics_port_)}),
        tmp_.Join(name + ".log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join(name + ".sock"), absl::Seconds(20)).ok())
        << ReadFile(tmp_.Join(name + ".log"));
    stub_ = csi::v1::Node::NewStub(UnixChannel(tmp_.Join(name + ".sock")));
  }

  // The same for a controller of the mode.
  void StartController(const std::string& name) {
    controller_ =
        std::make_unique<Subprocess>(Argv("controller", name, {}), tmp_.Join(name + ".log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join(name + ".sock"), absl::Seconds(20)).ok())
        << ReadFile(tmp_.Join(name + ".log"));
    controller_stub_ = csi::v1::Controller::NewStub(UnixChannel(tmp_.Join(name + ".sock")));
  }

  // The command line of `role` in the suite's mode, on <tmp>/<name>.sock.
  std::vector<std::string> Argv(const std::string& role, const std::string& name,
                                const std::vector<std::string>& role_flags) {
    std::vector<std::string> argv = {BinaryPath(), role, "--call-timeout-seconds=8",
                                     "--shutdown-grace-seconds=5",
                                     "--endpoint=unix://" + tmp_.Join(name + ".sock")};
    argv.insert(argv.end(), role_flags.begin(), role_flags.end());
    if (GetParam() == "local") {
      argv.insert(argv.end(), {"--mount-mode=local", "--local-root=" + std::string(kServers)});
      return argv;
    }
    argv.insert(argv.end(),
                {"--mount-mode=lustre", "--mount-helper=" + Runfile("e2e/standin-mount-lustre"),
                 "--mount-namespace=current", "--working-mount-dir=" + tmp_.Join("work")});
    if (role == "node") {
      argv.insert(argv.end(), {"--lustre-client=" + GetParam(),
                               "--lustre-params-root=" + std::string(kStandin) + "/params"});
      argv.insert(argv.end(), extra_flags_.begin(), extra_flags_.end());
    }
    return argv;
  }

  void TearDown() override {
    Thaw();
    if (node_ != nullptr && node_->running()) {
      for (const char* t : {"pods/a", "pods/b", "pods/c", "pods/new"}) {
        WaitUntil([&] { return Unpublish(tmp_.Join(t)).ok(); }, absl::Seconds(60));
      }
    }
    node_.reset();
    controller_.reset();
    // Idle shared clients (see tenant_e2e_test), a controller's root mounts.
    for (const std::string& m : MountsUnder(tmp_.Join("work"))) umount2(m.c_str(), MNT_DETACH);
    EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
    for (const std::string& m : MountsUnder(kServers)) umount2(m.c_str(), MNT_DETACH);
    daemon_.reset();
    std::filesystem::remove_all(kStandin);
  }

  // SIGSTOP reaches each thread of the daemon in its own time: frozen once
  // every one of them shows as stopped. The hung server is told to stop
  // answering, and says when it has.
  void Freeze() {
    frozen_ = true;
    if (hung_) {
      daemon_->Signal(SIGUSR1);
      ASSERT_TRUE(
          WaitUntil([&] { return absl::StrContains(ServerLog(), "frozen"); }, absl::Seconds(10)));
      return;
    }
    daemon_->Signal(SIGSTOP);
    const std::string tasks = absl::StrCat("/proc/", daemon_->pid(), "/task");
    ASSERT_TRUE(WaitUntil(
        [&] {
          std::error_code ec;
          for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
            int tid = 0;
            if (!absl::SimpleAtoi(task.path().filename().string(), &tid) ||
                ProcessState(tid) != 'T') {
              return false;
            }
          }
          return !ec;
        },
        absl::Seconds(10)));
  }
  void Thaw() {
    if (frozen_) daemon_->Signal(hung_ ? SIGUSR2 : SIGCONT);
    frozen_ = false;
  }
  std::string Log() { return ReadFile(tmp_.Join("node.log")); }
  std::string ServerLog() { return ReadFile(tmp_.Join("server.log")); }

  static std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
    return ctx;
  }

  grpc::Status Publish(const std::string& fs, const std::string& target,
                       absl::Duration deadline = absl::Seconds(60)) {
    csi::v1::NodePublishVolumeRequest req =
        MakePublishRequest("pv-" + fs, target, LustreContext("vol", fs));
    csi::v1::NodePublishVolumeResponse res;
    return stub_->NodePublishVolume(Context(deadline).get(), req, &res);
  }

  absl::Status Unpublish(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("pv");
    req.set_target_path(target);
    csi::v1::NodeUnpublishVolumeResponse res;
    grpc::Status s = stub_->NodeUnpublishVolume(Context(absl::Seconds(60)).get(), req, &res);
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }

  // Stats as the kubelet asks for them, with the deadline a test allows.
  grpc::Status Stats(const std::string& target, csi::v1::NodeGetVolumeStatsResponse* res,
                     absl::Duration deadline = absl::Seconds(20)) {
    csi::v1::NodeGetVolumeStatsRequest req;
    req.set_volume_id("pv");
    req.set_volume_path(target);
    return stub_->NodeGetVolumeStats(Context(deadline).get(), req, res);
  }

  static inline TempDir scratch_;  // holds the /proc/filesystems stand-in
  static inline bool run_is_private_ = false;
  TempDir tmp_;
  // Whether "lustrefs" is served by e2e/hung-fuse, which takes requests and
  // answers none while frozen, instead of bindfs, which takes none.
  bool hung_ = false;
  std::vector<std::string> extra_flags_;  // the node's, after the suite's
  std::unique_ptr<Subprocess> daemon_;
  bool frozen_ = false;
  std::unique_ptr<Subprocess> node_;
  int metrics_port_ = 0;
  std::unique_ptr<csi::v1::Node::Stub> stub_;
  std::unique_ptr<Subprocess> controller_;
  std::unique_ptr<csi::v1::Controller::Stub> controller_stub_;
};

// Sets the connection state of every client device of `fs` the stand-in
// made, in the files a Lustre client shows them in; how many it set.
int SetImportState(const std::string& fs, const std::string& state) {
  int set = 0;
  for (const char* kind : {"mdc", "osc"}) {
    std::error_code ec;
    for (const auto& dev : std::filesystem::directory_iterator(
             absl::StrCat(kStandin, "/params/proc/fs/lustre/", kind), ec)) {
      std::string name = dev.path().filename().string();
      if (!absl::StartsWith(name, fs + "-") || std::string(kind) == "mdc") continue;
      EXPECT_TRUE(WriteFile(dev.path().string() + "/import",
                            absl::StrCat("import:\n    name: ", name, "\n    state: ", state,
                                         "\n    connect_flags: [ write_grant ]\n"))
                      .ok());
      ++set;
    }
  }
  return set;
}

TEST_P(DeadServerE2eTest, StatsOfAFrozenFileSystemAnswerAbnormalAndBounded) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  ASSERT_TRUE(Publish("otherfs", tmp_.Join("pods/b")).ok()) << Log();
  csi::v1::NodeGetVolumeStatsResponse res;
  ASSERT_TRUE(Stats(tmp_.Join("pods/a"), &res).ok());
  EXPECT_FALSE(res.volume_condition().abnormal());

  Freeze();
  const int threads_before = Threads(node_->pid());
  // The kubelet's retries: each answers, abnormal, without figures.
  for (int i = 0; i < 20; ++i) {
    csi::v1::NodeGetVolumeStatsResponse stuck;
    grpc::Status s = Stats(tmp_.Join("pods/a"), &stuck);
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_code() << " " << s.error_message() << Log();
    EXPECT_TRUE(stuck.volume_condition().abnormal()) << i;
    EXPECT_THAT(stuck.volume_condition().message(), HasSubstr("not responding")) << i;
    EXPECT_EQ(stuck.usage_size(), 0) << i << ": figures of a silent file system";
  }
  // One look stuck, not one per call, and in a task of its own: no thread
  // of the node waits on the frozen file system (one that did would keep the
  // process from exiting).
  EXPECT_LE(Threads(node_->pid()), threads_before + 2);
  EXPECT_EQ(ThreadsOnFuse(node_->pid()), 0) << "a thread of the node waits in the file system";
  EXPECT_EQ(ChildrenOnFuse(node_->pid()).size(), 1u);
  // The other file system answers meanwhile.
  csi::v1::NodeGetVolumeStatsResponse other;
  ASSERT_TRUE(Stats(tmp_.Join("pods/b"), &other).ok());
  EXPECT_FALSE(other.volume_condition().abnormal()) << other.volume_condition().message();
  EXPECT_GT(other.usage_size(), 0);

  Thaw();
  EXPECT_TRUE(WaitUntil([&] {
    csi::v1::NodeGetVolumeStatsResponse back;
    return Stats(tmp_.Join("pods/a"), &back).ok() && !back.volume_condition().abnormal() &&
           back.usage_size() > 0;
  })) << Log();
}

TEST_P(DeadServerE2eTest, SigtermEndsTheNodeWithALookStuck) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  Freeze();
  csi::v1::NodeGetVolumeStatsResponse stuck;
  ASSERT_TRUE(Stats(tmp_.Join("pods/a"), &stuck).ok());
  EXPECT_TRUE(stuck.volume_condition().abnormal());
  std::vector<pid_t> looks = ChildrenOnFuse(node_->pid());
  EXPECT_EQ(looks.size(), 1u);
  node_->Signal(SIGTERM);
  EXPECT_NE(node_->Wait(absl::Seconds(20)), -1) << "the node did not exit" << Log();
  // The look it left is killed, and dies as the kernel lets it go (a FUSE
  // wait at once; a Lustre one when the server answers).
  for (pid_t look : looks) {
    EXPECT_TRUE(WaitUntil([&] { return kill(look, 0) != 0; }, absl::Seconds(10)))
        << "the look left behind still runs";
  }
  // A new node picks the target up once the file system answers again.
  Thaw();
  node_.reset();
  StartNode("node2");
  csi::v1::NodeGetVolumeStatsResponse back;
  ASSERT_TRUE(Stats(tmp_.Join("pods/a"), &back).ok());
  EXPECT_FALSE(back.volume_condition().abnormal());
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/a")).ok());
}

// The kubelet gives up on a pod whose file system died: its unpublish must
// come back within the CO's timeout (2 minutes), the bind unmounted, never
// forced, and the other targets of the file system must not be hurt by it.
// The kubelet retries what answers UNAVAILABLE: every call answers within
// the call bound, none is ABORTED, and the unpublish ends OK.
TEST_P(DeadServerE2eTest, UnpublishOfAFrozenTargetIsBounded) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/c")).ok()) << Log();
  Freeze();
  csi::v1::NodeUnpublishVolumeRequest req;
  req.set_volume_id("pv");
  req.set_target_path(tmp_.Join("pods/a"));
  const absl::Time start = absl::Now();
  // A retry a second later: OK (the unpublish is done by then) or "still in
  // progress" where it is not, never ABORTED because of it.
  grpc::Status retried;
  std::thread retry([&] {
    absl::SleepFor(absl::Seconds(1));
    csi::v1::NodeUnpublishVolumeResponse again;
    retried = stub_->NodeUnpublishVolume(Context(absl::Seconds(110)).get(), req, &again);
  });
  grpc::Status s;
  int calls = 0;
  do {
    csi::v1::NodeUnpublishVolumeResponse res;
    const absl::Time call = absl::Now();
    s = stub_->NodeUnpublishVolume(Context(absl::Seconds(110)).get(), req, &res);
    ++calls;
    EXPECT_LT(absl::Now() - call, absl::Seconds(13)) << "past the 8 s call bound";
    ASSERT_TRUE(s.ok() || s.error_code() == grpc::UNAVAILABLE)
        << s.error_code() << " " << s.error_message() << Log();
    if (!s.ok()) absl::SleepFor(absl::Milliseconds(500));  // the kubelet backs off too
  } while (!s.ok() && absl::Now() - start < absl::Seconds(90));
  RecordProperty("unpublish_ms", absl::ToInt64Milliseconds(absl::Now() - start));
  RecordProperty("unpublish_calls", calls);
  retry.join();
  EXPECT_TRUE(retried.ok() || retried.error_code() == grpc::UNAVAILABLE)
      << retried.error_code() << " " << retried.error_message();
  // The unpublish finds the mount at the target by mount ids, without
  // asking the frozen file system, and unmounts it: at once, in every mode
  // (a bind's unmount asks the file system nothing; FUSE lets a client of
  // its own go without its daemon).
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message() << Log();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // The looks at the target and the unmounts left waiting ran in tasks of
  // their own: no thread of the node waits on the frozen file system.
  EXPECT_EQ(ThreadsOnFuse(node_->pid()), 0) << "a thread of the node waits in the file system";
  EXPECT_TRUE(MountsAt(tmp_.Join("pods/a")).empty());
  EXPECT_FALSE(MountsAt(tmp_.Join("pods/c")).empty()) << "another target of the file system went";
  Thaw();
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/a")).ok());
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/c")).ok());
}

// A publish on a file system that does not answer: the call answers within
// its bound (never ABORTED), the kubelet's unpublish of that target then
// abandons the publish (UNAVAILABLE, never ABORTED) while another file
// system publishes and unpublishes as usual, SIGTERM ends the node, and once
// the server answers nothing stays at the target.
TEST_P(DeadServerE2eTest, APublishOnAFrozenFileSystemIsBoundedAndItsTargetUnpublishable) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  Freeze();
  const std::string target = tmp_.Join("pods/new");
  absl::Time start = absl::Now();
  grpc::Status published = Publish("lustrefs", target);
  absl::Duration took = absl::Now() - start;
  RecordProperty("publish_ms", absl::ToInt64Milliseconds(took));
  EXPECT_LT(took, absl::Seconds(13)) << "past the 8 s call bound";
  EXPECT_FALSE(published.ok());
  EXPECT_NE(published.error_code(), grpc::ABORTED) << published.error_message();
  // What waits for the file system is a task of the node's (shared clients,
  // local mode) or the mount helper (per-volume clients), never a thread of
  // the node, which could then not exit.
  EXPECT_EQ(ThreadsOnFuse(node_->pid()), 0) << "a thread of the node waits in the file system";
  if (GetParam() != "per-volume") {
    EXPECT_EQ(ChildrenOnFuse(node_->pid()).size(), 1u) << "the publish's task";
  }
  // Another target of the same file system (in the default mode, of the
  // same client, whose lock the stuck publish holds) unpublishes at once.
  start = absl::Now();
  absl::Status other = Unpublish(tmp_.Join("pods/a"));
  EXPECT_TRUE(other.ok()) << other;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(MountsAt(tmp_.Join("pods/a")).empty());
  {
    // Once the stuck mount has waited past 10 s, a publish of another
    // target of that file system answers at once instead of waiting behind
    // it (with a thread, a task or a helper of its own).
    absl::SleepFor(absl::Seconds(11) - (absl::Now() - start) - took);
    const int before = Threads(node_->pid());
    const size_t children = ChildrenOnFuse(node_->pid()).size();
    start = absl::Now();
    grpc::Status behind = Publish("lustrefs", tmp_.Join("pods/c"));
    EXPECT_LT(absl::Now() - start, absl::Seconds(2));
    EXPECT_EQ(behind.error_code(), grpc::UNAVAILABLE) << behind.error_message();
    EXPECT_THAT(behind.error_message(), HasSubstr("has not answered the mount at " + target));
    EXPECT_LE(Threads(node_->pid()), before + 1);
    EXPECT_EQ(ChildrenOnFuse(node_->pid()).size(), children);
  }
  const int threads = Threads(node_->pid());
  for (int i = 0; i < 2; ++i) {
    start = absl::Now();
    absl::Status unpublished = Unpublish(target);
    EXPECT_LT(absl::Now() - start, absl::Seconds(13));
    if (unpublished.ok()) break;  // the publish had given up (a per-volume helper killed)
    EXPECT_EQ(unpublished.code(), absl::StatusCode::kUnavailable) << unpublished;
    EXPECT_THAT(unpublished.message(), HasSubstr("an unpublish abandoned it")) << unpublished;
  }
  EXPECT_LE(Threads(node_->pid()), threads + 2) << "retries added threads";
  ASSERT_TRUE(Publish("otherfs", tmp_.Join("pods/b")).ok()) << Log();
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/b")).ok());

  // SIGTERM ends the node within its grace period though work is stuck.
  start = absl::Now();
  node_->Signal(SIGTERM);
  EXPECT_NE(node_->Wait(absl::Seconds(20)), -1) << "the node did not exit" << Log();
  RecordProperty("sigterm_exit_ms", absl::ToInt64Milliseconds(absl::Now() - start));

  // A new node cleans the target once the file system answers again.
  Thaw();
  node_.reset();
  StartNode("node2");
  EXPECT_TRUE(WaitUntil([&] { return Unpublish(target).ok(); }, absl::Seconds(30)))
      << ReadFile(tmp_.Join("node2.log"));
  EXPECT_TRUE(MountsAt(target).empty());
  EXPECT_FALSE(std::filesystem::exists(target));
}

// Without a restart: once the server answers, the abandoned publish undoes
// what it mounted and the kubelet's next unpublish is OK.
TEST_P(DeadServerE2eTest, AnAbandonedPublishIsUndoneWhenTheServerAnswers) {
  Freeze();
  const std::string target = tmp_.Join("pods/new");
  grpc::Status published = Publish("lustrefs", target);
  EXPECT_FALSE(published.ok());
  absl::Status unpublished = Unpublish(target);
  EXPECT_EQ(unpublished.code(), absl::StatusCode::kUnavailable) << unpublished;
  Thaw();
  EXPECT_TRUE(WaitUntil([&] { return Unpublish(target).ok(); }, absl::Seconds(60))) << Log();
  EXPECT_TRUE(MountsAt(target).empty());
  EXPECT_FALSE(std::filesystem::exists(target));
  // The file system is usable again at once.
  EXPECT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
}

// Once stats found the file system silent, nothing more waits on it: the
// stats of its other volumes answer at once without a look, their
// unpublish detaches at once, a new publish of it fails at once; another
// file system is untouched, and everything works again after the thaw.
TEST_P(DeadServerE2eTest, AFileSystemKnownSilentIsNotWaitedFor) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/c")).ok()) << Log();
  Freeze();
  csi::v1::NodeGetVolumeStatsResponse a;
  ASSERT_TRUE(Stats(tmp_.Join("pods/a"), &a).ok());
  ASSERT_TRUE(a.volume_condition().abnormal());
  const int threads = Threads(node_->pid());

  absl::Time start = absl::Now();
  csi::v1::NodeGetVolumeStatsResponse c;
  ASSERT_TRUE(Stats(tmp_.Join("pods/c"), &c).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_TRUE(c.volume_condition().abnormal());
  EXPECT_THAT(c.volume_condition().message(), HasSubstr("a look at " + tmp_.Join("pods/a")));

  start = absl::Now();
  absl::Status unpublished = Unpublish(tmp_.Join("pods/c"));
  RecordProperty("silent_unpublish_ms", absl::ToInt64Milliseconds(absl::Now() - start));
  EXPECT_TRUE(unpublished.ok()) << unpublished << Log();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << "waited on the silent file system";
  EXPECT_TRUE(MountsAt(tmp_.Join("pods/c")).empty());
  EXPECT_FALSE(MountsAt(tmp_.Join("pods/a")).empty()) << "another target of it went";

  start = absl::Now();
  grpc::Status published = Publish("lustrefs", tmp_.Join("pods/new"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << "waited on the silent file system";
  EXPECT_EQ(published.error_code(), grpc::UNAVAILABLE) << published.error_message();
  EXPECT_THAT(published.error_message(), HasSubstr("not responding"));
  // The kubelet's retries add no thread: a few that come and go (a worker
  // started while the last call's goes back idle, gRPC's own), not one per
  // call (which would be ten more here).
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Publish("lustrefs", tmp_.Join("pods/new")).error_code(), grpc::UNAVAILABLE) << i;
    csi::v1::NodeGetVolumeStatsResponse again;
    EXPECT_TRUE(Stats(tmp_.Join("pods/a"), &again).ok()) << i;
  }
  EXPECT_LE(Threads(node_->pid()), threads + 3);
  EXPECT_EQ(ThreadsOnFuse(node_->pid()), 0) << "a thread of the node waits in the file system";

  ASSERT_TRUE(Publish("otherfs", tmp_.Join("pods/b")).ok()) << Log();
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/b")).ok());

  Thaw();
  EXPECT_TRUE(
      WaitUntil([&] { return Publish("lustrefs", tmp_.Join("pods/new")).ok(); }, absl::Seconds(30)))
      << Log();
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/new")).ok());
}

// The host's Lustre client loses a target of one file system (its import is
// DISCONN, as when an OSS stops answering): the volume is reported abnormal
// naming it, /metrics shows the state, another file system's volume and
// readiness stay as they were, and it all clears once the target is back.
// Local mode has no Lustre client: nothing is read there.
TEST_P(DeadServerE2eTest, ADisconnectedTargetShowsInStatsAndMetrics) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  ASSERT_TRUE(Publish("otherfs", tmp_.Join("pods/b")).ok()) << Log();
  auto stats_of = [&](const std::string& target) {
    csi::v1::NodeGetVolumeStatsRequest req;
    req.set_volume_id(target == tmp_.Join("pods/a") ? "vol#lustrefs#10.0.0.4"
                                                    : "vol#otherfs#10.0.0.4");
    req.set_volume_path(target);
    csi::v1::NodeGetVolumeStatsResponse res;
    grpc::Status s = stub_->NodeGetVolumeStats(Context(absl::Seconds(20)).get(), req, &res);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return res;
  };
  EXPECT_FALSE(stats_of(tmp_.Join("pods/a")).volume_condition().abnormal());
  if (GetParam() == "local") {
    std::filesystem::create_directories(
        absl::StrCat(kStandin, "/params/proc/fs/lustre/osc/lustrefs-OST0000-osc-ffff000000000001"));
  } else {
    EXPECT_THAT(HttpGet(metrics_port_, "/metrics"),
                HasSubstr("lustre_csi_client_state{fs=\"lustrefs\",target=\"lustrefs-OST0000\","
                          "state=\"FULL\"}"));
  }
  ASSERT_GT(SetImportState("lustrefs", "DISCONN"), 0);
  if (GetParam() == "local") {
    absl::SleepFor(absl::Seconds(6));  // past the age of a snapshot, were one read
    EXPECT_FALSE(stats_of(tmp_.Join("pods/a")).volume_condition().abnormal());
    EXPECT_THAT(HttpGet(metrics_port_, "/metrics"),
                testing::Not(HasSubstr("lustre_csi_client_state{")));
    return;
  }
  csi::v1::NodeGetVolumeStatsResponse down;
  EXPECT_TRUE(WaitUntil(
      [&] {
        down = stats_of(tmp_.Join("pods/a"));
        return down.volume_condition().abnormal();
      },
      absl::Seconds(20)));
  EXPECT_THAT(down.volume_condition().message(), HasSubstr("lustrefs-OST0000 DISCONN"));
  EXPECT_GT(down.usage_size(), 0) << "statfs answered: its figures stand";
  EXPECT_THAT(HttpGet(metrics_port_, "/metrics"),
              HasSubstr("lustre_csi_client_state{fs=\"lustrefs\",target=\"lustrefs-OST0000\","
                        "state=\"DISCONN\"}"));
  EXPECT_FALSE(stats_of(tmp_.Join("pods/b")).volume_condition().abnormal());
  EXPECT_THAT(HttpGet(metrics_port_, "/readyz"), testing::StartsWith("HTTP/1.1 200"));

  ASSERT_GT(SetImportState("lustrefs", "FULL"), 0);
  EXPECT_TRUE(
      WaitUntil([&] { return !stats_of(tmp_.Join("pods/a")).volume_condition().abnormal(); },
                absl::Seconds(20)));
}

// A controller call whose file system does not answer (CreateVolume with
// create-sub-dir on the frozen file system) answers UNAVAILABLE within
// --call-timeout-seconds and goes on in the background; the provisioner's
// retries join it, never ABORTED by it; SIGTERM ends the controller within
// its grace period with the call still stuck; after the thaw a new
// controller creates the volume.
TEST_P(DeadServerE2eTest, AControllerCallOnAFrozenFileSystemIsBoundedAndRetriesJoinIt) {
  ASSERT_NO_FATAL_FAILURE(StartController("controller"));
  csi::v1::CreateVolumeRequest req;
  req.set_name("pvc-dead");
  *req.add_volume_capabilities() = MountCapability();
  const std::map<std::string, std::string> context = LustreContext("vol/pvc-dead");
  req.mutable_parameters()->insert(context.begin(), context.end());
  (*req.mutable_parameters())["create-sub-dir"] = "true";
  auto create = [&] {
    csi::v1::CreateVolumeResponse res;
    return controller_stub_->CreateVolume(Context(absl::Seconds(60)).get(), req, &res);
  };
  Freeze();

  absl::Time start = absl::Now();
  grpc::Status first = create();
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(first.error_code(), grpc::UNAVAILABLE) << first.error_message();
  EXPECT_THAT(first.error_message(), HasSubstr("still in progress"));
  EXPECT_GE(took, absl::Seconds(7));
  EXPECT_LT(took, absl::Seconds(20));
  start = absl::Now();
  grpc::Status retry = create();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << "the retry waited again";
  EXPECT_EQ(retry.error_code(), grpc::UNAVAILABLE) << retry.error_message();

  controller_->Signal(SIGTERM);
  EXPECT_NE(controller_->Wait(absl::Seconds(15)), -1) << "the controller did not exit";
  Thaw();
  ASSERT_NO_FATAL_FAILURE(StartController("controller2"));
  grpc::Status made = grpc::Status(grpc::UNKNOWN, "not called");
  EXPECT_TRUE(WaitUntil([&] { return (made = create()).ok(); }, absl::Seconds(30)))
      << made.error_message() << "\n"
      << ReadFile(tmp_.Join("controller2.log"));
}

// A caller whose deadline comes before --call-timeout-seconds gets the
// driver's answer before it gives up (UNAVAILABLE, still in progress), not
// its transport's DEADLINE_EXCEEDED, on the node and the controller alike;
// the work goes on, and the call's thread is free again.
TEST_P(DeadServerE2eTest, ACallerWithAShortDeadlineIsAnsweredBeforeIt) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  ASSERT_NO_FATAL_FAILURE(StartController("controller"));
  Freeze();
  absl::Time start = absl::Now();
  grpc::Status published = Publish("lustrefs", tmp_.Join("pods/new"), absl::Seconds(3));
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(published.error_code(), grpc::UNAVAILABLE) << published.error_message();
  EXPECT_THAT(published.error_message(), HasSubstr("still in progress"));
  EXPECT_GE(took, absl::Seconds(2));
  EXPECT_LT(took, absl::Seconds(3));

  csi::v1::CreateVolumeRequest req;
  req.set_name("pvc-impatient");
  *req.add_volume_capabilities() = MountCapability();
  const std::map<std::string, std::string> context = LustreContext("vol/pvc-impatient");
  req.mutable_parameters()->insert(context.begin(), context.end());
  (*req.mutable_parameters())["create-sub-dir"] = "true";
  csi::v1::CreateVolumeResponse res;
  start = absl::Now();
  grpc::Status created = controller_stub_->CreateVolume(Context(absl::Seconds(3)).get(), req, &res);
  took = absl::Now() - start;
  EXPECT_EQ(created.error_code(), grpc::UNAVAILABLE) << created.error_message();
  EXPECT_THAT(created.error_message(), HasSubstr("still in progress"));
  EXPECT_LT(took, absl::Seconds(3));
}

// The negative control: a driver that is itself frozen does not answer, and
// the deadline the checks above allow sees it.
TEST_P(DeadServerE2eTest, AFrozenDriverIsSeen) {
  ASSERT_TRUE(Publish("otherfs", tmp_.Join("pods/b")).ok()) << Log();
  node_->Signal(SIGSTOP);
  csi::v1::NodeGetVolumeStatsResponse res;
  grpc::Status s = Stats(tmp_.Join("pods/b"), &res, absl::Seconds(3));
  node_->Signal(SIGCONT);
  EXPECT_EQ(s.error_code(), grpc::DEADLINE_EXCEEDED) << s.error_message();
}

// A server that takes requests and answers none, as a Lustre server that
// stopped answering does: a process waiting for it that is killed waits on
// in uninterruptible sleep (a thread there would keep its whole process
// from ending).
class UninterruptibleE2eTest : public DeadServerE2eTest {
 protected:
  UninterruptibleE2eTest() { hung_ = true; }
};

// SIGTERM ends the node within its grace period with a stats look and a
// publish waiting on such a server: what waits there are tasks the node
// leaves behind, which go on waiting in state D, and go once the server
// answers. The control shows the server makes a killed waiter stay.
TEST_P(UninterruptibleE2eTest, SigtermEndsTheNodeWhileItsTasksWaitUninterruptibly) {
  ASSERT_TRUE(Publish("lustrefs", tmp_.Join("pods/a")).ok()) << Log();
  Freeze();

  // The control: a process killed while it waits there does not end, once
  // the server has taken its request (before that, a fatal signal still
  // takes the request back and ends it).
  const std::string vol = std::string(kServers) + "/lustrefs/vol";
  auto held = [&] {
    std::string log = ServerLog();
    int n = 0;
    for (size_t at = log.find("held "); at != std::string::npos; at = log.find("held ", at + 1)) {
      ++n;
    }
    return n;
  };
  const int held_before = held();
  pid_t control = fork();
  if (control == 0) {
    struct stat st;
    stat(vol.c_str(), &st);
    _exit(0);
  }
  ASSERT_GT(control, 0);
  ASSERT_TRUE(WaitUntil(
      [&] { return WaitsOnFuse(absl::StrCat("/proc/", control)) && held() > held_before; },
      absl::Seconds(10)));
  kill(control, SIGKILL);
  absl::SleepFor(absl::Seconds(1));
  int status = 0;
  EXPECT_EQ(waitpid(control, &status, WNOHANG), 0) << "the killed control process ended";
  EXPECT_EQ(ProcessState(control), 'D');

  // A new publish and a stats look wait there, each in a task (the
  // publish first: once the look has not returned, a publish of the file
  // system answers at once without trying).
  EXPECT_FALSE(Publish("lustrefs", tmp_.Join("pods/new")).ok());
  csi::v1::NodeGetVolumeStatsResponse stuck;
  ASSERT_TRUE(Stats(tmp_.Join("pods/a"), &stuck).ok());
  EXPECT_TRUE(stuck.volume_condition().abnormal());
  EXPECT_EQ(ThreadsOnFuse(node_->pid()), 0) << "a thread of the node waits in the file system";
  // The node's own tasks (a per-volume publish waits in the mount helper,
  // a process of its own that the node does not kill).
  std::vector<pid_t> waiting;
  for (pid_t task : DriverTasksOf(node_->pid())) {
    if (WaitsOnFuse(absl::StrCat("/proc/", task))) waiting.push_back(task);
  }
  EXPECT_EQ(waiting.size(), GetParam() == "per-volume" ? 1u : 2u) << "a look and a publish";

  absl::Time start = absl::Now();
  node_->Signal(SIGTERM);
  EXPECT_TRUE(WaitUntil([&] { return !node_->running(); }, absl::Seconds(20)))
      << "the node did not exit" << Log();
  RecordProperty("sigterm_exit_ms", absl::ToInt64Milliseconds(absl::Now() - start));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "past the 5 s grace period";
  // What it left waits on, killed, in uninterruptible sleep.
  for (pid_t task : waiting) {
    EXPECT_TRUE(WaitUntil([&] { return ProcessState(task) == 'D'; }, absl::Seconds(5)))
        << "task " << task << " is in state " << ProcessState(task);
  }

  // Once the server answers, everything it held goes, and a new node
  // cleans up.
  Thaw();
  EXPECT_EQ(waitpid(control, &status, 0), control);
  for (pid_t task : waiting) {
    EXPECT_TRUE(WaitUntil([&] { return ProcessState(task) == 0; }, absl::Seconds(10)))
        << "task " << task << " stays";
  }
  node_.reset();
  StartNode("node2");
  for (const char* t : {"pods/a", "pods/new"}) {
    EXPECT_TRUE(WaitUntil([&] { return Unpublish(tmp_.Join(t)).ok(); }, absl::Seconds(30)))
        << ReadFile(tmp_.Join("node2.log"));
    EXPECT_TRUE(MountsAt(tmp_.Join(t)).empty());
  }
}

// Per-volume clients mount with a helper per publish, killed at the mount
// timeout (here 1 s).
class HelperE2eTest : public UninterruptibleE2eTest {
 protected:
  HelperE2eTest() { extra_flags_ = {"--mount-timeout-seconds=1"}; }
};

// A mount helper killed at its timeout while it waits on such a server
// stays, in state D, until the server answers. The node reaps every one of
// them with one thread, not a thread each; while one is left, its file
// system is held up: a retry answers UNAVAILABLE at once and runs no other
// helper (so over a long outage they do not pile up, one per timeout). Once
// the server answers, none is left and the file system mounts again.
TEST_P(HelperE2eTest, HelpersKilledInUninterruptibleSleepHoldTheirFileSystemUpAndNoThread) {
  // Eight file systems on the one server: binds of its mount.
  const std::vector<std::string> fss = {"lustrefs", "deadfs1", "deadfs2", "deadfs3",
                                        "deadfs4",  "deadfs5", "deadfs6", "deadfs7"};
  for (size_t i = 1; i < fss.size(); ++i) {
    const std::string dir = absl::StrCat(kServers, "/", fss[i]);
    std::filesystem::create_directories(dir);
    ASSERT_EQ(mount((std::string(kServers) + "/lustrefs").c_str(), dir.c_str(), nullptr, MS_BIND,
                    nullptr),
              0)
        << strerror(errno);
  }
  Freeze();
  auto stuck_children = [&] {
    int n = 0;
    for (pid_t child : ChildrenOf(node_->pid())) {
      n += ProcessState(child) == 'D' || ProcessState(child) == 'Z';
    }
    return n;
  };
  // After the first, which starts what any publish needs (a worker, the
  // reaper), the others add no thread of their own.
  int threads = 0;
  for (size_t i = 0; i < fss.size(); ++i) {
    grpc::Status published = Publish(fss[i], tmp_.Join(absl::StrCat("pods/h", i)));
    EXPECT_EQ(published.error_code(), grpc::DEADLINE_EXCEEDED) << published.error_message();
    if (i == 0) threads = Threads(node_->pid());
  }
  const int helpers = static_cast<int>(fss.size());
  EXPECT_TRUE(WaitUntil([&] { return stuck_children() == helpers; }, absl::Seconds(5)))
      << stuck_children() << " helpers killed and stuck";
  // (Two more may come and go: one of gRPC's own pool, and a worker started
  // for a call that came while the last call's worker was still on its way
  // back to the idle set. A thread per helper is seven.)
  EXPECT_LE(Threads(node_->pid()), threads + 2) << "a thread per helper left";

  for (size_t i = 0; i < fss.size(); ++i) {
    absl::Time start = absl::Now();
    grpc::Status retried = Publish(fss[i], tmp_.Join(absl::StrCat("pods/r", i)));
    EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << fss[i];
    EXPECT_EQ(retried.error_code(), grpc::UNAVAILABLE) << retried.error_message();
    EXPECT_THAT(retried.error_message(),
                HasSubstr(absl::StrCat(":/", fss[i], " has not answered the mount at ",
                                       tmp_.Join(absl::StrCat("pods/h", i)))));
    EXPECT_THAT(retried.error_message(), HasSubstr("the mount gave up"));
  }
  EXPECT_EQ(stuck_children(), helpers) << "a retry ran another helper";

  Thaw();
  EXPECT_TRUE(WaitUntil([&] { return stuck_children() == 0; }, absl::Seconds(10)))
      << stuck_children() << " helpers not reaped";
  // (The reaper looks every 100 ms.)
  EXPECT_TRUE(
      WaitUntil([&] { return Publish("deadfs1", tmp_.Join("pods/new")).ok(); }, absl::Seconds(5)))
      << Log();
}

std::string ModeName(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
  return name;
}

INSTANTIATE_TEST_SUITE_P(Modes, DeadServerE2eTest, testing::Values("local", "shared", "per-volume"),
                         ModeName);
INSTANTIATE_TEST_SUITE_P(Modes, UninterruptibleE2eTest,
                         testing::Values("local", "shared", "per-volume"), ModeName);
INSTANTIATE_TEST_SUITE_P(Modes, HelperE2eTest, testing::Values("per-volume"), ModeName);

}  // namespace
}  // namespace lustre_csi::e2e
