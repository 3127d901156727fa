#include "pkg/base/wait_until.h"

#include "absl/time/clock.h"

namespace lustre_csi::base {

bool WaitUntil(const std::function<bool()>& done, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

}  // namespace lustre_csi::base
