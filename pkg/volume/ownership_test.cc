#include "pkg/volume/ownership.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/testing/fake_syscalls.h"
#include "pkg/volume/testing/test_dir.h"

namespace lustre_csi::volume {
namespace {

constexpr uint32_t kGid = 4242;

struct stat Lstat(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

class OwnershipTest : public testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "changing group ownership needs root";
    vol_ = dir_.Sub("vol");
    MakeDir(vol_, 0755);
    WriteFile(vol_ + "/file", "x");
    ASSERT_EQ(chmod((vol_ + "/file").c_str(), 0600), 0);
    MakeDir(vol_ + "/sub", 0700);
    WriteFile(vol_ + "/sub/inner", "y");
    ASSERT_EQ(chmod((vol_ + "/sub/inner").c_str(), 0644), 0);
    // A symlink leading out of the volume: its target must stay untouched.
    MakeDir(dir_.Sub("outside"), 0700);
    WriteFile(dir_.Sub("outside/secret"), "z");
    ASSERT_EQ(chmod(dir_.Sub("outside/secret").c_str(), 0600), 0);
    MakeSymlink(dir_.Sub("outside/secret"), vol_ + "/escape");
    MakeSymlink(dir_.Sub("outside"), vol_ + "/escape-dir");
  }

  void ExpectOutsideUntouched() {
    struct stat secret = Lstat(dir_.Sub("outside/secret"));
    EXPECT_EQ(secret.st_gid, 0u);
    EXPECT_EQ(secret.st_mode & 07777, 0600u);
    struct stat outside = Lstat(dir_.Sub("outside"));
    EXPECT_EQ(outside.st_gid, 0u);
    EXPECT_EQ(outside.st_mode & 07777, 0700u);
  }

