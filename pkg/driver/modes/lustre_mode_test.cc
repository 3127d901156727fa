// The lustre mode on fake syscalls and a fake mount namespace: what the
// mount helper is given, how its exit status is read, readiness, the
// working-dir root mount, and what publish does with sub-dirs.
#include "pkg/driver/modes/lustre_mode.h"

#include <sys/mount.h>

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/driver/node.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/left_behind.h"
#include "pkg/volume/testing/fake_mount_namespace.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using volume::FakeMountNamespace;
using volume::FakeSyscalls;
using volume::ProcessResult;

constexpr char kHelper[] = "/sbin/mount.lustre";

ProcessResult Exit(int code, std::string output = "") {
  ProcessResult r;
  r.exit_code = code;
  r.output = std::move(output);
  return r;
}

// A stand-in Lustre: file systems are directories /servers/<fs> in the fake.
// A root mount binds the server directory (so sub-dirs made through it
// persist); a sub-dir mount needs /servers/<fs>/<sub> and shows the spec as
// its source, as a Lustre mount does.
class LustreModeTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sys_.AddDir("/servers/lustrefs").ok());
    ASSERT_TRUE(sys_.AddDir("/pods").ok());
    ASSERT_TRUE(sys_.AddDir("/work").ok());
    ns_.AddProgram(kHelper, [this](const std::vector<std::string>& argv) { return Helper(argv); });
    ns_.SetFile("/proc/filesystems", "nodev\ttmpfs\nnodev\tlustre\n");
    options_.working_mount_dir = "/work/mounts";
    mode_ = NewLustreMode(view_.get(), &ns_, options_);
  }

  absl::StatusOr<ProcessResult> Helper(const std::vector<std::string>& argv) {
    if (argv.size() == 2 && argv[1] == "-V") return Exit(0, "mount.lustre 2.15.5");
    if (fail_with_ != 0) return Exit(fail_with_, "mount.lustre: mount failed: injected");
    const std::string& mounted = argv[argv.size() - 2];
    const bool root = mounted.substr(mounted.find(":/") + 2).find('/') == std::string::npos;
    if (sub_dir_fails_with_ != 0 && !root) {
      return Exit(sub_dir_fails_with_, "mount.lustre: mount failed: injected");
    }
    if (left_behind_ != nullptr && (root || !only_roots_left_behind_)) {
      // Killed at its timeout, and still waiting for the servers.
      left_id_ = left_behind_->Add();
      return volume::WithLeftBehind(
          absl::DeadlineExceededError(argv[0] + ": did not finish within 1s, killed"), left_id_);
    }
    const std::string& spec = argv[argv.size() - 2];
    const std::string& target = argv.back();
    std::string path = spec.substr(spec.find(":/") + 2);  // <fs>[/<sub>]
    if (!invisible_ && path.find('/') == std::string::npos) {
      if (!sys_.Mount("/servers/" + path, target, "", MS_BIND, "").ok()) return Exit(EIO);
      return Exit(0);
    }
    if (!sys_.Exists("/servers/" + path)) {
      return Exit(ENOENT, "mount.lustre: mount " + spec + " failed: No such file or directory");
    }
    if (!invisible_ && !sys_.Mount(spec, target, "lustre", 0, "").ok()) return Exit(EIO);
    return Exit(0);
  }

  FakeSyscalls sys_;
  FakeMountNamespace ns_{&sys_};
  std::unique_ptr<volume::Syscalls> view_ = volume::UnmountingIn(&sys_, &ns_);
  LustreModeOptions options_;
  std::unique_ptr<internal::MountingMode> mode_;
  int fail_with_ = 0;
  bool invisible_ = false;
  volume::LeftBehind* left_behind_ = nullptr;  // where a helper that hangs is left
  bool only_roots_left_behind_ = false;        // only a root's helper hangs
  int sub_dir_fails_with_ = 0;                 // a sub-dir's helper exits with it
  uint64_t left_id_ = 0;                       // the last one left there
};

