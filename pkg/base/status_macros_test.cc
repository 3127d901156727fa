#include "pkg/base/status_macros.h"

#include <string>

#include "gtest/gtest.h"

namespace lustre_csi::base {
namespace {

int calls = 0;

absl::Status Step(bool ok) {
  ++calls;
  return ok ? absl::OkStatus() : absl::NotFoundError("step failed");
}

absl::StatusOr<std::string> Name(bool ok) {
  if (!ok) return absl::InvalidArgumentError("no name");
  return std::string("vol-1");
}

absl::Status TwoSteps(bool first, bool second) {
  RETURN_IF_ERROR(Step(first));
  RETURN_IF_ERROR(Step(second));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Joined(bool first, bool second) {
  ASSIGN_OR_RETURN(std::string a, Name(first));
  ASSIGN_OR_RETURN(std::string b, Name(second));
  return a + "/" + b;
}

absl::StatusOr<int> Assigned(bool ok) {
  std::string existing = "before";
  ASSIGN_OR_RETURN(existing, Name(ok));
  return static_cast<int>(existing.size());
}

TEST(StatusMacrosTest, ReturnIfErrorStopsAtTheFirstError) {
  calls = 0;
  EXPECT_TRUE(TwoSteps(true, true).ok());
  EXPECT_EQ(calls, 2);
  calls = 0;
  absl::Status s = TwoSteps(false, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "step failed");
  EXPECT_EQ(calls, 1);  // the second step never ran
}

TEST(StatusMacrosTest, AssignOrReturnDeclaresOrReturns) {
  EXPECT_EQ(*Joined(true, true), "vol-1/vol-1");
  absl::StatusOr<std::string> failed = Joined(true, false);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(failed.status().message(), "no name");
  EXPECT_EQ(*Assigned(true), 5);
  EXPECT_EQ(Assigned(false).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lustre_csi::base
