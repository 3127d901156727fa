#include "pkg/volume/syscalls.h"

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {

std::string PerMountOptionsText(unsigned long flags) {
  std::vector<std::string> opts = {(flags & kMsRdonly) ? "ro" : "rw"};
  if (flags & kMsNosuid) opts.push_back("nosuid");
  if (flags & kMsNodev) opts.push_back("nodev");
  if (flags & kMsNoexec) opts.push_back("noexec");
  if (flags & kMsNoatime) opts.push_back("noatime");
  if (flags & kMsNodiratime) opts.push_back("nodiratime");
  if (!(flags & (kMsNoatime | kMsStrictatime))) opts.push_back("relatime");
  if (flags & kMsNosymfollow) opts.push_back("nosymfollow");
  return absl::StrJoin(opts, ",");
}

absl::Status MkdirAll(Syscalls& sys, const std::string& path, uint32_t mode) {
  std::string clean = CleanPath(path);
  if (clean.empty() || clean[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("path \"", path, "\" is not absolute"));
  }
  // Walk up to the deepest existing ancestor, then create downwards.
  std::vector<std::string> missing;
  std::string cur = clean;
  while (true) {
    absl::StatusOr<FileInfo> info = sys.Stat(cur);
    if (info.ok()) {
      // A symlink is followed by mkdir below; it fails there if it does not
      // lead to a directory.
      if (!IsDirectoryMode(info->mode) && !IsSymlinkMode(info->mode)) {
        return ErrnoError(ENOTDIR, absl::StrCat("mkdir -p ", clean, ": ", cur));
      }
      break;
    }
    if (!absl::IsNotFound(info.status())) return info.status();
    missing.push_back(cur);
    if (cur == "/") break;
    cur = ParentPath(cur);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    absl::Status s = sys.Mkdir(*it, mode);
    if (absl::IsAlreadyExists(s)) {
      // Created concurrently: fine if it is a directory.
      absl::StatusOr<FileInfo> info = sys.Stat(*it);
      if (!info.ok()) return info.status();
      if (!IsDirectoryMode(info->mode)) return s;
    } else if (!s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

const char* SyscallOpName(SyscallOp op) {
  switch (op) {
    case SyscallOp::kMount:
      return "mount";
    case SyscallOp::kUnmount:
      return "umount";
    case SyscallOp::kStatfs:
      return "statfs";
    case SyscallOp::kStat:
      return "statx";
    case SyscallOp::kMkdir:
      return "mkdir";
    case SyscallOp::kRmdir:
      return "rmdir";
    case SyscallOp::kReadMountInfo:
      return "read mountinfo";
    case SyscallOp::kOpen:
      return "open";
    case SyscallOp::kReadDir:
      return "read directory";
    case SyscallOp::kMkdirAt:
      return "mkdirat";
    case SyscallOp::kUnlinkAt:
      return "unlinkat";
    case SyscallOp::kChown:
      return "chown";
    case SyscallOp::kChmod:
      return "chmod";
    case SyscallOp::kRead:
      return "read";
    case SyscallOp::kWrite:
      return "write";
    case SyscallOp::kFsync:
      return "fsync";
    case SyscallOp::kPathOf:
      return "path of descriptor";
    case SyscallOp::kWatchDir:
      return "watch directory";
    case SyscallOp::kMountIdOf:
      return "mount id of descriptor";
  }
  return "?";
}

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    Reset();
    sys_ = other.sys_;
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void ScopedFd::Reset() {
  if (fd_ >= 0 && sys_ != nullptr) sys_->Close(fd_).IgnoreError();
  fd_ = -1;
}

absl::StatusOr<ScopedFd> Open(Syscalls& sys, int dir_fd, const std::string& path,
                              const OpenHow& how) {
  absl::StatusOr<int> fd = sys.OpenAt(dir_fd, path, how);
  if (!fd.ok()) return fd.status();
  return ScopedFd(&sys, *fd);
}

absl::StatusOr<bool> PathExists(Syscalls& sys, const std::string& path) {
  absl::StatusOr<FileInfo> info = sys.Stat(path);
  if (info.ok()) return true;
  if (absl::IsNotFound(info.status())) return false;
  return info.status();
}

}  // namespace lustre_csi::volume
