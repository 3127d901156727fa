// The *Beneath calls over LinuxSyscalls, on the real file system: every case
// on both paths, openat2(2) and the user-space walk that stands in for it
// before Linux 5.6; and the two compared call by call.
#include "pkg/volume/linux/beneath.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/kernel_probe.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/linux/walk_beneath.h"

namespace lustre_csi::volume::os {
namespace {

using std::string_literals::operator""s;

// The calls above the seam, over the kernel.
Syscalls& Sys() {
  static Syscalls* const sys = NewLinuxSyscalls().release();
  return *sys;
}
absl::StatusOr<std::string> ResolveBeneath(const std::string& root, const std::string& rel) {
  return volume::ResolveBeneath(Sys(), root, rel);
}
absl::Status MkdirBeneath(const std::string& root, const std::string& rel, uint32_t mode) {
  return volume::MkdirBeneath(Sys(), root, rel, mode);
}
absl::StatusOr<FileInfo> StatBeneath(const std::string& root, const std::string& rel) {
  return volume::StatBeneath(Sys(), root, rel);
}
absl::StatusOr<std::string> ReadFileBeneath(const std::string& root, const std::string& rel,
                                            size_t max_bytes) {
  return volume::ReadFileBeneath(Sys(), root, rel, max_bytes);
}
absl::Status MakeMarkedDirBeneath(const std::string& root, const std::string& rel,
                                  const MarkedDirSpec& spec) {
  return volume::MakeMarkedDirBeneath(Sys(), root, rel, spec);
}

// --- ResolveBeneath (real file system) ---------------------------------------

// The parameter: whether the kernel is taken to lack openat2 (and statx's
// mount id), so that every call below takes the user-space walk.
class ResolveBeneathTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      old_kernel_.openat2 = false;
      old_kernel_.statx_mount_id = false;
      SetKernelForTesting(&old_kernel_);
    }
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string base = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/resolveXXXXXX");
    ASSERT_NE(mkdtemp(base.data()), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(realpath(base.c_str(), real), nullptr);
    base_ = real;
    root_ = base_ + "/root";
    Mkdir(root_);
    Mkdir(root_ + "/a");
    Mkdir(root_ + "/a/b");
    Mkdir(base_ + "/outside");
    Symlink("b", root_ + "/a/rel");               // stays inside
    Symlink("../a/b", root_ + "/a/up");           // .. but inside
    Symlink("../../outside", root_ + "/a/out");   // leaves the root
    Symlink(base_ + "/outside", root_ + "/abs");  // absolute
    Symlink("loop2", root_ + "/loop1");
    Symlink("loop1", root_ + "/loop2");
  }
  void TearDown() override {
    SetKernelForTesting(nullptr);
    ASSERT_EQ(system(("rm -rf '" + base_ + "'").c_str()), 0);
  }
  static void Mkdir(const std::string& p) { ASSERT_EQ(mkdir(p.c_str(), 0755), 0) << p; }
  static void Symlink(const std::string& target, const std::string& p) {
    ASSERT_EQ(symlink(target.c_str(), p.c_str()), 0) << p;
  }

  KernelInterfaces old_kernel_;
  std::string base_;
  std::string root_;
};

INSTANTIATE_TEST_SUITE_P(Paths, ResolveBeneathTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "UserSpaceWalk" : "Openat2";
                         });

TEST_P(ResolveBeneathTest, InsideTheRoot) {
  const std::pair<const char*, const char*> cases[] = {{"", ""}, {"a", "/a"}, {"a/b", "/a/b"}};
  for (const auto& [rel, want] : cases) {
    absl::StatusOr<std::string> got = ResolveBeneath(root_, rel);
    ASSERT_TRUE(got.ok()) << rel << ": " << got.status();
    EXPECT_EQ(*got, root_ + want) << rel;
  }
}

// As a Lustre server resolves a fileset: no symlink at all, not even one
// that stays inside, and no "..".
TEST_P(ResolveBeneathTest, EscapesAndEverySymlinkAreRefused) {
  for (const char* rel : {"..", "a/../..", "a/out", "abs", "/etc", "loop1", "a/out/x", "a/rel",
                          "a/up", "a/b/../b", "."}) {
    absl::StatusOr<std::string> got = ResolveBeneath(root_, rel);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
        << rel << ": " << (got.ok() ? *got : got.status().ToString());
  }
}

