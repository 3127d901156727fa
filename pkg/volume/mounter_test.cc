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
#include "pkg/volume/fake_syscalls.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/test_dir.h"

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
class FailRemount : public Syscalls {
 public:
  explicit FailRemount(FakeSyscalls* fake) : fake_(fake) {}
  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    if (flags & MS_REMOUNT) return ErrnoError(EPERM, "remount");
    return fake_->Mount(source, target, fstype, flags, data);
  }
  absl::Status Unmount(const std::string& target, int flags) override {
    return fake_->Unmount(target, flags);
  }
  absl::StatusOr<FsStats> Statfs(const std::string& path) override { return fake_->Statfs(path); }
  absl::StatusOr<FileInfo> Stat(const std::string& path) override { return fake_->Stat(path); }
  absl::Status Mkdir(const std::string& path, uint32_t mode) override {
    return fake_->Mkdir(path, mode);
  }
  absl::Status Rmdir(const std::string& path) override { return fake_->Rmdir(path); }
  absl::StatusOr<std::string> ReadMountInfo() override { return fake_->ReadMountInfo(); }
  absl::StatusOr<std::string> ResolveBeneath(const std::string& root,
                                             const std::string& relative) override {
    return fake_->ResolveBeneath(root, relative);
  }

 private:
  FakeSyscalls* fake_;
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

// --- ExecMounter with a fake mount program --------------------------------------

class ExecMounterTest : public testing::Test {
 protected:
  // Writes an executable shell script `name` into the test directory.
  std::string Script(const std::string& name, const std::string& body) {
    std::string path = dir_.Sub(name);
    WriteFile(path, "#!/bin/sh\n" + body);
    EXPECT_EQ(chmod(path.c_str(), 0755), 0);
    return path;
  }
  std::string Read(const std::string& name) {
    std::ifstream in(dir_.Sub(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string Recorder() {
    return Script("mount", "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/argv\"\n");
  }

  TestDir dir_;
};

TEST_F(ExecMounterTest, PassesArgumentsWithoutAShell) {
  auto m = NewExecMounter(Recorder(), absl::Seconds(30));
  ASSERT_TRUE(m->Mount("10.0.0.1@tcp:/lustrefs", "/mnt/a b;$(x)", "lustre", {"ro", "flock"}).ok());
  EXPECT_EQ(Read("argv"), "-t\nlustre\n-o\nro,flock\n10.0.0.1@tcp:/lustrefs\n/mnt/a b;$(x)\n");
  ASSERT_TRUE(m->Mount("/src", "/dst", "", {}).ok());
  EXPECT_EQ(Read("argv"), "/src\n/dst\n");
}

TEST_F(ExecMounterTest, FailureCarriesOutput) {
  std::string mount =
      Script("mount", "echo 'mount.lustre: mount x at /mnt failed: No such device' >&2\nexit 32\n");
  absl::Status s = NewExecMounter(mount, absl::Seconds(30))->Mount("x", "/mnt", "lustre", {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("exit status 32"), std::string::npos) << s;
  EXPECT_NE(s.message().find("No such device"), std::string::npos) << s;
}

TEST_F(ExecMounterTest, KilledBySignal) {
  std::string mount = Script("mount", "kill -9 $$\n");
  absl::Status s = NewExecMounter(mount, absl::Seconds(30))->Mount("x", "/mnt", "", {});
  EXPECT_NE(s.message().find("signal 9"), std::string::npos) << s;
}

bool Gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.good()) return true;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
}

TEST_F(ExecMounterTest, HungMountIsKilledWithItsChildren) {
  std::string mount = Script("mount",
                             "d=$(dirname \"$0\")\n"
                             "sleep 600 &\n"
                             "echo $! > \"$d/child.tmp\" && mv \"$d/child.tmp\" \"$d/child\"\n"
                             "wait\n");
  absl::Status s = NewExecMounter(mount, absl::Milliseconds(500))->Mount("x", "/mnt", "lustre", {});
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  std::string child = std::string(absl::StripAsciiWhitespace(Read("child")));
  pid_t pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(child, &pid)) << child;
  // SIGKILL has been sent to the process group; the orphan is reaped by init.
  bool gone = false;
  for (int i = 0; i < 1000 && !(gone = Gone(pid)); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_TRUE(gone) << "sleep " << pid << " survived";
}

TEST_F(ExecMounterTest, BadArgumentsNeverRun) {
  auto m = NewExecMounter(Recorder(), absl::Seconds(30));
  for (const auto& [source, target] : std::vector<std::pair<std::string, std::string>>{
           {"-oremount", "/mnt"}, {"x", "--bind"}, {"", "/mnt"}, {"x", ""}}) {
    EXPECT_EQ(m->Mount(source, target, "lustre", {}).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(m->Mount("x", "/mnt", "-x", {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m->Mount("x", "/mnt", "t", {""}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m->Mount("x", "/mnt", "t", {std::string("a\0b", 3)}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Read("argv"), "");
}

TEST_F(ExecMounterTest, MissingBinary) {
  absl::Status s = NewExecMounter(dir_.Sub("nope"), absl::Seconds(5))->Mount("x", "/m", "", {});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(NewExecMounter("relative/mount", absl::Seconds(5))->Mount("x", "/m", "", {}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ExecMounterTest, UnmountRunsUmountOrUsesTheSeam) {
  std::string mount = Recorder();
  Script("umount", "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/umount-argv\"\n");
  ASSERT_TRUE(NewExecMounter(mount, absl::Seconds(30))->Unmount("/mnt/x").ok());
  EXPECT_EQ(Read("umount-argv"), "/mnt/x\n");

  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  ASSERT_TRUE(NewExecMounter(mount, absl::Seconds(30), &sys)->Unmount("/m").ok());
  EXPECT_EQ(sys.MountCount(), 0);
}

TEST(RunCommandTest, NoTimeout) {
  EXPECT_TRUE(RunCommand({"/bin/sh", "-c", "exit 0"}, absl::InfiniteDuration()).ok());
}

TEST(RunCommandTest, LargeOutputIsBounded) {
  absl::Status s =
      RunCommand({"/bin/sh", "-c", "yes 0123456789 | head -c 1000000; exit 3"}, absl::Seconds(30));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_LT(s.message().size(), 70 * 1024u);
}

}  // namespace
}  // namespace lustre_csi::volume
