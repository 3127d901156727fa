#include "pkg/volume/cleanup.h"

#include <sys/mount.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/syscalls_wrapper.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::volume {
namespace {

using Op = FakeSyscalls::Op;

UnmountOptions Short() {
  UnmountOptions o;
  o.plain_timeout = absl::Milliseconds(50);
  o.force_timeout = absl::Milliseconds(50);
  o.detach_timeout = absl::Milliseconds(50);
  return o;
}

// Runs `fn` on a thread of its own while the fake clock passes each timeout
// in turn: for each, once `sys` has `hung` calls of `op` stuck (the first
// 1, then 2, ...) and the caller sleeps on `clock`, the time moves on by
// it. The shipped timeouts then cost no real time.
absl::Status WithTimeoutsPassing(base::FakeClock& clock, FakeSyscalls& sys, Op op,
                                 const std::vector<absl::Duration>& timeouts,
                                 const std::function<absl::Status()>& fn) {
  absl::Status status;
  std::thread caller([&] { status = fn(); });
  int hung = 0;
  for (absl::Duration timeout : timeouts) {
    EXPECT_TRUE(sys.AwaitHung(op, ++hung, absl::Seconds(30)));
    EXPECT_TRUE(clock.AwaitSleepers(1));
    clock.Advance(timeout);
  }
  caller.join();
  return status;
}

// The shipped timeouts (30, 10 and 5 s) on a fake clock.
UnmountOptions OnClock(base::FakeClock* clock) {
  UnmountOptions o;
  o.clock = clock;
  return o;
}

std::vector<int> Flags(const FakeSyscalls& sys) {
  std::vector<int> out;
  for (const auto& call : sys.UnmountCalls()) out.push_back(call.flags);
  return out;
}

// --- IsCorruptedError / IsCorruptedDir ---------------------------------------

struct CorruptCase {
  int err;
  bool corrupted;
};

class IsCorruptedDirTest : public testing::TestWithParam<CorruptCase> {};

TEST_P(IsCorruptedDirTest, Table) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  sys.FailNext(Op::kStat, GetParam().err);
  absl::StatusOr<bool> got = IsCorruptedDir(sys, "/m");
  EXPECT_EQ(IsCorruptedError(ErrnoError(GetParam().err, "x")), GetParam().corrupted);
  if (GetParam().corrupted) {
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(*got);
  } else {
    EXPECT_EQ(ErrnoOf(got.status()), GetParam().err);
  }
}

INSTANTIATE_TEST_SUITE_P(Errnos, IsCorruptedDirTest,
                         testing::Values(CorruptCase{ENOTCONN, true}, CorruptCase{ESTALE, true},
                                         CorruptCase{EIO, true}, CorruptCase{EACCES, true},
                                         CorruptCase{EHOSTDOWN, true},
                                         CorruptCase{EWOULDBLOCK, true}, CorruptCase{ENODEV, true},
                                         CorruptCase{ENOENT, false}, CorruptCase{EPERM, false},
                                         CorruptCase{ENOTDIR, false}, CorruptCase{EBUSY, false}));

