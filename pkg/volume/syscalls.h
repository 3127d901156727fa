// The syscall seam of the volume layer.
//
// Syscalls is the one small interface through which this package (and the
// roles built on it) mount, unmount, stat, create and remove directories, read
// the mount table, resolve paths beneath a root, and walk, change or remove
// directory trees without following symlinks out of them. NewLinuxSyscalls()
// (linux/linux_syscalls.h) makes direct system calls; FakeSyscalls
// (fake_syscalls.h) is an in-memory stand-in with fault switches for tests.
// Everything else here is plain logic on top of this interface.
//
// Every method returns errors built with ErrnoError (errno_status.h), so the
// errno can be recovered with ErrnoOf. Implementations are thread-safe. Paths
// are absolute.
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
};

// One entry of a tree walk (Syscalls::WalkTree).
struct TreeEntry {
  std::string path;  // relative to the walk's root, '/'-separated; "" for the root
  int depth = 0;     // 0 for the root
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 0;
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t blocks = 0;  // 512-byte blocks allocated
};

// What a walk's visitor asks to change on the entry it was shown: the group
// first (chown), then the permission bits (chmod, 07777). A symlink's group
// is changed on the link itself; its mode is never changed.
struct EntryChange {
  std::optional<uint32_t> gid;
  std::optional<uint32_t> mode;
};

struct TreeLimits {
  size_t max_entries = 0;  // 0: no limit; more entries -> RESOURCE_EXHAUSTED
  int max_depth = 256;     // deeper directories -> RESOURCE_EXHAUSTED
};

using TreeVisitor = std::function<absl::StatusOr<EntryChange>(const TreeEntry&)>;

// A directory made for someone (MakeMarkedDirBeneath): its owner and mode,
// and a file in it that records whom it was made for.
struct MarkedDirSpec {
  uint32_t mode = 0700;  // exactly, no umask; setgid and sticky bits included
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::string marker_name;
  std::string marker_content;
  uint32_t marker_mode = 0444;
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
  kWalkTree,
  kMkdirBeneath,
  kStatBeneath,
  kReadFileBeneath,
  kMakeMarkedDirBeneath,
  kRemoveTreeBeneath,
  kListDir,
  kWatchDir,
};
inline constexpr int kNumSyscallOps = 16;

// The name of `op` for messages ("mount", "statx", "walk", ...).
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

  // Binds `relative` beneath the directory `root` at `target`: the source is
  // resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
  // RESOLVE_NO_XDEV) and bound from that open file (open_tree(2)), so nothing
  // swapped into the path after the check can be bound; the per-mount `flags`
  // (MS_RDONLY, MS_NOSUID, ...) are set, and the copy is made private, before
  // it is attached (mount_setattr(2), move_mount(2); before Linux 5.12 the
  // staged bind of the open file's /proc/self/fd path): it joins no
  // propagation group of its source, and a shared parent still propagates it
  // as a new mount. INVALID_ARGUMENT when the path would leave `root`;
  // NOT_FOUND when a component is missing; UNIMPLEMENTED when neither the
  // kernel's mount API nor a staging directory is there.
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

  // Visits the directory `root` (not a symlink) and everything beneath it,
  // directories before their contents, and applies what the visitor asks
  // for each entry. The walk never follows a symlink, never leaves the mount
  // it started on (entries on another mount are skipped) and skips entries
  // that vanish while it runs; it holds each directory open from its parent,
  // so renames elsewhere cannot redirect it. An error from `visit`, or from
  // a change other than the entry vanishing, stops the walk and is returned.
  virtual absl::Status WalkTree(const std::string& root, const TreeLimits& limits,
                                const TreeVisitor& visit) = 0;

  // The *Beneath calls below resolve `relative` strictly beneath the
  // directory `root`: no `..` above it, no symlink on the way (the last
  // component included) and no other mount. INVALID_ARGUMENT (errno EXDEV
  // or ELOOP) when the path would break that; NOT_FOUND when a component is
  // missing. `relative` is a cleaned relative path, not empty, not ".".

  // mkdir(2) of the last component (its parent must exist), mode subject to
  // the umask. ALREADY_EXISTS (EEXIST) when something is there already.
  virtual absl::Status MkdirBeneath(const std::string& root, const std::string& relative,
                                    uint32_t mode) = 0;

  // What Stat tells of the path (resolved as above).
  virtual absl::StatusOr<FileInfo> StatBeneath(const std::string& root,
                                               const std::string& relative) = 0;

  // The first `max_bytes` of a regular file (INVALID_ARGUMENT, errno
  // EINVAL, for anything else).
  virtual absl::StatusOr<std::string> ReadFileBeneath(const std::string& root,
                                                      const std::string& relative,
                                                      size_t max_bytes) = 0;

  // mkdir(2) of the last component (its parent must exist; ALREADY_EXISTS,
  // nothing changed, when the name exists), then, through one descriptor of
  // the new directory, so that nothing renamed into its path meanwhile is
  // touched: chown to spec's ids (nullopt keeps one), chmod to exactly
  // spec.mode (after the chown, which clears set-group-ID), and the marker
  // file created (O_EXCL) with its content and mode, synced with the
  // directory before OK. A directory found at the name that this process
  // did not make (its owner is not the caller) is FAILED_PRECONDITION and
  // left alone. When a step after the mkdir fails, what the call made is
  // removed again: the marker, then the directory if it is still there and
  // empty.
  virtual absl::Status MakeMarkedDirBeneath(const std::string& root, const std::string& relative,
                                            const MarkedDirSpec& spec) = 0;

  // Removes the directory and everything in it: symlinks as links, never
  // followed. A directory below that is another mount is never entered: the
  // removal stops with FAILED_PRECONDITION before it (what was removed stays
  // removed); `relative` itself on another mount is INVALID_ARGUMENT, like
  // every path that crosses a mount. Directories more than `max_depth`
  // levels below `relative`: RESOURCE_EXHAUSTED.
  virtual absl::Status RemoveTreeBeneath(const std::string& root, const std::string& relative,
                                         int max_depth) = 0;

  // The names in the directory `dir` (without "." and ".."), sorted.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;

  // Starts watching the directory `dir` (dir_watch.h): entries created,
  // moved in, deleted or moved out after this call are reported.
  virtual absl::StatusOr<std::unique_ptr<DirWatch>> WatchDir(const std::string& dir) = 0;
};

// mkdir -p: creates `path` and any missing parents with `mode`. Existing
// directories are fine; an existing non-directory component is an error.
absl::Status MkdirAll(Syscalls& sys, const std::string& path, uint32_t mode);

// True when `path` exists (Stat succeeds, so a dangling symlink exists too).
// Errors other than NOT_FOUND are returned.
absl::StatusOr<bool> PathExists(Syscalls& sys, const std::string& path);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_SYSCALLS_H_
