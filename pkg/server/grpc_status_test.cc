#include "pkg/server/grpc_status.h"

#include <string>

#include "gtest/gtest.h"

namespace lustre_csi::server {
namespace {

TEST(GrpcStatusTest, CodesAndMessagesRoundTrip) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  grpc::Status g = ToGrpcStatus(absl::FailedPreconditionError("fix it"));
  EXPECT_EQ(g.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_EQ(g.error_message(), "fix it");
  absl::Status a = FromGrpcStatus(grpc::Status(grpc::UNAVAILABLE, "gone"), "NodePublishVolume");
  EXPECT_EQ(a.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(a.message(), "NodePublishVolume: gone");
}

// Regression: a message echoing a 10 KB id went out whole, the client refused
// the oversized header and saw RESOURCE_EXHAUSTED instead of INVALID_ARGUMENT.
TEST(GrpcStatusTest, HugeMessageIsCutSoTheCodeReachesTheClient) {
  std::string id(10 * 1024, '\x01');  // percent-encoded on the wire: 3 bytes each
  grpc::Status g = ToGrpcStatus(absl::InvalidArgumentError("invalid plugin name \"" + id + "\""));
  EXPECT_EQ(g.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_LE(g.error_message().size(), kMaxStatusMessageBytes + 64);
  EXPECT_EQ(g.error_message().substr(0, 20), "invalid plugin name ");
  EXPECT_NE(g.error_message().find("bytes cut)"), std::string::npos);
  std::string longest(kMaxStatusMessageBytes, 'm');
  EXPECT_EQ(ToGrpcStatus(absl::InternalError(longest)).error_message(), longest);
}

TEST(GrpcStatusTest, OneSpellingOfCodes) {
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kOk), "OK");
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kInvalidArgument), "INVALID_ARGUMENT");
  EXPECT_EQ(StatusCodeName(grpc::DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_EQ(StatusCodeName(grpc::UNAUTHENTICATED), "UNAUTHENTICATED");
}

}  // namespace
}  // namespace lustre_csi::server
