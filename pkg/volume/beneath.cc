#include "pkg/volume/beneath.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pkg/base/status_macros.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

// A directory opened to resolve from.
absl::StatusOr<ScopedFd> OpenRoot(Syscalls& sys, const std::string& root) {
  if (root.empty() || root[0] != '/' || root.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("root \"", root, "\" is not an absolute path"));
  }
  OpenHow how;
  how.directory = true;
  return Open(sys, kAtCwd, root, how);
}

absl::Status CheckStrictRelative(const std::string& root, const std::string& relative) {
  if (relative.empty() || relative == "." || relative[0] == '/' ||
      relative.find('\0') != std::string::npos || CleanPath(relative) != relative) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", relative, "\" is not a clean path strictly beneath ", root));
  }
  return absl::OkStatus();
}

// `relative` opened strictly beneath the open directory `root_fd` ("."
// for the root itself), retried on EAGAIN (a rename or mount raced with the
// resolution; the kernel asks for a retry).
absl::StatusOr<ScopedFd> OpenStrictlyAt(Syscalls& sys, int root_fd, const std::string& relative,
                                        OpenHow how) {
  how.resolve = Resolution::kStrictlyBeneath;
  absl::StatusOr<ScopedFd> fd;
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd = Open(sys, root_fd, relative, how);
    if (fd.ok() || ErrnoOf(fd.status()) != EAGAIN) break;
  }
  return fd;
}

// `relative` opened strictly beneath `root`.
absl::StatusOr<ScopedFd> OpenStrictly(Syscalls& sys, const std::string& root,
                                      const std::string& relative, OpenHow how) {
  RETURN_IF_ERROR(CheckStrictRelative(root, relative));
  ASSIGN_OR_RETURN(ScopedFd root_fd, OpenRoot(sys, root));
  absl::StatusOr<ScopedFd> fd = OpenStrictlyAt(sys, root_fd.get(), relative, how);
  if (!fd.ok()) return StrictError(sys, fd.status(), root, relative);
  return fd;
}

// Which component of `relative` a strict resolution beneath `root` refused,
// found by a second walk one level at a time.
std::string DescribeRefusal(Syscalls& sys, const std::string& root, const std::string& relative) {
  constexpr absl::string_view kVague = "it would leave the root (a '..', symlink or other mount)";
  if (!relative.empty() && relative[0] == '/') return "the path is absolute";
  absl::StatusOr<ScopedFd> dir = OpenRoot(sys, root);
  if (!dir.ok()) return std::string(kVague);
  std::string prefix;
  for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    prefix = prefix.empty() ? std::string(part) : absl::StrCat(prefix, "/", part);
    if (part == ".") continue;
    if (part == "..") return absl::StrCat("\"", prefix, "\" goes up");
    absl::StatusOr<FileInfo> info = sys.StatAt(dir->get(), std::string(part));
    if (!info.ok()) break;
    if (IsSymlinkMode(info->mode)) return absl::StrCat("\"", prefix, "\" is a symlink");
    absl::StatusOr<ScopedFd> next = OpenStrictlyAt(sys, dir->get(), std::string(part), OpenHow());
    if (!next.ok()) {
      if (ErrnoOf(next.status()) == EXDEV) {
        return absl::StrCat("\"", prefix, "\" is another mount");
      }
      break;
    }
    dir = std::move(next);
  }
  return std::string(kVague);
}

}  // namespace

absl::Status StrictError(Syscalls& sys, const absl::Status& status, const std::string& root,
                         const std::string& relative) {
  std::optional<int> err = ErrnoOf(status);
  if (err == EXDEV || err == ELOOP) {
    return ErrnoErrorWithCode(
        absl::StatusCode::kInvalidArgument, *err,
        absl::StrCat(root, "/", relative, " is refused: ", DescribeRefusal(sys, root, relative),
                     "; paths beneath a file system's root are resolved without following any "
                     "symlink, as a Lustre server resolves a sub-dir mount"));
  }
  return status;
}

