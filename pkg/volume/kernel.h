// The kernel interfaces newer than Linux 4.18 that the driver uses where they
// exist, each with a fallback of the same safety where they do not.
//
// Which of them a kernel has is found once, by probing the calls themselves
// (never by the version string: distribution kernels back-port), by
// pkg/volume/linux's kernel_probe; this header only names them, so that
// readiness, metrics and messages can speak of them without system calls.
#ifndef LUSTRE_CSI_PKG_VOLUME_KERNEL_H_
#define LUSTRE_CSI_PKG_VOLUME_KERNEL_H_

#include <string>
#include <vector>

namespace lustre_csi::volume {

struct KernelInterfaces {
  // openat2(2) with RESOLVE_* (5.6). Without it: a component-by-component
  // walk with O_PATH | O_NOFOLLOW descriptors (see linux/walk_beneath.h).
  bool openat2 = true;
  // open_tree(2) and move_mount(2) (5.2) with mount_setattr(2) (5.12): a bind
  // mount with its flags set before it is attached. Without them: a bind on a
  // private staging point, a bind remount there, then a move to the target
  // (see linux/staged_bind.h).
  bool mount_api = true;
  // pidfd_open(2) (5.3): a child's exit seen by poll. Without it: the end of
  // its output, then waitpid.
  bool pidfd_open = true;
  // statx(2)'s STATX_MNT_ID and STATX_ATTR_MOUNT_ROOT (5.8): a path's mount
  // id in one call. Without them: the mount id from name_to_handle_at(2)
  // (or /proc/self/fdinfo), in walks and in Stat's answer (mount-point
  // checks fall back to the device number, then the mount table, only where
  // a file system has no file handles).
  bool statx_mount_id = true;

  struct Entry {
    const char* name;   // "openat2", "mount_api", ...
    const char* since;  // the first Linux version that has it, "5.6"
    bool present;
  };
  // Every interface above, in a fixed order.
  std::vector<Entry> Entries() const;
  // "openat2, mount_api" (the missing ones), or "" when none is missing.
  std::string Missing() const;
  // One line for the log: what is there and which fallbacks are in use.
  std::string Describe() const;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_KERNEL_H_
