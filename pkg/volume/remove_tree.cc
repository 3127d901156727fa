#include "pkg/volume/remove_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/openat2.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

absl::StatusOr<uint64_t> MountId(int dir_fd, const char* name, bool* mount_root, bool* is_dir) {
  struct statx stx = {};
  if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH),
            STATX_TYPE | STATX_MNT_ID, &stx) != 0) {
    return ErrnoError(errno, absl::StrCat("statx ", name));
  }
  *mount_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  *is_dir = S_ISDIR(stx.stx_mode);
  return stx.stx_mnt_id;
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

absl::Status RemoveTreeBeneath(const std::string& root, const std::string& relative,
                               int max_depth) {
  std::string clean = CleanPath(relative);
  if (clean.empty() || clean == "." || clean[0] == '/' || clean == ".." ||
      clean.rfind("../", 0) == 0 || relative.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", relative, "' is not a directory strictly beneath ", root));
  }
  int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  absl::Cleanup close_root = [root_fd] { close(root_fd); };

  size_t slash = clean.rfind('/');
  std::string parent_rel = slash == std::string::npos ? "." : clean.substr(0, slash);
  std::string name = slash == std::string::npos ? clean : clean.substr(slash + 1);
  int parent = OpenStrictlyBeneath(root_fd, parent_rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) {
    int err = errno;
    if (err == EXDEV || err == ELOOP) {
      return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                                absl::StrCat(root, "/", parent_rel, " leaves ", root));
    }
    return ErrnoError(err, absl::StrCat("open ", root, "/", parent_rel));
  }
  absl::Cleanup close_parent = [parent] { close(parent); };
  int dir =
      OpenStrictlyBeneath(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) {
    int err = errno;
    if (err == EXDEV || err == ELOOP) {
      return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                                absl::StrCat(root, "/", clean, " is a symlink or another mount"));
    }
    return ErrnoError(err, absl::StrCat("open ", root, "/", clean));
  }
  absl::Cleanup close_dir = [dir] { close(dir); };
  bool mount_root = false, is_dir = false;
  absl::StatusOr<uint64_t> id = MountId(dir, "", &mount_root, &is_dir);
  if (!id.ok()) return id.status();
  if (mount_root) {
    return absl::FailedPreconditionError(
        absl::StrCat(root, "/", clean, " is a mount point; nothing removed"));
  }
  absl::Status status = RemoveContents(dir, *id, absl::StrCat(root, "/", clean), 0, max_depth);
  if (!status.ok()) return status;
  if (unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return ErrnoError(errno, absl::StrCat("remove ", root, "/", clean));
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::volume
