#include "pkg/driver/readiness.h"

#include <glog/logging.h>

namespace lustre_csi::driver {

ReadinessMonitor::ReadinessMonitor(std::function<Readiness()> check, absl::Duration interval,
                                   server::MetricsRegistry* metrics)
    : check_(std::move(check)),
      interval_(interval),
      current_(absl::UnavailableError("readiness not checked yet")) {
  if (metrics != nullptr) {
    ready_gauge_ = metrics->AddGauge("lustre_csi_ready",
                                     "1 when this plugin can mount file systems, 0 when not");
    reason_gauge_ = metrics->AddGauge("lustre_csi_not_ready",
                                      "1 for the reason this plugin cannot mount now", {"reason"});
    ready_gauge_->Set({}, 0);
  }
}

ReadinessMonitor::~ReadinessMonitor() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ReadinessMonitor::Start() {
  Refresh();
  thread_ = std::thread([this] { Loop(); });
}

absl::Status ReadinessMonitor::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

absl::Status ReadinessMonitor::Refresh() {
  absl::MutexLock serial(&check_mu_);
  Readiness r = check_();
  bool changed;
  {
    absl::MutexLock lock(&mu_);
    changed =
        !checked_ || current_.ok() != r.status.ok() || current_.message() != r.status.message();
    checked_ = true;
    current_ = r.status;
  }
  if (changed) {
    if (r.status.ok()) {
      LOG(INFO) << "ready: file systems can be mounted";
    } else {
      LOG(WARNING) << "not ready (" << r.reason << "): " << r.status.message();
    }
  }
  if (ready_gauge_ != nullptr) {
    ready_gauge_->Set({}, r.status.ok() ? 1 : 0);
    std::map<server::LabelValues, double> reasons;
    if (!r.status.ok()) reasons[{r.reason.empty() ? "unknown" : r.reason}] = 1;
    reason_gauge_->Reset(std::move(reasons));
  }
  return r.status;
}

absl::Status ReadinessMonitor::EnsureReady() {
  absl::Status s = Current();
  if (s.ok()) return s;
  return Refresh();
}

void ReadinessMonitor::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopped), interval_)) return;
    }
    Refresh();
  }
}

}  // namespace lustre_csi::driver
