// Runs in a private mount namespace (mount_namespace_main), so the
// mount-crossing case can make a real mount. Every case runs twice: as this
// kernel is, and as a kernel before 5.8 (no mount id from statx) and 5.6 (no
// openat2) would have it, where a bind mount of the same file system has the
// same device and only the fallbacks can tell it apart.
#include "pkg/volume/tree.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "pkg/volume/linux/kernel_probe.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/testing/test_dir.h"

namespace lustre_csi::volume {
namespace {

Syscalls& Sys() {
  static Syscalls* const sys = NewLinuxSyscalls().release();
  return *sys;
}

// RemoveTreeBeneath over the kernel.
absl::Status RemoveTree(const std::string& root, const std::string& relative, int max_depth = 256) {
  return RemoveTreeBeneath(Sys(), root, relative, max_depth);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

class RemoveTreeTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      old_kernel_.openat2 = false;
      old_kernel_.statx_mount_id = false;
      os::SetKernelForTesting(&old_kernel_);
    }
  }
  void TearDown() override { os::SetKernelForTesting(nullptr); }
  KernelInterfaces old_kernel_;
};

INSTANTIATE_TEST_SUITE_P(Kernels, RemoveTreeTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "Before5_6" : "ThisKernel";
                         });

TEST_P(RemoveTreeTest, RemovesNestedTreeAndOnlyIt) {
  TestDir dir;
  MakeDir(dir.Sub("fs"));
  MakeDir(dir.Sub("fs/team"));
  MakeDir(dir.Sub("fs/team/vol"));
  MakeDir(dir.Sub("fs/team/vol/a"));
  MakeDir(dir.Sub("fs/team/vol/a/b"));
  WriteFile(dir.Sub("fs/team/vol/a/b/file"), "x");
  WriteFile(dir.Sub("fs/team/vol/top"), "y");
  WriteFile(dir.Sub("fs/team/sibling"), "keep");
  ASSERT_TRUE(RemoveTree(dir.Sub("fs"), "team/vol").ok());
  EXPECT_FALSE(Exists(dir.Sub("fs/team/vol")));
  EXPECT_TRUE(Exists(dir.Sub("fs/team/sibling")));
}

TEST_P(RemoveTreeTest, SymlinksInsideAreRemovedNotFollowed) {
  TestDir dir;
  MakeDir(dir.Sub("outside"));
  WriteFile(dir.Sub("outside/precious"), "keep");
  MakeDir(dir.Sub("fs"));
  MakeDir(dir.Sub("fs/vol"));
  MakeSymlink(dir.Sub("outside"), dir.Sub("fs/vol/link"));
  MakeSymlink("../../outside", dir.Sub("fs/vol/rel"));
  ASSERT_TRUE(RemoveTree(dir.Sub("fs"), "vol").ok());
  EXPECT_FALSE(Exists(dir.Sub("fs/vol")));
  EXPECT_TRUE(Exists(dir.Sub("outside/precious")));
}

TEST_P(RemoveTreeTest, RefusesEscapesAndSymlinkedTargets) {
  TestDir dir;
  MakeDir(dir.Sub("fs"));
  MakeDir(dir.Sub("outside"));
  WriteFile(dir.Sub("outside/precious"), "keep");
  MakeSymlink(dir.Sub("outside"), dir.Sub("fs/evil"));
  MakeSymlink(dir.Sub("outside"), dir.Sub("fs/parent"));
  for (const char* rel : {"evil", "parent/x", "../outside", "..", "", ".", "/etc"}) {
    absl::Status s = RemoveTree(dir.Sub("fs"), rel);
    EXPECT_FALSE(s.ok()) << rel;
  }
  EXPECT_TRUE(Exists(dir.Sub("outside/precious")));
  EXPECT_EQ(RemoveTree(dir.Sub("fs"), "missing").code(), absl::StatusCode::kNotFound);
}

TEST_P(RemoveTreeTest, NeverEntersAnotherMount) {
  TestDir dir;
  MakeDir(dir.Sub("fs"));
  MakeDir(dir.Sub("fs/vol"));
  MakeDir(dir.Sub("fs/vol/mnt"));
  MakeDir(dir.Sub("elsewhere"));
  WriteFile(dir.Sub("elsewhere/precious"), "keep");
  ASSERT_EQ(
      mount(dir.Sub("elsewhere").c_str(), dir.Sub("fs/vol/mnt").c_str(), nullptr, MS_BIND, nullptr),
      0);
  absl::Status s = RemoveTree(dir.Sub("fs"), "vol");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(Exists(dir.Sub("elsewhere/precious")));
  EXPECT_TRUE(Exists(dir.Sub("fs/vol/mnt/precious")));
  ASSERT_EQ(umount(dir.Sub("fs/vol/mnt").c_str()), 0);
  // A mount point as the target itself.
  ASSERT_EQ(
      mount(dir.Sub("elsewhere").c_str(), dir.Sub("fs/vol").c_str(), nullptr, MS_BIND, nullptr), 0);
  // Another mount on the way is refused by the resolution, like every path
  // that crosses one.
  EXPECT_EQ(RemoveTree(dir.Sub("fs"), "vol").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Exists(dir.Sub("elsewhere/precious")));
  ASSERT_EQ(umount(dir.Sub("fs/vol").c_str()), 0);
  EXPECT_TRUE(RemoveTree(dir.Sub("fs"), "vol").ok());
}

// The walk under fsGroup and usage: a bind mount of the same file system
// inside the tree is not entered, nor are its entries visited.
TEST_P(RemoveTreeTest, WalkNeverEntersABindMountOfTheSameFileSystem) {
  TestDir dir;
  MakeDir(dir.Sub("vol"));
  MakeDir(dir.Sub("vol/sub"));
  WriteFile(dir.Sub("vol/sub/mine"), "x");
  MakeDir(dir.Sub("vol/mnt"));
  MakeDir(dir.Sub("elsewhere"));
  WriteFile(dir.Sub("elsewhere/precious"), "keep");
  ASSERT_EQ(
      mount(dir.Sub("elsewhere").c_str(), dir.Sub("vol/mnt").c_str(), nullptr, MS_BIND, nullptr),
      0);
  std::set<std::string> seen;
  absl::Status s = WalkTree(Sys(), dir.Sub("vol"), TreeLimits(), [&](const TreeEntry& e) {
    seen.insert(e.path);
    return EntryChange();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(seen, (std::set<std::string>{"", "sub", "sub/mine"}));
  ASSERT_EQ(umount(dir.Sub("vol/mnt").c_str()), 0);
}

TEST_P(RemoveTreeTest, DepthIsBounded) {
  TestDir dir;
  MakeDir(dir.Sub("fs"));
  std::string path = dir.Sub("fs/vol");
  MakeDir(path);
  for (int i = 0; i < 10; ++i) {
    path += "/d";
    MakeDir(path);
  }
  EXPECT_EQ(RemoveTree(dir.Sub("fs"), "vol", 5).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(RemoveTree(dir.Sub("fs"), "vol").ok());
}

}  // namespace
}  // namespace lustre_csi::volume
