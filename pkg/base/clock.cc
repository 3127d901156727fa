#include "pkg/base/clock.h"

#include "absl/time/clock.h"

namespace lustre_csi::base {
namespace {

class SystemClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }

  bool SleepUntil(absl::Time deadline, CancelToken* cancel) override {
    if (cancel == nullptr) {
      absl::SleepFor(deadline - absl::Now());
      return true;
    }
    return !cancel->WaitUntil(deadline);
  }
};

}  // namespace

Clock* RealClock() {
  static Clock* clock = new SystemClock();
  return clock;
}

}  // namespace lustre_csi::base
