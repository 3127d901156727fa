#include "pkg/driver/mount_options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lustre_csi::driver {
namespace {

using ::testing::ElementsAre;

TEST(BuildMountOptionsTest, ReadOnlyFirstThenFlagsDeduplicated) {
  EXPECT_THAT(*BuildMountOptions({"noatime", "flock", "noatime"}, true),
              ElementsAre("ro", "noatime", "flock"));
  EXPECT_THAT(*BuildMountOptions({"rw", "noatime"}, true), ElementsAre("ro", "noatime"));
  EXPECT_THAT(*BuildMountOptions({"localflock", "max_cached_mb=512"}, false),
              ElementsAre("localflock", "max_cached_mb=512"));
  EXPECT_TRUE(BuildMountOptions({}, false)->empty());
}

class BadFlagTest : public testing::TestWithParam<std::string> {};

TEST_P(BadFlagTest, InvalidArgument) {
  auto got = BuildMountOptions({"noatime", GetParam()}, false);
  ASSERT_FALSE(got.ok()) << GetParam();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Table, BadFlagTest,
                         testing::Values("noatime,bind", "bind", "BIND", "rbind", "remount", "move",
                                         "rshared", "make-private", "loop", "x-mount.mkdir=0700",
                                         "-o", "--bind", "a b", "a\tb", "a\nb",
                                         std::string("a\0b", 3), "", std::string(300, 'o')));

TEST(BuildMountOptionsTest, TooManyFlags) {
  EXPECT_FALSE(BuildMountOptions(std::vector<std::string>(65, "noatime"), false).ok());
}

TEST(PerMountFlagsMatchTest, FreshMountHasExactlyWhatItAskedFor) {
  EXPECT_TRUE(PerMountFlagsMatch("rw,relatime", {}, true));
  EXPECT_TRUE(PerMountFlagsMatch("ro,relatime", {"ro"}, true));
  EXPECT_FALSE(PerMountFlagsMatch("rw,relatime", {"ro"}, true));
  EXPECT_FALSE(PerMountFlagsMatch("ro,relatime", {}, true));
  EXPECT_TRUE(PerMountFlagsMatch("rw,nosuid,nodev,noatime", {"nosuid", "nodev", "noatime"}, true));
  EXPECT_FALSE(PerMountFlagsMatch("rw,relatime", {"noatime"}, true));
  EXPECT_FALSE(PerMountFlagsMatch("rw,noatime", {}, true));
  EXPECT_FALSE(PerMountFlagsMatch("rw,nosuid,relatime", {}, true));
  EXPECT_TRUE(PerMountFlagsMatch("rw", {"strictatime"}, true));
  EXPECT_FALSE(PerMountFlagsMatch("rw,relatime", {"strictatime"}, true));
  // File-system options are not per-mount flags.
  EXPECT_TRUE(PerMountFlagsMatch("rw,relatime", {"flock", "user_xattr"}, true));
}

TEST(PerMountFlagsMatchTest, BindMountMayInheritMore) {
  EXPECT_TRUE(PerMountFlagsMatch("rw,nosuid,nodev,relatime", {}, false));
  EXPECT_TRUE(PerMountFlagsMatch("rw,nosuid,noatime", {"nosuid"}, false));
  EXPECT_FALSE(PerMountFlagsMatch("rw,nosuid,relatime", {"noexec"}, false));
  EXPECT_FALSE(PerMountFlagsMatch("rw,relatime", {"noatime"}, false));
  EXPECT_FALSE(PerMountFlagsMatch("ro,relatime", {}, false));
}

}  // namespace
}  // namespace lustre_csi::driver
