#include "pkg/csimanager/internal/keyed_queue.h"

#include <utility>

namespace lustre_csi::csimanager {

KeyedQueue::Turn::~Turn() {
  if (queue_ != nullptr) queue_->Leave(key_);
}

KeyedQueue::Turn::Turn(Turn&& other) noexcept
    : queue_(std::exchange(other.queue_, nullptr)), key_(std::move(other.key_)) {}

KeyedQueue::Turn KeyedQueue::Enter(absl::string_view key) {
  absl::MutexLock lock(&mu_);
  Entry& entry = entries_[std::string(key)];
  uint64_t ticket = entry.next_ticket++;
  ++entry.queued;
  auto my_turn = [&entry, ticket]() { return entry.serving == ticket; };
  mu_.Await(absl::Condition(&my_turn));
  return Turn(this, std::string(key));
}

void KeyedQueue::Leave(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  ++it->second.serving;
  if (--it->second.queued == 0) entries_.erase(it);
}

int KeyedQueue::Queued(absl::string_view key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.queued;
}

bool KeyedQueue::AwaitQueued(absl::string_view key, int n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = entries_.find(key);
    return it != entries_.end() && it->second.queued >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

}  // namespace lustre_csi::csimanager
