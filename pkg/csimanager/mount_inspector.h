// MountInspector: what the volume manager needs of the node's file system.
//
// The plugin does the mounting; the manager only checks mount points, makes
// the directories the plugin mounts on, and removes them once empty. The
// daemon adapts pkg/volume's syscall seam and mount table to this interface;
// tests use the same adapter over pkg/volume's FakeSyscalls (fakes::FakeNode).
// Implementations must be thread-safe.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_MOUNT_INSPECTOR_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_MOUNT_INSPECTOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lustre_csi::csimanager {

class MountInspector {
 public:
  virtual ~MountInspector() = default;

  // Whether `path` is a mount point; false when it does not exist.
  virtual absl::StatusOr<bool> IsMountPoint(const std::string& path) = 0;
  // Creates `path` and its missing parents with `mode`; existing ones are
  // fine.
  virtual absl::Status MkdirAll(const std::string& path, uint32_t mode) = 0;
  // Removes the directory `path` if it is empty and not a mount point; a
  // missing path is fine. Never removes anything below it.
  virtual absl::Status RemoveDir(const std::string& path) = 0;
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_MOUNT_INSPECTOR_H_
