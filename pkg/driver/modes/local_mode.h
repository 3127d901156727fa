// Local mode (--mount-mode=local): <mgs>@tcp:/<fs>[/<sub-dir>] is
// <local-root>/<fs>[/<sub-dir>] on this machine, and a publish is a real bind
// mount of it (resolved strictly beneath <local-root>/<fs>), read-only when
// asked, so every mount-table path runs without Lustre. Targets are binds of
// a tree others use: never forced on unpublish.
#ifndef LUSTRE_CSI_PKG_DRIVER_MODES_LOCAL_MODE_H_
#define LUSTRE_CSI_PKG_DRIVER_MODES_LOCAL_MODE_H_

#include <memory>
#include <string>

#include "pkg/driver/modes/mounting_mode.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

// `sys` is borrowed.
// The looks at targets an unmount makes run in `isolation` (borrowed; null:
// the calling thread), volume::UnmountOptions.
std::unique_ptr<internal::MountingMode> NewLocalMode(volume::Syscalls* sys, std::string local_root,
                                                     volume::Isolation* isolation = nullptr);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MODES_LOCAL_MODE_H_
