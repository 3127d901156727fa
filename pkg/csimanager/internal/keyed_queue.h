// KeyedQueue: serialises work per key, first come first served, while
// different keys proceed in parallel.
//
// Enter(key) blocks until every earlier caller for that key has released its
// Turn, so operations on one volume are queued, never rejected, unless the
// caller gives up at a deadline of its own: then its place goes, and those
// behind it move up as if it had come and gone. Bookkeeping for a key
// disappears when nobody holds or waits for it.
//
// Thread-safe. A Turn must not outlive its queue.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_KEYED_QUEUE_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_KEYED_QUEUE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lustre_csi::csimanager {

class KeyedQueue {
 public:
  class Turn {
   public:
    ~Turn();
    Turn(Turn&& other) noexcept;
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    Turn& operator=(Turn&&) = delete;

   private:
    friend class KeyedQueue;
    Turn(KeyedQueue* queue, std::string key) : queue_(queue), key_(std::move(key)) {}
    KeyedQueue* queue_;
    std::string key_;
  };

  KeyedQueue() = default;
  KeyedQueue(const KeyedQueue&) = delete;
  KeyedQueue& operator=(const KeyedQueue&) = delete;

  // Blocks until it is this caller's turn for `key`, or gives up at
  // `deadline` (real time): DEADLINE_EXCEEDED.
  absl::StatusOr<Turn> Enter(absl::string_view key, absl::Time deadline = absl::InfiniteFuture());

  // Callers holding or waiting for `key`.
  int Queued(absl::string_view key);
  // Blocks (real time, a guard for tests) until Queued(key) >= n.
  bool AwaitQueued(absl::string_view key, int n, absl::Duration timeout);

 private:
  struct Entry {
    uint64_t next_ticket = 0;
    uint64_t serving = 0;
    int queued = 0;
    std::set<uint64_t> given_up;  // tickets whose callers left before their turn
  };

  void Leave(const std::string& key);

  absl::Mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_KEYED_QUEUE_H_
