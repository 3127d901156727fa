#include "pkg/volume/beneath.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
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

// `relative` opened strictly beneath `root`.
absl::StatusOr<ScopedFd> OpenStrictly(Syscalls& sys, const std::string& root,
                                      const std::string& relative, OpenHow how) {
  RETURN_IF_ERROR(CheckStrictRelative(root, relative));
  ASSIGN_OR_RETURN(ScopedFd root_fd, OpenRoot(sys, root));
  how.resolve = Resolution::kStrictlyBeneath;
  absl::StatusOr<ScopedFd> fd = Open(sys, root_fd.get(), relative, how);
  if (!fd.ok()) return StrictError(fd.status(), root, relative);
  return fd;
}

}  // namespace

absl::Status StrictError(const absl::Status& status, const std::string& root,
                         const std::string& relative) {
  std::optional<int> err = ErrnoOf(status);
  if (err == EXDEV || err == ELOOP) {
    return ErrnoErrorWithCode(
        absl::StatusCode::kInvalidArgument, *err,
        absl::StrCat(root, "/", relative, " leaves ", root, " (a '..', symlink or other mount)"));
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
  const std::string context = absl::StrCat("resolve \"", relative, "\" beneath ", root);
  if (relative.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": contains a NUL byte"));
  }
  if (!relative.empty() && relative[0] == '/') {
    return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, EXDEV,
                              absl::StrCat(context, ": the path is absolute"));
  }
  ASSIGN_OR_RETURN(ScopedFd root_fd, OpenRoot(sys, root));
  OpenHow how;
  how.resolve = Resolution::kBeneath;
  absl::StatusOr<ScopedFd> fd;
  // EAGAIN: a rename or mount raced with the resolution; the kernel asks for
  // a retry.
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd = Open(sys, root_fd.get(), relative.empty() ? "." : relative, how);
    if (fd.ok() || ErrnoOf(fd.status()) != EAGAIN) break;
  }
  if (!fd.ok()) {
    std::optional<int> err = ErrnoOf(fd.status());
    if (err == EXDEV) {
      return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, *err,
                                absl::StrCat(context, ": leaves the root"));
    }
    if (err == ELOOP) {
      return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, *err,
                                absl::StrCat(context, ": symlink loop or magic link"));
    }
    if (err == ENOSYS) return ErrnoErrorWithCode(absl::StatusCode::kUnimplemented, *err, context);
    return Annotate(fd.status(), context);
  }
  ASSIGN_OR_RETURN(std::string root_path, sys.PathOf(root_fd.get()));
  ASSIGN_OR_RETURN(std::string path, sys.PathOf(fd->get()));
  if (!IsPathBeneath(root_path, path)) {
    return absl::InternalError(
        absl::StrCat(context, ": resolved to ", path, ", outside ", root_path));
  }
  return path;
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
  if (!dir.ok()) return StrictError(dir.status(), root, relative);
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
