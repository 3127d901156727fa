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

}  // namespace
}  // namespace lustre_csi::driver
