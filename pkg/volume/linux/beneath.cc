#include "pkg/volume/linux/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/kernel_probe.h"
#include "pkg/volume/linux/walk_beneath.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume::os {

int OpenAt2(int dir_fd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  if (!Kernel().openat2) return WalkBeneath(dir_fd, path, flags, mode, resolve);
  open_how how = {};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dir_fd, path, &how, sizeof(how)));
}

absl::StatusOr<FileInfo> StatAt(int fd, const char* name, absl::string_view what) {
  struct statx stx;
  // An empty name means `fd` itself, never the working directory.
  int flags =
      AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name == '\0' && fd != AT_FDCWD ? AT_EMPTY_PATH : 0);
  if (statx(fd, name, flags, STATX_BASIC_STATS | STATX_MNT_ID, &stx) != 0) {
    return ErrnoError(errno, absl::StrCat("statx ", what));
  }
  FileInfo info;
  info.mode = stx.stx_mode;
  info.uid = stx.stx_uid;
  info.gid = stx.stx_gid;
  info.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  info.ino = stx.stx_ino;
  // Both from Linux 5.8 on. Before, the mount id comes from
  // name_to_handle_at (one more call, no descriptor), so that MountChecker
  // still compares mount ids rather than read the mount table for a bind of
  // the same file system; where even that fails, it falls back to the
  // device number, then the table.
  const bool statx_mounts = Kernel().statx_mount_id;
  int64_t mount_id = MountIdOf(stx, fd, name);
  info.has_mount_id = mount_id >= 0;
  info.mount_id = mount_id >= 0 ? static_cast<uint64_t>(mount_id) : 0;
  info.has_mount_root = statx_mounts && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0;
  info.mount_root = info.has_mount_root && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  info.mtime =
      absl::FromUnixSeconds(stx.stx_mtime.tv_sec) + absl::Nanoseconds(stx.stx_mtime.tv_nsec);
  info.nlink = stx.stx_nlink;
  info.blocks = stx.stx_blocks;
  return info;
}

}  // namespace lustre_csi::volume::os
