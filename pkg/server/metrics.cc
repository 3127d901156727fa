#include "pkg/server/metrics.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lustre_csi::server {
namespace {

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// {a="x",b="y"} with an optional extra label (used for "le").
std::string Labels(const std::vector<std::string>& names, const LabelValues& values,
                   const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    absl::StrAppend(&out, out.empty() ? "" : ",", names[i], "=\"", EscapeLabelValue(values[i]),
                    "\"");
  }
  if (!extra_name.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : ",", extra_name, "=\"", extra_value, "\"");
  }
  return out.empty() ? "" : absl::StrCat("{", out, "}");
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return absl::StrFormat("%.17g", v);
}

void Header(std::string* out, const std::string& name, const std::string& help, const char* type) {
  absl::StrAppend(out, "# HELP ", name, " ", EscapeHelp(help), "\n# TYPE ", name, " ", type, "\n");
}

LabelValues FitLabels(const std::vector<std::string>& labels, const LabelValues& values) {
  LabelValues fitted = values;
  fitted.resize(labels.size());
  return fitted;
}

}  // namespace

ValuesMetric::ValuesMetric(std::string name, std::string help, std::vector<std::string> labels,
                           const char* type)
    : name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)), type_(type) {}

LabelValues ValuesMetric::Fit(const LabelValues& values) const {
  return FitLabels(labels_, values);
}

double ValuesMetric::Value(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(Fit(values));
  return it == values_.end() ? 0 : it->second;
}

void ValuesMetric::Render(std::string* out) const {
  Header(out, name_, help_, type_);
  absl::MutexLock lock(&mu_);
  if (values_.empty() && labels_.empty()) absl::StrAppend(out, name_, " 0\n");
  for (const auto& [values, v] : values_) {
    absl::StrAppend(out, name_, Labels(labels_, values), " ", Number(v), "\n");
  }
}

Counter::Counter(std::string name, std::string help, std::vector<std::string> labels)
    : ValuesMetric(std::move(name), std::move(help), std::move(labels), "counter") {}

void Counter::Increment(const LabelValues& values, double delta) {
  absl::MutexLock lock(&mu_);
  values_[Fit(values)] += delta;
}

Gauge::Gauge(std::string name, std::string help, std::vector<std::string> labels)
    : ValuesMetric(std::move(name), std::move(help), std::move(labels), "gauge") {}

void Gauge::Set(const LabelValues& values, double value) {
  absl::MutexLock lock(&mu_);
  values_[Fit(values)] = value;
}

void Gauge::Reset(std::map<LabelValues, double> series) {
  absl::MutexLock lock(&mu_);
  values_.clear();
  for (auto& [values, v] : series) values_[Fit(values)] = v;
}

Histogram::Histogram(std::string name, std::string help, std::vector<std::string> labels,
                     std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      bounds_(std::move(bounds)) {}

void Histogram::Observe(const LabelValues& values, double value) {
  absl::MutexLock lock(&mu_);
  Series& s = series_[FitLabels(labels_, values)];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size() + 1, 0);
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++s.buckets[i];
  s.sum += value;
  ++s.count;
}

uint64_t Histogram::Count(const LabelValues& values) const {
  absl::MutexLock lock(&mu_);
  auto it = series_.find(FitLabels(labels_, values));
  return it == series_.end() ? 0 : it->second.count;
}

void Histogram::Render(std::string* out) const {
  Header(out, name_, help_, "histogram");
  absl::MutexLock lock(&mu_);
  for (const auto& [values, s] : series_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += s.buckets[i];
      std::string le = i < bounds_.size() ? Number(bounds_[i]) : "+Inf";
      absl::StrAppend(out, name_, "_bucket", Labels(labels_, values, "le", le), " ", cumulative,
                      "\n");
    }
    absl::StrAppend(out, name_, "_sum", Labels(labels_, values), " ", Number(s.sum), "\n");
    absl::StrAppend(out, name_, "_count", Labels(labels_, values), " ", s.count, "\n");
  }
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    120};
}

Counter* MetricsRegistry::AddCounter(std::string name, std::string help,
                                     std::vector<std::string> labels) {
  auto metric = std::make_unique<Counter>(std::move(name), std::move(help), std::move(labels));
  Counter* raw = metric.get();
  absl::MutexLock lock(&mu_);
  metrics_.push_back(std::move(metric));
  return raw;
}

Gauge* MetricsRegistry::AddGauge(std::string name, std::string help,
                                 std::vector<std::string> labels) {
  auto metric = std::make_unique<Gauge>(std::move(name), std::move(help), std::move(labels));
  Gauge* raw = metric.get();
  absl::MutexLock lock(&mu_);
  metrics_.push_back(std::move(metric));
  return raw;
}

Histogram* MetricsRegistry::AddHistogram(std::string name, std::string help,
                                         std::vector<std::string> labels,
                                         std::vector<double> bounds) {
  auto metric = std::make_unique<Histogram>(std::move(name), std::move(help), std::move(labels),
                                            std::move(bounds));
  Histogram* raw = metric.get();
  absl::MutexLock lock(&mu_);
  metrics_.push_back(std::move(metric));
  return raw;
}

void MetricsRegistry::AddCollector(std::function<void()> collector) {
  absl::MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

void MetricsRegistry::AddTextSource(std::function<std::string()> source) {
  absl::MutexLock lock(&mu_);
  text_sources_.push_back(std::move(source));
}

std::string MetricsRegistry::Render() const {
  std::vector<std::function<void()>> collectors;
  std::vector<std::function<std::string()>> sources;
  {
    absl::MutexLock lock(&mu_);
    collectors = collectors_;
    sources = text_sources_;
  }
  for (const auto& collect : collectors) collect();
  std::string out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& metric : metrics_) metric->Render(&out);
  }
  for (const auto& source : sources) out += source();
  return out;
}

}  // namespace lustre_csi::server
