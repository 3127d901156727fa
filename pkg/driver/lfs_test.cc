#include "pkg/driver/lfs.h"

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/testing/fake_mount_namespace.h"

namespace lustre_csi::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using volume::ProcessResult;

ProcessResult Exit(int code, std::string output = "") {
  ProcessResult r;
  r.exit_code = code;
  r.output = std::move(output);
  return r;
}

class LfsToolTest : public testing::Test {
 protected:
  void SetUp() override {
    ns_.AddProgram("/usr/bin/lfs",
                   [this](const std::vector<std::string>&) { return Exit(exit_code_, output_); });
    tool_ = NewLfsTool(&ns_, {"/usr/bin/lfs", absl::Seconds(5)});
  }

  volume::FakeMountNamespace ns_{nullptr};
  int exit_code_ = 0;
  std::string output_;
  std::unique_ptr<LustreTool> tool_;
};

TEST_F(LfsToolTest, TheExactCommandLines) {
  ASSERT_TRUE(tool_->SetProject("/work/fs-1/team/a", 1000042).ok());
  ASSERT_TRUE(tool_->SetProjectQuota("/work/fs-1", 1000042, {10485760, 5000}).ok());
  ASSERT_TRUE(tool_->SetProjectQuota("/work/fs-1", 1000042, {}).ok());
  ASSERT_TRUE(tool_->SetDefaultLayout("/work/fs-1/team/a", {4, 1 << 20, "flash"}).ok());
  ASSERT_TRUE(tool_->SetDefaultLayout("/work/fs-1/team/b", {-1, std::nullopt, ""}).ok());
  EXPECT_THAT(
      ns_.Runs(),
      ElementsAre(
          ElementsAre("/usr/bin/lfs", "project", "-p", "1000042", "-s", "/work/fs-1/team/a"),
          ElementsAre("/usr/bin/lfs", "setquota", "-p", "1000042", "-B", "10485760k", "-I", "5000",
                      "/work/fs-1"),
          ElementsAre("/usr/bin/lfs", "setquota", "-p", "1000042", "-B", "0k", "-I", "0",
                      "/work/fs-1"),
          ElementsAre("/usr/bin/lfs", "setstripe", "-c", "4", "-S", "1048576", "-p", "flash",
                      "/work/fs-1/team/a"),
          ElementsAre("/usr/bin/lfs", "setstripe", "-c", "-1", "/work/fs-1/team/b")));
}

TEST_F(LfsToolTest, PathsThatCouldBeOptionsNeverRun) {
  EXPECT_EQ(tool_->SetProject("-r", 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tool_->SetProject("", 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tool_->SetProjectQuota(std::string("/a\0b", 4), 1, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ns_.Runs().empty());
}

TEST_F(LfsToolTest, NoProjectQuotasIsAPreconditionThatSaysWhatToEnable) {
  // As lfs says it: exit status 1, the reason in words.
  exit_code_ = 1;
  output_ = "lfs: failed to set xattr for '/work/fs-1/a': Operation not supported";
  absl::Status s = tool_->SetProject("/work/fs-1/a", 7);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("Operation not supported"));
  EXPECT_THAT(s.message(), HasSubstr("no project quotas"));
  EXPECT_EQ(volume::ErrnoOf(s), EOPNOTSUPP);
}

TEST_F(LfsToolTest, ARefusedSetquotaNamesRootSquash) {
  exit_code_ = 1;
  output_ =
      "lfs setquota: quotactl failed: Operation not permitted\nsetquota failed: Operation not "
      "permitted";
  absl::Status s = tool_->SetProjectQuota("/work/fs-1", 7, {1024, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("squash"));
  EXPECT_THAT(s.message(), HasSubstr("Operation not permitted"));
}

TEST_F(LfsToolTest, AToolThatCannotRunSaysSo) {
  exit_code_ = 127;
  output_ = "exec failed";
  absl::Status s = tool_->SetDefaultLayout("/work/fs-1/a", {1, std::nullopt, ""});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("--lfs"));
  ns_.RemoveProgram("/usr/bin/lfs");
  s = tool_->SetProject("/work/fs-1/a", 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("--lfs"));
}

TEST_F(LfsToolTest, ABadPoolIsTheToolsInvalidArgument) {
  exit_code_ = 1;
  output_ = "lfs setstripe: pool 'lustrefs.nope' does not exist";
  absl::Status s = tool_->SetDefaultLayout("/work/fs-1/a", {std::nullopt, std::nullopt, "nope"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("pool 'lustrefs.nope' does not exist"));
}

// Exit status 1 is not EPERM for lfs: without words it knows, the failure
// is INTERNAL, with the output.
TEST_F(LfsToolTest, AnExitStatusOfOneIsNotReadAsAnErrno) {
  exit_code_ = 1;
  output_ = "lfs: something unexpected";
  absl::Status s = tool_->SetProject("/work/fs-1/a", 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(s.message(), HasSubstr("something unexpected"));
  EXPECT_FALSE(volume::ErrnoOf(s).has_value());
  exit_code_ = 4;  // its usage error
  output_ = "usage: project ...";
  EXPECT_EQ(tool_->SetProject("/work/fs-1/a", 1).code(), absl::StatusCode::kInternal);
  exit_code_ = ENOENT;  // a failed open returns the errno
  output_ = "lfs: failed to open '/work/fs-1/a'";
  EXPECT_EQ(tool_->SetProject("/work/fs-1/a", 1).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace lustre_csi::driver