  std::unique_ptr<Syscalls> sys_ = NewLinuxSyscalls();
  TestDir dir_;
  std::string vol_;
};

struct ModeCase {
  const char* path;  // relative to the volume; "" is the root
  uint32_t read_write;
  uint32_t read_only;
};

class OwnershipMaskTest : public OwnershipTest, public testing::WithParamInterface<bool> {};

TEST_P(OwnershipMaskTest, Table) {
  bool read_only = GetParam();
  // Before: root 0755, file 0600, sub 0700, sub/inner 0644. Bits are only added.
  const ModeCase cases[] = {{"", 02775, 02755},
                            {"/file", 0660, 0640},
                            {"/sub", 02770, 02750},
                            {"/sub/inner", 0664, 0644}};
  ASSERT_TRUE(SetVolumeOwnership(*sys_, vol_, kGid, read_only, FsGroupChangePolicy::kAlways).ok());
  for (const ModeCase& c : cases) {
    struct stat st = Lstat(vol_ + c.path);
    EXPECT_EQ(st.st_gid, kGid) << c.path;
    EXPECT_EQ(st.st_mode & 07777, read_only ? c.read_only : c.read_write) << c.path;
  }
  EXPECT_EQ(Lstat(vol_ + "/escape").st_gid, kGid);  // the link itself, not its target
  EXPECT_EQ(Lstat(vol_ + "/escape-dir").st_gid, kGid);
  ExpectOutsideUntouched();
  // A second run changes nothing more.
  ASSERT_TRUE(SetVolumeOwnership(*sys_, vol_, kGid, read_only, FsGroupChangePolicy::kAlways).ok());
  EXPECT_EQ(Lstat(vol_ + "/file").st_mode & 07777, read_only ? 0640u : 0660u);
}

INSTANTIATE_TEST_SUITE_P(ReadOnly, OwnershipMaskTest, testing::Bool());

TEST_F(OwnershipTest, OnRootMismatchSkipsWhenRootIsRight) {
  ASSERT_EQ(chown(vol_.c_str(), 0, kGid), 0);
  ASSERT_EQ(chmod(vol_.c_str(), 02770), 0);
  ASSERT_TRUE(
      SetVolumeOwnership(*sys_, vol_, kGid, false, FsGroupChangePolicy::kOnRootMismatch).ok());
  EXPECT_EQ(Lstat(vol_ + "/file").st_gid, 0u);  // not walked
  EXPECT_EQ(Lstat(vol_ + "/file").st_mode & 07777, 0600u);
}

TEST_F(OwnershipTest, OnRootMismatchWalksWhenRootIsWrong) {
  struct Case {
    uint32_t gid;
    uint32_t mode;
  };
  for (Case c : {Case{0, 02770}, Case{kGid, 0770}, Case{kGid, 02700}}) {
    ASSERT_EQ(chown(vol_.c_str(), 0, c.gid), 0);
    ASSERT_EQ(chmod(vol_.c_str(), c.mode), 0);
    ASSERT_EQ(lchown((vol_ + "/file").c_str(), 0, 0), 0);
    ASSERT_TRUE(
        SetVolumeOwnership(*sys_, vol_, kGid, false, FsGroupChangePolicy::kOnRootMismatch).ok());
    EXPECT_EQ(Lstat(vol_ + "/file").st_gid, kGid) << c.gid << " " << c.mode;
  }
}

TEST_F(OwnershipTest, SetUidIsNotRestoredAfterRegroup) {
  WriteFile(vol_ + "/tool", "#!/bin/sh\n");
  ASSERT_EQ(chmod((vol_ + "/tool").c_str(), 04755), 0);
  ASSERT_TRUE(SetVolumeOwnership(*sys_, vol_, kGid, false, FsGroupChangePolicy::kAlways).ok());
  EXPECT_EQ(Lstat(vol_ + "/tool").st_mode & 07777, 0775u);
}

TEST_F(OwnershipTest, RootMustNotBeASymlink) {
  MakeSymlink(vol_, dir_.Sub("vol-link"));
  absl::Status s =
      SetVolumeOwnership(*sys_, dir_.Sub("vol-link"), kGid, false, FsGroupChangePolicy::kAlways);
  EXPECT_EQ(ErrnoOf(s), ENOTDIR) << s;  // O_DIRECTORY | O_NOFOLLOW on a symlink
  EXPECT_EQ(Lstat(vol_ + "/file").st_gid, 0u);
}

TEST_F(OwnershipTest, MissingDirectory) {
  for (FsGroupChangePolicy p :
       {FsGroupChangePolicy::kAlways, FsGroupChangePolicy::kOnRootMismatch}) {
    EXPECT_EQ(SetVolumeOwnership(*sys_, dir_.Sub("nope"), kGid, false, p).code(),
              absl::StatusCode::kNotFound);
  }
}

// The same rules above the seam, on the in-memory file system.
TEST(OwnershipLogicTest, OnRootMismatchDoesNotWalkWhenTheRootIsRight) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/vol", 02770, 0, kGid).ok());
  ASSERT_TRUE(fake.AddFile("/vol/file", 0600).ok());
  ASSERT_TRUE(
      SetVolumeOwnership(fake, "/vol", kGid, false, FsGroupChangePolicy::kOnRootMismatch).ok());
  EXPECT_EQ(fake.CallCount(SyscallOp::kReadDir), 0);
  EXPECT_EQ(fake.Peek("/vol/file")->gid, 0u);
  ASSERT_TRUE(SetVolumeOwnership(fake, "/vol", kGid, false, FsGroupChangePolicy::kAlways).ok());
  EXPECT_GE(fake.CallCount(SyscallOp::kReadDir), 1) << "a walk lists the directory";
  EXPECT_EQ(fake.Peek("/vol/file")->gid, kGid);
  EXPECT_EQ(fake.Peek("/vol/file")->mode & 07777, 0660u);
}

TEST(OwnershipLogicTest, SymlinksGetTheGroupButKeepTheirMode) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/vol", 0755).ok());
  ASSERT_TRUE(fake.AddSymlink("/vol/link", "/elsewhere").ok());
  ASSERT_TRUE(fake.AddFile("/vol/tool", 04755).ok());
  ASSERT_TRUE(SetVolumeOwnership(fake, "/vol", kGid, true, FsGroupChangePolicy::kAlways).ok());
  EXPECT_EQ(fake.Peek("/vol/link")->gid, kGid);
  EXPECT_EQ(fake.Peek("/vol/link")->mode & 07777, 0777u);
  EXPECT_EQ(fake.Peek("/vol/tool")->mode & 07777, 0755u);  // set-user-ID dropped on regroup
  EXPECT_EQ(fake.Peek("/vol")->mode & 07777, 02755u);
}

TEST(OwnershipLogicTest, AWalkErrorIsReturned) {
  FakeSyscalls fake;
  ASSERT_TRUE(fake.AddDir("/vol", 0755).ok());
  fake.FailNext(SyscallOp::kReadDir, EIO);
  absl::Status s = SetVolumeOwnership(fake, "/vol", kGid, false, FsGroupChangePolicy::kAlways);
  EXPECT_EQ(ErrnoOf(s), EIO) << s;
}

}  // namespace
}  // namespace lustre_csi::volume
