// Pieces shared by the mount backends' implementation files; not an API.
#ifndef LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_INTERNAL_H_
#define LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_INTERNAL_H_

#include <string>

#include "absl/status/status.h"
#include "pkg/driver/mount_backend.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver::internal {

// Creates `sub_dir` (and missing parents) beneath `root` and proves,
// resolving symlinks, that it stays beneath it.
absl::Status MakeSubDir(volume::Syscalls& sys, const std::string& root, const std::string& sub_dir);

// MountBackend::EnsureSubDir of a backend with a file system: nothing for
// the root; otherwise MakeSubDir inside backend.WithFileSystemRoot.
absl::Status EnsureSubDirIn(MountBackend& backend, const LustreSource& source);

// "<source>" joined with the mount's root inside its file system, so a mount
// of <fs>/<sub> reads the same whether the kernel shows it as the source
// "<mgs>:/<fs>/<sub>" with root "/" or as "<mgs>:/<fs>" with root "/<sub>".
std::string MountedSpec(const volume::MountEntry& e);

}  // namespace lustre_csi::driver::internal

#endif  // LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_INTERNAL_H_