TEST_F(LustreModeTest, HelperGetsOptionsSourceAndTargetInTheNamespace) {
  ASSERT_TRUE(sys_.AddDir("/servers/lustrefs/team").ok());
  ASSERT_TRUE(sys_.AddDir("/pods/a").ok());
  LustreSource source{"10.0.0.4@tcp", "lustrefs", "team"};
  absl::Status mounted = mode_->Publish({source, "/pods/a", {"ro", "flock"}});
  ASSERT_TRUE(mounted.ok()) << mounted;
  EXPECT_THAT(ns_.Runs(), ElementsAre(ElementsAre(kHelper, "-o", "ro,flock",
                                                  "10.0.0.4@tcp:/lustrefs/team", "/pods/a")));
  EXPECT_TRUE(*mode_->IsMountOf(source, "/pods/a", {}));
  EXPECT_FALSE(*mode_->IsMountOf({"10.0.0.4@tcp", "lustrefs", "other"}, "/pods/a", {}));
  EXPECT_FALSE(*mode_->IsMountOf(source, "/pods/a", {"noatime"}));
  // No options: no -o at all.
  ASSERT_TRUE(mode_->Publish({source, "/work", {}}).ok());
  EXPECT_THAT(ns_.Runs().back(), ElementsAre(kHelper, "10.0.0.4@tcp:/lustrefs/team", "/work"));
}