TEST(IsCorruptedDirTest, HealthyAndBroken) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  EXPECT_FALSE(*IsCorruptedDir(sys, "/m"));
  ASSERT_TRUE(sys.Mount("fuse", "/m", "fuse", 0, "").ok());
  ASSERT_TRUE(sys.BreakMount("/m", ENOTCONN).ok());
  EXPECT_TRUE(*IsCorruptedDir(sys, "/m"));
  EXPECT_EQ(IsCorruptedDir(sys, "/nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(IsCorruptedErrorTest, NonErrnoStatuses) {
  EXPECT_FALSE(IsCorruptedError(absl::OkStatus()));
  EXPECT_FALSE(IsCorruptedError(absl::UnavailableError("no errno")));
}

// --- UnmountWithEscalation ---------------------------------------------------

struct EscalationCase {
  const char* name;
  std::vector<int> fail;  // errno of each attempt in turn (0: the fake decides)
  bool busy;              // mount marked busy (plain and force fail, detach works)
  absl::StatusCode code;
  std::vector<int> flags;  // the umount2 flags tried, in order
};

class EscalationTest : public testing::TestWithParam<EscalationCase> {};

TEST_P(EscalationTest, Table) {
  const EscalationCase& c = GetParam();
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  if (c.busy) {
    ASSERT_TRUE(sys.SetBusy("/m", true).ok());
  }
  // FailNext holds one errno at a time: queue them by failing the first
  // attempt and re-arming from a helper thread is overkill, so the table
  // uses at most one distinct errno per case.
  if (!c.fail.empty()) sys.FailNext(Op::kUnmount, c.fail[0], static_cast<int>(c.fail.size()));
  absl::Status s = UnmountWithEscalation(sys, "/m", Short());
  EXPECT_EQ(s.code(), c.code) << s;
  EXPECT_EQ(Flags(sys), c.flags);
}

INSTANTIATE_TEST_SUITE_P(
    Table, EscalationTest,
    testing::Values(
        EscalationCase{"PlainWorks", {}, false, absl::StatusCode::kOk, {0}},
        EscalationCase{"NotMountedIsSuccess", {EINVAL}, false, absl::StatusCode::kOk, {0}},
        EscalationCase{"MissingIsSuccess", {ENOENT}, false, absl::StatusCode::kOk, {0}},
        EscalationCase{"BusyThenForce", {EBUSY}, false, absl::StatusCode::kOk, {0, MNT_FORCE}},
        EscalationCase{"BusyTwiceThenDetach",
                       {EBUSY, EBUSY},
                       false,
                       absl::StatusCode::kOk,
                       {0, MNT_FORCE, MNT_DETACH}},
        EscalationCase{
            "RealBusyNeedsDetach", {}, true, absl::StatusCode::kOk, {0, MNT_FORCE, MNT_DETACH}},
        EscalationCase{"StaleEscalates", {ESTALE}, false, absl::StatusCode::kOk, {0, MNT_FORCE}},
        EscalationCase{
            "NotConnectedEscalates", {ENOTCONN}, false, absl::StatusCode::kOk, {0, MNT_FORCE}},
        EscalationCase{"AllFail",
                       {EBUSY, EBUSY, EBUSY},
                       false,
                       absl::StatusCode::kFailedPrecondition,
                       {0, MNT_FORCE, MNT_DETACH}},
        EscalationCase{
            "PermissionStopsAtOnce", {EPERM}, false, absl::StatusCode::kPermissionDenied, {0}}),
    [](const testing::TestParamInfo<EscalationCase>& info) { return info.param.name; });

TEST(EscalationTest, ErrorNamesEveryStep) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  sys.FailNext(Op::kUnmount, EBUSY, 3);
  absl::Status s = UnmountWithEscalation(sys, "/m", Short());
  EXPECT_EQ(ErrnoOf(s), EBUSY);
  for (const char* step : {"umount: ", "umount -f: ", "umount -l: "}) {
    EXPECT_NE(s.message().find(step), std::string::npos) << s;
  }
}

TEST(EscalationTest, HungPlainCallCannotHoldTheCaller) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  sys.Hang(Op::kUnmount);
  base::FakeClock clock;
  UnmountOptions opts = OnClock(&clock);
  // The hung plain call times out; the forced call hangs too; so does detach.
  absl::Status s = WithTimeoutsPassing(
      clock, sys, Op::kUnmount, {opts.plain_timeout, opts.force_timeout, opts.detach_timeout},
      [&] { return UnmountWithEscalation(sys, "/m", opts); });
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("umount -l /m did not return within 5s"), std::string::npos) << s;
  EXPECT_EQ(Flags(sys), (std::vector<int>{0, MNT_FORCE, MNT_DETACH}));
  EXPECT_TRUE(sys.AwaitHung(Op::kUnmount, 3, absl::Seconds(30)));
  sys.Release(Op::kUnmount);  // the calls left behind finish
}

TEST(EscalationTest, HungPlainThenForceWorks) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  sys.HangNext(Op::kUnmount, 1);
  base::FakeClock clock;
  UnmountOptions opts = OnClock(&clock);
  opts.force_timeout = absl::InfiniteDuration();
  EXPECT_TRUE(WithTimeoutsPassing(clock, sys, Op::kUnmount, {opts.plain_timeout}, [&] {
                return UnmountWithEscalation(sys, "/m", opts);
              }).ok());
  EXPECT_EQ(Flags(sys), (std::vector<int>{0, MNT_FORCE}));
  EXPECT_EQ(sys.MountCount(), 0);
  EXPECT_EQ(sys.HungCount(Op::kUnmount), 1);  // the plain call is still stuck
  sys.Release(Op::kUnmount);                  // and now finds nothing to unmount
}

