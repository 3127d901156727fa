#include "pkg/driver/mount_slots.h"

#include <glog/logging.h>

#include <optional>

#include "absl/strings/str_cat.h"

namespace lustre_csi::driver {

MountSlots::MountSlots(int max, absl::Duration wait, absl::Duration stalled_after,
                       base::Clock* clock, volume::LeftBehind* left_behind)
    : max_(max),
      wait_(wait),
      stalled_after_(stalled_after),
      clock_(clock != nullptr ? clock : base::RealClock()),
      left_behind_(left_behind != nullptr ? left_behind : &volume::ProcessLeftBehind()) {}

MountSlots::Slot::~Slot() {
  if (slots_ != nullptr) slots_->Release(id_);
}

namespace {

absl::Status NotAnswered(const std::string& fs, const std::string& target, absl::Time since,
                         bool given_up) {
  return absl::UnavailableError(absl::StrCat(
      "the file system ", fs, " has not answered the mount at ", target, " since ",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", since, absl::UTCTimeZone()),
      given_up ? " (the mount gave up; what it left still waits for the file system)" : "",
      "; not mounting it again until that returns (retry later)"));
}

}  // namespace

absl::Status MountSlots::StalledLocked(const std::string& fs) {
  {
    absl::MutexLock lock(&left_->mu);
    for (const auto& [id, held] : left_->held) {
      if (held.fs == fs) return NotAnswered(fs, held.target, held.since, /*given_up=*/true);
    }
  }
  const absl::Time now = clock_->Now();
  const Held* oldest = nullptr;
  for (const auto& [id, held] : held_) {
    if (held.fs == fs && (oldest == nullptr || held.since < oldest->since)) oldest = &held;
  }
  if (oldest == nullptr || now - oldest->since <= stalled_after_) return absl::OkStatus();
  return NotAnswered(fs, oldest->target, oldest->since, /*given_up=*/false);
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

void MountSlots::HoldFileSystemUntilEnded(Slot slot, uint64_t left_behind) {
  std::optional<Held> held;
  {
    absl::MutexLock lock(&mu_);
    auto it = held_.find(slot.id_);
    if (it != held_.end()) held = it->second;
  }
  if (!held.has_value()) return;
  {
    // Held up before the slot is given back (when `slot` goes).
    absl::MutexLock lock(&left_->mu);
    left_->held.emplace(left_behind, *held);
  }
  LOG(WARNING) << "the mount of " << held->fs << " at " << held->target
               << " gave up but left work that still waits for the file system; no mount of it "
                  "until that has ended";
  left_behind_->WhenEnded(left_behind, [left = left_, left_behind] {
    absl::MutexLock lock(&left->mu);
    auto it = left->held.find(left_behind);
    if (it == left->held.end()) return;
    LOG(INFO) << "what the mount of " << it->second.fs << " at " << it->second.target
              << " left has ended; the file system is mounted again";
    left->held.erase(it);
  });
}

absl::Status MountSlots::Run(const std::string& fs, const std::string& target,
                             const std::function<absl::Status()>& work) {
  absl::StatusOr<Slot> slot = Acquire(fs, target);
  if (!slot.ok()) return slot.status();
  absl::Status status = work();
  if (std::optional<uint64_t> left = volume::LeftBehindOf(status); left.has_value()) {
    HoldFileSystemUntilEnded(std::move(*slot), *left);
  }
  return status;
}

void MountSlots::Release(uint64_t id) {
  absl::MutexLock lock(&mu_);
  held_.erase(id);
}

}  // namespace lustre_csi::driver
