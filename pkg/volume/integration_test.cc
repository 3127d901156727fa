// Real mounts, run as root inside a private mount namespace (see
// mount_namespace_main.cc): tmpfs and bind mounts, stacked mounts, names
// with spaces and newlines, a dead FUSE mount (ENOTCONN), EBUSY.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/metrics.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/mounter.h"
#include "pkg/volume/ownership.h"
#include "pkg/volume/syscalls_wrapper.h"
#include "pkg/volume/testing/test_dir.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::volume {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

class IntegrationTest : public testing::Test {
 protected:
  void SetUp() override {
    // All mounts of a test go below one tmpfs, detached as a whole afterwards.
    work_ = dir_.Sub("work");
    MakeDir(work_);
    ASSERT_TRUE(sys_->Mount("lustre-csi-test", work_, "tmpfs", 0, "size=64m").ok());
  }
  void TearDown() override { ASSERT_TRUE(sys_->Unmount(work_, MNT_DETACH).ok()); }

  std::string Dir(const std::string& name) {
    std::string p = work_ + "/" + name;
    MakeDir(p);
    return p;
  }
  int CountAt(const std::string& path) {
    absl::StatusOr<std::vector<MountEntry>> all = checker_.List();
    EXPECT_TRUE(all.ok()) << all.status();
    int n = 0;
    for (const MountEntry& e : *all) n += e.mount_point == path;
    return n;
  }

  TestDir dir_;
  std::unique_ptr<Syscalls> sys_ = NewLinuxSyscalls();
  MountChecker checker_{sys_.get()};
  std::string work_;
};

TEST_F(IntegrationTest, KernelReportsMountRoot) {
  absl::StatusOr<FileInfo> info = sys_->Stat(work_);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->has_mount_id);
  EXPECT_TRUE(info->has_mount_root);
  EXPECT_TRUE(info->mount_root);
  EXPECT_TRUE(*checker_.IsMountPoint(work_));
  EXPECT_FALSE(*checker_.IsMountPoint(dir_.path()));
  EXPECT_EQ(checker_.IsMountPoint(work_ + "/nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(IntegrationTest, StackedMounts) {
  std::string t = Dir("stacked");
  ASSERT_TRUE(sys_->Mount("first", t, "tmpfs", 0, "size=1m").ok());
  WriteFile(t + "/on-first", "1");
  ASSERT_TRUE(sys_->Mount("second", t, "tmpfs", 0, "size=1m").ok());
  EXPECT_FALSE(Exists(t + "/on-first"));
  EXPECT_TRUE(*checker_.IsMountPoint(t));
  EXPECT_EQ(CountAt(t), 2);
  absl::StatusOr<std::optional<MountEntry>> top = checker_.FindMountAt(t);
  ASSERT_TRUE(top.ok() && top->has_value());
  EXPECT_EQ((*top)->source, "second");

  ASSERT_TRUE(CleanupMountPoint(*sys_, t).ok());
  EXPECT_FALSE(Exists(t));
  EXPECT_EQ(CountAt(t), 0);
  EXPECT_TRUE(CleanupMountPoint(*sys_, t).ok());  // idempotent
}

TEST_F(IntegrationTest, BindMountFromTheSameFileSystem) {
  std::string src = Dir("src");
  MakeDir(src + "/sub");
  WriteFile(src + "/sub/data", "keep me");
  std::string dst = Dir("dst");
  ASSERT_TRUE(sys_->Mount(src + "/sub", dst, "", MS_BIND, "").ok());

  absl::StatusOr<FileInfo> a = sys_->Stat(dst);
  absl::StatusOr<FileInfo> b = sys_->Stat(src);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->dev, b->dev);  // a device comparison could not tell
  EXPECT_TRUE(*checker_.IsMountPoint(dst));
  EXPECT_FALSE(*checker_.IsMountPoint(src + "/sub"));
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt(dst);
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->root, "/src/sub");
  EXPECT_EQ((*entry)->fs_type, "tmpfs");

  ASSERT_TRUE(CleanupMountPoint(*sys_, dst).ok());
  EXPECT_FALSE(Exists(dst));
  EXPECT_TRUE(Exists(src + "/sub/data"));  // nothing below the target deleted
}

