// Directory trees, walked, changed and removed through open directories
// (Syscalls' descriptor calls), written once for the kernel and the fake.
// Neither call follows a symlink or enters another mount: an entry is on
// another mount when it is a mount root or reports another mount id (a bind
// of the same file system too); where no mount id is known, when it is on
// another device.
#ifndef LUSTRE_CSI_PKG_VOLUME_TREE_H_
#define LUSTRE_CSI_PKG_VOLUME_TREE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

// One entry of a tree walk: what its stat said, and where it is.
struct TreeEntry : FileInfo {
  std::string path;  // relative to the walk's root, '/'-separated; "" for the root
  int depth = 0;     // 0 for the root
};

// What a walk's visitor asks to change on the entry it was shown: the group
// first (chown), then the permission bits (chmod, 07777). A symlink's group
// is changed on the link itself; its mode is never changed.
struct EntryChange {
  std::optional<uint32_t> gid;
  std::optional<uint32_t> mode;
};

struct TreeLimits {
  size_t max_entries = 0;  // 0: no limit; more entries -> RESOURCE_EXHAUSTED
  int max_depth = 256;     // deeper directories -> RESOURCE_EXHAUSTED
};

using TreeVisitor = std::function<absl::StatusOr<EntryChange>(const TreeEntry&)>;

// Visits the directory `root` (not a symlink) and everything beneath it,
// directories before their contents, and applies what the visitor asks for
// each entry. The walk never follows a symlink, never leaves the mount it
// started on (entries on another mount are skipped) and skips entries that
// vanish while it runs; it holds each directory open from its parent, so
// renames elsewhere cannot redirect it, and the visitor runs between calls
// (it may use `sys`). An error from `visit`, or from a change other than the
// entry vanishing, stops the walk and is returned; so does a limit, after
// what came before it was visited and changed.
absl::Status WalkTree(Syscalls& sys, const std::string& root, const TreeLimits& limits,
                      const TreeVisitor& visit);

// Removes the directory `relative` (resolved strictly beneath `root`, see
// beneath.h) and everything in it: symlinks as links, never followed. A
// directory below that is another mount is never entered: the removal stops
// with FAILED_PRECONDITION before it (what was removed stays removed);
// `relative` itself on another mount is INVALID_ARGUMENT, like every path
// that crosses a mount. Directories more than `max_depth` levels below
// `relative`: RESOURCE_EXHAUSTED.
absl::Status RemoveTreeBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                               int max_depth);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_TREE_H_
