// The syscall seam of the volume layer.
//
// Syscalls is the one small interface through which this package (and the
// roles built on it) reach the kernel: each method is one system call (or, for
// the binds and the mount table, one kernel job), with the errno kept as data.
// NewLinuxSyscalls() (linux/linux_syscalls.h) makes the calls;
// FakeSyscalls (testing/fake_syscalls.h) is an in-memory stand-in with fault
// switches. What is built from several calls - resolving beneath a root,
// making a marked directory, walking or removing a tree (beneath.h, tree.h) -
// is written once above this interface and runs the same over both.
//
// Every method returns errors built with ErrnoError (errno_status.h), so the
// errno can be recovered with ErrnoOf. Implementations are thread-safe. Paths
// given without a descriptor are absolute.
#ifndef LUSTRE_CSI_PKG_VOLUME_SYSCALLS_H_
#define LUSTRE_CSI_PKG_VOLUME_SYSCALLS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pkg/volume/dir_watch.h"

namespace lustre_csi::volume {

// mount(2) and umount2(2) flags, named as the kernel names them (MS_*, MNT_*,
// UMOUNT_*). The values are the kernel's ABI; the Linux implementation checks
// them against <sys/mount.h> at compile time, so code above the seam needs no
// system header.
inline constexpr unsigned long kMsRdonly = 1;
inline constexpr unsigned long kMsNosuid = 2;
inline constexpr unsigned long kMsNodev = 4;
inline constexpr unsigned long kMsNoexec = 8;
inline constexpr unsigned long kMsRemount = 32;
inline constexpr unsigned long kMsNosymfollow = 256;
inline constexpr unsigned long kMsNoatime = 1024;
inline constexpr unsigned long kMsNodiratime = 2048;
inline constexpr unsigned long kMsBind = 4096;
inline constexpr unsigned long kMsRec = 16384;
inline constexpr unsigned long kMsMove = 8192;
inline constexpr unsigned long kMsUnbindable = 1ul << 17;
inline constexpr unsigned long kMsPrivate = 1ul << 18;
inline constexpr unsigned long kMsSlave = 1ul << 19;
inline constexpr unsigned long kMsShared = 1ul << 20;
inline constexpr unsigned long kMsRelatime = 1ul << 21;
inline constexpr unsigned long kMsStrictatime = 1ul << 24;
inline constexpr int kMntForce = 1;
inline constexpr int kMntDetach = 2;
inline constexpr int kUmountNofollow = 8;
// Not the kernel's: the caller knows this unmount cannot wait on the file
// system (a bind of a mount that stays mounted: its unmount drops one of
// several references and asks the file system nothing), so it is made in
// place rather than in a task of its own (LinuxSyscallsOptions::isolation).
// Taken off before umount2(2).
inline constexpr int kUnmountInPlace = 1 << 30;

// File types in FileInfo::mode (st_mode's S_IFMT bits), also checked against
// <sys/stat.h> by the Linux implementation.
inline constexpr uint32_t kFileTypeMask = 0170000;
inline constexpr uint32_t kTypeSocket = 0140000;
inline constexpr uint32_t kTypeSymlink = 0120000;
inline constexpr uint32_t kTypeRegular = 0100000;
inline constexpr uint32_t kTypeDirectory = 0040000;

inline bool IsDirectoryMode(uint32_t mode) { return (mode & kFileTypeMask) == kTypeDirectory; }
inline bool IsSymlinkMode(uint32_t mode) { return (mode & kFileTypeMask) == kTypeSymlink; }
inline bool IsSocketMode(uint32_t mode) { return (mode & kFileTypeMask) == kTypeSocket; }

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
  // The per-mount flags of the mount the path is on, as kMs* bits: rdonly,
  // nosuid, nodev, noexec, nosymfollow, nodiratime, and one of noatime,
  // relatime or strictatime.
  unsigned long mount_flags = 0;
};

// Per-mount flags as /proc/self/mountinfo shows them: "ro" or "rw", then
// nosuid, nodev, noexec, noatime, nodiratime, relatime (unless noatime or
// strictatime), nosymfollow.
std::string PerMountOptionsText(unsigned long flags);

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
  absl::Time mtime;  // last modification
  uint32_t nlink = 0;
  uint64_t blocks = 0;  // 512-byte blocks allocated
};

// A descriptor as Syscalls::OpenAt hands it out; kAtCwd names the working
// directory (AT_FDCWD), from which only absolute paths are used here.
inline constexpr int kAtCwd = -100;

