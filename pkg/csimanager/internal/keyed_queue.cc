#include "pkg/csimanager/internal/keyed_queue.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace lustre_csi::csimanager {

KeyedQueue::Turn::~Turn() {
  if (queue_ != nullptr) queue_->Leave(key_);
}

KeyedQueue::Turn::Turn(Turn&& other) noexcept
    : queue_(std::exchange(other.queue_, nullptr)), key_(std::move(other.key_)) {}

absl::StatusOr<KeyedQueue::Turn> KeyedQueue::Enter(absl::string_view key, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  Entry& entry = entries_[std::string(key)];
  uint64_t ticket = entry.next_ticket++;
  ++entry.queued;
  auto my_turn = [&entry, ticket]() { return entry.serving == ticket; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&my_turn), deadline)) {
    // Someone ahead still holds the key (so the entry stays): the ticket is
    // skipped when the line reaches it.
    entry.given_up.insert(ticket);
    --entry.queued;
    return absl::DeadlineExceededError(absl::StrCat(
        "an earlier operation on ", key, " is still in progress; gave up waiting for it"));
  }
  return Turn(this, std::string(key));
}

void KeyedQueue::Leave(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  Entry& entry = it->second;
  ++entry.serving;
  while (entry.given_up.erase(entry.serving) > 0) ++entry.serving;
  if (--entry.queued == 0) entries_.erase(it);
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
