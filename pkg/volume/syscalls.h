// The syscall seam of the volume layer.
//
// Syscalls is the one small interface through which this package (and the
// roles built on it) mount, unmount, stat, create and remove directories, read
// the mount table and resolve paths beneath a root. NewLinuxSyscalls()
// (linux_syscalls.h) makes direct system calls; FakeSyscalls
// (fake_syscalls.h) is an in-memory stand-in with fault switches for tests.
// Everything else here is plain logic on top of this interface.
//
// Every method returns errors built with ErrnoError (errno_status.h), so the
// errno can be recovered with ErrnoOf. Implementations are thread-safe. Paths
// are absolute.
#ifndef LUSTRE_CSI_PKG_VOLUME_SYSCALLS_H_
#define LUSTRE_CSI_PKG_VOLUME_SYSCALLS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lustre_csi::volume {

// statfs(2) figures. Block counts are in units of block_size (the fragment
// size, f_frsize).
struct FsStats {
  uint64_t block_size = 0;
  uint64_t blocks = 0;
  uint64_t blocks_free = 0;
  uint64_t blocks_available = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;
  int64_t fs_type = 0;
};

// statx(2) of a path without following a final symlink or triggering an
// automount. mount_id / mount_root are only meaningful when the matching
// has_* flag says the kernel reported them.
struct FileInfo {
  uint32_t mode = 0;  // st_mode: type and permission bits.
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t mount_id = 0;  // STATX_MNT_ID: the mount the path is on.
  bool has_mount_id = false;
  bool mount_root = false;  // STATX_ATTR_MOUNT_ROOT: the path is the root of a mount.
  bool has_mount_root = false;
};

// The system calls named by each method; see the class comment above.
enum class SyscallOp {
  kMount,
  kUnmount,
  kStatfs,
  kStat,
  kMkdir,
  kRmdir,
  kReadMountInfo,
  kResolveBeneath,
};
inline constexpr int kNumSyscallOps = 8;

class Syscalls {
 public:
  virtual ~Syscalls() = default;

  // mount(2). `data` is passed as the file-system specific options (empty ->
  // NULL); an empty `fstype` or `source` is passed as NULL.
  virtual absl::Status Mount(const std::string& source, const std::string& target,
                             const std::string& fstype, unsigned long flags,
                             const std::string& data) = 0;

  // Bind-mounts `source` (with everything mounted below it when
  // `recursive`) on `target` with the per-mount `flags` (MS_RDONLY,
  // MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_NOATIME, MS_NODIRATIME, MS_RELATIME,
  // MS_STRICTATIME) set before the mount appears at `target`: open_tree(2)
  // of a detached copy, mount_setattr(2), move_mount(2). Nothing - not even a
  // crash between the steps - can leave the bind at `target` without the
  // flags. UNIMPLEMENTED when the kernel lacks these calls (before Linux
  // 5.12) or the implementation does not offer them; callers then bind and
  // remount in two mount(2) calls.
  virtual absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                          bool recursive, unsigned long flags) {
    return absl::UnimplementedError("bind mounts with flags in one step are not supported");
  }

  // Binds `relative` beneath the directory `root` at `target`: the source is
  // resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
  // RESOLVE_NO_XDEV) and bound from that open file (open_tree(2)), so nothing
  // swapped into the path after the check can be bound; the per-mount `flags`
  // (MS_RDONLY, MS_NOSUID, ...) are set, and the copy is made private, before
  // it is attached (mount_setattr(2), move_mount(2)): it joins no propagation
  // group of its source, and a shared parent still propagates it as a new
  // mount. INVALID_ARGUMENT when the path would leave `root`; NOT_FOUND when a
  // component is missing; UNIMPLEMENTED without the kernel's new mount API.
  virtual absl::Status BindBeneath(const std::string& root, const std::string& relative,
                                   const std::string& target, unsigned long flags) {
    return absl::UnimplementedError("bind mounts from a resolved file are not supported");
  }

  // umount2(2) with MNT_FORCE / MNT_DETACH / UMOUNT_NOFOLLOW flags. A call
  // may block for as long as the kernel does; see UnmountWithEscalation
  // (cleanup.h) for a bounded wait.
  virtual absl::Status Unmount(const std::string& target, int flags) = 0;

  // statfs(2), following symlinks.
  virtual absl::StatusOr<FsStats> Statfs(const std::string& path) = 0;

  // statx(2) with AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, asking for
  // STATX_BASIC_STATS | STATX_MNT_ID.
  virtual absl::StatusOr<FileInfo> Stat(const std::string& path) = 0;

  // mkdir(2) / rmdir(2). Mkdir's mode is subject to the umask.
  virtual absl::Status Mkdir(const std::string& path, uint32_t mode) = 0;
  virtual absl::Status Rmdir(const std::string& path) = 0;

  // The whole of /proc/self/mountinfo, read so that it is one consistent
  // snapshot.
  virtual absl::StatusOr<std::string> ReadMountInfo() = 0;

  // Resolves `relative` beneath the directory `root` like openat2(2) with
  // RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS and returns the absolute path of
  // what it names. INVALID_ARGUMENT (errno EXDEV or ELOOP) when `relative`
  // is absolute or a `..` or symlink would leave `root`; NOT_FOUND when a
  // component is missing.
  virtual absl::StatusOr<std::string> ResolveBeneath(const std::string& root,
                                                     const std::string& relative) = 0;
};

// mkdir -p: creates `path` and any missing parents with `mode`. Existing
// directories are fine; an existing non-directory component is an error.
absl::Status MkdirAll(Syscalls& sys, const std::string& path, uint32_t mode);

// True when `path` exists (Stat succeeds, so a dangling symlink exists too).
// Errors other than NOT_FOUND are returned.
absl::StatusOr<bool> PathExists(Syscalls& sys, const std::string& path);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_SYSCALLS_H_