// What OpenAt opens the file for.
enum class OpenAccess {
  kPath,    // O_PATH: to name the file in later *At calls and stat it
  kRead,    // O_RDONLY | O_NONBLOCK: to read a file or list a directory
  kCreate,  // O_WRONLY | O_CREAT | O_EXCL: a new regular file (never follows)
};

// How OpenAt resolves its path: the openat2(2) RESOLVE_* sets this project
// uses.
enum class Resolution {
  kAnywhere,  // no RESOLVE_* flags: as plain openat
  // RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS: no "..", absolute symlink or
  // magic link leaves the directory; relative symlinks inside are followed.
  kBeneath,
  // RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV |
  // RESOLVE_NO_MAGICLINKS: no symlink at all and no other mount either.
  kStrictlyBeneath,
};

struct OpenHow {
  OpenAccess access = OpenAccess::kPath;
  bool directory = false;  // O_DIRECTORY
  bool nofollow = false;   // O_NOFOLLOW
  uint32_t mode = 0;       // kCreate: the new file's mode, subject to the umask
  Resolution resolve = Resolution::kAnywhere;
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
  kOpen,
  kReadDir,
  kMkdirAt,
  kUnlinkAt,
  kChown,
  kChmod,
  kRead,
  kWrite,
  kFsync,
  kPathOf,
  kWatchDir,
  kMountIdOf,
};
inline constexpr int kNumSyscallOps = 19;

