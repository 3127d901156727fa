#include "pkg/volume/testing/fault_syscalls.h"

#include "absl/strings/str_cat.h"

namespace lustre_csi::volume {

absl::Status FaultSyscalls::Mount(const std::string& source, const std::string& target,
                                  const std::string& fstype, unsigned long flags,
                                  const std::string& data) {
  Call call = Enter(Op::kMount, absl::StrCat(source, " on ", target));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Mount(source, target, fstype, flags, data);
}

absl::Status FaultSyscalls::BindMountWithFlags(const std::string& source, const std::string& target,
                                               bool recursive, unsigned long flags) {
  Call call = Enter(Op::kMount, absl::StrCat(source, " on ", target));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::BindMountWithFlags(source, target, recursive, flags);
}

absl::Status FaultSyscalls::BindBeneath(const std::string& root, const std::string& relative,
                                        const std::string& target, unsigned long flags) {
  Call call = Enter(Op::kMount, absl::StrCat(root, "/", relative, " on ", target));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::BindBeneath(root, relative, target, flags);
}

absl::Status FaultSyscalls::Unmount(const std::string& target, int flags) {
  Call call = Enter(Op::kUnmount, target);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Unmount(target, flags);
}

absl::StatusOr<FsStats> FaultSyscalls::Statfs(const std::string& path) {
  Call call = Enter(Op::kStatfs, path);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Statfs(path);
}

absl::StatusOr<FileInfo> FaultSyscalls::Stat(const std::string& path) {
  Call call = Enter(Op::kStat, path);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Stat(path);
}

absl::Status FaultSyscalls::Mkdir(const std::string& path, uint32_t mode) {
  Call call = Enter(Op::kMkdir, path);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Mkdir(path, mode);
}

absl::Status FaultSyscalls::Rmdir(const std::string& path) {
  Call call = Enter(Op::kRmdir, path);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Rmdir(path);
}

absl::StatusOr<std::string> FaultSyscalls::ReadMountInfo() {
  Call call = Enter(Op::kReadMountInfo, "");
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::ReadMountInfo();
}

absl::StatusOr<int> FaultSyscalls::OpenAt(int dir_fd, const std::string& path, const OpenHow& how) {
  Call call = Enter(Op::kOpen, path);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::OpenAt(dir_fd, path, how);
}

absl::StatusOr<FileInfo> FaultSyscalls::StatAt(int dir_fd, const std::string& name) {
  Call call = Enter(Op::kStat, name);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::StatAt(dir_fd, name);
}

absl::StatusOr<std::vector<std::string>> FaultSyscalls::ReadDir(int fd, size_t max_names) {
  Call call = Enter(Op::kReadDir, absl::StrCat(fd));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::ReadDir(fd, max_names);
}

absl::Status FaultSyscalls::MkdirAt(int dir_fd, const std::string& name, uint32_t mode) {
  Call call = Enter(Op::kMkdirAt, name);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::MkdirAt(dir_fd, name, mode);
}

absl::Status FaultSyscalls::UnlinkAt(int dir_fd, const std::string& name, bool directory) {
  Call call = Enter(Op::kUnlinkAt, name);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::UnlinkAt(dir_fd, name, directory);
}

absl::Status FaultSyscalls::ChownAt(int dir_fd, const std::string& name,
                                    std::optional<uint32_t> uid, std::optional<uint32_t> gid) {
  Call call = Enter(Op::kChown, name);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::ChownAt(dir_fd, name, uid, gid);
}

absl::Status FaultSyscalls::ChmodAt(int dir_fd, const std::string& name, uint32_t mode) {
  Call call = Enter(Op::kChmod, name);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::ChmodAt(dir_fd, name, mode);
}

absl::StatusOr<std::string> FaultSyscalls::Read(int fd, size_t max_bytes) {
  Call call = Enter(Op::kRead, absl::StrCat(fd));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Read(fd, max_bytes);
}

absl::Status FaultSyscalls::Write(int fd, const std::string& data) {
  Call call = Enter(Op::kWrite, absl::StrCat(fd));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Write(fd, data);
}

absl::Status FaultSyscalls::Fsync(int fd) {
  Call call = Enter(Op::kFsync, absl::StrCat(fd));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::Fsync(fd);
}

absl::StatusOr<std::string> FaultSyscalls::PathOf(int fd) {
  Call call = Enter(Op::kPathOf, absl::StrCat(fd));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::PathOf(fd);
}

absl::StatusOr<uint64_t> FaultSyscalls::MountIdAt(const std::string& path, bool follow) {
  Call call = Enter(Op::kMountIdOf, path);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::MountIdAt(path, follow);
}

absl::StatusOr<uint64_t> FaultSyscalls::MountIdOf(int fd) {
  Call call = Enter(Op::kMountIdOf, absl::StrCat(fd));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::MountIdOf(fd);
}

absl::StatusOr<std::unique_ptr<DirWatch>> FaultSyscalls::WatchDir(const std::string& dir) {
  Call call = Enter(Op::kWatchDir, dir);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::WatchDir(dir);
}

}  // namespace lustre_csi::volume
