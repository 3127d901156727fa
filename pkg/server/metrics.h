// A small Prometheus metrics registry: counters, gauges and histograms with
// labels, rendered in the Prometheus text exposition format (version 0.0.4).
//
// The registry owns its metrics; pointers returned by Add* stay valid for the
// registry's lifetime. All methods are thread-safe.
#ifndef LUSTRE_CSI_PKG_SERVER_METRICS_H_
#define LUSTRE_CSI_PKG_SERVER_METRICS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace lustre_csi::server {

using LabelValues = std::vector<std::string>;

class Metric {
 public:
  virtual ~Metric() = default;
  virtual void Render(std::string* out) const = 0;
};

// One number per set of label values: the state of counters and gauges.
class ValuesMetric : public Metric {
 public:
  double Value(const LabelValues& values = {}) const;
  void Render(std::string* out) const override;

 protected:
  // `type`: the exposition format's TYPE ("counter", "gauge").
  ValuesMetric(std::string name, std::string help, std::vector<std::string> labels,
               const char* type);
  // `values` cut or padded to the labels' number.
  LabelValues Fit(const LabelValues& values) const;

  mutable absl::Mutex mu_;
  std::map<LabelValues, double> values_ ABSL_GUARDED_BY(mu_);

 private:
  const std::string name_, help_;
  const std::vector<std::string> labels_;
  const char* const type_;
};

class Counter : public ValuesMetric {
 public:
  Counter(std::string name, std::string help, std::vector<std::string> labels);
  void Increment(const LabelValues& values = {}, double delta = 1);
};

class Gauge : public ValuesMetric {
 public:
  Gauge(std::string name, std::string help, std::vector<std::string> labels);
  void Set(const LabelValues& values, double value);
  // Replaces every series at once (e.g. "plugins by health" recomputed).
  void Reset(std::map<LabelValues, double> series);
};

class Histogram : public Metric {
 public:
  // `bounds` are the upper bounds of the buckets, ascending; +Inf is implied.
  Histogram(std::string name, std::string help, std::vector<std::string> labels,
            std::vector<double> bounds);
  void Observe(const LabelValues& values, double value);
  uint64_t Count(const LabelValues& values) const;
  void Render(std::string* out) const override;

 private:
  struct Series {
    std::vector<uint64_t> buckets;  // not cumulative; one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  const std::string name_, help_;
  const std::vector<std::string> labels_;
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, Series> series_ ABSL_GUARDED_BY(mu_);
};

// Bucket bounds in seconds for CSI call latencies: 100 us to 2 min.
std::vector<double> LatencyBuckets();

class MetricsRegistry {
 public:
  Counter* AddCounter(std::string name, std::string help, std::vector<std::string> labels = {});
  Gauge* AddGauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Histogram* AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                          std::vector<double> bounds);
  // Runs before each Render, to refresh gauges computed on demand.
  void AddCollector(std::function<void()> collector);
  // Appends text that a component renders itself in the exposition format.
  void AddTextSource(std::function<std::string()> source);

  std::string Render() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Metric>> metrics_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void()>> collectors_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<std::string()>> text_sources_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_METRICS_H_
