// Lustre mode with one client mount per publish (--lustre-client=per-volume):
// the host's Lustre mount helper (`mount.lustre -o <opts>
// <mgs>@tcp:/<fs>[/<sub-dir>] <target>`) runs in a configured mount namespace
// (volume::MountNamespace): the host's, from a container, or the driver's
// own on a bare host. No shell, a clean environment, a timeout. The mount
// reaches the driver's view by propagation and is checked there; unmounts
// are made in the same namespace (the Syscalls given must route them
// there). A missing sub-dir is created through a root mount in a fresh
// directory under the working mount dir, removed again. The shared-client
// mode mounts its clients through it.
#ifndef LUSTRE_CSI_PKG_DRIVER_MODES_LUSTRE_MODE_H_
#define LUSTRE_CSI_PKG_DRIVER_MODES_LUSTRE_MODE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "pkg/driver/modes/mounting_mode.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/mount_namespace.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

struct LustreModeOptions {
  // The mount helper, a path in the mount namespace.
  std::string mount_helper = "/sbin/mount.lustre";
  // Where root mounts go while a sub-dir is created. It must be the same
  // directory in the driver's view and in the mount namespace.
  std::string working_mount_dir = "/tmp";
  absl::Duration mount_timeout = absl::Minutes(2);
  // Bounds each readiness step (running the helper with -V, reading files).
  absl::Duration check_timeout = absl::Seconds(10);
  // Where the looks at targets an unmount makes run (borrowed; null: the
  // calling thread), volume::UnmountOptions.
  volume::Isolation* isolation = nullptr;
};

// `sys` is the driver's view (its Unmount must reach `ns`, e.g.
// volume::UnmountingIn); `ns` is where the helper runs. Both borrowed.
std::unique_ptr<internal::MountingMode> NewLustreMode(volume::Syscalls* sys,
                                                      volume::MountNamespace* ns,
                                                      LustreModeOptions options);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MODES_LUSTRE_MODE_H_
