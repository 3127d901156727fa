#include "pkg/volume/dir_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {
namespace {

constexpr unsigned kMask = STATX_BASIC_STATS | STATX_MNT_ID;

WalkStat FromStatx(const struct statx& stx) {
  WalkStat st;
  st.mode = stx.stx_mode;
  st.uid = stx.stx_uid;
  st.gid = stx.stx_gid;
  st.nlink = stx.stx_nlink;
  st.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  st.ino = stx.stx_ino;
  st.blocks = stx.stx_blocks;
  return st;
}

class Walker {
 public:
  Walker(const std::string& root, const WalkOptions& opts,
         const std::function<absl::Status(const WalkEntry&)>& visit)
      : root_(root), opts_(opts), visit_(visit) {}

  absl::Status Run() {
    int fd = open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", root_));
    absl::Cleanup close_fd = [fd] { close(fd); };
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH, kMask, &stx) != 0) {
      return ErrnoError(errno, absl::StrCat("statx ", root_));
    }
    has_mnt_id_ = (stx.stx_mask & STATX_MNT_ID) != 0;
    mnt_id_ = stx.stx_mnt_id;
    dev_ = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    WalkEntry entry;
    entry.fd = fd;
    entry.st = FromStatx(stx);
    if (absl::Status s = Count(); !s.ok()) return s;
    if (absl::Status s = visit_(entry); !s.ok()) return s;
    return WalkDir(fd, 0, root_);
  }

 private:
  absl::Status Count() {
    ++entries_;
    if (opts_.max_entries != 0 && entries_ > opts_.max_entries) {
      return absl::ResourceExhaustedError(
          absl::StrCat("walk of ", root_, " stopped after ", opts_.max_entries, " entries"));
    }
    return absl::OkStatus();
  }

  bool OnOtherMount(const struct statx& stx) const {
    if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
        (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
      return true;
    }
    if (has_mnt_id_ && (stx.stx_mask & STATX_MNT_ID)) return stx.stx_mnt_id != mnt_id_;
    return makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev_;
  }

  absl::Status WalkDir(int dir_fd, int depth, const std::string& path) {
    int list_fd = dup(dir_fd);
    if (list_fd < 0) return ErrnoError(errno, absl::StrCat("dup ", path));
    DIR* dir = fdopendir(list_fd);
    if (dir == nullptr) {
      int err = errno;
      close(list_fd);
      return ErrnoError(err, absl::StrCat("opendir ", path));
    }
    absl::Cleanup close_dir = [dir] { closedir(dir); };
    while (true) {
      errno = 0;
      struct dirent* d = readdir(dir);
      if (d == nullptr) {
        if (errno != 0) return ErrnoError(errno, absl::StrCat("readdir ", path));
        return absl::OkStatus();
      }
      const char* name = d->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      struct statx stx;
      if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, kMask, &stx) != 0) {
        if (errno == ENOENT) continue;  // removed while we walk
        return ErrnoError(errno, absl::StrCat("statx ", path, "/", name));
      }
      if (OnOtherMount(stx)) continue;
      if (absl::Status s = Count(); !s.ok()) return s;
      WalkEntry entry;
      entry.parent_fd = dir_fd;
      entry.name = name;
      entry.depth = depth + 1;
      entry.st = FromStatx(stx);
      if (!S_ISDIR(stx.stx_mode)) {
        if (absl::Status s = visit_(entry); !s.ok()) return s;
        continue;
      }
      if (depth + 1 > opts_.max_depth) {
        return absl::ResourceExhaustedError(
            absl::StrCat("walk of ", root_, " is deeper than ", opts_.max_depth, " levels"));
      }
      int child = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) {
        // Gone, or swapped for a symlink or a file since the statx: skip it.
        if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) continue;
        return ErrnoError(errno, absl::StrCat("open ", path, "/", name));
      }
      absl::Cleanup close_child = [child] { close(child); };
      struct statx opened;
      if (statx(child, "", AT_EMPTY_PATH, kMask, &opened) != 0) {
        return ErrnoError(errno, absl::StrCat("statx ", path, "/", name));
      }
      // Something was mounted or swapped in between: leave it alone.
      if (opened.stx_ino != stx.stx_ino || OnOtherMount(opened)) continue;
      entry.fd = child;
      if (absl::Status s = visit_(entry); !s.ok()) return s;
      if (absl::Status s = WalkDir(child, depth + 1, absl::StrCat(path, "/", name)); !s.ok()) {
        return s;
      }
    }
  }

  const std::string& root_;
  const WalkOptions& opts_;
  const std::function<absl::Status(const WalkEntry&)>& visit_;
  bool has_mnt_id_ = false;
  uint64_t mnt_id_ = 0;
  uint64_t dev_ = 0;
  size_t entries_ = 0;
};

}  // namespace

absl::Status WalkTree(const std::string& root, const WalkOptions& opts,
                      const std::function<absl::Status(const WalkEntry&)>& visit) {
  return Walker(root, opts, visit).Run();
}

}  // namespace lustre_csi::volume
