// The node logic and its gRPC service, on the fake syscalls with the local
// mode: every decision of publish, unpublish and stats, the validation
// table, and the lock rules.
#include "pkg/driver/node.h"

#include <sys/mount.h>

#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/base/wait_until.h"
#include "pkg/driver/modes/local_mode.h"
#include "pkg/driver/modes/mock_mode.h"
#include "pkg/driver/services.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/safe_path.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;
using volume::FakeSyscalls;
using volume::SyscallOp;

constexpr char kRoot[] = "/lustre";
constexpr char kPods[] = "/pods";

class NodeTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sys_.AddDir("/lustre/lustrefs").ok());
    ASSERT_TRUE(sys_.AddDir(kPods).ok());
    sys_.SetAtomicBinds(true);
    mode_ = NewLocalMode(&sys_, kRoot);
    MakeLogic(NodeOptions{});
  }

  // The bind mounts made, without the remounts that set their flags.
  std::vector<FakeSyscalls::MountCall> Binds() {
    std::vector<FakeSyscalls::MountCall> out;
    for (const FakeSyscalls::MountCall& c : sys_.MountCalls()) {
      if ((c.flags & MS_BIND) != 0 && (c.flags & MS_REMOUNT) == 0) out.push_back(c);
    }
    return out;
  }

  void MakeLogic(NodeOptions options) {
    options.node_id = "node-1";
    logic_ = std::make_unique<NodeLogic>(options, &sys_, mode_.get());
  }

  static PublishRequest Request(std::string target, bool read_only = false) {
    PublishRequest req;
    req.volume_id = "pvc-1#lustrefs#10.0.0.4##f";
    req.target_path = std::move(target);
    req.read_only = read_only;
    req.volume_context = {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "lustrefs"}};
    return req;
  }

  FakeSyscalls sys_;
  std::unique_ptr<MountMode> mode_;
  std::unique_ptr<NodeLogic> logic_;
};

TEST_F(NodeTest, PublishCreatesTargetAndBindMountsTheFileSystem) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  EXPECT_TRUE(sys_.Exists("/pods/a"));
  ASSERT_EQ(Binds().size(), 1u);
  EXPECT_EQ(Binds()[0].source, "/lustre/lustrefs");
  EXPECT_EQ(Binds()[0].target, "/pods/a");
  EXPECT_EQ(sys_.MountCount(), 1);
}

TEST_F(NodeTest, ReadOnlyPublishRemountsReadOnly) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/ro", true)).ok());
  ASSERT_EQ(sys_.MountCalls().size(), 2u);
  EXPECT_TRUE(sys_.MountCalls()[1].flags & MS_REMOUNT);
  EXPECT_TRUE(sys_.MountCalls()[1].flags & MS_RDONLY);
}

TEST_F(NodeTest, SubDirIsFilledCreatedAndMounted) {
  PublishRequest req = Request("/pods/s");
  req.volume_context["sub-dir"] = "${pod.metadata.namespace}/${pod.metadata.name}";
  req.volume_context["csi.storage.k8s.io/pod.namespace"] = "team";
  req.volume_context["csi.storage.k8s.io/pod.name"] = "web-0";
  ASSERT_TRUE(logic_->Publish(req).ok());
  EXPECT_TRUE(sys_.Exists("/lustre/lustrefs/team/web-0"));
  EXPECT_EQ(Binds()[0].source, "/lustre/lustrefs/team/web-0");
}

TEST_F(NodeTest, RepeatIsOkDifferentMountIsAlreadyExists) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  EXPECT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  EXPECT_EQ(sys_.MountCount(), 1) << "mounted twice";
  EXPECT_EQ(logic_->Publish(Request("/pods/a", true)).code(), absl::StatusCode::kAlreadyExists);
  PublishRequest other = Request("/pods/a");
  ASSERT_TRUE(sys_.AddDir("/lustre/lustrefs/elsewhere").ok());
  other.volume_context["sub-dir"] = "elsewhere";
  EXPECT_EQ(logic_->Publish(other).code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(NodeTest, CorruptedMountAtTargetIsRepaired) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  ASSERT_TRUE(sys_.BreakMount("/pods/a", ENOTCONN).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  EXPECT_FALSE(sys_.UnmountCalls().empty()) << "the broken mount was not unmounted";
  EXPECT_EQ(sys_.MountCount(), 1);
  EXPECT_EQ(Binds().size(), 2u) << "not mounted again";
}

// A local-mode target is a bind of a directory others bind too: MNT_FORCE
// would act on the whole superblock (for FUSE or Lustre, every other mount
// of it), so a busy one is detached.
// What a publish asks of the file system it mounts (the fs root, the bind
// from beneath it, a missing sub-dir, fsGroup's walk) and a repeat publish
// of the mount at its target run in the isolation given: where the servers
// stop answering, a task waits in the kernel, not a thread of the driver.
TEST_F(NodeTest, APublishAsksItsFileSystemOnlyInTheIsolation) {
  volume::MarkingIsolation isolation;
  mode_ = NewLocalMode(&sys_, kRoot, &isolation);
  NodeOptions options;
  options.isolation = &isolation;
  MakeLogic(options);
  PublishRequest req = Request("/pods/a");
  req.volume_context["sub-dir"] = "team/new";
  req.volume_mount_group = 1234;
  sys_.ResetCalls();
  ASSERT_TRUE(logic_->Publish(req).ok());
  for (SyscallOp op : {SyscallOp::kMount, SyscallOp::kMkdirAt, SyscallOp::kChown}) {
    EXPECT_GE(sys_.CallCount(op), 1) << SyscallOpName(op);
    EXPECT_EQ(sys_.IsolatedCallCount(op), sys_.CallCount(op)) << SyscallOpName(op);
  }
  sys_.ResetCalls();
  const int runs = isolation.runs();
  ASSERT_TRUE(logic_->Publish(req).ok()) << "a repeat";
  EXPECT_EQ(isolation.runs(), runs + 1);
  EXPECT_GE(sys_.CallCount(SyscallOp::kStat), 1);
  EXPECT_EQ(sys_.IsolatedCallCount(SyscallOp::kStat), sys_.CallCount(SyscallOp::kStat))
      << "the mounted target was stat'ed outside the isolation";
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
}

TEST_F(NodeTest, UnpublishNeverForcesABind) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/b")).ok());
  ASSERT_TRUE(sys_.SetBusy("/pods/a", true).ok());
  absl::Status s = logic_->Unpublish("v", "/pods/a");
  EXPECT_TRUE(s.ok()) << s << " (a busy bind is detached)";
  ASSERT_FALSE(sys_.UnmountCalls().empty());
  for (const auto& call : sys_.UnmountCalls()) {
    EXPECT_EQ(call.flags & MNT_FORCE, 0) << call.target;
  }
  EXPECT_EQ(sys_.MountCount(), 1) << "the other bind is untouched";
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/b").ok());
}

