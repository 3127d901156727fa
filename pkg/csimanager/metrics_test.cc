#include "pkg/csimanager/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, RecordsByOperationAndResult) {
  OperationMetrics metrics;
  metrics.Record("mount", absl::StatusCode::kOk, absl::Milliseconds(30));
  metrics.Record("mount", absl::StatusCode::kOk, absl::Seconds(3));
  metrics.Record("mount", absl::StatusCode::kDeadlineExceeded, absl::Minutes(6));
  metrics.Record("unmount", absl::StatusCode::kUnavailable, absl::Milliseconds(1));
  ManagerStats stats;
  metrics.Snapshot(&stats);
  EXPECT_EQ((stats.operations[{"mount", "ok"}]), 2);
  EXPECT_EQ((stats.operations[{"mount", "deadline_exceeded"}]), 1);
  EXPECT_EQ((stats.operations[{"unmount", "unavailable"}]), 1);
  const LatencyHistogram& mount = stats.latency["mount"];
  EXPECT_EQ(mount.count, 3);
  EXPECT_DOUBLE_EQ(mount.sum_seconds, 0.03 + 3 + 360);
  // Buckets are cumulative: <=0.05 holds one, <=5 holds two, <=600 all three.
  EXPECT_EQ(mount.buckets[1], 1);
  EXPECT_EQ(mount.buckets[6], 2);
  EXPECT_EQ(mount.buckets.back(), 3);
}

TEST(MetricsTest, PrometheusText) {
  OperationMetrics metrics;
  metrics.Record("mount", absl::StatusCode::kOk, absl::Seconds(1));
  ManagerStats stats;
  metrics.Snapshot(&stats);
  stats.plugins_healthy = 2;
  stats.plugins_unhealthy = 1;
  stats.claims["mounted"] = 4;
  std::string text = FormatPrometheus(stats);
  EXPECT_THAT(text, HasSubstr("lustre_csi_plugin_manager_plugins{health=\"healthy\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("lustre_csi_plugin_manager_plugins{health=\"unhealthy\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("lustre_csi_plugin_manager_claims{state=\"mounted\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("lustre_csi_plugin_manager_claims{state=\"mounting\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("lustre_csi_plugin_manager_operations_total{operation=\"mount\","
                              "result=\"ok\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("lustre_csi_plugin_manager_operation_duration_seconds_bucket{"
                              "operation=\"mount\",le=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("lustre_csi_plugin_manager_operation_duration_seconds_bucket{"
                              "operation=\"mount\",le=\"0.5\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("_count{operation=\"mount\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE lustre_csi_plugin_manager_operations_total counter\n"));
}

}  // namespace
}  // namespace lustre_csi::csimanager