// The name of `op` for messages ("mount", "statx", "read directory", ...).
const char* SyscallOpName(SyscallOp op);

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
  // of a detached copy, mount_setattr(2), move_mount(2); before Linux 5.12,
  // a non-recursive bind staged on a private mount, remounted with the
  // flags there and moved to `target` (linux/staged_bind.h). Nothing - not
  // even a crash between the steps - can leave the bind at `target` without
  // the flags. UNIMPLEMENTED when the implementation cannot do that (an old
  // kernel and a recursive bind, or no staging directory); callers then
  // bind and remount in two mount(2) calls.
  virtual absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                          bool recursive, unsigned long flags) {
    return absl::UnimplementedError("bind mounts with flags in one step are not supported");
  }

  // Binds `relative` ("" for `root` itself) beneath the directory `root` at
  // `target`: the source is resolved strictly (Resolution::kStrictlyBeneath:
  // no symlink, "..", magic link or other mount) and bound from that open
  // file (open_tree(2)), so nothing swapped into the path after the check
  // can be bound, and the mount at `target` is checked to be the file opened
  // (else detached, INTERNAL); the per-mount `flags` (MS_RDONLY, MS_NOSUID,
  // ...) are set, and the copy is made private, before it is attached
  // (mount_setattr(2), move_mount(2); before Linux 5.12 the staged bind of
  // the open file's /proc/self/fd path): it joins no propagation group of its
  // source, and a shared parent still propagates it as a new mount.
  // INVALID_ARGUMENT (errno EXDEV or ELOOP) when the resolution refuses the
  // path; NOT_FOUND when a component is missing; UNIMPLEMENTED when neither
  // the kernel's mount API nor a staging directory is there. Callers use
  // BindDirBeneath (beneath.h), which names a refused component.
  virtual absl::Status BindBeneath(const std::string& root, const std::string& relative,
                                   const std::string& target, unsigned long flags) {
    return absl::UnimplementedError("bind mounts from a resolved file are not supported");
  }

  // Makes ready what BindBeneath and BindMountWithFlags need on this kernel
  // and says whether they can work: OK at once with the kernel's mount API;
  // before Linux 5.12 the private staging mount is made (FAILED_PRECONDITION
  // with the reason when it cannot be); UNIMPLEMENTED when the
  // implementation offers neither.
  virtual absl::Status PrepareBinds() {
    return absl::UnimplementedError("bind mounts with flags in one step are not supported");
  }

  // umount2(2) with MNT_FORCE / MNT_DETACH / UMOUNT_NOFOLLOW flags, and
  // kUnmountInPlace. A call may block for as long as the kernel does; see
  // UnmountWithEscalation (cleanup.h) for a bounded wait.
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

  // --- Descriptors. A sequence of *At calls through one open directory is
  // not redirected by anything renamed or mounted into its path meanwhile.
  // A name of "" means the descriptor itself (AT_EMPTY_PATH).

  // openat(2), or openat2(2) for the Resolution asked (before Linux 5.6 the
  // Linux implementation walks the same resolution in user space). A path
  // that the resolution refuses: EXDEV (it would leave `dir_fd` or cross a
  // mount) or ELOOP (a symlink where none may be). kCreate is offered with
  // kAnywhere only. The descriptor is released with Close.
  virtual absl::StatusOr<int> OpenAt(int dir_fd, const std::string& path, const OpenHow& how) = 0;

  // close(2).
  virtual absl::Status Close(int fd) = 0;

  // statx(2) of `name` in `dir_fd` as Stat does it: a final symlink is not
  // followed, no automount is triggered.
  virtual absl::StatusOr<FileInfo> StatAt(int dir_fd, const std::string& name) = 0;

  // The next names of the directory open for reading as `fd`, from where
  // the last call on it stopped (getdents64(2)): at most `max_names` (0: all
  // that are left), without "." and "..", in the file system's order; none
  // at the end.
  virtual absl::StatusOr<std::vector<std::string>> ReadDir(int fd, size_t max_names) = 0;

  // mkdirat(2): mode subject to the umask. ALREADY_EXISTS (EEXIST) when
  // something is there.
  virtual absl::Status MkdirAt(int dir_fd, const std::string& name, uint32_t mode) = 0;

  // unlinkat(2); `directory`: AT_REMOVEDIR.
  virtual absl::Status UnlinkAt(int dir_fd, const std::string& name, bool directory) = 0;

  // fchownat(2) with AT_SYMLINK_NOFOLLOW (a symlink's own owner), fchown(2)
  // for ""; nullopt keeps that id.
  virtual absl::Status ChownAt(int dir_fd, const std::string& name, std::optional<uint32_t> uid,
                               std::optional<uint32_t> gid) = 0;

  // fchmodat(2) with AT_SYMLINK_NOFOLLOW (EOPNOTSUPP for a symlink),
  // fchmod(2) for ""; the mode exactly, bits 07777.
  virtual absl::Status ChmodAt(int dir_fd, const std::string& name, uint32_t mode) = 0;

  // read(2) until `max_bytes` or the end of the file.
  virtual absl::StatusOr<std::string> Read(int fd, size_t max_bytes) = 0;

  // write(2) of all of `data`.
  virtual absl::Status Write(int fd, const std::string& data) = 0;

  // fsync(2).
  virtual absl::Status Fsync(int fd) = 0;

  // The absolute path the kernel gives for the open file (readlink(2) of
  // /proc/self/fd/<fd>).
  virtual absl::StatusOr<std::string> PathOf(int fd) = 0;

  // The id of the mount the open file is on (of a mount point opened with
  // O_PATH, the mount there), without a stat: name_to_handle_at(2)'s, or
  // where a file system has no file handles /proc/self/fdinfo/<fd>'s (Linux
  // 3.15); the ids statx's STATX_MNT_ID gives. It asks the file system
  // mounted there nothing that needs an answer from its servers, so it
  // answers where that file system does not.
  virtual absl::StatusOr<uint64_t> MountIdOf(int fd) = 0;

  // MountIdOf what `path` names (its final symlink followed only when
  // `follow`), found by the path's walk alone: one system call where
  // opening and closing it would take three. NOT_FOUND where it does not
  // exist. Counted as SyscallOp::kMountIdOf.
  virtual absl::StatusOr<uint64_t> MountIdAt(const std::string& path, bool follow) = 0;

  // geteuid(2): who owns what this process makes.
  virtual uint32_t EffectiveUid() = 0;

  // Starts watching the directory `dir` (dir_watch.h): entries created,
  // moved in, deleted or moved out after this call are reported.
  virtual absl::StatusOr<std::unique_ptr<DirWatch>> WatchDir(const std::string& dir) = 0;
};

// mkdir -p: creates `path` and any missing parents with `mode`. Existing
// directories are fine; an existing non-directory component is an error.
absl::Status MkdirAll(Syscalls& sys, const std::string& path, uint32_t mode);

// A descriptor from Syscalls::OpenAt, closed when this goes.
class ScopedFd {
 public:
  ScopedFd() = default;
  ScopedFd(Syscalls* sys, int fd) : sys_(sys), fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : sys_(other.sys_), fd_(other.fd_) { other.fd_ = -1; }
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { Reset(); }

  int get() const { return fd_; }
  void Reset();

 private:
  Syscalls* sys_ = nullptr;
  int fd_ = -1;
};

// OpenAt, the descriptor held by a ScopedFd.
absl::StatusOr<ScopedFd> Open(Syscalls& sys, int dir_fd, const std::string& path,
                              const OpenHow& how);

// True when `path` exists (Stat succeeds, so a dangling symlink exists too).
// Errors other than NOT_FOUND are returned.
absl::StatusOr<bool> PathExists(Syscalls& sys, const std::string& path);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_SYSCALLS_H_
