// The mount table: parsing /proc/self/mountinfo and answering "is this path a
// mount point?" without reading the table.
//
// ParseMountInfo decodes the format of proc(5): octal escapes (\040 for a
// space, \011 tab, \012 newline, \134 backslash) in every text field, zero or
// more optional fields before the "-" separator, an empty mount source.
// Malformed lines are an error naming the line.
//
// MountChecker::IsMountPoint costs one or two statx calls and never reads the
// table when the kernel reports STATX_ATTR_MOUNT_ROOT (Linux >= 5.8): the
// cost of a check does not grow with the number of mounts on the node (see
// bench/mount_check_bench.cc). On older kernels it compares mount ids
// (STATX_MNT_ID) or devices with the parent, and only when those cannot tell
// (same device, no mount id: a bind mount from the same file system) does it
// read the table. FindMountAt and List always read the table.
//
// Paths are compared lexically with the table, so FindMountAt (and the
// last-resort fallback of IsMountPoint) need the canonical path, without
// symlinks; the statx paths do not.
//
// MountChecker::LookAt tells the same without a stat of a mounted path (so
// without waiting for a file system that does not answer), with the mount
// ids the paths' walks reach.
//
// MountChecker does not own the Syscalls, which must outlive it; it keeps no
// state and is thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_MOUNT_TABLE_H_
#define LUSTRE_CSI_PKG_VOLUME_MOUNT_TABLE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

// One line of /proc/self/mountinfo, escapes decoded.
struct MountEntry {
  int mount_id = 0;
  int parent_id = 0;
  unsigned major = 0;
  unsigned minor = 0;
  std::string root;           // the path inside the file system shown here ("/" or a bind source)
  std::string mount_point;    // where it is mounted, in this mount namespace
  std::string options;        // per-mount options, e.g. "rw,nosuid,relatime"
  std::string fs_type;        // e.g. "tmpfs", "lustre", "fuse.sshfs"
  std::string source;         // e.g. "10.0.0.1@tcp:/lustrefs", "none"
  std::string super_options;  // per-superblock options
  std::vector<std::string> optional_fields;  // e.g. "shared:1", "master:2"
};

// Parses the whole text of a mountinfo file. Empty lines are skipped.
// INVALID_ARGUMENT naming the line for anything malformed.
absl::StatusOr<std::vector<MountEntry>> ParseMountInfo(absl::string_view text);

// Decodes the kernel's octal escapes (\ooo) in one field. A backslash not
// followed by three octal digits is kept as it is.
std::string UnescapeMountInfoField(absl::string_view field);

// The top-most of the mounts at exactly `path` (compared after CleanPath), if
// any: of mounts stacked at one path, the one no other mount there sits on.
std::optional<MountEntry> TopMountAt(const std::vector<MountEntry>& table, absl::string_view path);

class MountChecker {
 public:
  explicit MountChecker(Syscalls* sys) : sys_(sys) {}

  // True when `path` is the root of a mount (also a bind mount from the same
  // file system, and a bind-mounted file). A symlink is never a mount point.
  // NOT_FOUND when `path` does not exist; for a corrupted mount the statx
  // error with its errno (so IsCorruptedError in cleanup.h can tell).
  absl::StatusOr<bool> IsMountPoint(const std::string& path);

  // As above, with `info` the Stat of `path` the caller already has.
  absl::StatusOr<bool> IsMountPoint(const std::string& path, const FileInfo& info);

  // What is at a path, found without asking the file system mounted there
  // anything (it may not answer; see LookAt).
  struct Look {
    bool exists = false;
    bool mounted = false;  // the root of a mount
    FileInfo info;         // when it exists and is not mounted
  };

  // What is at `path`, without a stat of a mount there: the mount id its
  // walk reaches, the last component not followed (a walk stops at a
  // mount's root without calling into its file system;
  // Syscalls::MountIdAt), compared with its parent directory's. Only what
  // is not a mount point, a name in the parent's file system, is stat'ed
  // (not followed). Never reads the table; a symlink is never a mount point.
  // `parent_id`: the parent's mount id, used when set and filled in when not
  // (a caller that looks again after an unmount at `path` keeps it).
  absl::StatusOr<Look> LookAt(const std::string& path,
                              std::optional<uint64_t>* parent_id = nullptr);

  // The top-most mount at exactly `path` (lexically cleaned, not resolved),
  // read from the mount table. Works for corrupted mounts too.
  absl::StatusOr<std::optional<MountEntry>> FindMountAt(const std::string& path);

  // The whole mount table.
  absl::StatusOr<std::vector<MountEntry>> List();

 private:
  Syscalls* sys_;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_MOUNT_TABLE_H_