// Answers umount2 with a fixed errno per flag value and passes everything
// else (and flags without an entry) to the fake.
class ScriptedUnmount : public SyscallsWrapper {
 public:
  ScriptedUnmount(FakeSyscalls* fake, std::map<int, int> errno_by_flags)
      : SyscallsWrapper(fake), errno_by_flags_(std::move(errno_by_flags)) {}
  absl::Status Unmount(const std::string& target, int flags) override {
    flags_.push_back(flags);
    auto it = errno_by_flags_.find(flags);
    if (it != errno_by_flags_.end()) return ErrnoError(it->second, "scripted umount");
    return SyscallsWrapper::Unmount(target, flags);
  }
  std::vector<int> flags_;  // only read after the calls returned

 private:
  std::map<int, int> errno_by_flags_;
};

// Regression: in a user namespace MNT_FORCE answers EPERM; once escalating,
// that must not stop the detach.
TEST(EscalationTest, ForceRefusedStillDetaches) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/m").ok());
  ASSERT_TRUE(fake.Mount("t", "/m", "tmpfs", 0, "").ok());
  ScriptedUnmount sys(&fake, {{0, EBUSY}, {MNT_FORCE, EPERM}});
  EXPECT_TRUE(UnmountWithEscalation(sys, "/m", Short()).ok());
  EXPECT_EQ(sys.flags_, (std::vector<int>{0, MNT_FORCE, MNT_DETACH}));
  EXPECT_EQ(fake.MountCount(), 0);
}

TEST(EscalationTest, EveryStepFailingDifferently) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/m").ok());
  ASSERT_TRUE(fake.Mount("t", "/m", "tmpfs", 0, "").ok());
  ScriptedUnmount sys(&fake, {{0, EBUSY}, {MNT_FORCE, EPERM}, {MNT_DETACH, EIO}});
  absl::Status s = UnmountWithEscalation(sys, "/m", Short());
  EXPECT_EQ(ErrnoOf(s), EIO);  // the last step's errno and code
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fake.MountCount(), 1);
}

TEST(EscalationTest, InfiniteTimeoutRunsInline) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  UnmountOptions opts{absl::InfiniteDuration(), absl::InfiniteDuration(), absl::InfiniteDuration()};
  EXPECT_TRUE(UnmountWithEscalation(sys, "/m", opts).ok());
  EXPECT_EQ(sys.MountCount(), 0);
}

// --- CleanupMountPoint -------------------------------------------------------

TEST(CleanupMountPointTest, MissingTargetIsSuccess) {
  FakeSyscalls sys;
  EXPECT_TRUE(CleanupMountPoint(sys, "/nope").ok());
  EXPECT_TRUE(CleanupMountPoint(sys, "/nope/deeper").ok());
  EXPECT_EQ(sys.CallCount(Op::kUnmount), 0);
  EXPECT_EQ(sys.CallCount(Op::kRmdir), 0);
}

TEST(CleanupMountPointTest, PlainDirectoryIsRemoved) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(CleanupMountPoint(sys, "/t/").ok());
  EXPECT_FALSE(sys.Exists("/t"));
  EXPECT_EQ(sys.CallCount(Op::kUnmount), 0);
  // Idempotent.
  EXPECT_TRUE(CleanupMountPoint(sys, "/t").ok());
}

TEST(CleanupMountPointTest, StackedMountsAreAllUnmounted) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/src").ok());
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(sys.Mount("a", "/t", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys.Mount("/src", "/t", "", MS_BIND, "").ok());
  ASSERT_TRUE(sys.Mount("c", "/t", "tmpfs", 0, "").ok());
  ASSERT_TRUE(CleanupMountPoint(sys, "/t", Short()).ok());
  EXPECT_EQ(sys.MountCount(), 0);
  EXPECT_FALSE(sys.Exists("/t"));
  EXPECT_TRUE(sys.Exists("/src"));
  EXPECT_EQ(Flags(sys), (std::vector<int>{0, 0, 0}));
}

