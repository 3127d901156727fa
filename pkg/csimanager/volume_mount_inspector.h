// The MountInspector the daemon uses: pkg/volume's syscall seam and
// mount-point checks (statx mount ids, flat cost at any mount count).
// Thread-safe; the Syscalls are borrowed and must outlive it.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_VOLUME_MOUNT_INSPECTOR_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_VOLUME_MOUNT_INSPECTOR_H_

#include <memory>

#include "pkg/csimanager/mount_inspector.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::csimanager {

std::unique_ptr<MountInspector> NewVolumeMountInspector(volume::Syscalls* sys);

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_VOLUME_MOUNT_INSPECTOR_H_
