#include "pkg/base/fake_clock.h"

#include <algorithm>

namespace lustre_csi::base {

FakeClock::FakeClock(absl::Time start) : now_(start) {}

absl::Time FakeClock::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

bool FakeClock::SleepUntil(absl::Time deadline, CancelToken* cancel) {
  {
    absl::MutexLock lock(&mu_);
    sleeps_.push_back(std::max(deadline - now_, absl::ZeroDuration()));
    if (auto_advance_) {
      if (cancel != nullptr && cancel->cancelled()) return false;
      now_ = std::max(now_, deadline);
      return true;
    }
  }
  // Cancelling touches mu_, which makes the waiter below re-check.
  ScopedCancelCallback wake(cancel, [this] {
    absl::MutexLock lock(&mu_);
    ++wakeups_;
  });
  absl::MutexLock lock(&mu_);
  ++sleepers_;
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return now_ >= deadline || (cancel != nullptr && cancel->cancelled());
  };
  mu_.Await(absl::Condition(&done));
  --sleepers_;
  return now_ >= deadline && !(cancel != nullptr && cancel->cancelled());
}

void FakeClock::Advance(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  now_ += duration;
}

void FakeClock::SetAutoAdvance(bool on) {
  absl::MutexLock lock(&mu_);
  auto_advance_ = on;
}

bool FakeClock::AwaitSleepers(int n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return sleepers_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

int FakeClock::sleepers() {
  absl::MutexLock lock(&mu_);
  return sleepers_;
}

std::vector<absl::Duration> FakeClock::sleeps() {
  absl::MutexLock lock(&mu_);
  return sleeps_;
}

}  // namespace lustre_csi::base