TEST(CleanupMountPointTest, CorruptedMountIsUnmountedAndRemoved) {
  for (int err : {ENOTCONN, ESTALE, EIO, EACCES, EHOSTDOWN, EWOULDBLOCK, ENODEV}) {
    FakeSyscalls sys;
    ASSERT_TRUE(sys.AddDir("/t").ok());
    ASSERT_TRUE(sys.Mount("fuse", "/t", "fuse", 0, "").ok());
    ASSERT_TRUE(sys.BreakMount("/t", err).ok());
    absl::Status s = CleanupMountPoint(sys, "/t", Short());
    EXPECT_TRUE(s.ok()) << err << ": " << s;
    EXPECT_FALSE(sys.Exists("/t")) << err;
    EXPECT_EQ(sys.MountCount(), 0) << err;
  }
}

TEST(CleanupMountPointTest, CorruptedButNotMountedIsAnError) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  sys.FailNext(Op::kStat, EIO);
  absl::Status s = CleanupMountPoint(sys, "/t", Short());
  EXPECT_EQ(ErrnoOf(s), EIO);
  EXPECT_TRUE(sys.Exists("/t"));
}

TEST(CleanupMountPointTest, NonEmptyDirectoryIsLeftAlone) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddFile("/t/keep/file").ok());
  absl::Status s = CleanupMountPoint(sys, "/t", Short());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(sys.Exists("/t/keep/file"));
  EXPECT_EQ(sys.CallCount(Op::kRmdir), 1);  // only the target itself was tried
}

TEST(CleanupMountPointTest, ContentOfAMountIsNeverDeleted) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(sys.AddFile("/data/precious").ok());
  ASSERT_TRUE(sys.Mount("/data", "/t", "", MS_BIND, "").ok());
  sys.FailNext(Op::kUnmount, EPERM);
  EXPECT_EQ(CleanupMountPoint(sys, "/t", Short()).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(sys.Exists("/data/precious"));
  EXPECT_EQ(sys.CallCount(Op::kRmdir), 0);
}

TEST(CleanupMountPointTest, FileTargetIsLeftAlone) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddFile("/t").ok());
  EXPECT_EQ(CleanupMountPoint(sys, "/t").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sys.Exists("/t"));
}

TEST(CleanupMountPointTest, BusyMountIsDetached) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(sys.Mount("t", "/t", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys.SetBusy("/t", true).ok());
  EXPECT_TRUE(CleanupMountPoint(sys, "/t", Short()).ok());
  EXPECT_FALSE(sys.Exists("/t"));
}

struct CleanupFaultCase {
  const char* name;
  Op op;
  int err;
  absl::StatusCode code;
};

class CleanupFaultTest : public testing::TestWithParam<CleanupFaultCase> {};

TEST_P(CleanupFaultTest, Table) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(sys.Mount("t", "/t", "tmpfs", 0, "").ok());
  sys.FailNext(GetParam().op, GetParam().err);
  absl::Status s = CleanupMountPoint(sys, "/t", Short());
  EXPECT_EQ(s.code(), GetParam().code) << s;
}

INSTANTIATE_TEST_SUITE_P(
    Table, CleanupFaultTest,
    testing::Values(
        // The first stat is of the directory left once the mount is gone.
        CleanupFaultCase{"StatAfterUnmountPermission", Op::kStat, EPERM,
                         absl::StatusCode::kPermissionDenied},
        CleanupFaultCase{"LookStaleFallsBackToTable", Op::kOpen, ESTALE, absl::StatusCode::kOk},
        CleanupFaultCase{"RmdirFails", Op::kRmdir, EROFS, absl::StatusCode::kInternal},
        CleanupFaultCase{"RmdirRaceGone", Op::kRmdir, ENOENT, absl::StatusCode::kOk},
        CleanupFaultCase{"UnmountBusyOnce", Op::kUnmount, EBUSY, absl::StatusCode::kOk}),
    [](const testing::TestParamInfo<CleanupFaultCase>& info) { return info.param.name; });

