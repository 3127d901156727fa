// Bind mounts whose per-mount flags are set before they appear at their
// target, on kernels without mount_setattr(2) (before Linux 5.12), where
// open_tree/mount_setattr/move_mount cannot do it in one step.
//
// The bind is made on a staging point in a directory whose mount does not
// propagate (a private or slave mount as it is - a container's socket
// directory - or else the directory bound onto itself and made private), made
// private itself when asked (it then leaves the
// source's peer group), given its flags with a bind remount, and only then
// moved to the target with MS_MOVE. The target never holds the mount without
// its flags, and when the target's parent is shared every copy propagated
// from it is made from the finished mount, so it is born with the flags too:
// the property the new mount API gives. A crash between the steps leaves the
// mount on the staging point, never at the target; Prepare() detaches what a
// crash left there.
//
// The staging directory must be where this process can create directories;
// a node uses one beside its CSI socket. Thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_STAGED_BIND_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_STAGED_BIND_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace lustre_csi::volume::os {

// The per-mount MS_* flags a mount has, from statfs(2)'s f_flags (ST_*
// bits): rdonly, nosuid, nodev, noexec, nosymfollow, nodiratime, and one of
// noatime, relatime or strictatime.
unsigned long MountFlagsOfStatfs(unsigned long f_flags);

class BindStaging {
 public:
  explicit BindStaging(std::string dir);

  ~BindStaging();  // releases this process's mark

  // Creates the staging directory; when its mount is shared, makes it a
  // private mount of its own (a bind of itself); and, the first time,
  // marks it as this process's (a locked <token>.owner file) and takes back
  // what processes that died left in it (their staging points, detached),
  // never what a live one has there. Idempotent. FAILED_PRECONDITION with the
  // reason when the directory or its mount cannot be made.
  absl::Status Prepare();

  // Binds `source` (a path, or /proc/self/fd/N of an O_PATH descriptor; a
  // directory or a file) at `target` (not a symlink), with the per-mount MS_*
  // `flags`, made private first when `make_private`. With
  // `keep_source_flags` the source mount's own per-mount flags are kept (as
  // mount_setattr(2) adds to them; read with statvfs, which on a network
  // file system asks its servers); without, the bind has exactly `flags` -
  // the same where the source has none of its own, as a Lustre client root
  // this driver mounted with client-wide options only. Non-recursive. On
  // failure nothing is left at the target or on the staging point.
  absl::Status Bind(const std::string& source, const std::string& target, unsigned long flags,
                    bool make_private, bool keep_source_flags);

  const std::string& dir() const { return dir_; }

 private:
  const std::string dir_;
  absl::Mutex mu_;
  void SweepDeadOwners() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  bool prepared_ ABSL_GUARDED_BY(mu_) = false;
  int64_t prepared_mount_ ABSL_GUARDED_BY(mu_) = -1;  // the directory's mount id then
  int owner_fd_ ABSL_GUARDED_BY(mu_) = -1;            // the locked <token>.owner
  std::string token_;                                 // set once, before any Bind
  std::atomic<uint64_t> next_{0};
};

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_STAGED_BIND_H_
