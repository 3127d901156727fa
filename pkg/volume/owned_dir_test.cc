// The same cases on the real file system (LinuxSyscalls in a temporary
// directory) and on the in-memory one (FakeSyscalls): the logic above the
// seam and both implementations of the *Beneath calls must agree.
#include "pkg/volume/owned_dir.h"

#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/testing/fake_syscalls.h"
#include "pkg/volume/testing/fault_syscalls.h"
#include "pkg/volume/testing/test_dir.h"

namespace lustre_csi::volume {
namespace {

class OwnedDirTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      if (geteuid() != 0) GTEST_SKIP() << "setting a directory's owner needs root";
      sys_ = NewLinuxSyscalls();
      root_ = dir_.path();
    } else {
      sys_ = std::make_unique<FakeSyscalls>();
      root_ = "/fs";
      ASSERT_TRUE(fake().AddDir(root_).ok());
    }
  }

  FakeSyscalls& fake() { return *static_cast<FakeSyscalls*>(sys_.get()); }
  std::string Sub(const std::string& rel) const { return root_ + "/" + rel; }
  void AddDir(const std::string& rel) {
    if (GetParam()) {
      MakeDir(Sub(rel));
    } else {
      ASSERT_TRUE(fake().AddDir(Sub(rel)).ok());
    }
  }
  void AddFile(const std::string& rel, const std::string& content) {
    if (GetParam()) {
      WriteFile(Sub(rel), content);
    } else {
      ASSERT_TRUE(fake().AddFile(Sub(rel), 0644, content).ok());
    }
  }
  void AddSymlink(const std::string& target, const std::string& rel) {
    if (GetParam()) {
      MakeSymlink(target, Sub(rel));
    } else {
      ASSERT_TRUE(fake().AddSymlink(Sub(rel), target).ok());
    }
  }
  bool Exists(const std::string& rel) { return sys_->Stat(Sub(rel)).ok(); }

  TestDir dir_;
  std::unique_ptr<Syscalls> sys_;
  std::string root_;
};

TEST_P(OwnedDirTest, CreateSetsModeOwnerAndMarker) {
  OwnedDirOptions options;
  options.mode = 02770;
  options.uid = 1234;
  options.gid = 5678;
  absl::Status created = CreateOwnedDir(*sys_, root_, "team/vol", options, {"pvc-1", true});
  ASSERT_TRUE(created.ok()) << created;
  absl::StatusOr<FileInfo> info = sys_->Stat(Sub("team/vol"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->mode & 07777, 02770u);
  EXPECT_EQ(info->uid, 1234u);
  EXPECT_EQ(info->gid, 5678u);
  absl::StatusOr<std::optional<DirOwner>> owner = ReadDirOwner(*sys_, root_, "team/vol");
  ASSERT_TRUE(owner.ok() && owner->has_value());
  EXPECT_EQ((*owner)->volume, "pvc-1");
  EXPECT_TRUE((*owner)->delete_on_release);
  absl::StatusOr<std::string> marker =
      ReadFileBeneath(*sys_, root_, std::string("team/vol/") + kOwnerMarkerName, 4096);
  ASSERT_TRUE(marker.ok()) << marker.status();
  EXPECT_EQ(*marker, "volume=pvc-1\non-delete=delete\n");
  EXPECT_EQ(sys_->Stat(Sub(std::string("team/vol/") + kOwnerMarkerName))->mode & 07777, 0444u);
}

TEST_P(OwnedDirTest, CreateIsIdempotentForTheSameVolumeOnly) {
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", false}).ok());
  EXPECT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", false}).ok());
  EXPECT_EQ(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-2", false}).code(),
            absl::StatusCode::kAlreadyExists);
  AddDir("existing");
  AddFile("existing/data", "user data");
  EXPECT_EQ(CreateOwnedDir(*sys_, root_, "existing", {}, {"pvc-3", true}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(Exists("existing/.lustre-csi-volume"));
}

TEST_P(OwnedDirTest, TheRecordedRequestDecidesARepeatForTheSameVolume) {
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", true, "request-a"}).ok());
  EXPECT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", true, "request-a"}).ok());
  absl::Status other = CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", true, "request-b"});
  EXPECT_EQ(other.code(), absl::StatusCode::kAlreadyExists) << other;
  // Where a request was not recorded (or is not given), it cannot decide.
  EXPECT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", true, ""}).ok());
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "old", {}, {"pvc-2", false}).ok());
  EXPECT_TRUE(CreateOwnedDir(*sys_, root_, "old", {}, {"pvc-2", false, "request-c"}).ok());

  absl::StatusOr<std::optional<DirOwner>> owner = ReadDirOwner(*sys_, root_, "vol");
  ASSERT_TRUE(owner.ok() && owner->has_value()) << owner.status();
  EXPECT_EQ((*owner)->request, "request-a");
  EXPECT_TRUE((*owner)->delete_on_release);
}

TEST_P(OwnedDirTest, TheMarkerKeepsTheProjectId) {
  DirOwner owner{"pvc-1", true, "request-a"};
  owner.project = 4294967294u;
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, owner).ok());
  absl::StatusOr<std::string> marker =
      ReadFileBeneath(*sys_, root_, std::string("vol/") + kOwnerMarkerName, 4096);
  ASSERT_TRUE(marker.ok()) << marker.status();
  EXPECT_EQ(*marker, "volume=pvc-1\non-delete=delete\nrequest=request-a\nproject=4294967294\n");
  absl::StatusOr<std::optional<DirOwner>> read = ReadDirOwner(*sys_, root_, "vol");
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  EXPECT_EQ((*read)->project, 4294967294u);
  // None recorded: none read.
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "plain", {}, {"pvc-2", true}).ok());
  EXPECT_FALSE((*ReadDirOwner(*sys_, root_, "plain"))->project.has_value());
  // A marker with a project that is not a number is damaged, not "no project".
  AddDir("bad");
  AddFile(std::string("bad/") + kOwnerMarkerName, "volume=pvc-3\nproject=x\n");
  EXPECT_EQ(ReadDirOwner(*sys_, root_, "bad").status().code(), absl::StatusCode::kDataLoss);
}