absl::StatusOr<ScopedFd> OpenParentStrictly(Syscalls& sys, const std::string& root,
                                            const std::string& relative, std::string* name) {
  RETURN_IF_ERROR(CheckStrictRelative(root, relative));
  size_t slash = relative.rfind('/');
  *name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  if (*name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("\"", relative, "\" leaves ", root));
  }
  if (slash == std::string::npos) return OpenRoot(sys, root);
  OpenHow how;
  how.directory = true;
  return OpenStrictly(sys, root, relative.substr(0, slash), how);
}

absl::StatusOr<std::string> ResolveBeneath(Syscalls& sys, const std::string& root,
                                           const std::string& relative) {
  if (!relative.empty()) RETURN_IF_ERROR(CheckStrictRelative(root, relative));
  ASSIGN_OR_RETURN(ScopedFd root_fd, OpenRoot(sys, root));
  absl::StatusOr<ScopedFd> fd =
      OpenStrictlyAt(sys, root_fd.get(), relative.empty() ? "." : relative, OpenHow());
  if (!fd.ok()) {
    return Annotate(StrictError(sys, fd.status(), root, relative),
                    absl::StrCat("resolve \"", relative, "\" beneath ", root));
  }
  ASSIGN_OR_RETURN(std::string root_path, sys.PathOf(root_fd.get()));
  ASSIGN_OR_RETURN(std::string path, sys.PathOf(fd->get()));
  if (!IsPathBeneath(root_path, path)) {
    return absl::InternalError(absl::StrCat("resolve \"", relative, "\" beneath ", root,
                                            ": resolved to ", path, ", outside ", root_path));
  }
  return path;
}

absl::Status MkdirAllBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                             uint32_t mode) {
  RETURN_IF_ERROR(CheckStrictRelative(root, relative));
  ASSIGN_OR_RETURN(ScopedFd dir, OpenRoot(sys, root));
  std::string done;
  for (absl::string_view part : absl::StrSplit(relative, '/')) {
    done = done.empty() ? std::string(part) : absl::StrCat(done, "/", part);
    if (part == "..") {
      return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, EXDEV,
                                absl::StrCat(root, "/", done, " goes up out of ", root));
    }
    absl::Status made = sys.MkdirAt(dir.get(), std::string(part), mode);
    if (!made.ok() && !absl::IsAlreadyExists(made)) {
      return Annotate(made, absl::StrCat("mkdir ", root, "/", done));
    }
    OpenHow how;
    how.directory = true;
    absl::StatusOr<ScopedFd> next = OpenStrictlyAt(sys, dir.get(), std::string(part), how);
    if (!next.ok()) {
      if (ErrnoOf(next.status()) == ENOTDIR) {
        return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, ENOTDIR,
                                  absl::StrCat("make ", root, "/", relative, ": ", root, "/", done,
                                               " is not a directory"));
      }
      return Annotate(StrictError(sys, next.status(), root, done),
                      absl::StrCat("make ", root, "/", relative));
    }
    dir = std::move(*next);
  }
  return absl::OkStatus();
}

absl::Status BindDirBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                            const std::string& target, unsigned long flags) {
  absl::Status bound = sys.BindBeneath(root, relative, target, flags);
  return bound.ok() ? bound : StrictError(sys, bound, root, relative);
}

absl::Status MkdirBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                          uint32_t mode) {
  std::string name;
  ASSIGN_OR_RETURN(ScopedFd parent, OpenParentStrictly(sys, root, relative, &name));
  return Annotate(sys.MkdirAt(parent.get(), name, mode), absl::StrCat(root, "/", relative));
}

absl::StatusOr<FileInfo> StatBeneath(Syscalls& sys, const std::string& root,
                                     const std::string& relative) {
  ASSIGN_OR_RETURN(ScopedFd fd, OpenStrictly(sys, root, relative, OpenHow()));
  return sys.StatAt(fd.get(), "");
}

absl::StatusOr<std::string> ReadFileBeneath(Syscalls& sys, const std::string& root,
                                            const std::string& relative, size_t max_bytes) {
  OpenHow how;
  how.access = OpenAccess::kRead;
  ASSIGN_OR_RETURN(ScopedFd file, OpenStrictly(sys, root, relative, how));
  ASSIGN_OR_RETURN(FileInfo info, sys.StatAt(file.get(), ""));
  if ((info.mode & kFileTypeMask) != kTypeRegular) {
    return ErrnoError(EINVAL, absl::StrCat(root, "/", relative, " is not a regular file"));
  }
  return sys.Read(file.get(), max_bytes);
}

