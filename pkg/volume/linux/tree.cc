#include "pkg/volume/linux/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/beneath.h"
#include "pkg/volume/linux/kernel_probe.h"
#include "pkg/volume/linux/walk_beneath.h"

namespace lustre_csi::volume::os {
namespace {

constexpr unsigned kMask = STATX_BASIC_STATS | STATX_MNT_ID;

void FillFromStatx(const struct statx& stx, TreeEntry& entry) {
  entry.mode = stx.stx_mode;
  entry.uid = stx.stx_uid;
  entry.gid = stx.stx_gid;
  entry.nlink = stx.stx_nlink;
  entry.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  entry.ino = stx.stx_ino;
  entry.blocks = stx.stx_blocks;
}

class Walker {
 public:
  Walker(const std::string& root, const TreeLimits& limits, const TreeVisitor& visit)
      : root_(root), limits_(limits), visit_(visit) {}

  absl::Status Run() {
    int fd = open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", root_));
    absl::Cleanup close_fd = [fd] { close(fd); };
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH, kMask, &stx) != 0) {
      return ErrnoError(errno, absl::StrCat("statx ", root_));
    }
    has_mnt_id_ = Kernel().statx_mount_id && (stx.stx_mask & STATX_MNT_ID) != 0;
    int64_t id = MountIdOf(stx, fd, "");
    if (id < 0) return ErrnoError(errno, absl::StrCat("mount id of ", root_));
    mnt_id_ = static_cast<uint64_t>(id);
    dev_ = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    TreeEntry entry;
    FillFromStatx(stx, entry);
    if (absl::Status s = Count(); !s.ok()) return s;
    if (absl::Status s = Visit(entry, fd, -1, nullptr); !s.ok()) return s;
    return WalkDir(fd, 0, "");
  }

 private:
  absl::Status Count() {
    ++entries_;
    if (limits_.max_entries != 0 && entries_ > limits_.max_entries) {
      return absl::ResourceExhaustedError(
          absl::StrCat("walk of ", root_, " stopped after ", limits_.max_entries, " entries"));
    }
    return absl::OkStatus();
  }

  // Whether the entry `name` of `dir_fd` (or `dir_fd` itself for ""), of
  // which `stx` tells, is on another mount than the root. Before Linux 5.8
  // statx tells no mount id, and a bind mount of the same file system has
  // the same device: the mount id then comes from MountIdAt.
  absl::StatusOr<bool> OnOtherMount(const struct statx& stx, int dir_fd, const char* name) const {
    if (has_mnt_id_ && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
        (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
      return true;
    }
    // Without statx's mount ids, a device of its own settles it at once.
    if (!has_mnt_id_ && makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev_) return true;
    int64_t id = MountIdOf(stx, dir_fd, name);
    if (id < 0) return ErrnoError(errno, absl::StrCat("mount id of ", root_, "/", name));
    return static_cast<uint64_t>(id) != mnt_id_;
  }

  std::string Describe(const TreeEntry& e) const {
    return e.path.empty() ? root_ : absl::StrCat(root_, "/", e.path);
  }

  // Shows `e` to the visitor and applies what it asks: through `fd` when the
  // entry is an open directory, else as `name` in `parent_fd`.
  absl::Status Visit(const TreeEntry& e, int fd, int parent_fd, const char* name) {
    absl::StatusOr<EntryChange> change = visit_(e);
    if (!change.ok()) return change.status();
    if (change->gid.has_value() && *change->gid != e.gid) {
      int rc = fd >= 0 ? fchown(fd, static_cast<uid_t>(-1), *change->gid)
                       : fchownat(parent_fd, name, static_cast<uid_t>(-1), *change->gid,
                                  AT_SYMLINK_NOFOLLOW);
      if (rc != 0 && errno != ENOENT) {
        return ErrnoError(errno, absl::StrCat("chown ", Describe(e)));
      }
    }
    if (!change->mode.has_value() || S_ISLNK(e.mode)) return absl::OkStatus();
    uint32_t mode = *change->mode & 07777;
    int rc = fd >= 0 ? fchmod(fd, mode) : fchmodat(parent_fd, name, mode, AT_SYMLINK_NOFOLLOW);
    // ENOENT: removed meanwhile; EOPNOTSUPP: replaced by a symlink meanwhile.
    if (rc != 0 && errno != ENOENT && errno != EOPNOTSUPP) {
      return ErrnoError(errno, absl::StrCat("chmod ", Describe(e)));
    }
    return absl::OkStatus();
  }

  absl::Status WalkDir(int dir_fd, int depth, const std::string& path) {
    int list_fd = dup(dir_fd);
    if (list_fd < 0) return ErrnoError(errno, absl::StrCat("dup ", root_, "/", path));
    DIR* dir = fdopendir(list_fd);
    if (dir == nullptr) {
      int err = errno;
      close(list_fd);
      return ErrnoError(err, absl::StrCat("opendir ", root_, "/", path));
    }
    absl::Cleanup close_dir = [dir] { closedir(dir); };
    while (true) {
      errno = 0;
      struct dirent* d = readdir(dir);
      if (d == nullptr) {
        if (errno != 0) return ErrnoError(errno, absl::StrCat("readdir ", root_, "/", path));
        return absl::OkStatus();
      }
      const char* name = d->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      TreeEntry entry;
      entry.path = path.empty() ? std::string(name) : absl::StrCat(path, "/", name);
      entry.depth = depth + 1;
      struct statx stx;
      if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, kMask, &stx) != 0) {
        if (errno == ENOENT) continue;  // removed while we walk
        return ErrnoError(errno, absl::StrCat("statx ", Describe(entry)));
      }
      absl::StatusOr<bool> other = OnOtherMount(stx, dir_fd, name);
      if (!other.ok()) {
        if (ErrnoOf(other.status()) == ENOENT) continue;  // removed while we walk
        return other.status();
      }
      if (*other) continue;
      if (absl::Status s = Count(); !s.ok()) return s;
      FillFromStatx(stx, entry);
      if (!S_ISDIR(stx.stx_mode)) {
        if (absl::Status s = Visit(entry, -1, dir_fd, name); !s.ok()) return s;
        continue;
      }
      if (depth + 1 > limits_.max_depth) {
        return absl::ResourceExhaustedError(
            absl::StrCat("walk of ", root_, " is deeper than ", limits_.max_depth, " levels"));
      }
      int child = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) {
        // Gone, or swapped for a symlink or a file since the statx: skip it.
        if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) continue;
        return ErrnoError(errno, absl::StrCat("open ", Describe(entry)));
      }
      absl::Cleanup close_child = [child] { close(child); };
      struct statx opened;
      if (statx(child, "", AT_EMPTY_PATH, kMask, &opened) != 0) {
        return ErrnoError(errno, absl::StrCat("statx ", Describe(entry)));
      }
      // Something was mounted or swapped in between: leave it alone.
      if (opened.stx_ino != stx.stx_ino) continue;
      absl::StatusOr<bool> moved = OnOtherMount(opened, child, "");
      if (!moved.ok()) return moved.status();
      if (*moved) continue;
      if (absl::Status s = Visit(entry, child, -1, nullptr); !s.ok()) return s;
      if (absl::Status s = WalkDir(child, depth + 1, entry.path); !s.ok()) return s;
    }
  }

  const std::string& root_;
  const TreeLimits& limits_;
  const TreeVisitor& visit_;
  bool has_mnt_id_ = false;
  uint64_t mnt_id_ = 0;
  uint64_t dev_ = 0;
  size_t entries_ = 0;
};