TEST_P(OwnedDirTest, ReleaseDeletesOnlyWhatTheMarkerAllows) {
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "del", {}, {"pvc-1", true}).ok());
  AddFile("del/data", "x");
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "keep", {}, {"pvc-2", false}).ok());
  AddDir("foreign");

  EXPECT_FALSE(*ReleaseOwnedDir(*sys_, root_, "del", "pvc-other"));  // not its owner
  EXPECT_TRUE(Exists("del/data"));
  EXPECT_TRUE(*ReleaseOwnedDir(*sys_, root_, "del", "pvc-1"));
  EXPECT_FALSE(Exists("del"));
  EXPECT_FALSE(*ReleaseOwnedDir(*sys_, root_, "keep", "pvc-2"));  // retain
  EXPECT_TRUE(Exists("keep"));
  EXPECT_FALSE(*ReleaseOwnedDir(*sys_, root_, "foreign", "pvc-3"));  // no marker
  EXPECT_TRUE(Exists("foreign"));
  EXPECT_FALSE(*ReleaseOwnedDir(*sys_, root_, "gone", "pvc-4"));  // missing: fine
}

TEST_P(OwnedDirTest, OnlyTheCallThatMadeADirectorySaysSo) {
  bool made = false;
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", true}, &made).ok());
  EXPECT_TRUE(made);
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", true}, &made).ok());
  EXPECT_FALSE(made);  // found, made for the same volume by another call
  EXPECT_FALSE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-2", true}, &made).ok());
  EXPECT_FALSE(made);
}

// A removal that stops halfway keeps the marker: a retry still knows the
// directory as the volume's instead of keeping it as nobody's.
TEST_P(OwnedDirTest, AReleaseThatStopsHalfwayKeepsTheMarker) {
  ASSERT_TRUE(CreateOwnedDir(*sys_, root_, "vol", {}, {"pvc-1", true}).ok());
  std::string deep = "vol/a";
  AddDir(deep);
  for (int i = 0; i < kMaxOwnedDirDepth + 2; ++i) {
    deep += "/d";
    AddDir(deep);
  }
  absl::StatusOr<bool> released = ReleaseOwnedDir(*sys_, root_, "vol", "pvc-1");
  EXPECT_EQ(released.status().code(), absl::StatusCode::kResourceExhausted) << released.status();
  absl::StatusOr<std::optional<DirOwner>> owner = ReadDirOwner(*sys_, root_, "vol");
  ASSERT_TRUE(owner.ok() && owner->has_value()) << owner.status();
  EXPECT_EQ((*owner)->volume, "pvc-1");
}

TEST_P(OwnedDirTest, SymlinksAndEscapesAreRefused) {
  AddDir("fs");
  AddDir("outside");
  AddSymlink(Sub("outside"), "fs/link");
  AddSymlink("../outside", "fs/relative-link");
  for (const char* rel : {"link/vol", "relative-link/vol", "link"}) {
    EXPECT_EQ(CreateOwnedDir(*sys_, Sub("fs"), rel, {}, {"pvc-1", true}).code(),
              absl::StatusCode::kInvalidArgument)
        << rel;
  }
  EXPECT_FALSE(Exists("outside/vol"));
  for (const char* rel : {"../outside", "/abs", "", ".."}) {
    EXPECT_EQ(CreateOwnedDir(*sys_, Sub("fs"), rel, {}, {"pvc-1", true}).code(),
              absl::StatusCode::kInvalidArgument)
        << rel;
  }
  // A marker that is a symlink is not read through.
  AddDir("fs/planted");
  AddFile("outside/marker", "volume=pvc-9\non-delete=delete\n");
  AddSymlink(Sub("outside/marker"), std::string("fs/planted/") + kOwnerMarkerName);
  EXPECT_EQ(ReadDirOwner(*sys_, Sub("fs"), "planted").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReleaseOwnedDir(*sys_, Sub("fs"), "planted", "pvc-9").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Exists("outside/marker"));
}

// The marker's write fails after the directory and the marker were made:
// both go again, and a retry makes them.
TEST_P(OwnedDirTest, AFailedCreateIsReportedAndARetryWorks) {
  FaultSyscalls faults(sys_.get());
  faults.FailNext(SyscallOp::kWrite, EIO);
  absl::Status s = CreateOwnedDir(faults, root_, "team/vol", {}, {"pvc-1", true});
  EXPECT_EQ(ErrnoOf(s), EIO) << s;
  EXPECT_FALSE(Exists("team/vol"));
  EXPECT_TRUE(Exists("team"));  // a parent others may share
  ASSERT_TRUE(CreateOwnedDir(faults, root_, "team/vol", {}, {"pvc-1", true}).ok());
  EXPECT_EQ(faults.CallCount(SyscallOp::kWrite), 2);
}

INSTANTIATE_TEST_SUITE_P(LinuxAndFake, OwnedDirTest, testing::Values(true, false),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "Linux" : "Fake";
                         });

}  // namespace
}  // namespace lustre_csi::volume
