#include "pkg/driver/volume_locks.h"

#include "gtest/gtest.h"

namespace lustre_csi::driver {
namespace {

TEST(VolumeLocksTest, SecondAcquireFailsUntilRelease) {
  VolumeLocks locks;
  EXPECT_TRUE(locks.TryAcquire("vol#/target"));
  EXPECT_FALSE(locks.TryAcquire("vol#/target"));
  EXPECT_TRUE(locks.TryAcquire("vol#/other-target"));
  locks.Release("vol#/target");
  EXPECT_TRUE(locks.TryAcquire("vol#/target"));
}

TEST(VolumeLocksTest, ScopedLockReleasesOnlyWhatItHeld) {
  VolumeLocks locks;
  {
    ScopedVolumeLock first(&locks, "k");
    ASSERT_TRUE(first.ok());
    ScopedVolumeLock second(&locks, "k");
    EXPECT_FALSE(second.ok());
  }  // `second` must not release the key `first` holds; `first` releases it.
  EXPECT_EQ(locks.Held(), 0u);
}

}  // namespace
}  // namespace lustre_csi::driver
