#include "pkg/volume/errno_status.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace lustre_csi::volume {
namespace {

struct CodeCase {
  int err;
  absl::StatusCode code;
  const char* text;  // part of strerror
};

class ErrnoErrorTest : public testing::TestWithParam<CodeCase> {};

TEST_P(ErrnoErrorTest, CodeMessageAndPayload) {
  const CodeCase& c = GetParam();
  absl::Status s = ErrnoError(c.err, "statx /a b");
  EXPECT_EQ(s.code(), c.code);
  EXPECT_NE(s.message().find("statx /a b: "), std::string::npos) << s;
  EXPECT_NE(s.message().find(c.text), std::string::npos) << s;
  ASSERT_TRUE(ErrnoOf(s).has_value());
  EXPECT_EQ(*ErrnoOf(s), c.err);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ErrnoErrorTest,
    testing::Values(CodeCase{ENOENT, absl::StatusCode::kNotFound, "No such file"},
                    CodeCase{EEXIST, absl::StatusCode::kAlreadyExists, "File exists"},
                    CodeCase{EACCES, absl::StatusCode::kPermissionDenied, "Permission denied"},
                    CodeCase{EPERM, absl::StatusCode::kPermissionDenied, "not permitted"},
                    CodeCase{EINVAL, absl::StatusCode::kInvalidArgument, "Invalid argument"},
                    CodeCase{ENAMETOOLONG, absl::StatusCode::kInvalidArgument, "too long"},
                    CodeCase{ETIMEDOUT, absl::StatusCode::kDeadlineExceeded, "timed out"},
                    CodeCase{EBUSY, absl::StatusCode::kFailedPrecondition, "busy"},
                    CodeCase{ENOTCONN, absl::StatusCode::kUnavailable, "not connected"},
                    CodeCase{ESTALE, absl::StatusCode::kUnavailable, "Stale"},
                    CodeCase{EIO, absl::StatusCode::kUnavailable, "Input/output"},
                    CodeCase{EHOSTDOWN, absl::StatusCode::kUnavailable, "Host is down"},
                    CodeCase{EAGAIN, absl::StatusCode::kUnavailable, "temporarily unavailable"},
                    CodeCase{ENODEV, absl::StatusCode::kInternal, "No such device"},
                    CodeCase{EROFS, absl::StatusCode::kInternal, "Read-only"},
                    CodeCase{ENOTEMPTY, absl::StatusCode::kInternal, "not empty"}));

TEST(ErrnoErrorTest, NamesTheErrno) {
  EXPECT_NE(ErrnoError(ENOTCONN, "x").message().find("(ENOTCONN)"), std::string::npos);
}

TEST(ErrnoErrorTest, UnknownErrnoStillWorks) {
  absl::Status s = ErrnoError(4000, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ErrnoOf(s), 4000);
}

TEST(ErrnoErrorTest, ChosenCode) {
  absl::Status s = ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, EXDEV, "openat2");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrnoOf(s), EXDEV);
}

TEST(ErrnoOfTest, NoErrno) {
  EXPECT_EQ(ErrnoOf(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(ErrnoOf(absl::InternalError("x")), std::nullopt);
  absl::Status bad = absl::InternalError("x");
  bad.SetPayload(kErrnoPayloadUrl, absl::Cord("not a number"));
  EXPECT_EQ(ErrnoOf(bad), std::nullopt);
}

TEST(AnnotateTest, KeepsCodeAndErrno) {
  absl::Status s = Annotate(ErrnoError(EBUSY, "umount /x"), "clean up");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrnoOf(s), EBUSY);
  EXPECT_EQ(s.message().substr(0, 20), "clean up: umount /x:");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "x").ok());
}

}  // namespace
}  // namespace lustre_csi::volume
