#include "pkg/server/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lustre_csi::server {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, CounterWithLabelsRendersSortedSeries) {
  MetricsRegistry registry;
  Counter* calls = registry.AddCounter("csi_calls_total", "CSI calls.", {"method", "code"});
  calls->Increment({"Probe", "OK"});
  calls->Increment({"Probe", "OK"});
  calls->Increment({"NodePublishVolume", "INVALID_ARGUMENT"});
  EXPECT_EQ(calls->Value({"Probe", "OK"}), 2);
  EXPECT_EQ(registry.Render(),
            "# HELP csi_calls_total CSI calls.\n"
            "# TYPE csi_calls_total counter\n"
            "csi_calls_total{method=\"NodePublishVolume\",code=\"INVALID_ARGUMENT\"} 1\n"
            "csi_calls_total{method=\"Probe\",code=\"OK\"} 2\n");
}

TEST(MetricsTest, UnlabelledMetricsRenderZeroBeforeFirstUse) {
  MetricsRegistry registry;
  registry.AddGauge("claims", "Claims held.");
  EXPECT_THAT(registry.Render(), HasSubstr("\nclaims 0\n"));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  MetricsRegistry registry;
  Gauge* g = registry.AddGauge("g", "help with \\ and\nnewline", {"l"});
  g->Set({"a\"b\\c\nd"}, 1.5);
  EXPECT_EQ(registry.Render(),
            "# HELP g help with \\\\ and\\nnewline\n"
            "# TYPE g gauge\n"
            "g{l=\"a\\\"b\\\\c\\nd\"} 1.5\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  MetricsRegistry registry;
  Histogram* h = registry.AddHistogram("lat_seconds", "Latency.", {"op"}, {0.1, 1});
  h->Observe({"mount"}, 0.05);
  h->Observe({"mount"}, 0.5);
  h->Observe({"mount"}, 0.5);
  h->Observe({"mount"}, 5);
  EXPECT_EQ(h->Count({"mount"}), 4u);
  EXPECT_EQ(registry.Render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{op=\"mount\",le=\"0.10000000000000001\"} 1\n"
            "lat_seconds_bucket{op=\"mount\",le=\"1\"} 3\n"
            "lat_seconds_bucket{op=\"mount\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{op=\"mount\"} 6.0499999999999998\n"
            "lat_seconds_count{op=\"mount\"} 4\n");
}

TEST(MetricsTest, CollectorsRunBeforeRender) {
  MetricsRegistry registry;
  Gauge* g = registry.AddGauge("plugins", "Plugins by health.", {"healthy"});
  int runs = 0;
  registry.AddCollector([&] {
    ++runs;
    g->Reset({{{"true"}, 2}, {{"false"}, 1}});
  });
  std::string text = registry.Render();
  EXPECT_EQ(runs, 1);
  EXPECT_THAT(text, HasSubstr("plugins{healthy=\"true\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("plugins{healthy=\"false\"} 1\n"));
}

TEST(MetricsTest, TextSourcesAreAppended) {
  MetricsRegistry registry;
  registry.AddCounter("a_total", "A.")->Increment();
  registry.AddTextSource([] { return std::string("# TYPE b gauge\nb 2\n"); });
  EXPECT_EQ(registry.Render(),
            "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n# TYPE b gauge\nb 2\n");
}

}  // namespace
}  // namespace lustre_csi::server
