// Paths resolved beneath a directory on the real file system, with openat2(2)
// (glibc has no wrapper; this is the project's one), or on kernels without it
// with the same resolution walked in user space (walk_beneath.h), and statx(2)
// with the mount id found on every kernel. LinuxSyscalls' OpenAt, StatAt and
// BindBeneath are made of these; what is built from several calls lives above
// the seam (pkg/volume/beneath.h). Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_BENEATH_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_BENEATH_H_

#include <linux/openat2.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume::os {

// Beneath the directory, no symlinks, no other mounts, no magic links: what
// the calls that create, change or delete use.
inline constexpr uint64_t kResolveStrictlyBeneath =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS;

// openat2(dir_fd, path, {flags, mode, resolve}): a file descriptor, or -1
// with errno set. Before Linux 5.6 (no openat2), the same resolution walked
// in user space (walk_beneath.h); `resolve` must include RESOLVE_BENEATH.
int OpenAt2(int dir_fd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve);

// OpenAt2 with kResolveStrictlyBeneath.
inline int OpenStrictlyBeneath(int dir_fd, const char* path, uint64_t flags, uint64_t mode = 0) {
  return OpenAt2(dir_fd, path, flags, mode, kResolveStrictlyBeneath);
}

// FileInfo from statx(2) of `fd` itself (AT_EMPTY_PATH), or of `name` in the
// directory `fd` without following a final symlink.
absl::StatusOr<FileInfo> StatAt(int fd, const char* name, absl::string_view what);

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_BENEATH_H_
