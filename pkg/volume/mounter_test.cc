#include "pkg/volume/mounter.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/syscalls_wrapper.h"
#include "pkg/volume/testing/fake_syscalls.h"
#include "pkg/volume/testing/test_dir.h"

namespace lustre_csi::volume {
namespace {

using Op = FakeSyscalls::Op;

// --- BindMounter over the fake -------------------------------------------------

class BindMounterTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sys_.AddDir("/src").ok());
    ASSERT_TRUE(sys_.AddDir("/dst").ok());
  }
  FakeSyscalls sys_;
  std::unique_ptr<Mounter> mounter_ = NewBindMounter(&sys_);
};

struct BindCase {
  const char* name;
  std::vector<std::string> options;
  std::vector<unsigned long> flags;  // of each mount call
  const char* mount_options;         // as mountinfo shows them afterwards
};

class BindMounterTableTest : public BindMounterTest,
                             public testing::WithParamInterface<BindCase> {};

TEST_P(BindMounterTableTest, Calls) {
  ASSERT_TRUE(mounter_->Mount("/src", "/dst", "", GetParam().options).ok());
  std::vector<unsigned long> flags;
  for (const auto& call : sys_.MountCalls()) {
    flags.push_back(call.flags);
    EXPECT_EQ(call.source, "/src");
    EXPECT_EQ(call.target, "/dst");
  }
  EXPECT_EQ(flags, GetParam().flags);
  absl::StatusOr<std::optional<MountEntry>> entry = MountChecker(&sys_).FindMountAt("/dst");
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->options, GetParam().mount_options);
}

INSTANTIATE_TEST_SUITE_P(
    Table, BindMounterTableTest,
    testing::Values(
        BindCase{"Plain", {}, {MS_BIND}, "rw,relatime"},
        BindCase{"NoOps", {"rw", "bind", "defaults"}, {MS_BIND}, "rw,relatime"},
        BindCase{"ReadOnly", {"ro"}, {MS_BIND, MS_REMOUNT | MS_BIND | MS_RDONLY}, "ro,relatime"},
        BindCase{"Hardened",
                 {"ro", "nosuid", "nodev", "noexec", "noatime"},
                 {MS_BIND,
                  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME},
                 "ro,nosuid,nodev,noexec,noatime"},
        BindCase{"Recursive", {"rbind"}, {MS_BIND | MS_REC}, "rw,relatime"}),
    [](const testing::TestParamInfo<BindCase>& info) { return info.param.name; });

TEST_F(BindMounterTest, ReadOnlyReallyIsReadOnly) {
  ASSERT_TRUE(mounter_->Mount("/src", "/dst", "", {"ro"}).ok());
  EXPECT_EQ(ErrnoOf(sys_.Mkdir("/dst/x", 0755)), EROFS);
  ASSERT_TRUE(mounter_->Unmount("/dst").ok());
  EXPECT_EQ(sys_.MountCount(), 0);
}

TEST_F(BindMounterTest, UnknownOptionIsRefusedBeforeAnyCall) {
  absl::Status s = mounter_->Mount("/src", "/dst", "", {"ro", "size=1m"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("size=1m"), std::string::npos);
  EXPECT_EQ(sys_.CallCount(Op::kMount), 0);
}

TEST_F(BindMounterTest, MissingSource) {
  EXPECT_EQ(mounter_->Mount("/nope", "/dst", "", {}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sys_.MountCount(), 0);
}

TEST_F(BindMounterTest, BindFailureStopsBeforeRemount) {
  sys_.FailNext(Op::kMount, EPERM);
  EXPECT_EQ(mounter_->Mount("/src", "/dst", "", {"ro"}).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(sys_.CallCount(Op::kMount), 1);
}

// Fails every remount, passes everything else to the fake.
class FailRemount : public SyscallsWrapper {
 public:
  explicit FailRemount(FakeSyscalls* fake) : SyscallsWrapper(fake) {}
  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    if (flags & MS_REMOUNT) return ErrnoError(EPERM, "remount");
    return SyscallsWrapper::Mount(source, target, fstype, flags, data);
  }
};

TEST_F(BindMounterTest, FailedRemountUndoesTheBind) {
  FailRemount failing(&sys_);
  absl::Status s = NewBindMounter(&failing)->Mount("/src", "/dst", "", {"ro"});
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("bind undone"), std::string::npos) << s;
  EXPECT_EQ(sys_.MountCount(), 0);  // never left mounted read-write
}

// Offers BindMountWithFlags (recording its calls, then binding and remounting
// on the fake); counts plain mount(2) calls.
class OneStepBind : public FailRemount {
 public:
  explicit OneStepBind(FakeSyscalls* fake) : FailRemount(fake), fake_(fake) {}
  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    ++plain_mounts;
    return fake_->Mount(source, target, fstype, flags, data);
  }
  absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                  bool recursive, unsigned long flags) override {
    calls.push_back(absl::StrCat(source, " ", target, " ", recursive, " ", flags));
    if (absl::Status s = fake_->Mount(source, target, "", MS_BIND, ""); !s.ok()) return s;
    return fake_->Mount(source, target, "", MS_REMOUNT | MS_BIND | flags, "");
  }
  std::vector<std::string> calls;
  int plain_mounts = 0;

 private:
  FakeSyscalls* fake_;
};

// Regression: a kill between the bind and its remount left a read-only
// request mounted read-write, and the retry then failed (ALREADY_EXISTS).
TEST_F(BindMounterTest, CrashBetweenBindAndRemountCannotLeaveReadWriteWhereOneStepWorks) {
  OneStepBind one_step(&sys_);
  auto mounter = NewBindMounter(&one_step);
  ASSERT_TRUE(mounter->Mount("/src", "/dst", "", {"ro", "nosuid", "rbind"}).ok());
  EXPECT_EQ(one_step.plain_mounts, 0) << "a read-write bind appeared first";
  ASSERT_EQ(one_step.calls.size(), 1u);
  EXPECT_EQ(one_step.calls[0], absl::StrCat("/src /dst 1 ", MS_RDONLY | MS_NOSUID));
  // Without flags there is one plain bind, as before.
  ASSERT_TRUE(sys_.AddDir("/dst2").ok());
  ASSERT_TRUE(mounter->Mount("/src", "/dst2", "", {"rw"}).ok());
  EXPECT_EQ(one_step.plain_mounts, 1);
  EXPECT_EQ(one_step.calls.size(), 1u);
}

TEST_F(BindMounterTest, KernelWithoutOneStepBindFallsBackToBindAndRemount) {
  // The fake does not offer BindMountWithFlags (UNIMPLEMENTED).
  ASSERT_TRUE(mounter_->Mount("/src", "/dst", "", {"ro"}).ok());
  EXPECT_EQ(sys_.CallCount(Op::kMount), 2);
  absl::StatusOr<std::optional<MountEntry>> entry = MountChecker(&sys_).FindMountAt("/dst");
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->options.substr(0, 2), "ro") << (*entry)->options;
}

}  // namespace
}  // namespace lustre_csi::volume
