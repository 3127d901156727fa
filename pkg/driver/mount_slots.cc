#include "pkg/driver/mount_slots.h"

#include "absl/strings/str_cat.h"

namespace lustre_csi::driver {

absl::Status MountSlots::Acquire() {
  absl::MutexLock lock(&mu_);
  auto free_slot = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return in_use_ < max_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&free_slot), wait_)) {
    return absl::UnavailableError(
        absl::StrCat("all ", max_, " mount slots stayed busy; retry later"));
  }
  ++in_use_;
  return absl::OkStatus();
}

void MountSlots::Release() {
  absl::MutexLock lock(&mu_);
  --in_use_;
}

}  // namespace lustre_csi::driver