TEST_F(NodeTest, FailedMountLeavesNothing) {
  sys_.FailNext(SyscallOp::kMount, EIO);
  absl::Status status = logic_->Publish(Request("/pods/a"));
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(sys_.MountCount(), 0);
  EXPECT_FALSE(sys_.Exists("/pods/a")) << "target created by the failed call was left";
}

TEST_F(NodeTest, UnknownFileSystemIsNotFound) {
  PublishRequest req = Request("/pods/a");
  req.volume_context["fs-name"] = "nofs";
  EXPECT_EQ(logic_->Publish(req).code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(sys_.Exists("/pods/a"));
}

TEST_F(NodeTest, SymlinkSubDirCannotEscape) {
  ASSERT_TRUE(sys_.AddDir("/etc").ok());
  ASSERT_TRUE(sys_.AddSymlink("/lustre/lustrefs/evil", "/etc").ok());
  PublishRequest req = Request("/pods/a");
  req.volume_context["sub-dir"] = "evil";
  absl::Status status = logic_->Publish(req);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("\"evil\" is a symlink"));
  EXPECT_EQ(sys_.MountCount(), 0);
}

// A link that stays inside the file system is refused too: it would hand
// one team another team's directory.
TEST_F(NodeTest, SymlinkToAnotherTeamsDirectoryIsRefused) {
  ASSERT_TRUE(sys_.AddDir("/lustre/lustrefs/otherteam").ok());
  ASSERT_TRUE(sys_.AddDir("/lustre/lustrefs/team").ok());
  ASSERT_TRUE(sys_.AddSymlink("/lustre/lustrefs/team/data", "../otherteam").ok());
  PublishRequest req = Request("/pods/a");
  req.volume_context["sub-dir"] = "team/data";
  absl::Status status = logic_->Publish(req);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("\"team/data\" is a symlink"));
  EXPECT_EQ(sys_.MountCount(), 0);
  EXPECT_FALSE(sys_.Exists("/pods/a"));
}

// A missing sub-dir below a link is never made through it.
TEST_F(NodeTest, MissingSubDirBelowASymlinkIsNotCreated) {
  ASSERT_TRUE(sys_.AddDir("/etc").ok());
  ASSERT_TRUE(sys_.AddSymlink("/lustre/lustrefs/evil", "/etc").ok());
  ASSERT_TRUE(sys_.AddSymlink("/lustre/lustrefs/up", "..").ok());
  for (const char* sub : {"evil/new", "evil/new/deeper", "up/new"}) {
    PublishRequest req = Request("/pods/a");
    req.volume_context["sub-dir"] = sub;
    EXPECT_EQ(logic_->Publish(req).code(), absl::StatusCode::kInvalidArgument) << sub;
  }
  EXPECT_FALSE(sys_.Exists("/etc/new"));
  EXPECT_FALSE(sys_.Exists("/lustre/new"));
  EXPECT_EQ(sys_.MountCount(), 0);
}

// Another operation on a target while one runs is ABORTED; a retry of the
// very same publish joins it (here past its wait: UNAVAILABLE at once,
// never ABORTED because of the call it repeats); other targets go on.
TEST_F(NodeTest, SameTargetInFlightIsAbortedOrJoinedOtherTargetsProceed) {
  NodeOptions options;
  options.retry_wait = absl::Milliseconds(50);
  MakeLogic(options);
  sys_.HangNext(SyscallOp::kMount);
  absl::Status first;
  std::thread publisher([&] { first = logic_->Publish(Request("/pods/a")); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kMount, 1, absl::Seconds(10)));
  publisher.join();
  // The call itself answers within its bound; the mount goes on.
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable) << first;
  EXPECT_THAT(first.message(), HasSubstr("publish at /pods/a is still in progress since"));
  absl::Status retry = logic_->Publish(Request("/pods/a"));
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable) << retry;
  EXPECT_THAT(retry.message(), HasSubstr("still in progress"));
  EXPECT_EQ(logic_->Publish(Request("/pods/a", true)).code(), absl::StatusCode::kAborted)
      << "another publish of the target";
  EXPECT_TRUE(logic_->Publish(Request("/pods/b")).ok()) << "another target had to wait";
  int binds_at_a = 0;
  for (const auto& call : Binds()) binds_at_a += call.target == "/pods/a";
  EXPECT_EQ(binds_at_a, 1) << "the retry mounted again";
  sys_.Release(SyscallOp::kMount);
  // Once the mount returns, the target is published and free again.
  EXPECT_TRUE(base::WaitUntil([&] { return logic_->Publish(Request("/pods/a")).ok(); }))
      << "lock not released";
  binds_at_a = 0;
  for (const auto& call : Binds()) binds_at_a += call.target == "/pods/a";
  EXPECT_EQ(binds_at_a, 1);
}

