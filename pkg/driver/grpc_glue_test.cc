#include "pkg/driver/grpc_glue.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/server/metrics.h"

namespace lustre_csi::driver {
namespace {

// A call's latency is read from the process's clock, so a test's clock
// decides it.
TEST(CallMetricsTest, LatencyComesFromTheClock) {
  server::MetricsRegistry registry;
  base::FakeClock clock;
  CallMetrics metrics(&registry, &clock);
  grpc::Status s = Serve(metrics, "NodePublishVolume", [&] {
    clock.Advance(absl::Seconds(2));
    return absl::NotFoundError("gone");
  });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  std::string text = registry.Render();
  EXPECT_THAT(text,
              testing::HasSubstr(
                  "lustre_csi_calls_total{method=\"NodePublishVolume\",code=\"NOT_FOUND\"} 1"));
  EXPECT_THAT(text, testing::HasSubstr(
                        "lustre_csi_call_duration_seconds_sum{method=\"NodePublishVolume\"} 2"));
}

// A call answers before its caller's deadline: a tenth of the time left
// earlier, at most 1 s; at once past it; no deadline, no limit.
TEST(ToGrpcStatusTest, KeepsCodeAndMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  grpc::Status s = ToGrpcStatus(absl::NotFoundError("volume path /x does not exist"));
  EXPECT_EQ(s.error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "volume path /x does not exist");
  std::string longest(kMaxStatusMessageBytes, 'm');
  EXPECT_EQ(ToGrpcStatus(absl::InternalError(longest)).error_message(), longest);
}

// Regression: a message echoing a 10 KB request value went out whole, the
// client refused the oversized header and saw RESOURCE_EXHAUSTED (which the
// plugin manager retries) instead of INVALID_ARGUMENT.
TEST(ToGrpcStatusTest, HugeMessageIsCutSoTheCodeReachesTheClient) {
  std::string value(10 * 1024, '\xff');  // percent-encoded on the wire: 3 bytes each
  grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError("fs-name '" + value + "' is invalid"));
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_LE(s.error_message().size(), kMaxStatusMessageBytes + 64);
  EXPECT_EQ(s.error_message().substr(0, 9), "fs-name '");
  EXPECT_NE(s.error_message().find("bytes cut)"), std::string::npos) << s.error_message();
}

}  // namespace
}  // namespace lustre_csi::driver
