// The Linux implementations of the *Beneath calls, on the real file system.
#include "pkg/volume/linux/beneath.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume::os {
namespace {

using std::string_literals::operator""s;

// --- ResolveBeneath (real file system) ---------------------------------------

class ResolveBeneathTest : public testing::Test {
 protected:
  void SetUp() override {
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
  void TearDown() override { ASSERT_EQ(system(("rm -rf '" + base_ + "'").c_str()), 0); }
  static void Mkdir(const std::string& p) { ASSERT_EQ(mkdir(p.c_str(), 0755), 0) << p; }
  static void Symlink(const std::string& target, const std::string& p) {
    ASSERT_EQ(symlink(target.c_str(), p.c_str()), 0) << p;
  }

  std::string base_;
  std::string root_;
};

TEST_F(ResolveBeneathTest, InsideTheRoot) {
  const std::pair<const char*, const char*> cases[] = {
      {"", ""},          {".", ""},        {"a", "/a"},         {"a/b", "/a/b"},
      {"a/rel", "/a/b"}, {"a/up", "/a/b"}, {"a/b/../b", "/a/b"}};
  for (const auto& [rel, want] : cases) {
    absl::StatusOr<std::string> got = ResolveBeneath(root_, rel);
    ASSERT_TRUE(got.ok()) << rel << ": " << got.status();
    EXPECT_EQ(*got, root_ + want) << rel;
  }
}

TEST_F(ResolveBeneathTest, EscapesAreRefused) {
  for (const char* rel : {"..", "a/../..", "a/out", "abs", "/etc", "loop1", "a/out/x"}) {
    absl::StatusOr<std::string> got = ResolveBeneath(root_, rel);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
        << rel << ": " << (got.ok() ? *got : got.status().ToString());
  }
}

TEST_F(ResolveBeneathTest, MissingIsNotFound) {
  EXPECT_EQ(ResolveBeneath(root_, "a/nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveBeneath(base_ + "/nope", "a").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ResolveBeneathTest, MagicLinksAreRefused) {
  // /proc/self/root is a magic link; RESOLVE_NO_MAGICLINKS refuses it even
  // though it is "beneath" /proc/self.
  absl::StatusOr<std::string> got = ResolveBeneath("/proc/self", "root");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
}

TEST_F(ResolveBeneathTest, NulIsRefused) {
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

TEST_F(ResolveBeneathTest, StrictCallsCreateReadAndChange) {
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

TEST_F(ResolveBeneathTest, StrictCallsFollowNoSymlinkAtAll) {
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
TEST_F(ResolveBeneathTest, AFailedMarkerTakesTheDirectoryBack) {
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

}  // namespace
}  // namespace lustre_csi::volume::os
