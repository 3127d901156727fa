#include "pkg/driver/mount_slots.h"

#include "absl/strings/str_cat.h"

namespace lustre_csi::driver {

MountSlots::MountSlots(int max, absl::Duration wait, absl::Duration stalled_after,
                       base::Clock* clock)
    : max_(max),
      wait_(wait),
      stalled_after_(stalled_after),
      clock_(clock != nullptr ? clock : base::RealClock()) {}

MountSlots::Slot::~Slot() {
  if (slots_ != nullptr) slots_->Release(id_);
}

absl::Status MountSlots::StalledLocked(const std::string& fs) {
  const absl::Time now = clock_->Now();
  const Held* oldest = nullptr;
  for (const auto& [id, held] : held_) {
    if (held.fs == fs && (oldest == nullptr || held.since < oldest->since)) oldest = &held;
  }
  if (oldest == nullptr || now - oldest->since <= stalled_after_) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "the file system ", fs, " has not answered the mount at ", oldest->target, " since ",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", oldest->since, absl::UTCTimeZone()),
      "; not mounting it again until that returns (retry later)"));
}

absl::StatusOr<MountSlots::Slot> MountSlots::Acquire(const std::string& fs,
                                                     const std::string& target) {
  absl::MutexLock lock(&mu_);
  if (absl::Status stalled = StalledLocked(fs); !stalled.ok()) return stalled;
  auto free_slot = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(held_.size()) < max_;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&free_slot), wait_)) {
    return absl::UnavailableError(
        absl::StrCat("all ", max_, " mount slots stayed busy; retry later"));
  }
  // It may have stalled while this waited for a slot.
  if (absl::Status stalled = StalledLocked(fs); !stalled.ok()) return stalled;
  const uint64_t id = next_id_++;
  held_.emplace(id, Held{fs, target, clock_->Now()});
  return Slot(this, id);
}

void MountSlots::Release(uint64_t id) {
  absl::MutexLock lock(&mu_);
  held_.erase(id);
}

}  // namespace lustre_csi::driver
