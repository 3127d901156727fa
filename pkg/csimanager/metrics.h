// Counters the plugin manager keeps for /metrics: operations by result and
// latency, plugins by health, claims by state.
//
// OperationMetrics records; ManagerStats is a plain snapshot the daemon's
// HTTP layer renders, with FormatPrometheus() as a ready-made text
// exposition. Thread-safe.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_METRICS_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lustre_csi::csimanager {

// Upper bounds, in seconds, of the latency histogram buckets (+Inf is
// implied).
const std::vector<double>& LatencyBuckets();

struct LatencyHistogram {
  std::vector<int64_t> buckets;  // cumulative counts, one per LatencyBuckets() bound
  int64_t count = 0;
  double sum_seconds = 0;
};

struct ManagerStats {
  int64_t plugins_healthy = 0;
  int64_t plugins_unhealthy = 0;
  // (operation, result) -> count; result is the status code in lower case,
  // e.g. ("mount", "ok"), ("unmount", "unavailable").
  std::map<std::pair<std::string, std::string>, int64_t> operations;
  // operation -> latency of all its calls.
  std::map<std::string, LatencyHistogram> latency;
  // claim state name -> count.
  std::map<std::string, int64_t> claims;
};

class OperationMetrics {
 public:
  void Record(absl::string_view operation, absl::StatusCode code, absl::Duration latency);
  // Fills `stats->operations` and `stats->latency`.
  void Snapshot(ManagerStats* stats) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, int64_t> operations_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, LatencyHistogram> latency_ ABSL_GUARDED_BY(mu_);
};

// Lower-case status code name, e.g. "ok", "deadline_exceeded".
std::string ResultName(absl::StatusCode code);

// Prometheus text exposition (version 0.0.4) of `stats`, metric names
// prefixed with "lustre_csi_plugin_manager_".
std::string FormatPrometheus(const ManagerStats& stats);

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_METRICS_H_