// The CO gave up on a publish that does not return and unpublishes: the
// unpublish is never ABORTED; it abandons the publish, which undoes its mount
// when it returns, and answers UNAVAILABLE until then.
TEST_F(NodeTest, AnUnpublishAbandonsAStuckPublishOfItsTarget) {
  NodeOptions options;
  options.retry_wait = absl::Milliseconds(50);
  MakeLogic(options);
  sys_.HangNext(SyscallOp::kMount);
  absl::Status published;
  std::thread publisher([&] { published = logic_->Publish(Request("/pods/a")); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kMount, 1, absl::Seconds(10)));
  publisher.join();
  EXPECT_EQ(published.code(), absl::StatusCode::kUnavailable) << published;
  absl::Status unpublished = logic_->Unpublish("v", "/pods/a");
  EXPECT_EQ(unpublished.code(), absl::StatusCode::kUnavailable) << unpublished;
  EXPECT_THAT(unpublished.message(), HasSubstr("an unpublish abandoned it"));
  EXPECT_TRUE(logic_->Publish(Request("/pods/b")).ok()) << "another target had to wait";
  sys_.Release(SyscallOp::kMount);
  // The publish undoes its mount, the unpublish then finds the target clean.
  EXPECT_TRUE(base::WaitUntil([&] { return !sys_.Exists("/pods/a"); }))
      << "the abandoned publish left its target";
  absl::StatusOr<bool> b_mounted = volume::MountChecker(&sys_).IsMountPoint("/pods/b");
  ASSERT_TRUE(b_mounted.ok()) << b_mounted.status();
  EXPECT_TRUE(*b_mounted);
  EXPECT_TRUE(base::WaitUntil([&] { return logic_->Unpublish("v", "/pods/a").ok(); }));
  // (The abandoned publish's own call may be a moment longer in the table.)
  EXPECT_TRUE(base::WaitUntil([&] { return logic_->Publish(Request("/pods/a")).ok(); }))
      << "the target stays claimed";
}

// Within its wait the unpublish meets the publish's return and then
// unpublishes: OK, and nothing stays at the target.
TEST_F(NodeTest, AnUnpublishWaitingForAnAbandonedPublishSucceedsWhenItReturns) {
  sys_.HangNext(SyscallOp::kMount);
  absl::Status published, unpublished;
  std::thread publisher([&] { published = logic_->Publish(Request("/pods/a")); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kMount, 1, absl::Seconds(10)));
  std::thread unpublisher([&] { unpublished = logic_->Unpublish("v", "/pods/a"); });
  absl::SleepFor(absl::Milliseconds(20));  // let it abandon the publish; it answers only after
  sys_.Release(SyscallOp::kMount);
  publisher.join();
  unpublisher.join();
  EXPECT_EQ(published.code(), absl::StatusCode::kAborted) << published;
  EXPECT_TRUE(unpublished.ok()) << unpublished;
  EXPECT_FALSE(sys_.Exists("/pods/a"));
  // A publish during an unpublish still is ABORTED, as the CSI spec asks.
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  sys_.HangNext(SyscallOp::kUnmount);
  std::thread second([&] { unpublished = logic_->Unpublish("v", "/pods/a"); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kUnmount, 1, absl::Seconds(10)));
  EXPECT_EQ(logic_->Publish(Request("/pods/a")).code(), absl::StatusCode::kAborted);
  sys_.Release(SyscallOp::kUnmount);
  second.join();
  EXPECT_TRUE(unpublished.ok()) << unpublished;
}

// A retry within the wait gets the outcome of the call it repeats.
TEST_F(NodeTest, ARetryOfAnUnpublishInFlightGetsItsOutcome) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  sys_.HangNext(SyscallOp::kUnmount);
  absl::Status first, retry;
  std::thread unpublisher([&] { first = logic_->Unpublish("v", "/pods/a"); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kUnmount, 1, absl::Seconds(10)));
  std::thread retrier([&] { retry = logic_->Unpublish("v", "/pods/a"); });
  absl::SleepFor(absl::Milliseconds(20));  // let the retry join; it answers only after
  sys_.Release(SyscallOp::kUnmount);
  unpublisher.join();
  retrier.join();
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_TRUE(retry.ok()) << retry;
  EXPECT_FALSE(sys_.Exists("/pods/a"));
}

TEST_F(NodeTest, MountSlotsBoundConcurrentMounts) {
  NodeOptions options;
  options.max_concurrent_mounts = 1;
  options.mount_slot_timeout = absl::Milliseconds(50);
  MakeLogic(options);
  sys_.HangNext(SyscallOp::kMount);
  absl::Status first;
  std::thread publisher([&] { first = logic_->Publish(Request("/pods/a")); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kMount, 1, absl::Seconds(10)));
  absl::Status second = logic_->Publish(Request("/pods/b"));
  EXPECT_EQ(second.code(), absl::StatusCode::kUnavailable) << second;
  EXPECT_FALSE(sys_.Exists("/pods/b"));
  sys_.Release(SyscallOp::kMount);
  publisher.join();
  EXPECT_TRUE(first.ok());
  EXPECT_TRUE(logic_->Publish(Request("/pods/b")).ok()) << "slot not returned";
}