// A look at the target that does not return (its open hangs) is treated
// like a corrupted mount: the table tells what is mounted there.
TEST(CleanupMountPointTest, HungLookIsTreatedLikeCorruption) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(sys.Mount("t", "/t", "tmpfs", 0, "").ok());
  sys.HangNext(Op::kMountIdOf, 1);
  base::FakeClock clock;
  absl::Status s = WithTimeoutsPassing(clock, sys, Op::kMountIdOf, {absl::Seconds(30)}, [&] {
    return CleanupMountPoint(sys, "/t", OnClock(&clock));
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_FALSE(sys.Exists("/t"));
  EXPECT_EQ(sys.CallCount(Op::kReadMountInfo), 1);  // the table stood in for the look
  sys.Release(Op::kMountIdOf);
}

TEST(CleanupMountPointTest, HungPlainUnmountGoesOnToForceNotAgainToPlain) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(sys.Mount("t", "/t", "tmpfs", 0, "").ok());
  sys.HangNext(Op::kUnmount, 1);
  base::FakeClock clock;
  absl::Status s = WithTimeoutsPassing(clock, sys, Op::kUnmount, {absl::Seconds(30)}, [&] {
    return CleanupMountPoint(sys, "/t", OnClock(&clock));
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_FALSE(sys.Exists("/t"));
  // The plain umount that hung is not tried again: the next step is forced.
  EXPECT_EQ(Flags(sys), (std::vector<int>{0, MNT_FORCE}));
  sys.Release(Op::kUnmount);
}

// Counts the stats of `target` made inside and outside the isolation, and
// those made (by path or by descriptor) while something is mounted (at the
// target: the tests mount nowhere else).
class StatWhere : public SyscallsWrapper {
 public:
  StatWhere(FakeSyscalls* fake, std::string target)
      : SyscallsWrapper(fake), fake_(fake), target_(std::move(target)) {}
  absl::StatusOr<FileInfo> Stat(const std::string& path) override {
    if (path == target_) {
      (InMarkedIsolation() ? inside : outside).fetch_add(1);
      Check();
    }
    return SyscallsWrapper::Stat(path);
  }
  absl::StatusOr<FileInfo> StatAt(int dir_fd, const std::string& name) override {
    Check();
    return SyscallsWrapper::StatAt(dir_fd, name);
  }
  std::atomic<int> inside{0};
  std::atomic<int> outside{0};
  std::atomic<int> while_mounted{0};

 private:
  // The tests that use it mount only at the target.
  void Check() {
    if (fake_->MountCount() > 0) while_mounted.fetch_add(1);
  }
  FakeSyscalls* const fake_;
  const std::string target_;
};

// The quick pass never stats a mounted target (the file system there may
// not answer): it tells a mount point by mount ids. The careful pass, after
// a plain umount that hung, looks again with a stat, in the isolation given,
// so a look that never returns holds no thread of the process.
TEST(CleanupMountPointTest, NoStatOfAMountedTargetAndTheCarefulLookInTheIsolation) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/t").ok());
  ASSERT_TRUE(fake.Mount("a", "/t", "tmpfs", 0, "").ok());
  ASSERT_TRUE(fake.Mount("b", "/t", "tmpfs", 0, "").ok());
  MarkingIsolation isolation;
  UnmountOptions opts = Short();
  opts.isolation = &isolation;
  StatWhere quick(&fake, "/t");
  ASSERT_TRUE(CleanupMountPoint(quick, "/t", opts).ok());
  EXPECT_FALSE(fake.Exists("/t"));
  EXPECT_EQ(fake.MountCount(), 0);
  EXPECT_EQ(quick.while_mounted.load(), 0) << "a mounted target was stat'ed";
  EXPECT_EQ(quick.inside.load() + quick.outside.load(), 0);
  EXPECT_EQ(fake.CallCount(Op::kMountIdOf), 4) << "three looks at the target, one at its parent";

  ASSERT_TRUE(fake.AddDir("/t").ok());
  ASSERT_TRUE(fake.Mount("a", "/t", "tmpfs", 0, "").ok());
  fake.HangNext(Op::kUnmount, 1);
  base::FakeClock clock;
  opts = OnClock(&clock);
  opts.isolation = &isolation;
  StatWhere careful(&fake, "/t");
  absl::Status s = WithTimeoutsPassing(clock, fake, Op::kUnmount, {absl::Seconds(30)},
                                       [&] { return CleanupMountPoint(careful, "/t", opts); });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_FALSE(fake.Exists("/t"));
  EXPECT_EQ(careful.inside.load(), 1) << "the careful pass's look after the escalation";
  EXPECT_EQ(careful.outside.load(), 0);
  fake.Release(Op::kUnmount);
}

// The unmounts of a bind of a mount that stays are made in place (they ask
// the file system nothing): the cleanup says so to the Syscalls, in the
// quick pass, the escalation and the detach; other unmounts are not.
// A broken mount (its server gone) is found and unmounted by the quick
// pass as any other: its look asks the file system nothing, so neither a
// stat of it nor the mount table is needed.
TEST(CleanupMountPointTest, ABrokenMountIsUnmountedWithoutAStatOrTheTable) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/t").ok());
  ASSERT_TRUE(fake.Mount("t", "/t", "tmpfs", 0, "").ok());
  ASSERT_TRUE(fake.BreakMount("/t", ENOTCONN).ok());
  StatWhere sys(&fake, "/t");
  ASSERT_TRUE(CleanupMountPoint(sys, "/t", Short()).ok());
  EXPECT_FALSE(fake.Exists("/t"));
  EXPECT_EQ(fake.MountCount(), 0);
  EXPECT_EQ(fake.CallCount(Op::kReadMountInfo), 0);
  EXPECT_EQ(sys.while_mounted.load(), 0) << "the broken mount was stat'ed";
  EXPECT_EQ(Flags(fake), (std::vector<int>{0}));
}