TEST_P(ResolveBeneathTest, MissingIsNotFound) {
  EXPECT_EQ(ResolveBeneath(root_, "a/nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveBeneath(base_ + "/nope", "a").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(ResolveBeneathTest, MagicLinksAreRefused) {
  // /proc/self/root is a magic link; RESOLVE_NO_MAGICLINKS refuses it even
  // though it is "beneath" /proc/self.
  absl::StatusOr<std::string> got = ResolveBeneath("/proc/self", "root");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
}

TEST_P(ResolveBeneathTest, NulIsRefused) {
  EXPECT_EQ(ResolveBeneath(root_, "a\0b"s).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- The strict calls -----------------------------------------------------------

MarkedDirSpec Spec(uint32_t mode = 02751) {
  MarkedDirSpec spec;
  spec.mode = mode;
  spec.marker_name = "owner";
  spec.marker_content = "hello";
  spec.marker_mode = 0440;
  return spec;
}

TEST_P(ResolveBeneathTest, StrictCallsCreateReadAndChange) {
  ASSERT_TRUE(MkdirBeneath(root_, "a/new", 0700).ok());
  EXPECT_EQ(MkdirBeneath(root_, "a/new", 0700).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(MakeMarkedDirBeneath(root_, "a/new/made", Spec()).ok());
  EXPECT_EQ(MakeMarkedDirBeneath(root_, "a/new/made", Spec()).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(*ReadFileBeneath(root_, "a/new/made/owner", 100), "hello");
  EXPECT_EQ(*ReadFileBeneath(root_, "a/new/made/owner", 3), "hel");
  absl::StatusOr<FileInfo> marker = StatBeneath(root_, "a/new/made/owner");
  ASSERT_TRUE(marker.ok()) << marker.status();
  EXPECT_EQ(marker->mode & 07777, 0440u);  // exactly, whatever the umask
  EXPECT_EQ(marker->mode & kFileTypeMask, kTypeRegular);
  absl::StatusOr<FileInfo> dir = StatBeneath(root_, "a/new/made");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(dir->mode & 07777, 02751u);
  EXPECT_EQ(dir->mode & kFileTypeMask, kTypeDirectory);
  EXPECT_EQ(StatBeneath(root_, "a/missing").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadFileBeneath(root_, "a/missing", 1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(MkdirBeneath(root_, "a/missing/x", 0700).code(), absl::StatusCode::kNotFound);
  // Only regular files are read.
  EXPECT_EQ(ErrnoOf(ReadFileBeneath(root_, "a/new", 10).status()), EINVAL);
  ASSERT_EQ(mkfifo((root_ + "/a/fifo").c_str(), 0600), 0);
  EXPECT_EQ(ErrnoOf(ReadFileBeneath(root_, "a/fifo", 10).status()), EINVAL);
}

TEST_P(ResolveBeneathTest, StrictCallsFollowNoSymlinkAtAll) {
  // a/rel -> b stays inside the root, yet strict calls refuse it too.
  const absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(StatBeneath(root_, "a/rel").status().code(), kInvalid);
  EXPECT_EQ(StatBeneath(root_, "a/rel/x").status().code(), kInvalid);
  EXPECT_EQ(MkdirBeneath(root_, "a/rel/new", 0755).code(), kInvalid);
  EXPECT_EQ(MakeMarkedDirBeneath(root_, "a/out/new", Spec()).code(), kInvalid);
  EXPECT_EQ(MakeMarkedDirBeneath(root_, "a/up", Spec()).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadFileBeneath(root_, "abs", 10).status().code(), kInvalid);
  EXPECT_EQ(MkdirBeneath(root_, "../x", 0755).code(), kInvalid);
  EXPECT_EQ(MkdirBeneath(root_, "a/../../x", 0755).code(), kInvalid);
  EXPECT_EQ(StatBeneath(root_, "/a").status().code(), kInvalid);
  struct stat st;
  EXPECT_NE(lstat((base_ + "/outside/new").c_str(), &st), 0);
  EXPECT_NE(lstat((root_ + "/a/b/new").c_str(), &st), 0);
  EXPECT_NE(lstat((root_ + "/a/b/owner").c_str(), &st), 0);
}

// A marker that cannot be made (the file system has no inode left for it)
// leaves no unmarked directory behind.
TEST_P(ResolveBeneathTest, AFailedMarkerTakesTheDirectoryBack) {
  const std::string small = root_ + "/small";
  Mkdir(small);
  // Two inodes: the root of the tmpfs and one more.
  ASSERT_EQ(mount("tmpfs", small.c_str(), "tmpfs", 0, "nr_inodes=2,size=64k"), 0) << errno;
  absl::Status s = MakeMarkedDirBeneath(small, "vol", Spec());
  EXPECT_EQ(ErrnoOf(s), ENOSPC) << s;
  struct stat st;
  EXPECT_NE(lstat((small + "/vol").c_str(), &st), 0) << "the unmarked directory stayed";
  EXPECT_EQ(umount(small.c_str()), 0);
}

// What the walk answers, next to what openat2 answers, for the same call:
// the same errno, or the same file (device and inode).
struct Answer {
  int err = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const Answer& o) const { return err == o.err && dev == o.dev && ino == o.ino; }
};

std::ostream& operator<<(std::ostream& os, const Answer& a) {
  return os << (a.err != 0 ? std::string("errno ") + strerror(a.err)
                           : absl::StrCat("dev ", a.dev, " ino ", a.ino));
}

Answer AnswerOf(int fd) {
  Answer a;
  if (fd < 0) {
    a.err = errno;
    return a;
  }
  struct stat st;
  if (fstat(fd, &st) == 0) {
    a.dev = st.st_dev;
    a.ino = st.st_ino;
  } else {
    a.err = -1;
  }
  close(fd);
  return a;
}

// The same tree, compared once: the kernel's answers against the walk's.
class WalkComparisonTest : public ResolveBeneathTest {};
INSTANTIATE_TEST_SUITE_P(Kernel, WalkComparisonTest, testing::Values(false),
                         [](const testing::TestParamInfo<bool>&) { return "Openat2"; });

TEST_P(WalkComparisonTest, TheWalkAnswersAsOpenat2Does) {
  if (!ProbeKernel().openat2) GTEST_SKIP() << "this kernel has no openat2 to compare with";
  // A mount inside the root, a symlink to it, a file, a symlink to the file
  // and a fifo.
  Mkdir(root_ + "/mnt");
  ASSERT_EQ(mount("tmpfs", (root_ + "/mnt").c_str(), "tmpfs", 0, "size=64k"), 0) << errno;
  Mkdir(root_ + "/mnt/in");
  Symlink("mnt/in", root_ + "/tomnt");
  Symlink("/proc/self/root", root_ + "/magic");
  ASSERT_EQ(close(open((root_ + "/a/file").c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  Symlink("file", root_ + "/a/tofile");
  ASSERT_EQ(mkfifo((root_ + "/a/fifo").c_str(), 0600), 0);
  const char* paths[] = {".",        "a",        "a/b",      "a/rel",       "a/up",     "a/out",
                         "abs",      "..",       "a/../..",  "a/b/../../a", "loop1",    "a/nope",
                         "a/file",   "a/file/x", "a/tofile", "mnt",         "mnt/in",   "tomnt",
                         "tomnt/..", "magic",    "a//b/./",  "a/out/x",     "mnt/../a", "a/rel/..",
                         "",         "a/file/",  "a/file/.", "a/tofile/",   "a/rel/",   "a/fifo"};
  const uint64_t flag_sets[] = {O_PATH,
                                O_PATH | O_NOFOLLOW,
                                O_PATH | O_DIRECTORY,
                                O_RDONLY,
                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
                                O_RDONLY | O_NONBLOCK};
  const uint64_t resolves[] = {RESOLVE_BENEATH, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
                               RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
                               kResolveStrictlyBeneath};
  int root_fd = open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root_fd, 0);
  int compared = 0;
  // O_NONBLOCK throughout: a fifo opened for reading would wait for a writer.
  for (const char* path : paths) {
    for (uint64_t flags : flag_sets) {
      for (uint64_t resolve : resolves) {
        Answer kernel =
            AnswerOf(OpenAt2(root_fd, path, flags | O_NONBLOCK | O_CLOEXEC, 0, resolve));
        Answer walk =
            AnswerOf(WalkBeneath(root_fd, path, flags | O_NONBLOCK | O_CLOEXEC, 0, resolve));
        EXPECT_EQ(walk, kernel) << "\"" << path << "\" flags 0x" << std::hex << flags
                                << " resolve 0x" << resolve;
        ++compared;
      }
    }
  }
  close(root_fd);
  EXPECT_EQ(compared, 30 * 6 * 4);
  EXPECT_EQ(umount((root_ + "/mnt").c_str()), 0);
}

// The mount id the walk and the tree removal use on kernels without statx's
// (name_to_handle_at, /proc/self/fdinfo) is the one statx reports.
TEST_P(ResolveBeneathTest, MountIdsWithoutStatxAgree) {
  if (!ProbeKernel().statx_mount_id) GTEST_SKIP() << "this kernel has no statx mount id";
  Mkdir(root_ + "/mnt");
  ASSERT_EQ(mount(root_.c_str(), (root_ + "/mnt").c_str(), nullptr, MS_BIND, nullptr), 0);
  for (const char* name : {"", "a", "mnt", "mnt/a", "abs"}) {
    struct statx stx;
    ASSERT_EQ(
        statx(AT_FDCWD, (root_ + "/" + name).c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx), 0);
    int root_fd = open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    EXPECT_EQ(MountIdAt(root_fd, name), static_cast<int64_t>(stx.stx_mnt_id)) << name;
    close(root_fd);
  }
  EXPECT_EQ(umount((root_ + "/mnt").c_str()), 0);
}

// Stat reports a mount id on both paths (from name_to_handle_at before 5.8),
// so a mount-point check needs no mount table for a bind of the same file
// system.
TEST_P(ResolveBeneathTest, StatReportsTheMountIdOnBothPaths) {
  Mkdir(root_ + "/mnt");
  ASSERT_EQ(mount(root_.c_str(), (root_ + "/mnt").c_str(), nullptr, MS_BIND, nullptr), 0);
  absl::StatusOr<FileInfo> bind = StatAt(AT_FDCWD, (root_ + "/mnt").c_str(), "mnt");
  absl::StatusOr<FileInfo> dir = StatAt(AT_FDCWD, (root_ + "/a").c_str(), "a");
  ASSERT_TRUE(bind.ok() && dir.ok());
  EXPECT_TRUE(bind->has_mount_id);
  EXPECT_TRUE(dir->has_mount_id);
  EXPECT_NE(bind->mount_id, dir->mount_id);
  EXPECT_EQ(bind->dev, dir->dev) << "a bind of the same file system";
  EXPECT_EQ(bind->has_mount_root, !GetParam());
  EXPECT_EQ(umount((root_ + "/mnt").c_str()), 0);
}

// The mount id of a descriptor, without a stat: name_to_handle_at's, or
// /proc/self/fdinfo's where a file system has no file handles (/proc) or a
// seccomp profile refuses the call (as an older kernel's ENOSYS); each the
// id statx reports.
TEST_P(ResolveBeneathTest, MountIdOfADescriptorOnEveryPath) {
  if (!ProbeKernel().statx_mount_id) GTEST_SKIP() << "this kernel has no statx mount id";
  Mkdir(root_ + "/mnt");
  ASSERT_EQ(mount(root_.c_str(), (root_ + "/mnt").c_str(), nullptr, MS_BIND, nullptr), 0);
  auto statx_id = [](const std::string& path) -> int64_t {
    struct statx stx;
    if (statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0) return -2;
    return static_cast<int64_t>(stx.stx_mnt_id);
  };
  // Each path's id, as MountIdOfDescriptor gives it on an O_PATH descriptor.
  // And as MountIdOfPath gives it from the path itself, not followed.
  auto ids = [&](const std::vector<std::string>& paths) {
    std::vector<int64_t> out;
    for (const std::string& path : paths) {
      int fd = open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      out.push_back(fd < 0 ? -3 : MountIdOfDescriptor(fd));
      if (fd >= 0) close(fd);
      int64_t by_path = MountIdOfPath(path.c_str(), false);
      if (by_path != out.back()) out.back() = -4;
    }
    return out;
  };
  const std::vector<std::string> paths = {root_, root_ + "/mnt", root_ + "/a", "/proc/self"};
  std::vector<int64_t> want;
  for (const std::string& path : paths) want.push_back(statx_id(path));
  EXPECT_NE(want[0], want[1]);
  EXPECT_EQ(ids(paths), want);
  struct file_handle probe = {};
  int ignored = 0;
  errno = 0;
  EXPECT_EQ(name_to_handle_at(AT_FDCWD, "/proc/self", &probe, &ignored, 0), -1);
  EXPECT_EQ(errno, EOPNOTSUPP) << "/proc has no file handles: the fdinfo path";
  EXPECT_EQ(MountIdOfDescriptor(987654), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(MountIdOfPath((root_ + "/missing").c_str(), false), -1);
  EXPECT_EQ(errno, ENOENT);

  // On a thread whose seccomp filter answers ENOSYS for name_to_handle_at.
  std::vector<int64_t> refused;
  int refused_errno = 0, bad_fd_errno = 0;
  std::thread([&] {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_name_to_handle_at, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])),
                              filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
      refused_errno = -errno;
      return;
    }
    struct file_handle h = {};
    int id = 0;
    if (name_to_handle_at(AT_FDCWD, "/", &h, &id, 0) != 0) refused_errno = errno;
    refused = ids(paths);
    if (MountIdOfDescriptor(987654) < 0) bad_fd_errno = errno;
  }).join();
  EXPECT_EQ(refused_errno, ENOSYS) << "the filter is in place";
  EXPECT_EQ(refused, want);
  EXPECT_EQ(bad_fd_errno, EBADF);
  EXPECT_EQ(umount((root_ + "/mnt").c_str()), 0);
}

}  // namespace
}  // namespace lustre_csi::volume::os
