// A bounded walk over a directory tree on the real file system that never
// follows a symlink and never leaves the mount it started on.
//
// The walk holds one open directory per level (openat with O_NOFOLLOW from
// its parent), so renames and symlink swaps elsewhere in the tree cannot
// redirect it. Entries on another mount (different mount id, or
// STATX_ATTR_MOUNT_ROOT) are skipped, as are entries that vanish while the
// walk runs. Used by the du-style metrics and by SetVolumeOwnership.
// Stateless and thread-safe; the visitor runs on the caller's thread.
#ifndef LUSTRE_CSI_PKG_VOLUME_DIR_WALK_H_
#define LUSTRE_CSI_PKG_VOLUME_DIR_WALK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace lustre_csi::volume {

struct WalkStat {
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 0;
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t blocks = 0;  // 512-byte blocks allocated
};

struct WalkEntry {
  int parent_fd = -1;          // the directory holding the entry; -1 for the root
  const char* name = nullptr;  // the name in parent_fd; nullptr for the root
  int fd = -1;                 // an open directory for directories (the root too), else -1
  int depth = 0;               // 0 for the root
  WalkStat st;
};

struct WalkOptions {
  size_t max_entries = 0;  // 0: no limit; more entries -> RESOURCE_EXHAUSTED
  int max_depth = 256;     // deeper directories -> RESOURCE_EXHAUSTED
};

// Visits `root` (which must be a directory, not a symlink) and everything
// beneath it, directories before their contents. An error from `visit` stops
// the walk and is returned.
absl::Status WalkTree(const std::string& root, const WalkOptions& opts,
                      const std::function<absl::Status(const WalkEntry&)>& visit);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_DIR_WALK_H_
