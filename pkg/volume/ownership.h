// Volume ownership for a pod's fsGroup.
//
// SetVolumeOwnership gives everything in a volume the group `gid`, sets the
// setgid bit on directories (so new files inherit the group) and adds the
// permission mask: rw-rw---- for a read-write volume, r--r----- for a
// read-only one, plus --x--x--- on directories. Bits are only added, never
// taken away. With kOnRootMismatch nothing is walked when the volume's root
// directory already has the group, the setgid bit and the mask.
//
// It walks the volume with WalkTree (tree.h): symlinks get the group
// themselves but are never followed, and nothing on another mount below the
// volume is touched. Stateless and thread-safe; changing ownership
// of files you do not own needs CAP_CHOWN / CAP_FOWNER.
#ifndef LUSTRE_CSI_PKG_VOLUME_OWNERSHIP_H_
#define LUSTRE_CSI_PKG_VOLUME_OWNERSHIP_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

enum class FsGroupChangePolicy { kAlways, kOnRootMismatch };

// Directory trees deeper than this are refused (RESOURCE_EXHAUSTED); the walk
// keeps one descriptor open per level.
inline constexpr int kMaxOwnershipDepth = 512;

absl::Status SetVolumeOwnership(Syscalls& sys, const std::string& dir, uint32_t gid, bool read_only,
                                FsGroupChangePolicy policy);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_OWNERSHIP_H_
