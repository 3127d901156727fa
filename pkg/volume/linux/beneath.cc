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
namespace {

absl::StatusOr<std::string> ReadFdPath(int fd) {
  std::string link = absl::StrCat("/proc/self/fd/", fd);
  std::string buf(4096, '\0');
  ssize_t n = readlink(link.c_str(), buf.data(), buf.size());
  if (n < 0) return ErrnoError(errno, absl::StrCat("readlink ", link));
  if (static_cast<size_t>(n) >= buf.size()) {
    return ErrnoError(ENAMETOOLONG, absl::StrCat("readlink ", link));
  }
  buf.resize(n);
  return buf;
}

// Opens `relative` beneath `root` (O_PATH); on success `*root_fd_out` is the
// open root, which the caller closes too.
absl::StatusOr<int> OpenBeneathImpl(const std::string& root, absl::string_view relative,
                                    bool no_xdev, int* root_fd_out) {
  if (root.empty()) return absl::InvalidArgumentError("root path is empty");
  if (root.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("root path contains a NUL byte");
  }
  if (relative.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("relative path contains a NUL byte");
  }
  if (!relative.empty() && relative[0] == '/') {
    return absl::InvalidArgumentError(absl::StrCat("relative path \"", relative, "\" is absolute"));
  }
  int root_fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  absl::Cleanup close_root = [root_fd] { close(root_fd); };

  std::string rel = relative.empty() ? std::string(".") : std::string(relative);
  const uint64_t resolve =
      RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (no_xdev ? RESOLVE_NO_XDEV : 0);
  int fd = -1;
  int err = 0;
  // EAGAIN: a rename or mount raced with the walk; the kernel asks us to retry.
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd = OpenAt2(root_fd, rel.c_str(), O_PATH | O_CLOEXEC, 0, resolve);
    err = fd < 0 ? errno : 0;
    if (err != EAGAIN) break;
  }
  std::string context = absl::StrCat("resolve \"", relative, "\" beneath ", root);
  if (fd < 0) {
    switch (err) {
      case EXDEV:
        return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                                  absl::StrCat(context, ": leaves the root"));
      case ELOOP:
        return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                                  absl::StrCat(context, ": symlink loop or magic link"));
      case ENOSYS:
        return ErrnoErrorWithCode(absl::StatusCode::kUnimplemented, err, context);
      default:
        return ErrnoError(err, context);
    }
  }
  std::move(close_root).Cancel();
  *root_fd_out = root_fd;
  return fd;
}

// An open file descriptor, closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

absl::Status CheckRelative(const std::string& root, const std::string& relative) {
  if (relative.empty() || relative == "." || relative[0] == '/' ||
      relative.find('\0') != std::string::npos || CleanPath(relative) != relative) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", relative, "\" is not a clean path strictly beneath ", root));
  }
  return absl::OkStatus();
}

// `relative` opened strictly beneath `root` with `flags`, or its error.
absl::StatusOr<int> OpenStrict(const std::string& root, const std::string& relative,
                               uint64_t flags) {
  if (absl::Status s = CheckRelative(root, relative); !s.ok()) return s;
  Fd root_fd(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  int fd = OpenStrictlyBeneath(root_fd.get(), relative.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return StrictError(errno, root, relative);
  return fd;
}

}  // namespace

absl::Status StrictError(int err, const std::string& root, const std::string& relative) {
  if (err == EXDEV || err == ELOOP) {
    return ErrnoErrorWithCode(
        absl::StatusCode::kInvalidArgument, err,
        absl::StrCat(root, "/", relative, " leaves ", root, " (a '..', symlink or other mount)"));
  }
  return ErrnoError(err, absl::StrCat("open ", root, "/", relative));
}

absl::StatusOr<int> OpenParentStrict(const std::string& root, const std::string& relative,
                                     std::string* name) {
  if (absl::Status s = CheckRelative(root, relative); !s.ok()) return s;
  size_t slash = relative.rfind('/');
  *name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  if (*name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("\"", relative, "\" leaves ", root));
  }
  std::string parent = slash == std::string::npos ? "." : relative.substr(0, slash);
  Fd root_fd(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  int fd = OpenStrictlyBeneath(root_fd.get(), parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return StrictError(errno, root, parent);
  return fd;
}

int OpenAt2(int dir_fd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  if (!Kernel().openat2) return WalkBeneath(dir_fd, path, flags, mode, resolve);
  open_how how = {};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dir_fd, path, &how, sizeof(how)));
}

absl::StatusOr<std::string> ResolveBeneath(const std::string& root, absl::string_view relative) {
  int root_fd = -1;
  absl::StatusOr<int> fd = OpenBeneathImpl(root, relative, false, &root_fd);
  if (!fd.ok()) return fd.status();
  Fd close_fd(*fd);
  Fd close_root(root_fd);
  std::string context = absl::StrCat("resolve \"", relative, "\" beneath ", root);
  absl::StatusOr<std::string> root_path = ReadFdPath(root_fd);
  if (!root_path.ok()) return root_path.status();
  absl::StatusOr<std::string> path = ReadFdPath(*fd);
  if (!path.ok()) return path.status();
  if (!IsPathBeneath(*root_path, *path)) {
    return absl::InternalError(
        absl::StrCat(context, ": kernel answered ", *path, ", outside ", *root_path));
  }
  return path;
}

