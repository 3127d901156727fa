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

absl::StatusOr<std::string> FaultSyscalls::ResolveBeneath(const std::string& root,
                                                          const std::string& relative) {
  Call call = Enter(Op::kResolveBeneath, absl::StrCat(root, "/", relative));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::ResolveBeneath(root, relative);
}

absl::Status FaultSyscalls::WalkTree(const std::string& root, const TreeLimits& limits,
                                     const TreeVisitor& visit) {
  Call call = Enter(Op::kWalkTree, root);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::WalkTree(root, limits, visit);
}

absl::Status FaultSyscalls::MkdirBeneath(const std::string& root, const std::string& relative,
                                         uint32_t mode) {
  Call call = Enter(Op::kMkdirBeneath, absl::StrCat(root, "/", relative));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::MkdirBeneath(root, relative, mode);
}

absl::StatusOr<FileInfo> FaultSyscalls::StatBeneath(const std::string& root,
                                                    const std::string& relative) {
  Call call = Enter(Op::kStatBeneath, absl::StrCat(root, "/", relative));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::StatBeneath(root, relative);
}

absl::StatusOr<std::string> FaultSyscalls::ReadFileBeneath(const std::string& root,
                                                           const std::string& relative,
                                                           size_t max_bytes) {
  Call call = Enter(Op::kReadFileBeneath, absl::StrCat(root, "/", relative));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::ReadFileBeneath(root, relative, max_bytes);
}

absl::Status FaultSyscalls::MakeMarkedDirBeneath(const std::string& root,
                                                 const std::string& relative,
                                                 const MarkedDirSpec& spec) {
  Call call = Enter(Op::kMakeMarkedDirBeneath, absl::StrCat(root, "/", relative));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::MakeMarkedDirBeneath(root, relative, spec);
}

absl::Status FaultSyscalls::RemoveTreeBeneath(const std::string& root, const std::string& relative,
                                              int max_depth) {
  Call call = Enter(Op::kRemoveTreeBeneath, absl::StrCat(root, "/", relative));
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::RemoveTreeBeneath(root, relative, max_depth);
}

absl::StatusOr<std::vector<std::string>> FaultSyscalls::ListDir(const std::string& dir) {
  Call call = Enter(Op::kListDir, dir);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::ListDir(dir);
}

absl::StatusOr<std::unique_ptr<DirWatch>> FaultSyscalls::WatchDir(const std::string& dir) {
  Call call = Enter(Op::kWatchDir, dir);
  if (!call.status().ok()) return call.status();
  return SyscallsWrapper::WatchDir(dir);
}

}  // namespace lustre_csi::volume
