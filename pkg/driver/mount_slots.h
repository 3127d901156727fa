// Bounds the mounts in flight on a node (--max-concurrent-mounts), and the
// ones held up by a file system that does not answer.
//
// A mount waits up to `wait` for one of `max` slots, and fails UNAVAILABLE
// after that. A slot is taken for one file system (the MGS and fs-name of
// the volume: "<mgs>:/<fs>"): once a mount of a file system has held its
// slot for longer than `stalled_after` (its servers do not answer), another
// mount of that file system answers UNAVAILABLE at once instead of taking a
// slot (and a thread, a task) of its own behind it; other file systems are
// not affected. A mount that gave up and left work behind (a mount helper
// killed at its timeout that still waits for the servers) gives back its
// slot, but its file system stays held up until that work has ended
// (HoldFileSystemUntilEnded), so retries start no more of it. NodeLogic owns one and hands it to
// the mount mode with each publish (PublishTarget::slots); the mode holds a slot only while it
// mounts (the sub-dir made, the bind, the helper's mount), not while it
// applies fsGroup, which may rightly take long. Thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_MOUNT_SLOTS_H_
#define LUSTRE_CSI_PKG_DRIVER_MOUNT_SLOTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"
#include "pkg/volume/left_behind.h"

namespace lustre_csi::driver {

class MountSlots {
 public:
  // `clock` (borrowed; null: the real one) tells how long a slot is held;
  // `left_behind` (borrowed; null: volume::ProcessLeftBehind()) when work a
  // mount left behind has ended.
  MountSlots(int max, absl::Duration wait, absl::Duration stalled_after = absl::InfiniteDuration(),
             base::Clock* clock = nullptr, volume::LeftBehind* left_behind = nullptr);

  // A slot taken: given back when destroyed.
  class Slot {
   public:
    Slot(Slot&& other) noexcept : slots_(other.slots_), id_(other.id_) { other.slots_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    ~Slot();

   private:
    friend class MountSlots;
    Slot(MountSlots* slots, uint64_t id) : slots_(slots), id_(id) {}
    MountSlots* slots_;
    uint64_t id_;
  };

  // Takes a slot for a mount of file system `fs` at `target`, waiting for
  // one as long as `wait`; UNAVAILABLE at once where a mount of `fs` has
  // held its slot longer than `stalled_after`.
  absl::StatusOr<Slot> Acquire(const std::string& fs, const std::string& target);

  // The mount `slot` was taken for gave up and left work behind: the
  // volume::LeftBehind id `left_behind` (volume::LeftBehindOf of its error).
  // The slot is free for other mounts at once; its file system counts as not
  // answering from now on (Acquire answers UNAVAILABLE for it, however long
  // ago the mount began) until that work has ended.
  void HoldFileSystemUntilEnded(Slot slot, uint64_t left_behind);

  // Runs `work` (a mount) holding a slot for `fs` and `target` (errors as Acquire);
  // where its error carries work left behind (volume::LeftBehindOf), the
  // file system is held up until that has ended (HoldFileSystemUntilEnded).
  absl::Status Run(const std::string& fs, const std::string& target,
                   const std::function<absl::Status()>& work);

 private:
  struct Held {
    std::string fs;
    std::string target;
    absl::Time since;
  };
  // The mounts that left work behind, by its id. Shared with what waits for
  // that work to end, which may outlive this.
  struct LeftMounts {
    absl::Mutex mu;
    std::map<uint64_t, Held> held ABSL_GUARDED_BY(mu);
  };
  absl::Status StalledLocked(const std::string& fs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(uint64_t id);

  const int max_;
  const absl::Duration wait_;
  const absl::Duration stalled_after_;
  base::Clock* const clock_;
  volume::LeftBehind* const left_behind_;
  const std::shared_ptr<LeftMounts> left_ = std::make_shared<LeftMounts>();
  absl::Mutex mu_;
  std::map<uint64_t, Held> held_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MOUNT_SLOTS_H_