TEST_F(IntegrationTest, NamesWithSpacesTabsNewlinesAndBackslashes) {
  std::string t = Dir("a b\tc\nd\\e");
  ASSERT_TRUE(sys_->Mount("weird src\n", t, "tmpfs", 0, "size=1m").ok());
  absl::StatusOr<std::string> text = sys_->ReadMountInfo();
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(absl::StrContains(*text, "a\\040b\\011c\\012d\\134e")) << *text;
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt(t);
  ASSERT_TRUE(entry.ok()) << entry.status();
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->mount_point, t);
  EXPECT_EQ((*entry)->source, "weird src\n");
  EXPECT_TRUE(*checker_.IsMountPoint(t));
  ASSERT_TRUE(CleanupMountPoint(*sys_, t).ok());
  EXPECT_FALSE(Exists(t));
}

TEST_F(IntegrationTest, DeadFuseMountIsTransportEndpointNotConnected) {
  int fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fuse < 0) GTEST_SKIP() << "/dev/fuse: " << strerror(errno);
  std::string t = Dir("fuse");
  absl::Status mounted =
      sys_->Mount("lustre-csi-dead-fuse", t, "fuse", MS_NOSUID | MS_NODEV,
                  absl::StrCat("fd=", fuse, ",rootmode=40000,user_id=0,group_id=0"));
  close(fuse);  // no daemon will ever answer: the connection is aborted
  if (ErrnoOf(mounted) == ENODEV) GTEST_SKIP() << "no fuse file system in this kernel";
  ASSERT_TRUE(mounted.ok()) << mounted;

  absl::StatusOr<FileInfo> st = sys_->Stat(t);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(ErrnoOf(st.status()), ENOTCONN) << st.status();
  EXPECT_EQ(st.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(*IsCorruptedDir(*sys_, t));
  absl::StatusOr<bool> is_mount = checker_.IsMountPoint(t);
  ASSERT_FALSE(is_mount.ok());
  EXPECT_TRUE(IsCorruptedError(is_mount.status()));
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt(t);
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->fs_type, "fuse");
  absl::StatusOr<VolumeMetrics> m = NewStatfsMetrics(sys_.get(), t)->GetMetrics();
  EXPECT_EQ(MetricsErrorKindOf(m.status()), MetricsErrorKind::kFsInfoFailed);
  EXPECT_EQ(ErrnoOf(m.status()), ENOTCONN);

  ASSERT_TRUE(CleanupMountPoint(*sys_, t).ok());
  EXPECT_FALSE(Exists(t));
  EXPECT_EQ(CountAt(t), 0);
}

