// Bounds the mounts in flight on a node (--max-concurrent-mounts): a mount
// waits up to `wait` for one of `max` slots, and fails UNAVAILABLE after
// that. NodeLogic owns one and hands it to the mount mode with each publish
// (PublishTarget::slots); the mode holds a slot only while it mounts, not
// while it applies fsGroup. Thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_MOUNT_SLOTS_H_
#define LUSTRE_CSI_PKG_DRIVER_MOUNT_SLOTS_H_

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lustre_csi::driver {

class MountSlots {
 public:
  MountSlots(int max, absl::Duration wait) : max_(max), wait_(wait) {}

  // Takes a slot, waiting for one as long as `wait`.
  absl::Status Acquire();
  // Gives back a slot Acquire took.
  void Release();

 private:
  const int max_;
  const absl::Duration wait_;
  absl::Mutex mu_;
  int in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MOUNT_SLOTS_H_
