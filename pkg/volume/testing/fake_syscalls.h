// An in-memory Syscalls for tests, with fault switches.
//
// FakeSyscalls keeps a tree of directories, files and symlinks on a set of
// file systems, and a mount table on top: mounts stack at one path and hide
// what is beneath them, bind mounts show the source's tree, Stat reports mount
// ids and STATX_ATTR_MOUNT_ROOT like statx, Unmount pops the top-most mount
// (EBUSY while it has submounts or is marked busy, unless MNT_DETACH), and
// ReadMountInfo renders a valid /proc/self/mountinfo, with octal escapes.
// A "broken" mount answers every lookup with an errno (ENOTCONN by default),
// like a FUSE mount whose daemon died, but can still be unmounted.
//
// Fault switches (fault_injector.h): FailNext(op, errno, n), Hang(op),
// HangNext(op, n), Release(op), CallCount(op); mount and unmount calls are
// recorded too.
//
// Descriptors (OpenAt and the *At calls) are the fake's own numbers for a
// place in that tree, so the algorithms above the seam (beneath.h, tree.h)
// run on the fake as on the kernel.
//
// Differences from Linux, on purpose: no umask, no permission checks, MS_REC
// does not copy submounts, MS_MOVE is not supported (EINVAL), relative paths
// are taken from "/", ".." from a descriptor stops at it, and directories
// are listed in name order. The set-up methods (AddDir, AddFile, ...) neither count
// nor fail. Thread-safe; the destructor releases hung calls and waits for
// every call in flight to return.
#ifndef LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_SYSCALLS_H_
#define LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_SYSCALLS_H_

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/volume/syscalls.h"
#include "pkg/volume/testing/fake_dir_watch.h"
#include "pkg/volume/testing/fault_injector.h"

namespace lustre_csi::volume {

class FakeSyscalls : public Syscalls, public FaultInjector {
 public:
  using Op = SyscallOp;

  struct MountCall {
    std::string source;
    std::string target;
    std::string fstype;
    unsigned long flags = 0;
    std::string data;
  };
  struct UnmountCall {
    std::string target;
    int flags = 0;           // the kernel's flags
    bool in_place = false;   // kUnmountInPlace was passed (where the call is made)
    std::thread::id thread;  // the thread that made it
  };

  // Starts with "/" (an empty directory on an ext4-like root file system).
  FakeSyscalls();
  ~FakeSyscalls() override;
  FakeSyscalls(const FakeSyscalls&) = delete;
  FakeSyscalls& operator=(const FakeSyscalls&) = delete;

  // Syscalls.
  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override;
  absl::Status Unmount(const std::string& target, int flags) override;
  absl::StatusOr<FsStats> Statfs(const std::string& path) override;
  absl::StatusOr<FileInfo> Stat(const std::string& path) override;
  absl::Status Mkdir(const std::string& path, uint32_t mode) override;
  absl::Status Rmdir(const std::string& path) override;
  absl::StatusOr<std::string> ReadMountInfo() override;
  // UNIMPLEMENTED (as on a kernel before 5.12) unless SetAtomicBinds(true);
  // then a bind and a remount with `flags`, recorded as two mount calls.
  absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                  bool recursive, unsigned long flags) override;
  void SetAtomicBinds(bool on);
  // OK with SetAtomicBinds(true), else UNIMPLEMENTED.
  absl::Status PrepareBinds() override;
  // ResolveBeneath (beneath.h: strict, no symlink) over this fake, then
  // BindMountWithFlags of the path it names (so also needs SetAtomicBinds);
  // nothing renames behind a fake's back, so there is nothing to check after.
  absl::Status BindBeneath(const std::string& root, const std::string& relative,
                           const std::string& target, unsigned long flags) override;
  // Descriptors name what they opened until it is removed (then ENOENT) or
  // its mount is unmounted (then ESTALE, where Linux would keep the detached
  // mount alive). Files take 8 blocks per 4 KiB (or part) of content,
  // directories 8.
  absl::StatusOr<int> OpenAt(int dir_fd, const std::string& path, const OpenHow& how) override;
  absl::Status Close(int fd) override;
  absl::StatusOr<FileInfo> StatAt(int dir_fd, const std::string& name) override;
  absl::StatusOr<std::vector<std::string>> ReadDir(int fd, size_t max_names) override;
  absl::Status MkdirAt(int dir_fd, const std::string& name, uint32_t mode) override;
  absl::Status UnlinkAt(int dir_fd, const std::string& name, bool directory) override;
  absl::Status ChownAt(int dir_fd, const std::string& name, std::optional<uint32_t> uid,
                       std::optional<uint32_t> gid) override;
  absl::Status ChmodAt(int dir_fd, const std::string& name, uint32_t mode) override;
  absl::StatusOr<std::string> Read(int fd, size_t max_bytes) override;
  absl::Status Write(int fd, const std::string& data) override;
  absl::Status Fsync(int fd) override;
  absl::StatusOr<std::string> PathOf(int fd) override;
  absl::StatusOr<uint64_t> MountIdOf(int fd) override;
  absl::StatusOr<uint64_t> MountIdAt(const std::string& path, bool follow) override;
  // 0: the fake's processes are root, and what they make is root's.
  uint32_t EffectiveUid() override;
  // Descriptors opened and not yet closed.
  int OpenFileCount() const;
  // Reports entries this fake adds to or removes from `dir` (the set-up
  // calls too), as the path resolved now; kDirectoryGone when `dir` itself is
  // removed.
  absl::StatusOr<std::unique_ptr<DirWatch>> WatchDir(const std::string& dir) override;

