#include "pkg/csimanager/metrics.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lustre_csi::csimanager {
namespace {

constexpr char kPrefix[] = "lustre_csi_plugin_manager_";

std::string Label(absl::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double>* buckets =
      new std::vector<double>{0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
  return *buckets;
}

std::string ResultName(absl::StatusCode code) {
  return absl::AsciiStrToLower(absl::StatusCodeToString(code));
}

void OperationMetrics::Record(absl::string_view operation, absl::StatusCode code,
                              absl::Duration latency) {
  absl::MutexLock lock(&mu_);
  ++operations_[{std::string(operation), ResultName(code)}];
  LatencyHistogram& histogram = latency_[std::string(operation)];
  const std::vector<double>& bounds = LatencyBuckets();
  if (histogram.buckets.empty()) histogram.buckets.assign(bounds.size(), 0);
  double seconds = absl::ToDoubleSeconds(latency);
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (seconds <= bounds[i]) ++histogram.buckets[i];
  }
  ++histogram.count;
  histogram.sum_seconds += seconds;
}

void OperationMetrics::Snapshot(ManagerStats* stats) const {
  absl::MutexLock lock(&mu_);
  stats->operations = operations_;
  stats->latency = latency_;
}

std::string FormatPrometheus(const ManagerStats& stats) {
  std::string out;
  absl::StrAppend(&out, "# HELP ", kPrefix, "plugins Active plugin instances by health.\n",
                  "# TYPE ", kPrefix, "plugins gauge\n", kPrefix, "plugins{health=\"healthy\"} ",
                  stats.plugins_healthy, "\n", kPrefix, "plugins{health=\"unhealthy\"} ",
                  stats.plugins_unhealthy, "\n");
  absl::StrAppend(&out, "# HELP ", kPrefix, "claims Volume claims by state.\n", "# TYPE ", kPrefix,
                  "claims gauge\n");
  for (const char* state : {"mounting", "mounted", "unpublished"}) {
    auto it = stats.claims.find(state);
    absl::StrAppend(&out, kPrefix, "claims{state=\"", state, "\"} ",
                    it == stats.claims.end() ? 0 : it->second, "\n");
  }
  absl::StrAppend(&out, "# HELP ", kPrefix,
                  "operations_total Volume operations by operation and result.\n", "# TYPE ",
                  kPrefix, "operations_total counter\n");
  for (const auto& [key, count] : stats.operations) {
    absl::StrAppend(&out, kPrefix, "operations_total{operation=\"", Label(key.first),
                    "\",result=\"", Label(key.second), "\"} ", count, "\n");
  }
  absl::StrAppend(&out, "# HELP ", kPrefix,
                  "operation_duration_seconds Latency of volume operations.\n", "# TYPE ", kPrefix,
                  "operation_duration_seconds histogram\n");
  const std::vector<double>& bounds = LatencyBuckets();
  for (const auto& [operation, histogram] : stats.latency) {
    std::string name = absl::StrCat(kPrefix, "operation_duration_seconds");
    std::string label = absl::StrCat("operation=\"", Label(operation), "\"");
    for (size_t i = 0; i < bounds.size() && i < histogram.buckets.size(); ++i) {
      absl::StrAppend(&out, name, "_bucket{", label, ",le=\"", absl::StrFormat("%g", bounds[i]),
                      "\"} ", histogram.buckets[i], "\n");
    }
    absl::StrAppend(&out, name, "_bucket{", label, ",le=\"+Inf\"} ", histogram.count, "\n");
    absl::StrAppend(&out, name, "_sum{", label, "} ", absl::StrFormat("%g", histogram.sum_seconds),
                    "\n");
    absl::StrAppend(&out, name, "_count{", label, "} ", histogram.count, "\n");
  }
  return out;
}

}  // namespace lustre_csi::csimanager
