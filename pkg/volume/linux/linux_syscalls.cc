#include "pkg/volume/linux/linux_syscalls.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/beneath.h"
#include "pkg/volume/linux/inotify_dir_watch.h"
#include "pkg/volume/linux/kernel_probe.h"
#include "pkg/volume/linux/mountinfo_file.h"
#include "pkg/volume/linux/staged_bind.h"
#include "pkg/volume/linux/walk_beneath.h"

namespace lustre_csi::volume {
namespace {

// The flag and file-type values syscalls.h names, as the kernel defines them.
static_assert(kMsRdonly == MS_RDONLY && kMsNosuid == MS_NOSUID && kMsNodev == MS_NODEV &&
              kMsNoexec == MS_NOEXEC && kMsRemount == MS_REMOUNT && kMsNoatime == MS_NOATIME &&
              kMsNodiratime == MS_NODIRATIME && kMsBind == MS_BIND && kMsRec == MS_REC &&
              kMsPrivate == MS_PRIVATE && kMsRelatime == MS_RELATIME &&
              kMsStrictatime == MS_STRICTATIME && kMsMove == MS_MOVE &&
              kMsUnbindable == MS_UNBINDABLE && kMsSlave == MS_SLAVE && kMsShared == MS_SHARED);
#ifdef MS_NOSYMFOLLOW
static_assert(kMsNosymfollow == MS_NOSYMFOLLOW);
#endif
static_assert(kMntForce == MNT_FORCE && kMntDetach == MNT_DETACH &&
              kUmountNofollow == UMOUNT_NOFOLLOW);
static_assert(kFileTypeMask == S_IFMT && kTypeSocket == S_IFSOCK && kTypeSymlink == S_IFLNK &&
              kTypeRegular == S_IFREG && kTypeDirectory == S_IFDIR);

const char* OrNull(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

// The mount_setattr(2) attributes of per-mount MS_* flags.
struct mount_attr MountAttrOf(unsigned long flags) {
  struct mount_attr attr = {};
  if (flags & MS_RDONLY) attr.attr_set |= MOUNT_ATTR_RDONLY;
  if (flags & MS_NOSUID) attr.attr_set |= MOUNT_ATTR_NOSUID;
  if (flags & MS_NODEV) attr.attr_set |= MOUNT_ATTR_NODEV;
  if (flags & MS_NOEXEC) attr.attr_set |= MOUNT_ATTR_NOEXEC;
  if (flags & MS_NODIRATIME) attr.attr_set |= MOUNT_ATTR_NODIRATIME;
  if (flags & (MS_NOATIME | MS_RELATIME | MS_STRICTATIME)) {
    attr.attr_clr |= MOUNT_ATTR__ATIME;
    if (flags & MS_NOATIME) {
      attr.attr_set |= MOUNT_ATTR_NOATIME;
    } else if (flags & MS_STRICTATIME) {
      attr.attr_set |= MOUNT_ATTR_STRICTATIME;
    } else {
      attr.attr_set |= MOUNT_ATTR_RELATIME;
    }
  }
  return attr;
}

absl::Status NoMountApi() {
  return absl::UnimplementedError(
      "this kernel has no mount_setattr (Linux 5.12) and no staging directory was given for "
      "bind mounts with flags");
}

absl::Status CallError(const char* call, const std::string& what) {
  if (errno == ENOSYS) return absl::UnimplementedError(absl::StrCat(call, ": not supported"));
  return ErrnoError(errno, absl::StrCat(what, ": ", call));
}

// Attaches the detached copy `tree` (from open_tree(2), closed here) at
// `target`, its per-mount `flags` (and private propagation when
// `make_private`) set first with mount_setattr(2): the copy is complete
// before it appears anywhere.
absl::Status AttachCopy(int tree, unsigned long flags, bool recursive, bool make_private,
                        const std::string& target, const std::string& what) {
  // Closing the descriptor of a copy never attached dissolves it.
  absl::Cleanup close_tree = [tree] { close(tree); };
  struct mount_attr attr = MountAttrOf(flags);
  if (make_private) attr.propagation = MS_PRIVATE;
  if ((attr.attr_set != 0 || attr.attr_clr != 0 || attr.propagation != 0) &&
      mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
                    sizeof(attr)) != 0) {
    return CallError("mount_setattr", what);
  }
  if (move_mount(tree, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return CallError("move_mount", what);
  }
  return absl::OkStatus();
}

// `relative` ("" for `root` itself) opened (O_PATH) strictly beneath the
// directory `root`: no symlink, "..", magic link or other mount on the way.
absl::StatusOr<int> OpenSourceStrictly(const std::string& root, const std::string& relative) {
  if (root.find('\0') != std::string::npos || relative.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("path contains a NUL byte");
  }
  int root_fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  absl::Cleanup close_root = [root_fd] { close(root_fd); };
  const std::string rel = relative.empty() ? "." : relative;
  int fd = -1;
  int err = 0;
  // EAGAIN: a rename or mount raced with the resolution; retry.
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd = os::OpenStrictlyBeneath(root_fd, rel.c_str(), O_PATH | O_CLOEXEC);
    err = fd < 0 ? errno : 0;
    if (err != EAGAIN) break;
  }
  if (fd >= 0) return fd;
  std::string context = absl::StrCat("resolve \"", relative, "\" strictly beneath ", root);
  if (err == EXDEV || err == ELOOP) {
    return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err, context);
  }
  return ErrnoError(err, context);
}

class LinuxSyscalls : public Syscalls {
 public:
  explicit LinuxSyscalls(LinuxSyscallsOptions options)
      : isolation_(options.isolation != nullptr ? options.isolation : OnTheCallingThread()) {
    if (!options.bind_staging_dir.empty()) {
      staging_ = std::make_unique<os::BindStaging>(options.bind_staging_dir);
    }
  }

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    if (mount(OrNull(source), target.c_str(), OrNull(fstype), flags, OrNull(data)) != 0) {
      return ErrnoError(errno, absl::StrCat("mount ", source, " on ", target, " (type ",
                                            fstype.empty() ? "none" : fstype, ", flags 0x",
                                            absl::Hex(flags), ")"));
    }
    return absl::OkStatus();
  }

  absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                  bool recursive, unsigned long flags) override {
    const std::string what =
        absl::StrCat("bind mount of ", source, " on ", target, " (flags 0x", absl::Hex(flags), ")");
    if (!os::Kernel().mount_api) {
      // The staged bind is not recursive: a recursive one is left to the
      // caller's bind and remount.
      if (staging_ == nullptr || recursive) return NoMountApi();
      return staging_->Bind(source, target, flags, /*make_private=*/false,
                            /*keep_source_flags=*/true);
    }
    int tree = open_tree(AT_FDCWD, source.c_str(),
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
    if (tree < 0) return CallError("open_tree", what);
    return AttachCopy(tree, flags, recursive, /*make_private=*/false, target, what);
  }

  absl::Status BindBeneath(const std::string& root, const std::string& relative,
                           const std::string& target, unsigned long flags) override {
    if (!os::Kernel().mount_api && staging_ == nullptr) return NoMountApi();
    absl::StatusOr<int> source = OpenSourceStrictly(root, relative);
    if (!source.ok()) return source.status();
    absl::Cleanup close_source = [fd = *source] { close(fd); };
    const std::string what = absl::StrCat("bind mount of \"", relative, "\" beneath ", root, " on ",
                                          target, " (flags 0x", absl::Hex(flags), ")");
    absl::Status bound;
    if (!os::Kernel().mount_api) {
      // The roots bound from are client mounts this driver made with
      // client-wide options only: no per-mount flags of their own to keep,
      // and no statfs to ask a Lustre server for them.
      bound = staging_->Bind(absl::StrCat("/proc/self/fd/", *source), target, flags,
                             /*make_private=*/true, /*keep_source_flags=*/false);
    } else {
      int tree = open_tree(*source, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
      if (tree < 0) return CallError("open_tree", what);
      bound = AttachCopy(tree, flags, /*recursive=*/false, /*make_private=*/true, target, what);
    }
    if (!bound.ok()) return bound;
    // The mount at the target is the file opened, or it goes again.
    absl::StatusOr<FileInfo> opened = os::StatAt(*source, "", what);
    absl::StatusOr<FileInfo> mounted = os::StatAt(AT_FDCWD, target.c_str(), target);
    if (opened.ok() && mounted.ok() && opened->dev == mounted->dev && opened->ino == mounted->ino) {
      return absl::OkStatus();
    }
    umount2(target.c_str(), MNT_DETACH);
    return absl::InternalError(
        absl::StrCat(what, ": the mount at the target is not the directory opened; detached"));
  }

  absl::Status PrepareBinds() override {
    if (os::Kernel().mount_api) return absl::OkStatus();
    if (staging_ == nullptr) return NoMountApi();
    return staging_->Prepare();
  }

  absl::Status Unmount(const std::string& target, int flags) override {
    const bool in_place = (flags & kUnmountInPlace) != 0;
    flags &= ~kUnmountInPlace;
    int err = ECANCELED;  // what stays when the process ends before the call ran
    auto unmount = [&] { err = umount2(target.c_str(), flags) == 0 ? 0 : errno; };
    (in_place ? OnTheCallingThread() : isolation_)->Run(unmount);
    if (err != 0) {
      return ErrnoError(err, absl::StrCat("umount ", target, " (flags 0x", absl::Hex(flags), ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<FsStats> Statfs(const std::string& path) override {
    struct statfs st;
    if (statfs(path.c_str(), &st) != 0) return ErrnoError(errno, absl::StrCat("statfs ", path));
    FsStats out;
    out.block_size = st.f_frsize != 0 ? st.f_frsize : st.f_bsize;
    out.blocks = st.f_blocks;
    out.blocks_free = st.f_bfree;
    out.blocks_available = st.f_bavail;
    out.files = st.f_files;
    out.files_free = st.f_ffree;
    out.fs_type = st.f_type;
    out.mount_flags = os::MountFlagsOfStatfs(st.f_flags);
    return out;
  }

  absl::StatusOr<FileInfo> Stat(const std::string& path) override {
    return os::StatAt(AT_FDCWD, path.c_str(), path);
  }

  absl::Status Mkdir(const std::string& path, uint32_t mode) override {
    if (mkdir(path.c_str(), mode) != 0) return ErrnoError(errno, absl::StrCat("mkdir ", path));
    return absl::OkStatus();
  }

  absl::Status Rmdir(const std::string& path) override {
    if (rmdir(path.c_str()) != 0) return ErrnoError(errno, absl::StrCat("rmdir ", path));
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ReadMountInfo() override { return os::ReadMountInfoFile(); }

  absl::StatusOr<int> OpenAt(int dir_fd, const std::string& path, const OpenHow& how) override {
    uint64_t flags = O_CLOEXEC;
    switch (how.access) {
      case OpenAccess::kPath:
        flags |= O_PATH;
        break;
      case OpenAccess::kRead:
        // Non-blocking: a fifo opened for reading would wait for a writer.
        flags |= O_RDONLY | O_NONBLOCK;
        break;
      case OpenAccess::kCreate:
        flags |= O_WRONLY | O_CREAT | O_EXCL;
        break;
    }
    if (how.directory) flags |= O_DIRECTORY;
    if (how.nofollow) flags |= O_NOFOLLOW;
    const uint64_t mode = how.access == OpenAccess::kCreate ? how.mode : 0;
    int fd = -1;
    switch (how.resolve) {
      case Resolution::kAnywhere:
        fd = openat(dir_fd, path.c_str(), static_cast<int>(flags), static_cast<mode_t>(mode));
        break;
      case Resolution::kBeneath:
        fd =
            os::OpenAt2(dir_fd, path.c_str(), flags, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
        break;
      case Resolution::kStrictlyBeneath:
        fd = os::OpenStrictlyBeneath(dir_fd, path.c_str(), flags, mode);
        break;
    }
    if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", path));
    return fd;
  }

  absl::Status Close(int fd) override {
    if (close(fd) != 0) return ErrnoError(errno, absl::StrCat("close ", fd));
    return absl::OkStatus();
  }

  absl::StatusOr<FileInfo> StatAt(int dir_fd, const std::string& name) override {
    return os::StatAt(dir_fd, name.c_str(), name);
  }

  absl::StatusOr<std::vector<std::string>> ReadDir(int fd, size_t max_names) override {
    // getdents64 on the descriptor itself: no second descriptor that a
    // program started meanwhile could inherit, and the stream goes on from
    // the descriptor's offset.
    std::vector<char> buf(32768);
    std::vector<std::string> names;
    while (max_names == 0 || names.size() < max_names) {
      ssize_t n = getdents64(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError(errno, "read directory");
      if (n == 0) break;
      for (ssize_t pos = 0; pos < n;) {
        const auto* entry = reinterpret_cast<const struct dirent64*>(buf.data() + pos);
        pos += entry->d_reclen;
        if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) {
          continue;
        }
        names.emplace_back(entry->d_name);
        if (max_names != 0 && names.size() == max_names && pos < n) {
          // The rest of this read is read again by the next call.
          if (lseek(fd, entry->d_off, SEEK_SET) < 0) {
            return ErrnoError(errno, "seek in directory");
          }
          return names;
        }
      }
    }
    return names;
  }

  absl::Status MkdirAt(int dir_fd, const std::string& name, uint32_t mode) override {
    if (mkdirat(dir_fd, name.c_str(), mode) != 0) {
      return ErrnoError(errno, absl::StrCat("mkdir ", name));
    }
    return absl::OkStatus();
  }

  absl::Status UnlinkAt(int dir_fd, const std::string& name, bool directory) override {
    if (unlinkat(dir_fd, name.c_str(), directory ? AT_REMOVEDIR : 0) != 0) {
      return ErrnoError(errno, absl::StrCat("remove ", name));
    }
    return absl::OkStatus();
  }

  absl::Status ChownAt(int dir_fd, const std::string& name, std::optional<uint32_t> uid,
                       std::optional<uint32_t> gid) override {
    const uid_t u = uid.has_value() ? *uid : static_cast<uid_t>(-1);
    const gid_t g = gid.has_value() ? *gid : static_cast<gid_t>(-1);
    int rc = name.empty() ? fchown(dir_fd, u, g)
                          : fchownat(dir_fd, name.c_str(), u, g, AT_SYMLINK_NOFOLLOW);
    if (rc != 0) return ErrnoError(errno, absl::StrCat("chown ", name));
    return absl::OkStatus();
  }

  absl::Status ChmodAt(int dir_fd, const std::string& name, uint32_t mode) override {
    mode &= 07777;
    int rc = name.empty() ? fchmod(dir_fd, mode)
                          : fchmodat(dir_fd, name.c_str(), mode, AT_SYMLINK_NOFOLLOW);
    if (rc != 0) return ErrnoError(errno, absl::StrCat("chmod ", name));
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Read(int fd, size_t max_bytes) override {
    std::string text(max_bytes, '\0');
    size_t have = 0;
    while (have < max_bytes) {
      ssize_t n = read(fd, text.data() + have, max_bytes - have);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError(errno, "read");
      if (n == 0) break;
      have += static_cast<size_t>(n);
    }
    text.resize(have);
    return text;
  }

  absl::Status Write(int fd, const std::string& data) override {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoError(n < 0 ? errno : EIO, "write");
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  absl::Status Fsync(int fd) override {
    if (fsync(fd) != 0) return ErrnoError(errno, "fsync");
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> PathOf(int fd) override {
    std::string path;
    if (!os::FdPath(fd, &path)) {
      return ErrnoError(errno, absl::StrCat("readlink /proc/self/fd/", fd));
    }
    return path;
  }

  absl::StatusOr<uint64_t> MountIdOf(int fd) override {
    int64_t id = os::MountIdOfDescriptor(fd);
    if (id < 0) return ErrnoError(errno, absl::StrCat("mount id of descriptor ", fd));
    return static_cast<uint64_t>(id);
  }

  absl::StatusOr<uint64_t> MountIdAt(const std::string& path, bool follow) override {
    int64_t id = os::MountIdOfPath(path.c_str(), follow);
    if (id < 0) return ErrnoError(errno, absl::StrCat("mount id of ", path));
    return static_cast<uint64_t>(id);
  }

  uint32_t EffectiveUid() override { return geteuid(); }

  absl::StatusOr<std::unique_ptr<DirWatch>> WatchDir(const std::string& dir) override {
    return os::NewInotifyDirWatch(dir);
  }

 private:
  std::unique_ptr<os::BindStaging> staging_;  // null: no staged binds
  Isolation* const isolation_;                // where unmounts run
};

}  // namespace

std::unique_ptr<Syscalls> NewLinuxSyscalls(LinuxSyscallsOptions options) {
  return std::make_unique<LinuxSyscalls>(std::move(options));
}

}  // namespace lustre_csi::volume
