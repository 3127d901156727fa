#include "pkg/volume/owned_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/openat2.h"
#include "pkg/volume/remove_tree.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

constexpr size_t kMaxMarker = 4096;

absl::Status CheckRelative(const std::string& root, const std::string& relative) {
  std::string clean = CleanPath(relative);
  if (clean.empty() || clean == "." || clean[0] == '/' || clean == ".." ||
      clean.rfind("../", 0) == 0 || relative.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", relative, "' is not a directory strictly beneath ", root));
  }
  return absl::OkStatus();
}

std::string FormatMarker(const DirOwner& owner) {
  std::string text = absl::StrCat(
      "volume=", owner.volume, "\non-delete=", owner.delete_on_release ? "delete" : "retain", "\n");
  if (!owner.request.empty()) absl::StrAppend(&text, "request=", owner.request, "\n");
  return text;
}

absl::StatusOr<DirOwner> ParseMarker(const std::string& text) {
  DirOwner owner;
  bool have_volume = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, "volume=")) {
      owner.volume = std::string(line);
      have_volume = true;
    } else if (absl::ConsumePrefix(&line, "on-delete=")) {
      owner.delete_on_release = line == "delete";
    } else if (absl::ConsumePrefix(&line, "request=")) {
      owner.request = std::string(line);
    }
  }
  if (!have_volume) return absl::DataLossError("owner marker names no volume");
  return owner;
}

// Opens `relative` beneath the open `root_fd` as a directory.
absl::StatusOr<int> OpenDir(int root_fd, const std::string& root, const std::string& relative) {
  int fd =
      OpenStrictlyBeneath(root_fd, CleanPath(relative).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == EXDEV || err == ELOOP) {
      return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                                absl::StrCat(root, "/", relative, " leaves ", root));
    }
    return ErrnoError(err, absl::StrCat("open ", root, "/", relative));
  }
  return fd;
}

absl::StatusOr<std::optional<DirOwner>> ReadMarker(int dir_fd) {
  int fd = openat(dir_fd, kOwnerMarkerName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<DirOwner>();
    return ErrnoError(errno, "open owner marker");
  }
  std::string text(kMaxMarker, '\0');
  ssize_t n = read(fd, text.data(), text.size());
  close(fd);
  if (n < 0) return ErrnoError(errno, "read owner marker");
  text.resize(static_cast<size_t>(n));
  absl::StatusOr<DirOwner> owner = ParseMarker(text);
  if (!owner.ok()) return owner.status();
  return std::optional<DirOwner>(*owner);
}

}  // namespace

absl::Status CreateOwnedDir(const std::string& root, const std::string& relative,
                            const OwnedDirOptions& options, const DirOwner& owner) {
  if (absl::Status s = CheckRelative(root, relative); !s.ok()) return s;
  int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  absl::Cleanup close_root = [root_fd] { close(root_fd); };

  // Walk down, creating missing parents; each step is opened beneath the
  // previous one, so no symlink or mount can redirect the walk.
  std::vector<std::string> parts = absl::StrSplit(CleanPath(relative), '/');
  int dir_fd = dup(root_fd);
  for (size_t i = 0; i < parts.size(); ++i) {
    bool last = i + 1 == parts.size();
    bool created = false;
    if (mkdirat(dir_fd, parts[i].c_str(), last ? 0700 : 0755) == 0) {
      created = true;
    } else if (errno != EEXIST) {
      int err = errno;
      close(dir_fd);
      return ErrnoError(err, absl::StrCat("create ", root, "/", relative));
    }
    int next = OpenStrictlyBeneath(dir_fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = errno;
    close(dir_fd);
    if (next < 0) {
      if (err == EXDEV || err == ELOOP || err == ENOTDIR) {
        return ErrnoErrorWithCode(
            absl::StatusCode::kInvalidArgument, err,
            absl::StrCat(root, "/", relative, " leaves ", root, " or is not a directory"));
      }
      return ErrnoError(err, absl::StrCat("open ", root, "/", relative));
    }
    dir_fd = next;
    if (last && !created) {
      absl::StatusOr<std::optional<DirOwner>> existing = ReadMarker(dir_fd);
      close(dir_fd);
      if (!existing.ok()) return existing.status();
      if (existing->has_value() && (*existing)->volume == owner.volume) {
        const std::string& recorded = (*existing)->request;
        if (recorded.empty() || owner.request.empty() || recorded == owner.request) {
          return absl::OkStatus();
        }
        return absl::AlreadyExistsError(
            absl::StrCat("volume ", owner.volume, " already exists (", root, "/", relative,
                         ") and was created with other parameters or another capacity"));
      }
      return absl::AlreadyExistsError(absl::StrCat(
          root, "/", relative, " already exists and was not created for volume ", owner.volume,
          existing->has_value() ? absl::StrCat(" (it belongs to ", (*existing)->volume, ")")
                                : " (no owner marker)"));
    }
  }
  absl::Cleanup close_dir = [dir_fd] { close(dir_fd); };
  // Owner first, then mode: chown clears setgid.
  if (options.uid.has_value() || options.gid.has_value()) {
    uid_t uid = options.uid.has_value() ? *options.uid : static_cast<uid_t>(-1);
    gid_t gid = options.gid.has_value() ? *options.gid : static_cast<gid_t>(-1);
    if (fchown(dir_fd, uid, gid) != 0) return ErrnoError(errno, "set sub-dir owner");
  }
  if (fchmod(dir_fd, options.mode & 07777) != 0) return ErrnoError(errno, "set sub-dir mode");
  int marker =
      openat(dir_fd, kOwnerMarkerName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (marker < 0) return ErrnoError(errno, "create owner marker");
  std::string text = FormatMarker(owner);
  ssize_t n = write(marker, text.data(), text.size());
  int err = errno;
  bool synced = fsync(marker) == 0;
  close(marker);
  if (n != static_cast<ssize_t>(text.size()) || !synced) {
    return ErrnoError(n < 0 ? err : EIO, "write owner marker");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<DirOwner>> ReadDirOwner(const std::string& root,
                                                     const std::string& relative) {
  if (absl::Status s = CheckRelative(root, relative); !s.ok()) return s;
  int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  absl::Cleanup close_root = [root_fd] { close(root_fd); };
  absl::StatusOr<int> dir = OpenDir(root_fd, root, relative);
  if (!dir.ok()) return dir.status();
  absl::StatusOr<std::optional<DirOwner>> owner = ReadMarker(*dir);
  close(*dir);
  return owner;
}

absl::StatusOr<bool> ReleaseOwnedDir(const std::string& root, const std::string& relative,
                                     const std::string& volume) {
  absl::StatusOr<std::optional<DirOwner>> owner = ReadDirOwner(root, relative);
  if (!owner.ok()) {
    if (owner.status().code() == absl::StatusCode::kNotFound) return false;
    return owner.status();
  }
  if (!owner->has_value() || (*owner)->volume != volume || !(*owner)->delete_on_release) {
    return false;
  }
  absl::Status removed = RemoveTreeBeneath(root, relative);
  if (!removed.ok()) return removed;
  return true;
}

}  // namespace lustre_csi::volume
