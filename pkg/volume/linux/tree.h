// Directory trees on the real file system, through directory file
// descriptors: WalkTree holds one open directory per level (openat with
// O_NOFOLLOW from its parent) and changes entries through those descriptors
// (fchownat / fchmodat with AT_SYMLINK_NOFOLLOW); RemoveTreeBeneath resolves
// its directory with openat2 strictly beneath the root and unlinks relative
// to open directories. Neither follows a symlink or enters another mount.
// They implement the same calls of LinuxSyscalls; see pkg/volume/syscalls.h
// for their contracts. Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_TREE_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_TREE_H_

#include <string>

#include "absl/status/status.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume::os {

absl::Status WalkTree(const std::string& root, const TreeLimits& limits, const TreeVisitor& visit);

absl::Status RemoveTreeBeneath(const std::string& root, const std::string& relative, int max_depth);

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_TREE_H_
