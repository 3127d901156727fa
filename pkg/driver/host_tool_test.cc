#include "pkg/driver/host_tool.h"

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/testing/fake_mount_namespace.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;
using volume::ProcessResult;

ProcessResult Exit(int code, std::string output = "") {
  ProcessResult r;
  r.exit_code = code;
  r.output = std::move(output);
  return r;
}

struct ExitCase {
  int exit_code;
  bool signaled;
  absl::StatusCode code;
  const char* says;
};

TEST(HelperFailureTest, ExitStatusIsTheErrno) {
  for (const ExitCase& c : std::vector<ExitCase>{
           {ENODEV, false, absl::StatusCode::kFailedPrecondition, "exit status 19 (ENODEV"},
           {EPERM, false, absl::StatusCode::kFailedPrecondition, "(EPERM"},
           {ENOENT, false, absl::StatusCode::kNotFound, "(ENOENT"},
           {EINVAL, false, absl::StatusCode::kInvalidArgument, "(EINVAL"},
           {EACCES, false, absl::StatusCode::kPermissionDenied, "(EACCES"},
           {EOPNOTSUPP, false, absl::StatusCode::kFailedPrecondition, "(EOPNOTSUPP"},
           {EDQUOT, false, absl::StatusCode::kResourceExhausted, "(EDQUOT"},
           {ETIMEDOUT, false, absl::StatusCode::kUnavailable, "(ETIMEDOUT"},
           {EIO, false, absl::StatusCode::kUnavailable, "(EIO"},
           {ECONNREFUSED, false, absl::StatusCode::kUnavailable, "(ECONNREFUSED"},
           {127, false, absl::StatusCode::kFailedPrecondition, "could not run"},
           {EEXIST, false, absl::StatusCode::kInternal, "(EEXIST"},
           {200, false, absl::StatusCode::kInternal, "exit status 200"},
           {0, true, absl::StatusCode::kUnavailable, "killed by signal 9"},
       }) {
    ProcessResult r = Exit(c.exit_code, "helper said this");
    if (c.signaled) {
      r.signaled = true;
      r.signal = 9;
    }
    absl::Status s = HelperFailure("mount.lustre x y", r);
    EXPECT_EQ(s.code(), c.code) << c.exit_code << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(c.says)) << s;
    EXPECT_THAT(s.message(), HasSubstr("helper said this")) << s;
    if (!c.signaled && c.exit_code > 0 && c.exit_code < 127) {
      EXPECT_EQ(volume::ErrnoOf(s), c.exit_code) << s;
    }
  }
  absl::Status long_output = HelperFailure("m", Exit(EIO, std::string(100000, 'x')));
  EXPECT_LT(long_output.message().size(), 1200u);
}

TEST(RunHostToolTest, RunsInTheNamespaceWithItsOwnEnvironment) {
  volume::FakeMountNamespace ns(nullptr);
  std::vector<std::string> env_seen;
  ns.AddProgram("/usr/bin/lfs", [&](const std::vector<std::string>& argv) {
    return argv[1] == "fail" ? Exit(EOPNOTSUPP, "lfs: Operation not supported") : Exit(0, "ok");
  });
  absl::StatusOr<ProcessResult> ok = RunHostTool(ns, {"/usr/bin/lfs", "run"}, absl::Seconds(1));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->output, "ok");
  absl::StatusOr<ProcessResult> failed =
      RunHostTool(ns, {"/usr/bin/lfs", "fail", "/x"}, absl::Seconds(1));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(failed.status().message(), HasSubstr("/usr/bin/lfs fail /x in mount namespace"));
  EXPECT_THAT(failed.status().message(), HasSubstr("Operation not supported"));
  // A program that is not there: the namespace's own status.
  EXPECT_FALSE(RunHostTool(ns, {"/usr/bin/none"}, absl::Seconds(1)).ok());
}

}  // namespace
}  // namespace lustre_csi::driver
