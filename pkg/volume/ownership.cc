#include "pkg/volume/ownership.h"

#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::volume {
namespace {

// Permission bits (st_mode's low 12), as the kernel numbers them.
constexpr uint32_t kSetUid = 04000;
constexpr uint32_t kSetGid = 02000;
constexpr uint32_t kReadWriteMask = 0660;  // rw-rw----
constexpr uint32_t kReadOnlyMask = 0440;   // r--r-----
constexpr uint32_t kExecMask = 0110;       // --x--x---
constexpr uint32_t kGroupExec = 0010;

uint32_t MaskFor(uint32_t mode, bool read_only) {
  uint32_t mask = read_only ? kReadOnlyMask : kReadWriteMask;
  if (IsDirectoryMode(mode)) mask |= kExecMask | kSetGid;
  return mask;
}

EntryChange ChangeFor(const TreeEntry& e, uint32_t gid, bool read_only) {
  EntryChange change;
  bool regroup = e.gid != gid;
  if (regroup) change.gid = gid;
  if (IsSymlinkMode(e.mode)) return change;
  uint32_t perms = e.mode & 07777;
  if (regroup && !IsDirectoryMode(e.mode)) {
    // The kernel clears set-user-ID (and set-group-ID on group-executable
    // files) when the group changes; do not put them back.
    perms &= ~kSetUid;
    if (perms & kGroupExec) perms &= ~kSetGid;
  }
  uint32_t want = perms | MaskFor(e.mode, read_only);
  if (want != (e.mode & 07777)) change.mode = want;
  return change;
}

}  // namespace

absl::Status SetVolumeOwnership(Syscalls& sys, const std::string& dir, uint32_t gid, bool read_only,
                                FsGroupChangePolicy policy) {
  if (policy == FsGroupChangePolicy::kOnRootMismatch) {
    absl::StatusOr<FileInfo> root = sys.Stat(dir);
    if (!root.ok()) return root.status();
    uint32_t mask = MaskFor(root->mode, read_only);
    if (IsDirectoryMode(root->mode) && root->gid == gid && (root->mode & mask) == mask) {
      return absl::OkStatus();
    }
  }
  TreeLimits limits;
  limits.max_depth = kMaxOwnershipDepth;
  return WalkTree(sys, dir, limits, [&](const TreeEntry& e) -> absl::StatusOr<EntryChange> {
    return ChangeFor(e, gid, read_only);
  });
}

}  // namespace lustre_csi::volume