// A mount of a file system that has not returned past
// mount_stalled_after: other publishes of that file system answer
// UNAVAILABLE at once (no worker, no task more waits behind it), those of
// another file system go on, and once it returns the file system is
// mounted again.
TEST_F(NodeTest, AFileSystemHeldUpInAMountIsNotWaitedForAgain) {
  ASSERT_TRUE(sys_.AddDir("/lustre/otherfs").ok());
  NodeOptions options;
  options.mount_stalled_after = absl::Milliseconds(50);
  MakeLogic(options);
  sys_.HangNext(SyscallOp::kMount);
  absl::Status first = absl::UnknownError("not returned");
  std::thread publisher([&] { first = logic_->Publish(Request("/pods/a")); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kMount, 1, absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(100));

  absl::Time start = absl::Now();
  absl::Status behind = logic_->Publish(Request("/pods/b"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(behind.code(), absl::StatusCode::kUnavailable) << behind;
  EXPECT_THAT(behind.message(),
              HasSubstr("the file system 10.0.0.4@tcp:/lustrefs has not answered the mount at "
                        "/pods/a since"));
  EXPECT_FALSE(sys_.Exists("/pods/b")) << "the target it made stays";
  PublishRequest other = Request("/pods/c");
  other.volume_context["fs-name"] = "otherfs";
  EXPECT_TRUE(logic_->Publish(other).ok());

  sys_.Release(SyscallOp::kMount);
  publisher.join();
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_TRUE(logic_->Publish(Request("/pods/b")).ok());
}

// A slot bounds mounts in flight, not a publish's fsGroup walk, which can
// take long on a big volume.
TEST_F(NodeTest, FsGroupWalkHoldsNoMountSlot) {
  NodeOptions options;
  options.max_concurrent_mounts = 1;
  options.mount_slot_timeout = absl::Milliseconds(50);
  MakeLogic(options);
  PublishRequest grouped = Request("/pods/a");
  grouped.volume_mount_group = 4000;
  sys_.HangNext(SyscallOp::kReadDir);
  absl::Status first;
  std::thread publisher([&] { first = logic_->Publish(grouped); });
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kReadDir, 1, absl::Seconds(10)));
  absl::Status second = logic_->Publish(Request("/pods/b"));
  EXPECT_TRUE(second.ok()) << second;
  sys_.Release(SyscallOp::kReadDir);
  publisher.join();
  EXPECT_TRUE(first.ok()) << first;
}

TEST_F(NodeTest, FsGroupFailureUndoesTheMount) {
  PublishRequest grouped = Request("/pods/a");
  grouped.volume_mount_group = 4000;
  sys_.FailNext(SyscallOp::kReadDir, EIO);
  absl::Status s = logic_->Publish(grouped);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("fsGroup"));
  EXPECT_EQ(sys_.MountCount(), 0) << "the mount was not undone";
  EXPECT_FALSE(sys_.Exists("/pods/a")) << "the target this call made stays";
}

// Mock mode (the conformance suites'): a publish leaves a directory and no
// mount; stats and unpublish take it as published.
TEST_F(NodeTest, MockModePublishesDirectories) {
  mode_ = NewMockMode(&sys_);
  MakeLogic(NodeOptions{});
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  EXPECT_TRUE(sys_.Exists("/pods/a"));
  EXPECT_EQ(sys_.MountCount(), 0);
  EXPECT_TRUE(logic_->Publish(Request("/pods/a")).ok()) << "a repeat";
  absl::StatusOr<VolumeStats> stats = logic_->Stats("v", "/pods/a");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(logic_->Stats("v", "/pods/none").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
  EXPECT_FALSE(sys_.Exists("/pods/a"));
}

TEST_F(NodeTest, UnpublishIsIdempotentAndRemovesOnlyTheTarget) {
  EXPECT_TRUE(logic_->Unpublish("v", "/pods/never").ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  ASSERT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
  EXPECT_EQ(sys_.MountCount(), 0);
  EXPECT_FALSE(sys_.Exists("/pods/a"));
  EXPECT_TRUE(sys_.Exists("/pods"));
  EXPECT_TRUE(logic_->Unpublish("v", "/pods/a").ok());
}

TEST_F(NodeTest, UnpublishNeverDeletesDataBelowTarget) {
  ASSERT_TRUE(sys_.AddDir("/pods/full").ok());
  ASSERT_TRUE(sys_.AddFile("/pods/full/data").ok());
  absl::Status status = logic_->Unpublish("v", "/pods/full");
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(sys_.Exists("/pods/full/data"));
}

TEST_F(NodeTest, Stats) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  volume::FsStats fs;
  fs.block_size = 4096;
  fs.blocks = 1000;
  fs.blocks_free = 400;
  fs.blocks_available = 300;
  fs.files = 100;
  fs.files_free = 60;
  ASSERT_TRUE(sys_.SetFsStats("/pods/a", fs).ok());
  absl::StatusOr<VolumeStats> stats = logic_->Stats("v", "/pods/a");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->abnormal);
  ASSERT_TRUE(stats->usage.has_value());
  EXPECT_EQ(stats->usage->capacity_bytes, 4096 * 1000);
  EXPECT_EQ(stats->usage->available_bytes, 4096 * 300);
  EXPECT_EQ(stats->usage->inodes, 100);
  EXPECT_EQ(stats->usage->inodes_free, 60);

  ASSERT_TRUE(sys_.BreakMount("/pods/a", ESTALE).ok());
  absl::StatusOr<VolumeStats> broken = logic_->Stats("v", "/pods/a");
  ASSERT_TRUE(broken.ok()) << broken.status();
  EXPECT_TRUE(broken->abnormal);
  EXPECT_THAT(broken->message, HasSubstr("corrupted"));
}