absl::StatusOr<int> OpenPathBeneath(const std::string& root, absl::string_view relative,
                                    bool no_xdev) {
  int root_fd = -1;
  absl::StatusOr<int> fd = OpenBeneathImpl(root, relative, no_xdev, &root_fd);
  if (root_fd >= 0) close(root_fd);
  return fd;
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
  return info;
}

absl::Status MkdirBeneath(const std::string& root, const std::string& relative, uint32_t mode) {
  std::string name;
  absl::StatusOr<int> parent = OpenParentStrict(root, relative, &name);
  if (!parent.ok()) return parent.status();
  Fd parent_fd(*parent);
  if (mkdirat(parent_fd.get(), name.c_str(), mode) != 0) {
    return ErrnoError(errno, absl::StrCat("mkdir ", root, "/", relative));
  }
  return absl::OkStatus();
}

absl::StatusOr<FileInfo> StatBeneath(const std::string& root, const std::string& relative) {
  absl::StatusOr<int> fd = OpenStrict(root, relative, O_PATH);
  if (!fd.ok()) return fd.status();
  Fd path_fd(*fd);
  return StatAt(path_fd.get(), "", absl::StrCat(root, "/", relative));
}

absl::StatusOr<std::string> ReadFileBeneath(const std::string& root, const std::string& relative,
                                            size_t max_bytes) {
  absl::StatusOr<int> fd = OpenStrict(root, relative, O_RDONLY | O_NONBLOCK);
  if (!fd.ok()) return fd.status();
  Fd file(*fd);
  struct stat st;
  if (fstat(file.get(), &st) != 0)
    return ErrnoError(errno, absl::StrCat("stat ", root, "/", relative));
  if (!S_ISREG(st.st_mode)) {
    return ErrnoError(EINVAL, absl::StrCat(root, "/", relative, " is not a regular file"));
  }
  std::string text(max_bytes, '\0');
  size_t have = 0;
  while (have < max_bytes) {
    ssize_t n = read(file.get(), text.data() + have, max_bytes - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, absl::StrCat("read ", root, "/", relative));
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  text.resize(have);
  return text;
}

absl::Status MakeMarkedDirBeneath(const std::string& root, const std::string& relative,
                                  const MarkedDirSpec& spec) {
  std::string name;
  absl::StatusOr<int> parent = OpenParentStrict(root, relative, &name);
  if (!parent.ok()) return parent.status();
  Fd parent_fd(*parent);
  const std::string what = absl::StrCat(root, "/", relative);
  if (spec.marker_name.empty() || spec.marker_name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("bad marker name \"", spec.marker_name, "\""));
  }
  if (mkdirat(parent_fd.get(), name.c_str(), 0700) != 0) {
    return ErrnoError(errno, absl::StrCat("mkdir ", what));
  }
  int opened = OpenStrictlyBeneath(parent_fd.get(), name.c_str(),
                                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (opened < 0) {
    int err = errno;
    // Ours is gone or replaced by something that is no directory: leave it.
    return StrictError(err, root, relative);
  }
  Fd dir(opened);
  struct stat st;
  if (fstat(dir.get(), &st) != 0) return ErrnoError(errno, absl::StrCat("stat ", what));
  if (st.st_uid != geteuid()) {
    // Renamed into place between the mkdir and the open: not ours to change.
    return absl::FailedPreconditionError(
        absl::StrCat(what, " was replaced while it was being created; nothing changed"));
  }
  bool marker_made = false;
  auto fail = [&](int err, absl::string_view step) {
    if (marker_made) unlinkat(dir.get(), spec.marker_name.c_str(), 0);
    // Only an empty directory goes: nothing anyone put there is lost.
    std::string left;
    if (unlinkat(parent_fd.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      left = absl::StrCat(" (and it was left behind: ", std::strerror(errno), ")");
    }
    return ErrnoError(err, absl::StrCat(step, " ", what, left));
  };
  if (spec.uid.has_value() || spec.gid.has_value()) {
    uid_t uid = spec.uid.has_value() ? *spec.uid : static_cast<uid_t>(-1);
    gid_t gid = spec.gid.has_value() ? *spec.gid : static_cast<gid_t>(-1);
    if (fchown(dir.get(), uid, gid) != 0) return fail(errno, "chown");
  }
  if (fchmod(dir.get(), spec.mode & 07777) != 0) return fail(errno, "chmod");
  Fd marker(openat(dir.get(), spec.marker_name.c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, spec.marker_mode & 07777));
  if (marker.get() < 0) return fail(errno, "create marker in");
  marker_made = true;
  if (fchmod(marker.get(), spec.marker_mode & 07777) != 0) return fail(errno, "chmod marker in");
  size_t done = 0;
  while (done < spec.marker_content.size()) {
    ssize_t n =
        write(marker.get(), spec.marker_content.data() + done, spec.marker_content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(n < 0 ? errno : EIO, "write marker in");
    done += static_cast<size_t>(n);
  }
  if (fsync(marker.get()) != 0) return fail(errno, "sync marker in");
  if (fsync(dir.get()) != 0) return fail(errno, "sync");
  return absl::OkStatus();
}

}  // namespace lustre_csi::volume::os
