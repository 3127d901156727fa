#include "pkg/volume/left_behind.h"

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace lustre_csi::volume {

uint64_t LeftBehind::Add() {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  running_[id];
  return id;
}

void LeftBehind::End(uint64_t id) {
  std::vector<std::function<void()>> waiting;
  {
    absl::MutexLock lock(&mu_);
    auto it = running_.find(id);
    if (it == running_.end()) return;
    waiting = std::move(it->second);
    running_.erase(it);
  }
  for (std::function<void()>& fn : waiting) fn();
}

void LeftBehind::WhenEnded(uint64_t id, std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    auto it = running_.find(id);
    if (it != running_.end()) {
      it->second.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

int LeftBehind::Running() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(running_.size());
}

LeftBehind& ProcessLeftBehind() {
  static LeftBehind* const registry = new LeftBehind;
  return *registry;
}

absl::Status WithLeftBehind(absl::Status status, uint64_t id) {
  if (!status.ok()) status.SetPayload(kLeftBehindPayloadUrl, absl::Cord(absl::StrCat(id)));
  return status;
}

std::optional<uint64_t> LeftBehindOf(const absl::Status& status) {
  auto payload = status.GetPayload(kLeftBehindPayloadUrl);
  uint64_t id = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &id) || id == 0) {
    return std::nullopt;
  }
  return id;
}

}  // namespace lustre_csi::volume
