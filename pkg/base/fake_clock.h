// FakeClock: a Clock whose time moves only when a test says so.
//
// Sleepers block until Advance() moves time past their deadline or their
// CancelToken is cancelled. With auto-advance on, a sleep returns at once and
// moves time to its deadline, which makes retry and backoff tests
// synchronous. Every requested sleep duration is recorded. Thread-safe.
#ifndef LUSTRE_CSI_PKG_BASE_FAKE_CLOCK_H_
#define LUSTRE_CSI_PKG_BASE_FAKE_CLOCK_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"

namespace lustre_csi::base {

class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000));

  absl::Time Now() override;
  bool SleepUntil(absl::Time deadline, CancelToken* cancel) override;

  void Advance(absl::Duration duration);
  void SetAutoAdvance(bool on);

  // Blocks until at least `n` threads are asleep in SleepUntil, or the real
  // `timeout` (a guard against a hung test, never a measurement) passes.
  // Returns whether there were.
  bool AwaitSleepers(int n, absl::Duration timeout = absl::Seconds(30));
  int sleepers();

  // Durations asked for by every SleepUntil so far, in order.
  std::vector<absl::Duration> sleeps();

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  bool auto_advance_ ABSL_GUARDED_BY(mu_) = false;
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
  int wakeups_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<absl::Duration> sleeps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_FAKE_CLOCK_H_