TEST_F(LustreModeTest, MountThatDoesNotReachThisViewIsUndone) {
  ASSERT_TRUE(sys_.AddDir("/servers/lustrefs/team").ok());
  ASSERT_TRUE(sys_.AddDir("/pods/a").ok());
  invisible_ = true;
  absl::Status s = mode_->Publish({{"10.0.0.4@tcp", "lustrefs", "team"}, "/pods/a", {}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("Bidirectional"));
  EXPECT_THAT(ns_.Unmounts(), ElementsAre("/pods/a"));
}

TEST_F(LustreModeTest, UnreachableNamespaceIsAPrecondition) {
  ns_.SetUnreachable(true);
  absl::Status s = mode_->Publish({{"10.0.0.4@tcp", "lustrefs", ""}, "/pods/a", {}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  Readiness r = mode_->CheckReady();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.reason, "mount-namespace");
}

TEST_F(LustreModeTest, OptionLikeArgumentsNeverRun) {
  EXPECT_EQ(mode_->Publish({{"10.0.0.4@tcp", "lustrefs", ""}, "-x", {}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ns_.Runs().empty());
}

// Mounts made in the namespace under the working dir must show here: a
// working dir the two views do not share is not ready, and says how to fix it.
TEST_F(LustreModeTest, AWorkingDirTheNamespaceDoesNotShareIsNotReady) {
  ASSERT_TRUE(mode_->CheckReady().status.ok());
  ns_.SetNotShared("/work");
  Readiness r = mode_->CheckReady();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.reason, "working-dir");
  EXPECT_THAT(r.status.message(), HasSubstr("client_state_dir"));
  EXPECT_THAT(r.status.message(), HasSubstr("/work"));
  // The probe directory is gone again.
  absl::StatusOr<std::vector<std::string>> left = volume::ListDir(sys_, "/work");
  ASSERT_TRUE(left.ok()) << left.status();
  for (const std::string& name : *left) EXPECT_THAT(name, Not(HasSubstr("view-check"))) << name;
}

TEST_F(LustreModeTest, ReadinessFollowsHelperAndModule) {
  EXPECT_TRUE(mode_->CheckReady().status.ok());

  ns_.SetFile("/proc/filesystems", "nodev\ttmpfs\n");
  Readiness r = mode_->CheckReady();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.reason, "kernel-module");
  EXPECT_THAT(r.status.message(), HasSubstr("/proc/filesystems"));
  ns_.SetFile("/sys/module/lustre", "");
  EXPECT_TRUE(mode_->CheckReady().status.ok());
  ns_.RemoveFile("/sys/module/lustre");
  ns_.SetFile("/proc/sys/kernel/osrelease", "6.1.0-9-amd64\n");
  ns_.SetFile("/lib/modules/6.1.0-9-amd64/modules.dep",
              "kernel/fs/ext4/ext4.ko:\nextra/lustre/lustre.ko.xz: extra/lnet/lnet.ko.xz\n");
  EXPECT_TRUE(mode_->CheckReady().status.ok()) << "a module the kernel can load is enough";
  ns_.SetFile("/lib/modules/6.1.0-9-amd64/modules.dep", "kernel/fs/lustrex.ko:\n");
  r = mode_->CheckReady();
  EXPECT_EQ(r.reason, "kernel-module");
  EXPECT_THAT(r.status.message(), HasSubstr("kernel 6.1.0-9-amd64"));

  ns_.SetFile("/proc/filesystems", "nodev\tlustre\n");
  ns_.RemoveProgram(kHelper);
  r = mode_->CheckReady();
  EXPECT_EQ(r.reason, "mount-helper");
  EXPECT_THAT(r.status.message(), HasSubstr(kHelper));
  EXPECT_THAT(r.status.message(), Not(HasSubstr("hostPID")));
  ns_.SetOwn(true);
  EXPECT_THAT(mode_->CheckReady().status.message(), HasSubstr("hostPID: true"));

  // A helper that is there but cannot run (its libraries are missing).
  ns_.AddProgram(kHelper, [](const std::vector<std::string>&) {
    return Exit(127, "mount.lustre: error while loading shared libraries: libyaml");
  });
  r = mode_->CheckReady();
  EXPECT_EQ(r.reason, "mount-helper");
  EXPECT_THAT(r.status.message(), HasSubstr("libyaml"));
}

TEST_F(LustreModeTest, RootMountLivesOnlyWhileNeeded) {
  std::string seen;
  absl::Status s = mode_->WithFileSystemRoot({"10.0.0.4@tcp", "lustrefs", "ignored"},
                                             [&](volume::Syscalls&, const std::string& dir) {
                                               seen = dir;
                                               return sys_.Mkdir(dir + "/made-inside", 0755);
                                             });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(seen, testing::StartsWith("/work/mounts/fs-"));
  EXPECT_THAT(ns_.Runs(), ElementsAre(ElementsAre(kHelper, "10.0.0.4@tcp:/lustrefs", seen)));
  EXPECT_THAT(ns_.Unmounts(), ElementsAre(seen));
  EXPECT_FALSE(sys_.Exists(seen));
  EXPECT_TRUE(sys_.Exists("/servers/lustrefs/made-inside"));
}

// Publish through NodeLogic: an existing sub-dir is one helper call; a
// missing one is created through a root mount, then mounted.
class PublishSubDirTest : public LustreModeTest {
 protected:
  PublishRequest Request(const std::string& sub_dir) {
    PublishRequest req;
    req.volume_id = "pvc-1#lustrefs#10.0.0.4#" + sub_dir + "#f";
    req.target_path = "/pods/a";
    req.volume_context = {
        {"mgs-ip-address", "10.0.0.4"}, {"fs-name", "lustrefs"}, {"sub-dir", sub_dir}};
    return req;
  }
};

TEST_F(PublishSubDirTest, ExistingSubDirIsOneHelperCall) {
  ASSERT_TRUE(sys_.AddDir("/servers/lustrefs/team").ok());
  NodeLogic logic(NodeOptions{"n1"}, view_.get(), mode_.get());
  ASSERT_TRUE(logic.Publish(Request("team")).ok());
  EXPECT_EQ(ns_.Runs().size(), 1u);
  EXPECT_TRUE(ns_.Unmounts().empty());
  // Repeating is idempotent and runs nothing.
  ASSERT_TRUE(logic.Publish(Request("team")).ok());
  EXPECT_EQ(ns_.Runs().size(), 1u);
  ASSERT_TRUE(logic.Unpublish("pvc-1", "/pods/a").ok());
  EXPECT_THAT(ns_.Unmounts(), ElementsAre("/pods/a"));
  // The client is the target's alone: its unmount ends it and may wait for
  // the servers, so it is never made in place.
  ASSERT_FALSE(sys_.UnmountCalls().empty());
  for (const FakeSyscalls::UnmountCall& call : sys_.UnmountCalls()) {
    EXPECT_FALSE(call.in_place) << call.target;
  }
}

TEST_F(PublishSubDirTest, MissingSubDirIsCreatedThenMounted) {
  NodeLogic logic(NodeOptions{"n1"}, view_.get(), mode_.get());
  absl::Status s = logic.Publish(Request("new/deep"));
  ASSERT_TRUE(s.ok()) << s;
  std::vector<std::vector<std::string>> runs = ns_.Runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0][1], "10.0.0.4@tcp:/lustrefs/new/deep");
  EXPECT_EQ(runs[1][1], "10.0.0.4@tcp:/lustrefs");
  EXPECT_EQ(runs[2][1], "10.0.0.4@tcp:/lustrefs/new/deep");
  EXPECT_TRUE(sys_.Exists("/servers/lustrefs/new/deep"));
  EXPECT_EQ(ns_.Unmounts().size(), 1u) << "the root mount is gone";
}