// Same target, different capability: ALREADY_EXISTS, the first mount left
// as it was. The same request again: OK, nothing mounted twice.
TEST_F(NodeTest, RepublishWithOtherFlagsOrGroupIsAlreadyExists) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/f")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/f")).ok());
  EXPECT_EQ(sys_.MountCount(), 1);

  for (const char* flag : {"noatime", "nosuid", "nodev", "noexec", "strictatime"}) {
    PublishRequest other = Request("/pods/f");
    other.mount_flags = {flag};
    absl::Status status = logic_->Publish(other);
    EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << flag << ": " << status;
  }
  EXPECT_EQ(logic_->Publish(Request("/pods/f", /*read_only=*/true)).code(),
            absl::StatusCode::kAlreadyExists);

  // Published without a volume_mount_group: one is another capability.
  PublishRequest group = Request("/pods/f");
  group.volume_mount_group = 1000;
  EXPECT_EQ(logic_->Publish(group).code(), absl::StatusCode::kAlreadyExists);
  // After a restart the earlier group is not known: not refused.
  NodeLogic restarted(NodeOptions{}, &sys_, mode_.get());
  EXPECT_TRUE(restarted.Publish(group).ok());

  EXPECT_EQ(sys_.MountCount(), 1);
  EXPECT_TRUE(sys_.UnmountCalls().empty());

  // Published with flags, the same flags again are OK.
  PublishRequest noatime = Request("/pods/n");
  noatime.mount_flags = {"noatime", "nodev"};
  ASSERT_TRUE(logic_->Publish(noatime).ok());
  EXPECT_TRUE(logic_->Publish(noatime).ok());
}

// The context is authoritative, but a volume is never mounted wider than its
// id names, and a hostile id is refused even where the context wins.
TEST_F(NodeTest, TheIdsSubDirIsUsedWhenTheContextIsSilent) {
  ASSERT_TRUE(sys_.AddDir("/lustre/lustrefs/team-a").ok());
  PublishRequest req = Request("/pods/id");
  req.volume_id = "pv-1#lustrefs#10.0.0.4#team-a#f";
  ASSERT_TRUE(logic_->Publish(req).ok());
  EXPECT_EQ(Binds()[0].source, "/lustre/lustrefs/team-a");

  // The context's sub-dir wins over the id's.
  ASSERT_TRUE(sys_.AddDir("/lustre/lustrefs/other").ok());
  req.target_path = "/pods/ctx";
  req.volume_context["sub-dir"] = "other";
  ASSERT_TRUE(logic_->Publish(req).ok());
  EXPECT_EQ(Binds().back().source, "/lustre/lustrefs/other");

  // An opaque handle: the context alone (here: the root).
  req = Request("/pods/opaque");
  req.volume_id = "my-static-volume";
  ASSERT_TRUE(logic_->Publish(req).ok());
  EXPECT_EQ(Binds().back().source, "/lustre/lustrefs");
}

TEST_F(NodeTest, HostileIdFieldsAreInvalidEvenWhenTheContextWins) {
  struct Case {
    const char* id;
    bool context_sub_dir;
    const char* message;
  };
  for (const Case& c : {Case{"pv#lustrefs#10.0.0.4#../../x#f", false, "'..'"},
                        Case{"pv#lustrefs#10.0.0.4#a/b/../../..#f", false, "'..'"},
                        Case{"pv#lustrefs#10.0.0.4#../../x#f", true, "'..'"},
                        // Leading '/' goes (the Go driver's trim); '..' stays refused.
                        Case{"pv#lustrefs#10.0.0.4#/../etc#f", true, "'..'"},
                        Case{"pv#lustrefs#-oremount#x#f", true, "mgs-ip-address"},
                        Case{"pv#-orw#10.0.0.4##f", true, "fs-name"},
                        Case{"pv#lustrefs#10.0.0.4#-x#f", true, "sub-dir"}}) {
    PublishRequest req = Request("/pods/hostile");
    req.volume_id = c.id;
    if (c.context_sub_dir) req.volume_context["sub-dir"] = "fine";
    absl::Status status = logic_->Publish(req);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.id << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.id;
  }
  EXPECT_EQ(sys_.MountCount(), 0);
  EXPECT_FALSE(sys_.Exists("/pods/hostile"));
}

