#include "pkg/csimanager/volume_mount_inspector.h"

#include <sys/mount.h>

#include "gtest/gtest.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::csimanager {
namespace {

TEST(VolumeMountInspectorTest, FollowsTheMountInspectorContract) {
  volume::FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/src").ok());
  std::unique_ptr<MountInspector> inspector = NewVolumeMountInspector(&sys);

  // Missing: not a mount point (no error); RemoveDir is fine.
  EXPECT_EQ(*inspector->IsMountPoint("/root/a/b"), false);
  EXPECT_TRUE(inspector->RemoveDir("/root/a/b").ok());

  ASSERT_TRUE(inspector->MkdirAll("/root/a/b", 0750).ok());
  EXPECT_TRUE(sys.Exists("/root/a/b"));
  EXPECT_EQ(*inspector->IsMountPoint("/root/a/b"), false);
  ASSERT_TRUE(sys.Mount("/src", "/root/a/b", "", MS_BIND, "").ok());
  EXPECT_EQ(*inspector->IsMountPoint("/root/a/b"), true);
  EXPECT_EQ(inspector->RemoveDir("/root/a/b").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sys.Exists("/root/a/b"));

  ASSERT_TRUE(sys.Unmount("/root/a/b", 0).ok());
  EXPECT_TRUE(inspector->RemoveDir("/root/a/b").ok());
  EXPECT_FALSE(sys.Exists("/root/a/b"));
  EXPECT_TRUE(sys.Exists("/root/a"));
}

}  // namespace
}  // namespace lustre_csi::csimanager
