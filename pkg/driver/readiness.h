// ReadinessMonitor: a cached answer to "can this node mount now?".
//
// Probe and /readyz must answer at once, while the real check (running the
// mount helper in the host's namespace, reading the host's module list) takes
// a few processes. The monitor runs the check when started, then every
// `interval` on its own thread, and on demand (Refresh); Current() returns the
// last answer without blocking. Every change is logged (the reason when not
// ready) and shown as metrics: lustre_csi_ready (1 or 0) and
// lustre_csi_not_ready{reason} (1 for the current reason). Thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_READINESS_H_
#define LUSTRE_CSI_PKG_DRIVER_READINESS_H_

#include <functional>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/driver/modes/mode.h"
#include "pkg/server/metrics.h"

namespace lustre_csi::driver {

class ReadinessMonitor {
 public:
  // `metrics` is borrowed and may be null.
  ReadinessMonitor(std::function<Readiness()> check, absl::Duration interval,
                   server::MetricsRegistry* metrics);
  ~ReadinessMonitor();  // stops the thread

  // Checks once, then every `interval` until destruction.
  void Start();

  // The last answer; UNAVAILABLE before the first check. Never blocks.
  absl::Status Current() const;

  // Checks now and returns the new answer.
  absl::Status Refresh();

  // What a mount should consult: Current(), and when that is not OK a fresh
  // check, so a client installed since the last check is used at once.
  absl::Status EnsureReady();

 private:
  void Loop();

  const std::function<Readiness()> check_;
  const absl::Duration interval_;
  server::Gauge* ready_gauge_ = nullptr;
  server::Gauge* reason_gauge_ = nullptr;

  absl::Mutex check_mu_;  // one check at a time
  mutable absl::Mutex mu_;
  absl::Status current_ ABSL_GUARDED_BY(mu_);
  bool checked_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_READINESS_H_