// Where the volume is not published, the answer is NOT_FOUND, whatever the
// path looks like; the file system is not consulted for paths no publish
// could have made.
// A path below a target is the tenant's: a link there must not lead to the
// figures of another mount.
// The host's Lustre client says a target of the volume's file system is not
// connected: the volume is abnormal, naming it, and its figures (statfs
// answered) stay. Another file system's trouble is not this volume's.
TEST_F(NodeTest, StatsReportTheLustreClientsDisconnectedTargets) {
  base::FakeClock clock;
  LustreImports imports(&sys_, LustreParamDirs("/"), &clock);
  NodeOptions options;
  options.client_imports = &imports;
  MakeLogic(options);
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  const std::string id = Request("/pods/a").volume_id;
  ASSERT_TRUE(sys_.AddFile("/proc/fs/lustre/mdc/lustrefs-MDT0000-mdc-ffff000000000001/import", 0444,
                           "import:\n    state: FULL\n")
                  .ok());
  ASSERT_TRUE(sys_.AddFile("/proc/fs/lustre/osc/otherfs-OST0000-osc-ffff000000000002/import", 0444,
                           "import:\n    state: EVICTED\n")
                  .ok());
  absl::StatusOr<VolumeStats> healthy = logic_->Stats(id, "/pods/a");
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_FALSE(healthy->abnormal) << healthy->message;

  ASSERT_TRUE(sys_.AddFile("/proc/fs/lustre/osc/lustrefs-OST0001-osc-ffff000000000001/import", 0444,
                           "import:\n    state: DISCONN\n")
                  .ok());
  clock.Advance(absl::Seconds(10));  // past the snapshot's age
  absl::StatusOr<VolumeStats> stats = logic_->Stats(id, "/pods/a");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->abnormal);
  EXPECT_THAT(stats->message, HasSubstr("not connected to every target of lustrefs"));
  EXPECT_THAT(stats->message, HasSubstr("lustrefs-OST0001 DISCONN"));
  EXPECT_THAT(stats->message, testing::Not(HasSubstr("otherfs")));
  EXPECT_TRUE(stats->usage.has_value());
  // An id that is not this driver's names no file system: nothing added.
  absl::StatusOr<VolumeStats> foreign = logic_->Stats("v", "/pods/a");
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  EXPECT_FALSE(foreign->abnormal);
}