absl::Status MakeMarkedDirBeneath(Syscalls& sys, const std::string& root,
                                  const std::string& relative, const MarkedDirSpec& spec) {
  std::string name;
  ASSIGN_OR_RETURN(ScopedFd parent, OpenParentStrictly(sys, root, relative, &name));
  const std::string what = absl::StrCat(root, "/", relative);
  if (spec.marker_name.empty() || spec.marker_name.find('/') != std::string::npos ||
      spec.marker_name == "." || spec.marker_name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("bad marker name \"", spec.marker_name, "\""));
  }
  RETURN_IF_ERROR(Annotate(sys.MkdirAt(parent.get(), name, 0700), what));
  OpenHow dir_how;
  dir_how.access = OpenAccess::kRead;
  dir_how.directory = true;
  dir_how.nofollow = true;
  dir_how.resolve = Resolution::kStrictlyBeneath;
  absl::StatusOr<ScopedFd> dir = Open(sys, parent.get(), name, dir_how);
  // Ours is gone or replaced by something that is no directory: leave it.
  if (!dir.ok()) return StrictError(sys, dir.status(), root, relative);
  ASSIGN_OR_RETURN(FileInfo info, sys.StatAt(dir->get(), ""));
  if (info.uid != sys.EffectiveUid()) {
    // Renamed into place between the mkdir and the open: not ours to change.
    return absl::FailedPreconditionError(
        absl::StrCat(what, " was replaced while it was being created; nothing changed"));
  }
  bool marker_made = false;
  auto fail = [&](const absl::Status& status, const char* step) {
    if (marker_made) sys.UnlinkAt(dir->get(), spec.marker_name, false).IgnoreError();
    // Only an empty directory goes: nothing anyone put there is lost.
    absl::Status removed = sys.UnlinkAt(parent.get(), name, true);
    std::string left;
    if (!removed.ok() && !absl::IsNotFound(removed)) {
      left = absl::StrCat(" (and it was left behind: ", removed.message(), ")");
    }
    return Annotate(status, absl::StrCat(step, " ", what, left));
  };
  if (spec.uid.has_value() || spec.gid.has_value()) {
    if (absl::Status s = sys.ChownAt(dir->get(), "", spec.uid, spec.gid); !s.ok()) {
      return fail(s, "chown");
    }
  }
  if (absl::Status s = sys.ChmodAt(dir->get(), "", spec.mode & 07777); !s.ok()) {
    return fail(s, "chmod");
  }
  OpenHow marker_how;
  marker_how.access = OpenAccess::kCreate;
  marker_how.nofollow = true;
  marker_how.mode = spec.marker_mode & 07777;
  absl::StatusOr<ScopedFd> marker = Open(sys, dir->get(), spec.marker_name, marker_how);
  if (!marker.ok()) return fail(marker.status(), "create marker in");
  marker_made = true;
  if (absl::Status s = sys.ChmodAt(marker->get(), "", spec.marker_mode & 07777); !s.ok()) {
    return fail(s, "chmod marker in");
  }
  if (absl::Status s = sys.Write(marker->get(), spec.marker_content); !s.ok()) {
    return fail(s, "write marker in");
  }
  if (absl::Status s = sys.Fsync(marker->get()); !s.ok()) return fail(s, "sync marker in");
  if (absl::Status s = sys.Fsync(dir->get()); !s.ok()) return fail(s, "sync");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListDir(Syscalls& sys, const std::string& dir) {
  OpenHow how;
  how.access = OpenAccess::kRead;
  how.directory = true;
  ASSIGN_OR_RETURN(ScopedFd fd, Open(sys, kAtCwd, dir, how));
  ASSIGN_OR_RETURN(std::vector<std::string> names, sys.ReadDir(fd.get(), 0));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace lustre_csi::volume
