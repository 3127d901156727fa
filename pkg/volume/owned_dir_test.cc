#include "pkg/volume/owned_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "pkg/volume/test_dir.h"

namespace lustre_csi::volume {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

TEST(OwnedDirTest, CreateSetsModeOwnerAndMarker) {
  TestDir dir;
  OwnedDirOptions options;
  options.mode = 02770;
  options.uid = 1234;
  options.gid = 5678;
  absl::Status created = CreateOwnedDir(dir.path(), "team/vol", options, {"pvc-1", true});
  ASSERT_TRUE(created.ok()) << created;
  struct stat st;
  ASSERT_EQ(stat(dir.Sub("team/vol").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 02770u);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  absl::StatusOr<std::optional<DirOwner>> owner = ReadDirOwner(dir.path(), "team/vol");
  ASSERT_TRUE(owner.ok() && owner->has_value());
  EXPECT_EQ((*owner)->volume, "pvc-1");
  EXPECT_TRUE((*owner)->delete_on_release);
}

TEST(OwnedDirTest, CreateIsIdempotentForTheSameVolumeOnly) {
  TestDir dir;
  ASSERT_TRUE(CreateOwnedDir(dir.path(), "vol", {}, {"pvc-1", false}).ok());
  EXPECT_TRUE(CreateOwnedDir(dir.path(), "vol", {}, {"pvc-1", false}).ok());
  EXPECT_EQ(CreateOwnedDir(dir.path(), "vol", {}, {"pvc-2", false}).code(),
            absl::StatusCode::kAlreadyExists);
  MakeDir(dir.Sub("existing"));
  WriteFile(dir.Sub("existing/data"), "user data");
  EXPECT_EQ(CreateOwnedDir(dir.path(), "existing", {}, {"pvc-3", true}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(Exists(dir.Sub("existing/.lustre-csi-volume")));
}

TEST(OwnedDirTest, TheRecordedRequestDecidesARepeatForTheSameVolume) {
  TestDir dir;
  ASSERT_TRUE(CreateOwnedDir(dir.path(), "vol", {}, {"pvc-1", true, "request-a"}).ok());
  EXPECT_TRUE(CreateOwnedDir(dir.path(), "vol", {}, {"pvc-1", true, "request-a"}).ok());
  absl::Status other = CreateOwnedDir(dir.path(), "vol", {}, {"pvc-1", true, "request-b"});
  EXPECT_EQ(other.code(), absl::StatusCode::kAlreadyExists) << other;
  // Where a request was not recorded (or is not given), it cannot decide.
  EXPECT_TRUE(CreateOwnedDir(dir.path(), "vol", {}, {"pvc-1", true, ""}).ok());
  ASSERT_TRUE(CreateOwnedDir(dir.path(), "old", {}, {"pvc-2", false}).ok());
  EXPECT_TRUE(CreateOwnedDir(dir.path(), "old", {}, {"pvc-2", false, "request-c"}).ok());

  absl::StatusOr<std::optional<DirOwner>> owner = ReadDirOwner(dir.path(), "vol");
  ASSERT_TRUE(owner.ok() && owner->has_value()) << owner.status();
  EXPECT_EQ((*owner)->request, "request-a");
  EXPECT_TRUE((*owner)->delete_on_release);
}

TEST(OwnedDirTest, ReleaseDeletesOnlyWhatTheMarkerAllows) {
  TestDir dir;
  ASSERT_TRUE(CreateOwnedDir(dir.path(), "del", {}, {"pvc-1", true}).ok());
  WriteFile(dir.Sub("del/data"), "x");
  ASSERT_TRUE(CreateOwnedDir(dir.path(), "keep", {}, {"pvc-2", false}).ok());
  MakeDir(dir.Sub("foreign"));

  EXPECT_FALSE(*ReleaseOwnedDir(dir.path(), "del", "pvc-other"));  // not its owner
  EXPECT_TRUE(Exists(dir.Sub("del/data")));
  EXPECT_TRUE(*ReleaseOwnedDir(dir.path(), "del", "pvc-1"));
  EXPECT_FALSE(Exists(dir.Sub("del")));
  EXPECT_FALSE(*ReleaseOwnedDir(dir.path(), "keep", "pvc-2"));  // retain
  EXPECT_TRUE(Exists(dir.Sub("keep")));
  EXPECT_FALSE(*ReleaseOwnedDir(dir.path(), "foreign", "pvc-3"));  // no marker
  EXPECT_TRUE(Exists(dir.Sub("foreign")));
  EXPECT_FALSE(*ReleaseOwnedDir(dir.path(), "gone", "pvc-4"));  // missing: fine
}

TEST(OwnedDirTest, SymlinksAndEscapesAreRefused) {
  TestDir dir;
  MakeDir(dir.Sub("fs"));
  MakeDir(dir.Sub("outside"));
  MakeSymlink(dir.Sub("outside"), dir.Sub("fs/link"));
  EXPECT_EQ(CreateOwnedDir(dir.Sub("fs"), "link/vol", {}, {"pvc-1", true}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Exists(dir.Sub("outside/vol")));
  for (const char* rel : {"../outside", "/abs", "", ".."}) {
    EXPECT_EQ(CreateOwnedDir(dir.Sub("fs"), rel, {}, {"pvc-1", true}).code(),
              absl::StatusCode::kInvalidArgument)
        << rel;
  }
}

}  // namespace
}  // namespace lustre_csi::volume