TEST_F(NodeTest, StatsFollowNoSymlinkBelowATarget) {
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  ASSERT_TRUE(sys_.AddDir("/elsewhere").ok());
  ASSERT_TRUE(sys_.Mount("other", "/elsewhere", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys_.AddSymlink("/lustre/lustrefs/evil", "/").ok());
  absl::StatusOr<VolumeStats> stats = logic_->Stats("v", "/pods/a/evil/elsewhere");
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound)
      << (stats.ok() ? stats->message : stats.status().ToString());
  ASSERT_TRUE(sys_.AddSymlink("/pods/link", "/pods/a").ok());
  EXPECT_EQ(logic_->Stats("v", "/pods/link").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(logic_->Stats("v", "/pods/a").ok());
}

// A file system that stops answering: stats say so within the bound, a
// retry joins the look in flight instead of starting another, other
// volumes answer meanwhile, and once it answers the figures come back.
TEST_F(NodeTest, StatsOfAFileSystemThatDoesNotAnswerAreAbnormalAndBounded) {
  NodeOptions options;
  options.stats_timeout = absl::Milliseconds(50);
  options.max_stuck_stats = 1;
  MakeLogic(options);
  ASSERT_TRUE(sys_.AddDir("/lustre/otherfs").ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/b")).ok());
  PublishRequest other = Request("/pods/c");
  other.volume_id = "pvc-2#otherfs#10.0.0.4##f";
  other.volume_context["fs-name"] = "otherfs";
  ASSERT_TRUE(logic_->Publish(other).ok());
  sys_.HangNext(SyscallOp::kStatfs);
  absl::StatusOr<VolumeStats> stuck = logic_->Stats("v", "/pods/a");
  ASSERT_TRUE(stuck.ok()) << stuck.status();
  EXPECT_TRUE(stuck->abnormal);
  EXPECT_FALSE(stuck->usage.has_value()) << "figures reported for a file system that is silent";
  EXPECT_THAT(stuck->message, HasSubstr("not responding"));
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<VolumeStats> again = logic_->Stats("v", "/pods/a");
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->abnormal);
  }
  EXPECT_TRUE(sys_.AwaitHung(SyscallOp::kStatfs, 1, absl::Seconds(10)));
  // Past the one look allowed in flight, a volume of another file system is
  // UNAVAILABLE at once rather than one more thread; one of the same file
  // system (known from its publish, whatever the id) is not responding.
  EXPECT_EQ(logic_->Stats("v", "/pods/c").status().code(), absl::StatusCode::kUnavailable);
  absl::StatusOr<VolumeStats> same = logic_->Stats("v", "/pods/b");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(same->abnormal);
  EXPECT_THAT(same->message, HasSubstr("a look at /pods/a has not returned"));
  sys_.Release(SyscallOp::kStatfs);
  ASSERT_TRUE(base::WaitUntil([&] {
    absl::StatusOr<VolumeStats> back = logic_->Stats("v", "/pods/a");
    return back.ok() && !back->abnormal && back->usage.has_value();
  }));
  absl::StatusOr<VolumeStats> b = logic_->Stats("v", "/pods/b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->abnormal);
}

// One look per file system that does not answer: while the look at one
// target has not returned, another target of the same file system is
// reported not responding at once, without a look of its own (no thread
// more); a target of another file system is looked at as usual.
TEST_F(NodeTest, OneStuckLookPerFileSystem) {
  NodeOptions options;
  options.stats_timeout = absl::Milliseconds(50);
  MakeLogic(options);
  ASSERT_TRUE(sys_.AddDir("/lustre/otherfs").ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/b")).ok());
  PublishRequest other = Request("/pods/c");
  other.volume_id = "pvc-2#otherfs#10.0.0.4##f";
  other.volume_context["fs-name"] = "otherfs";
  ASSERT_TRUE(logic_->Publish(other).ok());
  const std::string id = Request("/pods/a").volume_id;
  sys_.HangNext(SyscallOp::kStatfs);
  absl::StatusOr<VolumeStats> a = logic_->Stats(id, "/pods/a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->abnormal);
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kStatfs, 1, absl::Seconds(10)));
  const int statfs_calls = sys_.CallCount(SyscallOp::kStatfs);
  absl::StatusOr<VolumeStats> b = logic_->Stats("pvc-9#lustrefs#10.0.0.4##f", "/pods/b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->abnormal);
  EXPECT_FALSE(b->usage.has_value());
  EXPECT_THAT(b->message, HasSubstr("a look at /pods/a has not returned since"));
  EXPECT_EQ(sys_.CallCount(SyscallOp::kStatfs), statfs_calls) << "a second look at a silent fs";
  absl::StatusOr<VolumeStats> c = logic_->Stats(other.volume_id, "/pods/c");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->abnormal) << c->message;
  sys_.Release(SyscallOp::kStatfs);
  EXPECT_TRUE(base::WaitUntil([&] {
    absl::StatusOr<VolumeStats> back = logic_->Stats("pvc-9#lustrefs#10.0.0.4##f", "/pods/b");
    return back.ok() && !back->abnormal && back->usage.has_value();
  }));
}

// Once a file system is known not to answer (a stats look has not
// returned), a publish of it fails at once instead of waiting on it, and an
// unpublish detaches without looking at the target; other file systems are
// untouched, and all is as before once it answers.
TEST_F(NodeTest, ASilentFileSystemIsNotWaitedFor) {
  NodeOptions options;
  options.stats_timeout = absl::Milliseconds(50);
  MakeLogic(options);
  ASSERT_TRUE(sys_.AddDir("/lustre/otherfs").ok());
  const std::string id = Request("/pods/a").volume_id;
  ASSERT_TRUE(logic_->Publish(Request("/pods/a")).ok());
  ASSERT_TRUE(logic_->Publish(Request("/pods/b")).ok());
  sys_.HangNext(SyscallOp::kStatfs);
  ASSERT_TRUE(logic_->Stats(id, "/pods/a")->abnormal);
  ASSERT_TRUE(sys_.AwaitHung(SyscallOp::kStatfs, 1, absl::Seconds(10)));

  const size_t mounts = sys_.MountCalls().size();
  absl::Status published = logic_->Publish(Request("/pods/new"));
  EXPECT_EQ(published.code(), absl::StatusCode::kUnavailable) << published;
  EXPECT_THAT(published.message(), HasSubstr("is not responding"));
  EXPECT_EQ(sys_.MountCalls().size(), mounts) << "mounted on a silent file system";
  EXPECT_FALSE(sys_.Exists("/pods/new"));

  const size_t unmounts = sys_.UnmountCalls().size();
  absl::Status unpublished = logic_->Unpublish(id, "/pods/b");
  EXPECT_TRUE(unpublished.ok()) << unpublished;
  ASSERT_EQ(sys_.UnmountCalls().size(), unmounts + 1);
  EXPECT_EQ(sys_.UnmountCalls().back().flags, MNT_DETACH) << "a plain unmount would wait";
  EXPECT_FALSE(sys_.Exists("/pods/b"));

  PublishRequest other = Request("/pods/c");
  other.volume_id = "pvc-2#otherfs#10.0.0.4##f";
  other.volume_context["fs-name"] = "otherfs";
  EXPECT_TRUE(logic_->Publish(other).ok()) << "another file system had to wait";
  EXPECT_TRUE(logic_->Unpublish(other.volume_id, "/pods/c").ok());
  EXPECT_EQ(sys_.UnmountCalls().back().flags, 0) << "another file system's target detached";

  sys_.Release(SyscallOp::kStatfs);
  EXPECT_TRUE(base::WaitUntil([&] { return logic_->Publish(Request("/pods/new")).ok(); }));
  EXPECT_TRUE(logic_->Unpublish(id, "/pods/new").ok());
  EXPECT_EQ(sys_.UnmountCalls().back().flags, 0);
}

TEST_F(NodeTest, StatsWhereTheVolumeIsNotPublishedIsNotFound) {
  ASSERT_TRUE(sys_.AddDir("/pods/unmounted").ok());
  for (const char* path : {"/pods/missing", "/pods/unmounted"}) {
    absl::StatusOr<VolumeStats> stats = logic_->Stats("v", path);
    EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound) << path << ": " << stats.status();
  }
  sys_.ResetCounters();
  for (const char* path :
       {"some/path", "pods/unmounted", "/pods/x/../unmounted", "/pods//x", "/"}) {
    absl::StatusOr<VolumeStats> stats = logic_->Stats("v", path);
    EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound) << path << ": " << stats.status();
  }
  for (int op = 0; op < volume::kNumSyscallOps; ++op) {
    EXPECT_EQ(sys_.CallCount(static_cast<SyscallOp>(op)), 0) << "op " << op;
  }
  // Malformed input stays INVALID_ARGUMENT.
  EXPECT_EQ(logic_->Stats("v", "/pods/" + std::string(5000, 'x')).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(logic_->Stats("v", std::string("/pods/a\0b", 9)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ------------------------------------------------ gRPC validation table

csi::v1::NodePublishVolumeRequest GoodProto() {
  csi::v1::NodePublishVolumeRequest req;
  req.set_volume_id("pvc-1#lustrefs#10.0.0.4##f");
  req.set_target_path("/pods/g");
  req.mutable_volume_capability()->mutable_mount();
  req.mutable_volume_capability()->mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
  (*req.mutable_volume_context())["mgs-ip-address"] = "10.0.0.4";
  (*req.mutable_volume_context())["fs-name"] = "lustrefs";
  return req;
}

struct ProtoCase {
  const char* name;
  std::function<void(csi::v1::NodePublishVolumeRequest*)> mutate;
  grpc::StatusCode code;
};

TEST_F(NodeTest, PublishValidationTable) {
  NodeService service(logic_.get(), nullptr);
  using Mode = csi::v1::VolumeCapability::AccessMode;
  const std::vector<ProtoCase> cases = {
      {"no volume id", [](auto* r) { r->clear_volume_id(); }, grpc::INVALID_ARGUMENT},
      {"no target", [](auto* r) { r->clear_target_path(); }, grpc::INVALID_ARGUMENT},
      {"no capability", [](auto* r) { r->clear_volume_capability(); }, grpc::INVALID_ARGUMENT},
      {"block", [](auto* r) { r->mutable_volume_capability()->mutable_block(); },
       grpc::INVALID_ARGUMENT},
      {"unknown mode",
       [](auto* r) {
         r->mutable_volume_capability()->mutable_access_mode()->set_mode(Mode::UNKNOWN);
       },
       grpc::INVALID_ARGUMENT},
      {"ext4",
       [](auto* r) { r->mutable_volume_capability()->mutable_mount()->set_fs_type("ext4"); },
       grpc::INVALID_ARGUMENT},
      {"bad group",
       [](auto* r) {
         r->mutable_volume_capability()->mutable_mount()->set_volume_mount_group("staff");
       },
       grpc::INVALID_ARGUMENT},
      {"relative target", [](auto* r) { r->set_target_path("pods/x"); }, grpc::INVALID_ARGUMENT},
      {"NUL in target", [](auto* r) { r->set_target_path(std::string("/pods/a\0b", 9)); },
       grpc::INVALID_ARGUMENT},
      {"unclean target", [](auto* r) { r->set_target_path("/pods/../etc"); },
       grpc::INVALID_ARGUMENT},
      {"no mgs", [](auto* r) { r->mutable_volume_context()->erase("mgs-ip-address"); },
       grpc::INVALID_ARGUMENT},
      {"injection",
       [](auto* r) { r->mutable_volume_capability()->mutable_mount()->add_mount_flags("a,bind"); },
       grpc::INVALID_ARGUMENT},
      {"good", [](auto*) {}, grpc::OK},
  };
  for (const ProtoCase& c : cases) {
    csi::v1::NodePublishVolumeRequest req = GoodProto();
    c.mutate(&req);
    csi::v1::NodePublishVolumeResponse res;
    grpc::Status status = service.NodePublishVolume(nullptr, &req, &res);
    EXPECT_EQ(status.error_code(), c.code) << c.name << ": " << status.error_message();
    EXPECT_EQ(sys_.MountCount(), c.code == grpc::OK ? 1 : 0) << c.name;
  }
}

TEST(ValidateTargetPathTest, AgreesWithCleanPath) {
  for (const char* path :
       {"/pods/a", "/a/b/c", "/", "", "pods/a", "/pods/a/", "/pods//a", "/pods/./a", "/pods/../a",
        "/pods/.", "/pods/..", "/.hidden/x", "/a..b/c", "//pods"}) {
    bool want = !std::string(path).empty() && path[0] == '/' && std::string(path) != "/" &&
                volume::CleanPath(path) == path;
    EXPECT_EQ(ValidateTargetPath(path).ok(), want) << path;
  }
}

TEST_F(NodeTest, ServiceReportsCapabilitiesAndInfo) {
  NodeOptions options;
  options.max_volumes_per_node = 7;
  options.topology = {{"topology.kubernetes.io/zone", "z1"}};
  MakeLogic(options);
  NodeService service(logic_.get(), nullptr);
  csi::v1::NodeGetInfoRequest info_req;
  csi::v1::NodeGetInfoResponse info;
  ASSERT_TRUE(service.NodeGetInfo(nullptr, &info_req, &info).ok());
  EXPECT_EQ(info.node_id(), "node-1");
  EXPECT_EQ(info.max_volumes_per_node(), 7);
  EXPECT_EQ(info.accessible_topology().segments().at("topology.kubernetes.io/zone"), "z1");

  csi::v1::NodeGetCapabilitiesRequest caps_req;
  csi::v1::NodeGetCapabilitiesResponse caps;
  ASSERT_TRUE(service.NodeGetCapabilities(nullptr, &caps_req, &caps).ok());
  std::set<int> types;
  for (const auto& c : caps.capabilities()) types.insert(c.rpc().type());
  using Rpc = csi::v1::NodeServiceCapability::RPC;
  EXPECT_EQ(types, (std::set<int>{Rpc::GET_VOLUME_STATS, Rpc::VOLUME_CONDITION,
                                  Rpc::SINGLE_NODE_MULTI_WRITER, Rpc::VOLUME_MOUNT_GROUP}));

  // Staging is deliberately not offered.
  csi::v1::NodeStageVolumeRequest stage;
  csi::v1::NodeStageVolumeResponse staged;
  EXPECT_EQ(service.NodeStageVolume(nullptr, &stage, &staged).error_code(), grpc::UNIMPLEMENTED);
}

}  // namespace
}  // namespace lustre_csi::driver
