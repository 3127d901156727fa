// Corrupted mounts, unmounting with escalation, and removing mount targets.
//
// A mount whose server went away (a dead FUSE daemon, an unreachable Lustre
// or NFS server) answers stat with ENOTCONN, ESTALE, EIO, EACCES, EHOSTDOWN,
// EWOULDBLOCK or ENODEV; IsCorruptedError recognises those. Unmounting
// escalates from a plain umount to MNT_FORCE to MNT_DETACH. Each step runs on
// its own detached thread and is waited for at most its timeout, so a call
// the kernel never returns from cannot hold the caller longer than the sum of
// the timeouts; such a call is left behind (and may still complete later).
// The Syscalls passed in must therefore outlive any call left behind.
//
// CleanupMountPoint is what an unpublish calls: idempotent, it unmounts
// everything stacked at the target (also corrupted mounts), then removes the
// target directory with rmdir only; it never deletes anything below it. The
// common case (a look at the target that reaches no file system mounted
// there: its mount id against its parent's; a plain umount of each layer;
// rmdir) runs as one task on one worker, each of its steps waited for at most
// plain_timeout (or on the calling thread, where its unmounts are in place
// and bounded by the Syscalls: UnmountOptions::unmount_bounded); whatever it
// cannot finish (a failed or hung look or umount) is taken over step by step
// from where it stopped, without repeating a call: a stat of the target there is bounded by
// plain_timeout too, and one that hangs is treated like a corrupted mount (the mount table
// decides). The timeouts and escalation are as above. An rmdir that hangs is DEADLINE_EXCEEDED.
//
// All functions are stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_CLEANUP_H_
#define LUSTRE_CSI_PKG_VOLUME_CLEANUP_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

// True when `status` carries one of the errnos of a corrupted mount:
// ENOTCONN, ESTALE, EIO, EACCES, EHOSTDOWN, EWOULDBLOCK (EAGAIN), ENODEV.
bool IsCorruptedError(const absl::Status& status);

// Stats `path`: false when that works, true when it fails with a corrupted
// mount's errno, the error otherwise (NOT_FOUND for a missing path).
absl::StatusOr<bool> IsCorruptedDir(Syscalls& sys, const std::string& path);

struct UnmountOptions {
  absl::Duration plain_timeout = absl::Seconds(30);
  absl::Duration force_timeout = absl::Seconds(10);
  absl::Duration detach_timeout = absl::Seconds(5);
  // Whether to try MNT_FORCE between the plain unmount and MNT_DETACH. Off
  // for bind mounts of a file system others use too: MNT_FORCE acts on the
  // whole superblock (a network file system's umount_begin aborts its
  // requests), so every other mount of it would suffer.
  bool force = true;
  // Tells the time every step's timeout is counted in (borrowed; null: the
  // real clock).
  base::Clock* clock = nullptr;
  // Where each look at the target (its stat, which waits for a file system
  // that does not answer) runs (borrowed; null: on the thread of its step).
  // In a task of its own (linux/isolated_task.h) a look that never returns
  // holds no thread of the process. The unmounts themselves run where the
  // Syscalls run them (LinuxSyscallsOptions::isolation).
  Isolation* isolation = nullptr;
  // The target is a bind of a mount that stays mounted (its file system's
  // client, a host mount): its unmounts ask the file system nothing, so they
  // are made in place (kUnmountInPlace), not in tasks of their own.
  bool in_place = false;
  // The Syscalls' Unmount waits at most a bound of its own for each call
  // (a mount namespace's threads: linux/namespace_threads.h) and answers
  // DEADLINE_EXCEEDED past it. Together with in_place, where nothing the
  // common case asks reaches a file system (the look at the target asks
  // none, an unmount in place none, the rmdir only the file system above),
  // CleanupMountPoint runs that common case on the calling thread: no
  // hand-over to a worker. Its unmount is then bounded by that bound, not
  // by plain_timeout; what follows a failed or timed-out one is the same.
  bool unmount_bounded = false;
};

// Unmounts the top-most mount at `target`: umount2(0); on EBUSY, a timeout or
// a corrupted mount's errno, umount2(MNT_FORCE); then umount2(MNT_DETACH).
// Other errors (EPERM, ...) are returned at once. EINVAL or ENOENT ("not
// mounted") counts as success. An infinite timeout runs that step on the
// caller's thread. The error, if any, names every step that failed.
absl::Status UnmountWithEscalation(Syscalls& sys, const std::string& target,
                                   const UnmountOptions& opts = {});

// Unmounts every mount stacked at `target` and removes the directory with
// rmdir. OK when `target` does not exist. A corrupted mount is found in the
// mount table and unmounted like any other. FAILED_PRECONDITION, with nothing
// deleted, when the directory is not empty or `target` is not a directory.
absl::Status CleanupMountPoint(Syscalls& sys, const std::string& target,
                               const UnmountOptions& opts = {});

// CleanupMountPoint for a target whose file system does not answer: every
// mount stacked at `target`, as the mount table lists them, is detached
// (MNT_DETACH, waited for at most `opts.detach_timeout`) without a stat or a
// plain unmount, which would wait for the file system; then the directory,
// by then one of the file system above, is removed as CleanupMountPoint
// removes it.
absl::Status DetachMountPoint(Syscalls& sys, const std::string& target,
                              const UnmountOptions& opts = {});

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_CLEANUP_H_
