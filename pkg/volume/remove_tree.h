// Recursive removal of a directory beneath a root, for data the project
// itself created (a provisioned sub-dir whose volume is deleted). It works on
// the real file system with directory file descriptors:
//
//  - `relative` is resolved beneath `root` with openat2(RESOLVE_BENEATH |
//    RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV): no '..' escape, no symlink, no
//    other mount on the way;
//  - symlinks inside are removed as links, never followed;
//  - a directory that is the root of another mount is never entered: the
//    removal stops with FAILED_PRECONDITION before touching it, and what was
//    already removed stays removed;
//  - depth is bounded (RESOURCE_EXHAUSTED beyond `max_depth`).
//
// A missing directory is NOT_FOUND. Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_REMOVE_TREE_H_
#define LUSTRE_CSI_PKG_VOLUME_REMOVE_TREE_H_

#include <string>

#include "absl/status/status.h"

namespace lustre_csi::volume {

absl::Status RemoveTreeBeneath(const std::string& root, const std::string& relative,
                               int max_depth = 256);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_REMOVE_TREE_H_
