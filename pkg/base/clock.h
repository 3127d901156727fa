// Clock: the one source of time and sleeping (the plugin manager uses it), so
// fingerprint periods, retry backoff and timestamps can be driven by a fake
// clock in tests (fake_clock.h) and no test waits for real time to pass.
//
// gRPC call deadlines are the exception: they are real time by nature and are
// set from durations, never from Clock::Now().
//
// Implementations are thread-safe. RealClock() lives for the whole process.
#ifndef LUSTRE_CSI_PKG_BASE_CLOCK_H_
#define LUSTRE_CSI_PKG_BASE_CLOCK_H_

#include "absl/time/time.h"
#include "pkg/base/cancel.h"

namespace lustre_csi::base {

class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() = 0;

  // Blocks until Now() reaches `deadline` or `cancel` (may be null) is
  // cancelled. Returns true when the deadline was reached, false when
  // cancelled (also when it was cancelled before the call).
  virtual bool SleepUntil(absl::Time deadline, CancelToken* cancel) = 0;

  bool SleepFor(absl::Duration duration, CancelToken* cancel) {
    return SleepUntil(Now() + duration, cancel);
  }
};

// The system clock. Not owned by the caller.
Clock* RealClock();

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_CLOCK_H_