TEST(CleanupMountPointTest, InPlaceUnmountsAreMarkedAsSuch) {
  for (bool in_place : {false, true}) {
    FakeSyscalls fake;
    ASSERT_TRUE(fake.AddDir("/t").ok());
    ASSERT_TRUE(fake.Mount("a", "/t", "tmpfs", 0, "").ok());
    ASSERT_TRUE(fake.Mount("b", "/t", "tmpfs", 0, "").ok());
    ScriptedUnmount sys(&fake, {{0, EBUSY}, {kUnmountInPlace, EBUSY}});
    UnmountOptions opts = Short();
    opts.in_place = in_place;
    opts.force = false;
    ASSERT_TRUE(CleanupMountPoint(sys, "/t", opts).ok());
    ASSERT_TRUE(fake.AddDir("/u").ok());
    ASSERT_TRUE(fake.Mount("c", "/u", "tmpfs", 0, "").ok());
    ASSERT_TRUE(DetachMountPoint(sys, "/u", opts).ok());
    EXPECT_EQ(fake.MountCount(), 0);
    const int mark = in_place ? kUnmountInPlace : 0;
    // Plain (busy), then detached, for each layer; then the other target.
    EXPECT_EQ(sys.flags_, (std::vector<int>{mark, kMntDetach | mark, mark, kMntDetach | mark,
                                            kMntDetach | mark}))
        << in_place;
  }
}

// Notes the thread of every umount, and answers the first in-place plain
// one DEADLINE_EXCEEDED when told to, as a namespace's bounded call that
// did not return would.
class UnmountThreads : public SyscallsWrapper {
 public:
  UnmountThreads(FakeSyscalls* fake, bool first_in_place_times_out)
      : SyscallsWrapper(fake), time_out_(first_in_place_times_out) {}
  absl::Status Unmount(const std::string& target, int flags) override {
    {
      absl::MutexLock lock(&mu_);
      threads_.push_back(std::this_thread::get_id());
      flags_.push_back(flags);
      if (time_out_ && flags == kUnmountInPlace) {
        time_out_ = false;
        return absl::DeadlineExceededError("umount: no answer within 90s");
      }
    }
    return SyscallsWrapper::Unmount(target, flags);
  }
  std::vector<std::thread::id> Threads() {
    absl::MutexLock lock(&mu_);
    return threads_;
  }
  std::vector<int> Flags() {
    absl::MutexLock lock(&mu_);
    return flags_;
  }

 private:
  absl::Mutex mu_;
  bool time_out_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<int> flags_ ABSL_GUARDED_BY(mu_);
};

// The common case runs on the calling thread, with no hand-over, only where
// none of its steps can wait for a file system: the unmounts in place and
// bounded by the Syscalls themselves. Otherwise it runs on a worker that is
// waited for at most plain_timeout.
TEST(CleanupMountPointTest, TheCommonCaseStaysOnTheCallingThreadOnlyWhereEveryStepIsBounded) {
  for (bool in_place : {false, true}) {
    for (bool bounded : {false, true}) {
      FakeSyscalls fake;
      ASSERT_TRUE(fake.AddDir("/t").ok());
      ASSERT_TRUE(fake.Mount("a", "/t", "tmpfs", 0, "").ok());
      ASSERT_TRUE(fake.Mount("b", "/t", "tmpfs", 0, "").ok());
      UnmountThreads sys(&fake, false);
      UnmountOptions opts = Short();
      opts.in_place = in_place;
      opts.unmount_bounded = bounded;
      ASSERT_TRUE(CleanupMountPoint(sys, "/t", opts).ok());
      EXPECT_FALSE(fake.Exists("/t"));
      std::vector<std::thread::id> threads = sys.Threads();
      ASSERT_EQ(threads.size(), 2u);
      for (std::thread::id id : threads) {
        EXPECT_EQ(id == std::this_thread::get_id(), in_place && bounded)
            << "in place " << in_place << ", bounded " << bounded;
      }
    }
  }
}