TEST_F(PublishSubDirTest, NotReadyFailsBeforeTheHelperRuns) {
  ReadinessMonitor readiness([this] { return mode_->CheckReady(); }, absl::Hours(1), nullptr);
  ns_.SetFile("/proc/filesystems", "nodev\ttmpfs\n");
  readiness.Start();
  NodeLogic logic(NodeOptions{"n1"}, view_.get(), mode_.get(), &readiness);
  size_t checks = ns_.Runs().size();  // the readiness check ran the helper with -V
  absl::Status s = logic.Publish(Request("team"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("kernel module"));
  for (size_t i = checks; i < ns_.Runs().size(); ++i) EXPECT_EQ(ns_.Runs()[i][1], "-V");
  EXPECT_FALSE(sys_.Exists("/pods/a")) << "target created by the failed call is removed";
  // Once the module is there, the next publish re-checks and goes ahead.
  ns_.SetFile("/proc/filesystems", "nodev\tlustre\n");
  ASSERT_TRUE(sys_.AddDir("/servers/lustrefs/team").ok());
  EXPECT_TRUE(logic.Publish(Request("team")).ok());
  EXPECT_TRUE(readiness.Current().ok());
}

TEST_F(PublishSubDirTest, HelperFailureCodeReachesTheCaller) {
  fail_with_ = ENODEV;
  NodeLogic logic(NodeOptions{"n1"}, view_.get(), mode_.get());
  absl::Status s = logic.Publish(Request("team"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("ENODEV"));
  EXPECT_FALSE(sys_.Exists("/pods/a"));
}

// A helper killed at its timeout that still waits for the servers holds its
// file system up, not its slot: retries of that file system run no more
// helpers until it has ended; others mount.
TEST_F(LustreModeTest, AHelperLeftWaitingHoldsItsFileSystemUpUntilItEnds) {
  ASSERT_TRUE(sys_.AddDir("/servers/otherfs").ok());
  for (const char* t : {"/pods/a", "/pods/b", "/pods/c"}) ASSERT_TRUE(sys_.AddDir(t).ok());
  volume::LeftBehind left;
  MountSlots slots(1, absl::Milliseconds(50), absl::Seconds(10), nullptr, &left);
  LustreSource dead{"10.0.0.4@tcp", "lustrefs", ""};
  left_behind_ = &left;
  absl::Status first = mode_->Publish({dead, "/pods/a", {}, false, std::nullopt, &slots});
  EXPECT_EQ(first.code(), absl::StatusCode::kDeadlineExceeded) << first;
  left_behind_ = nullptr;
  EXPECT_EQ(left.Running(), 1);

  absl::Status retry = mode_->Publish({dead, "/pods/b", {}, false, std::nullopt, &slots});
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable) << retry;
  EXPECT_THAT(retry.message(), HasSubstr("10.0.0.4@tcp:/lustrefs has not answered the mount at "
                                         "/pods/a"));
  EXPECT_EQ(ns_.Runs().size(), 1u) << "a retry ran another helper";
  absl::Status other =
      mode_->Publish({{"10.0.0.4@tcp", "otherfs", ""}, "/pods/c", {}, false, std::nullopt, &slots});
  EXPECT_TRUE(other.ok()) << other << ": the one slot was not given back";

  left.End(left_id_);
  absl::Status again = mode_->Publish({dead, "/pods/b", {}, false, std::nullopt, &slots});
  EXPECT_TRUE(again.ok()) << again;
}

// A sub-dir the server answers ENOTDIR for is named by a look from the
// root, which mounts the root; a root mount helper left waiting there holds
// the file system up as any other, though the publish answers what the
// server said of the sub-dir.
TEST_F(LustreModeTest, ARootHelperLeftWaitingWhileNamingASubDirHoldsItsFileSystemUp) {
  for (const char* t : {"/pods/a", "/pods/b"}) ASSERT_TRUE(sys_.AddDir(t).ok());
  volume::LeftBehind left;
  MountSlots slots(1, absl::Milliseconds(50), absl::Seconds(10), nullptr, &left);
  LustreSource source{"10.0.0.4@tcp", "lustrefs", "team/data"};
  sub_dir_fails_with_ = ENOTDIR;
  left_behind_ = &left;
  only_roots_left_behind_ = true;
  absl::Status first = mode_->Publish({source, "/pods/a", {}, false, std::nullopt, &slots});
  EXPECT_EQ(first.code(), absl::StatusCode::kInvalidArgument) << first;
  EXPECT_THAT(first.message(), HasSubstr("is not a directory on the server"));
  EXPECT_EQ(left.Running(), 1);
  EXPECT_EQ(ns_.Runs().size(), 2u);  // the sub-dir's helper, then the root's

  absl::Status retry = mode_->Publish({source, "/pods/b", {}, false, std::nullopt, &slots});
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable) << retry;
  EXPECT_EQ(ns_.Runs().size(), 2u) << "a retry ran another helper";
  left.End(left_id_);
  left_behind_ = nullptr;
}

}  // namespace
}  // namespace lustre_csi::driver