  // Set-up of the tree. Missing parents are created as directories (0755).
  // AddDir accepts an existing directory.
  absl::Status AddDir(const std::string& path, uint32_t mode = 0755, uint32_t uid = 0,
                      uint32_t gid = 0);
  absl::Status AddFile(const std::string& path, uint32_t mode = 0644,
                       const std::string& content = "");
  // The content of a regular file, without counting or faults.
  absl::StatusOr<std::string> PeekContent(const std::string& path) const;
  absl::Status AddSymlink(const std::string& path, const std::string& target);
  // Stat without counting or faults.
  absl::StatusOr<FileInfo> Peek(const std::string& path) const;
  bool Exists(const std::string& path) const { return Peek(path).ok(); }

  // State of the top-most mount at `target`.
  absl::Status BreakMount(const std::string& target, int err = ENOTCONN);
  absl::Status SetBusy(const std::string& target, bool busy);
  // statfs figures of the file system `path` is on.
  absl::Status SetFsStats(const std::string& path, const FsStats& stats);
  // Pretends a kernel that does not report STATX_MNT_ID and/or
  // STATX_ATTR_MOUNT_ROOT (both are reported by default).
  void SetStatxSupport(bool mount_id, bool mount_root);
  // Number of mounts besides the root file system.
  int MountCount() const;

  // The recorded calls.
  std::vector<MountCall> MountCalls() const;
  std::vector<UnmountCall> UnmountCalls() const;
  // Zeroes the call counts and forgets the recorded calls.
  void ResetCounters();

 private:
  std::atomic<bool> atomic_binds_{false};
  struct Node;
  struct Fs;
  struct MountRec;
  struct Step;
  struct OpenFile;

  // Path walking; these return 0 or an errno.
  size_t TopOf(size_t index, const std::string& abs) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  int ChildMount(size_t parent, const std::string& abs) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Step RootStep() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // An absolute `path` starts again at "/". `beneath`: ".." and absolute
  // paths and symlinks may not climb above `floor` (EXDEV); `strict`: no
  // symlink is followed (ELOOP; a last one not followed is the result) and
  // no other mount entered (EXDEV).
  int Walk(std::vector<Step>& stack, const std::string& path, bool follow_last, size_t floor,
           bool beneath, bool strict = false) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Node* MutableNodeAt(const Step& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int Resolve(const std::string& path, bool follow_last, Step* out) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Resolves the parent of `path` and names the last component.
  int ResolveParent(const std::string& path, Step* parent, std::string* name) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  const Node* NodeAt(const Step& step) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  FileInfo InfoAt(const Step& step, const Node& node) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  int TopMountIndex(const std::string& target, size_t* index) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  int AddNode(const std::string& path, const Node& node, bool ok_if_dir)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `name` (one component) in the directory `parent`; errnos as the kernel's.
  int AddChild(const Step& parent, const std::string& name, const Node& node, bool ok_if_dir)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int RemoveChild(const Step& parent, const std::string& name, bool directory)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The open file `fd` as a step (and its record); an errno.
  int FileAt(int fd, Step* step, OpenFile** file) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where a path from `dir_fd` starts (kAtCwd: "/").
  int StartAt(int dir_fd, std::vector<Step>* stack) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The directory `name` is in, from `dir_fd`, and its last component.
  int ParentAt(int dir_fd, const std::string& name, Step* parent, std::string* last)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int NewFile(const Step& step, OpenAccess access) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies `change` to `name` in `dir_fd` (not following it), or to the
  // open file itself for ""; an errno.
  int ChangeAt(int dir_fd, const std::string& name, const std::function<int(Node&)>& change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveTree(size_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the watches of the directory `dir` (an absolute path).
  void Notify(const std::string& dir, DirEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<MountRec>> mounts_ ABSL_GUARDED_BY(mu_);  // creation order
  int next_mount_id_ ABSL_GUARDED_BY(mu_) = 1;
  unsigned next_minor_ ABSL_GUARDED_BY(mu_) = 30;
  bool report_mount_id_ ABSL_GUARDED_BY(mu_) = true;
  bool report_mount_root_ ABSL_GUARDED_BY(mu_) = true;

  std::vector<MountCall> mount_calls_ ABSL_GUARDED_BY(mu_);
  std::vector<UnmountCall> unmount_calls_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::weak_ptr<FakeDirEvents>>> watches_ ABSL_GUARDED_BY(mu_);
  std::map<int, OpenFile> files_ ABSL_GUARDED_BY(mu_);
  int next_fd_ ABSL_GUARDED_BY(mu_) = 3;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_SYSCALLS_H_