absl::StatusOr<uint64_t> MountId(int dir_fd, const char* name, bool* mount_root, bool* is_dir) {
  struct statx stx = {};
  if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH),
            STATX_TYPE | STATX_MNT_ID, &stx) != 0) {
    return ErrnoError(errno, absl::StrCat("statx ", name));
  }
  // Both from Linux 5.8 on, like the mount id.
  *mount_root = Kernel().statx_mount_id && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  *is_dir = S_ISDIR(stx.stx_mode);
  int64_t id = MountIdOf(stx, dir_fd, name);
  if (id < 0) return ErrnoError(errno, absl::StrCat("mount id of ", name));
  return static_cast<uint64_t>(id);
}

// Removes everything inside the open directory `dir_fd` (on mount `mnt_id`).
absl::Status RemoveContents(int dir_fd, uint64_t mnt_id, const std::string& where, int depth,
                            int max_depth) {
  if (depth > max_depth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("directory tree deeper than ", max_depth, " at ", where));
  }
  int list_fd = dup(dir_fd);
  if (list_fd < 0) return ErrnoError(errno, "dup");
  DIR* dir = fdopendir(list_fd);
  if (dir == nullptr) {
    close(list_fd);
    return ErrnoError(errno, absl::StrCat("read directory ", where));
  }
  absl::Cleanup close_dir = [dir] { closedir(dir); };
  std::vector<std::string> names;
  errno = 0;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  if (errno != 0) return ErrnoError(errno, absl::StrCat("read directory ", where));

  for (const std::string& name : names) {
    std::string path = absl::StrCat(where, "/", name);
    bool mount_root = false, is_dir = false;
    absl::StatusOr<uint64_t> id = MountId(dir_fd, name.c_str(), &mount_root, &is_dir);
    if (!id.ok()) {
      if (ErrnoOf(id.status()) == ENOENT) continue;  // gone meanwhile
      return id.status();
    }
    if (!is_dir) {
      if (unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
        return ErrnoError(errno, absl::StrCat("remove ", path));
      }
      continue;
    }
    if (mount_root || *id != mnt_id) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is another mount; nothing below it was removed"));
    }
    int child = openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child < 0) {
      if (errno == ENOENT) continue;
      return ErrnoError(errno, absl::StrCat("open ", path));
    }
    absl::Status inner = RemoveContents(child, mnt_id, path, depth + 1, max_depth);
    close(child);
    if (!inner.ok()) return inner;
    if (unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return ErrnoError(errno, absl::StrCat("remove ", path));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WalkTree(const std::string& root, const TreeLimits& limits, const TreeVisitor& visit) {
  return Walker(root, limits, visit).Run();
}

absl::Status RemoveTreeBeneath(const std::string& root, const std::string& relative,
                               int max_depth) {
  std::string name;
  absl::StatusOr<int> opened_parent = OpenParentStrict(root, relative, &name);
  if (!opened_parent.ok()) return opened_parent.status();
  const int parent = *opened_parent;
  absl::Cleanup close_parent = [parent] { close(parent); };
  // Strictly beneath: a symlink or a mount point is refused here.
  int dir =
      OpenStrictlyBeneath(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return StrictError(errno, root, relative);
  absl::Cleanup close_dir = [dir] { close(dir); };
  bool mount_root = false, is_dir = false;
  absl::StatusOr<uint64_t> id = MountId(dir, "", &mount_root, &is_dir);
  if (!id.ok()) return id.status();
  const std::string what = absl::StrCat(root, "/", relative);
  absl::Status status = RemoveContents(dir, *id, what, 0, max_depth);
  if (!status.ok()) return status;
  if (unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return ErrnoError(errno, absl::StrCat("remove ", what));
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::volume::os