// On the calling thread, an unmount that timed out where it was made is
// followed by the detach, as one the worker's wait gave up on.
TEST(CleanupMountPointTest, ABoundedUnmountInPlaceThatTimesOutIsDetached) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/t").ok());
  ASSERT_TRUE(fake.Mount("a", "/t", "tmpfs", 0, "").ok());
  UnmountThreads sys(&fake, true);
  UnmountOptions opts = Short();
  opts.in_place = true;
  opts.unmount_bounded = true;
  opts.force = false;
  absl::Status s = CleanupMountPoint(sys, "/t", opts);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_FALSE(fake.Exists("/t"));
  EXPECT_EQ(fake.MountCount(), 0);
  EXPECT_EQ(sys.Flags(), (std::vector<int>{kUnmountInPlace, kMntDetach | kUnmountInPlace}));
}

TEST(CleanupMountPointTest, PlainUmountSayingNotMountedIsAnErrorNotARetry) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  ASSERT_TRUE(sys.Mount("t", "/t", "tmpfs", 0, "").ok());
  sys.FailNext(Op::kUnmount, EINVAL);
  absl::Status s = CleanupMountPoint(sys, "/t", Short());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("umount says it is not"), absl::string_view::npos) << s;
  EXPECT_EQ(Flags(sys), (std::vector<int>{0}));  // asked once
}

TEST(CleanupMountPointTest, EveryFailureIsSeenOnceNotRetriedAway) {
  // A stat error seen by the first pass is the answer; it is not asked again.
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/t").ok());
  sys.FailNext(Op::kStat, EPERM);
  EXPECT_EQ(CleanupMountPoint(sys, "/t", Short()).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(sys.CallCount(Op::kStat), 1);
  EXPECT_TRUE(sys.Exists("/t"));
}

// A file system that does not answer: every mount stacked at the target is
// detached as the mount table lists them, never looked at or unmounted
// plainly; only the directory left, on the file system above, is stat'ed
// and removed.
TEST(DetachMountPointTest, DetachesEveryLayerWithoutLookingAtIt) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/pods/t").ok());
  ASSERT_TRUE(sys.Mount("a", "/pods/t", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys.Mount("b", "/pods/t", "tmpfs", 0, "").ok());
  const int stats = sys.CallCount(Op::kStat);
  absl::Status s = DetachMountPoint(sys, "/pods/t");
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(Flags(sys), (std::vector<int>{MNT_DETACH, MNT_DETACH}));
  EXPECT_EQ(sys.CallCount(Op::kStat), stats + 1) << "looked at a mount of the silent file system";
  EXPECT_EQ(sys.MountCount(), 0);
  EXPECT_FALSE(sys.Exists("/pods/t"));
  EXPECT_TRUE(DetachMountPoint(sys, "/pods/t").ok()) << "a missing target";
  // A directory with something in it stays, as with CleanupMountPoint.
  ASSERT_TRUE(sys.AddFile("/pods/u/data").ok());
  EXPECT_EQ(DetachMountPoint(sys, "/pods/u").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sys.Exists("/pods/u/data"));
}

// A detach that does not return either is bounded.
TEST(DetachMountPointTest, AHungDetachIsBounded) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/pods/t").ok());
  ASSERT_TRUE(sys.Mount("a", "/pods/t", "tmpfs", 0, "").ok());
  sys.HangNext(Op::kUnmount, 1);
  base::FakeClock clock;
  UnmountOptions opts = OnClock(&clock);
  absl::Status s = WithTimeoutsPassing(clock, sys, Op::kUnmount, {opts.detach_timeout},
                                       [&] { return DetachMountPoint(sys, "/pods/t", opts); });
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  sys.Release(Op::kUnmount);
}

}  // namespace
}  // namespace lustre_csi::volume