TEST_F(IntegrationTest, BusyMountNeedsDetach) {
  std::string t = Dir("busy");
  ASSERT_TRUE(sys_->Mount("busy", t, "tmpfs", 0, "size=1m").ok());
  WriteFile(t + "/open", "held");
  int fd = open((t + "/open").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);

  absl::Status plain = sys_->Unmount(t, 0);
  EXPECT_EQ(ErrnoOf(plain), EBUSY) << plain;
  EXPECT_EQ(plain.code(), absl::StatusCode::kFailedPrecondition);

  // A working directory inside the mount holds it just the same.
  close(fd);
  char old_cwd[4096];
  ASSERT_NE(getcwd(old_cwd, sizeof(old_cwd)), nullptr);
  ASSERT_EQ(chdir(t.c_str()), 0);
  EXPECT_EQ(ErrnoOf(sys_->Unmount(t, 0)), EBUSY);
  EXPECT_EQ(ErrnoOf(sys_->Unmount(t, MNT_FORCE)), EBUSY);  // tmpfs ignores force
  ASSERT_EQ(chdir(old_cwd), 0);

  fd = open((t + "/open").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(UnmountWithEscalation(*sys_, t).ok());  // plain, force, then detach
  EXPECT_FALSE(*checker_.IsMountPoint(t));
  char c = 0;
  EXPECT_EQ(read(fd, &c, 1), 1);  // the open file still works after the detach
  close(fd);
  ASSERT_TRUE(CleanupMountPoint(*sys_, t).ok());
  EXPECT_FALSE(Exists(t));
}

TEST_F(IntegrationTest, CleanupLeavesNonEmptyDirectories) {
  std::string t = Dir("full");
  WriteFile(t + "/file", "x");
  absl::Status s = CleanupMountPoint(*sys_, t);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(Exists(t + "/file"));
  EXPECT_TRUE(UnmountWithEscalation(*sys_, t).ok());            // not mounted: fine
  EXPECT_TRUE(UnmountWithEscalation(*sys_, t + "/nope").ok());  // missing: fine
}

TEST_F(IntegrationTest, BindMounterReadOnlyAndHardened) {
  std::string src = Dir("bsrc");
  WriteFile(src + "/f", "x");
  std::string dst = Dir("bdst");
  auto mounter = NewBindMounter(sys_.get());
  ASSERT_TRUE(mounter->Mount(src, dst, "", {"ro", "nosuid", "nodev", "noexec"}).ok());
  int fd = open((dst + "/new").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  EXPECT_LT(fd, 0);
  EXPECT_EQ(errno, EROFS);
  if (fd >= 0) close(fd);
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt(dst);
  ASSERT_TRUE(entry.ok() && entry->has_value());
  for (const char* opt : {"ro", "nosuid", "nodev", "noexec"}) {
    EXPECT_TRUE(absl::StrContains("," + (*entry)->options + ",", absl::StrCat(",", opt, ",")))
        << (*entry)->options;
  }
  WriteFile(src + "/g", "source stays writable");
  ASSERT_TRUE(mounter->Unmount(dst).ok());
  EXPECT_FALSE(*checker_.IsMountPoint(dst));
}

// Passes everything to the real system calls and records each mount(2).
class RecordingSyscalls : public SyscallsWrapper {
 public:
  explicit RecordingSyscalls(Syscalls* real) : SyscallsWrapper(real) {}
  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    mount_flags.push_back(flags);
    return SyscallsWrapper::Mount(source, target, fstype, flags, data);
  }
  std::vector<unsigned long> mount_flags;
};

// Regression: a read-only bind was a read-write bind plus a remount, so a
// kill between the two left the volume mounted read-write at the target.
TEST_F(IntegrationTest, ReadOnlyBindNeverAppearsReadWriteAtTheTarget) {
  std::string src = Dir("osrc");
  MakeDir(src + "/inner");
  ASSERT_TRUE(sys_->Mount("inner", src + "/inner", "tmpfs", 0, "size=1m").ok());
  std::string dst = Dir("odst");
  absl::Status probe = sys_->BindMountWithFlags(src, dst, false, MS_RDONLY);
  if (probe.code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << probe;
  ASSERT_TRUE(probe.ok()) << probe;
  ASSERT_TRUE(CleanupMountPoint(*sys_, dst).ok());

  for (bool recursive : {false, true}) {
    dst = Dir(recursive ? "odst-r" : "odst");
    RecordingSyscalls recording(sys_.get());
    std::vector<std::string> options = {"ro", "noexec", "noatime"};
    if (recursive) options.push_back("rbind");
    ASSERT_TRUE(NewBindMounter(&recording)->Mount(src, dst, "", options).ok());
    EXPECT_TRUE(recording.mount_flags.empty()) << "bind and remount in two steps";
    absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt(dst);
    ASSERT_TRUE(entry.ok() && entry->has_value());
    for (const char* opt : {"ro", "noexec", "noatime"}) {
      EXPECT_TRUE(absl::StrContains("," + (*entry)->options + ",", absl::StrCat(",", opt, ",")))
          << (*entry)->options;
    }
    EXPECT_EQ(access(dst.c_str(), W_OK), -1);
    EXPECT_EQ(errno, EROFS);
    // rbind brings the mount below along, read-only too; bind does not.
    EXPECT_EQ(CountAt(dst + "/inner"), recursive ? 1 : 0);
    if (recursive) {
      EXPECT_EQ(access((dst + "/inner").c_str(), W_OK), -1);
      EXPECT_EQ(errno, EROFS);
    }
    ASSERT_TRUE(CleanupMountPoint(*sys_, dst).ok());
    EXPECT_FALSE(Exists(dst));
  }
  // A failed one-step bind leaves nothing at the target.
  std::string missing = Dir("omissing");
  EXPECT_FALSE(sys_->BindMountWithFlags(src + "/nope", missing, false, MS_RDONLY).ok());
  EXPECT_EQ(CountAt(missing), 0);
  ASSERT_TRUE(CleanupMountPoint(*sys_, src + "/inner").ok());
}

// A bind from a resolved directory: never out of the root (a symlink swapped
// in cannot be followed), the flags set, and not a peer of its source.
TEST_F(IntegrationTest, BindBeneathStaysInsideAndJoinsNoPeerGroup) {
  std::string root = Dir("broot");
  ASSERT_TRUE(sys_->Mount("broot", root, "tmpfs", 0, "size=1m").ok());
  ASSERT_TRUE(sys_->Mount("", root, "", MS_SHARED, "").ok());
  MakeDir(root + "/vol");
  ASSERT_EQ(symlink("/etc", (root + "/evil").c_str()), 0);
  ASSERT_EQ(symlink("../..", (root + "/vol/up").c_str()), 0);
  std::string dst = Dir("bdst");
  absl::Status probe = sys_->BindBeneath(root, "vol", dst, MS_RDONLY | MS_NOSUID);
  if (probe.code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << probe;
  ASSERT_TRUE(probe.ok()) << probe;
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt(dst);
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->root, "/vol");
  EXPECT_TRUE(absl::StartsWith((*entry)->options, "ro,nosuid")) << (*entry)->options;
  absl::StatusOr<std::optional<MountEntry>> source = checker_.FindMountAt(root);
  ASSERT_TRUE(source.ok() && source->has_value());
  for (const std::string& field : (*entry)->optional_fields) {
    EXPECT_FALSE(absl::c_linear_search((*source)->optional_fields, field))
        << "peer of its source: " << field;
  }
  ASSERT_TRUE(CleanupMountPoint(*sys_, dst).ok());

  int n = 0;
  for (const char* escape : {"evil", "vol/up", "vol/up/etc", "../x"}) {
    std::string out = Dir(absl::StrCat("besc-", ++n));
    absl::Status s = sys_->BindBeneath(root, escape, out, 0);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << escape << ": " << s;
    EXPECT_EQ(CountAt(out), 0) << escape;
  }
  EXPECT_EQ(sys_->BindBeneath(root, "missing", Dir("bmiss"), 0).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(CleanupMountPoint(*sys_, root).ok());
}

TEST_F(IntegrationTest, WalksStayOnTheirMount) {
  std::string vol = Dir("vol");
  WriteFile(vol + "/small", std::string(8192, 's'));
  MakeDir(vol + "/m");
  ASSERT_TRUE(sys_->Mount("inner", vol + "/m", "tmpfs", 0, "size=4m").ok());
  WriteFile(vol + "/m/big", std::string(2 * 1024 * 1024, 'b'));

  // A walk sees vol and small; the mount point belongs to the other mount.
  int entries = 0;
  uint64_t blocks = 0;
  ASSERT_TRUE(WalkTree(*sys_, vol, TreeLimits(), [&](const TreeEntry& e) {
                ++entries;
                blocks += e.blocks;
                return EntryChange{};
              }).ok());
  EXPECT_EQ(entries, 2);
  EXPECT_LT(blocks * 512, 1024u * 1024u);

  if (chown(vol.c_str(), -1, 4242) != 0 && errno == EINVAL) {
    // Only in a user namespace that does not map the group (a sandbox).
    ASSERT_TRUE(CleanupMountPoint(*sys_, vol + "/m").ok());
    GTEST_SKIP() << "group 4242 is not mapped in this user namespace";
  }
  ASSERT_TRUE(SetVolumeOwnership(*sys_, vol, 4242, false, FsGroupChangePolicy::kAlways).ok());
  struct stat st;
  ASSERT_EQ(lstat((vol + "/small").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4242u);
  ASSERT_EQ(lstat((vol + "/m/big").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 0u);  // on another mount: untouched
  ASSERT_TRUE(CleanupMountPoint(*sys_, vol + "/m").ok());
}

TEST_F(IntegrationTest, ManyMountsParse) {
  std::string base = Dir("many");
  for (int i = 0; i < 200; ++i) {
    std::string d = base + "/" + std::to_string(i);
    MakeDir(d);
    ASSERT_TRUE(sys_->Mount(work_, d, "", MS_BIND, "").ok());
  }
  absl::StatusOr<std::vector<MountEntry>> all = checker_.List();
  ASSERT_TRUE(all.ok()) << all.status();
  int under = 0;
  for (const MountEntry& e : *all) under += absl::StartsWith(e.mount_point, base + "/");
  EXPECT_EQ(under, 200);
  EXPECT_TRUE(*checker_.IsMountPoint(base + "/199"));
  EXPECT_FALSE(*checker_.IsMountPoint(base));
}

}  // namespace
}  // namespace lustre_csi::volume
