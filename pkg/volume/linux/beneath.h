// Paths resolved beneath a directory on the real file system, with openat2(2)
// (glibc has no wrapper; this is the project's one), or on kernels without it
// with the same resolution walked in user space (walk_beneath.h).
//
// ResolveBeneath and OpenPathBeneath stop "..", absolute symlinks and magic
// links from leaving the root; the *Beneath calls that create, read or change
// something resolve strictly (kResolveStrictlyBeneath: no symlink at all, no
// other mount) and act on what they opened, so nothing swapped into the path
// can redirect a call. (A sequence of calls resolves each time anew;
// MakeMarkedDirBeneath does its whole job through one descriptor for that
// reason.) They implement the same calls of LinuxSyscalls; see
// pkg/volume/syscalls.h for their contracts. Stateless and thread-safe.
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

// Resolves `relative` beneath the existing directory `root` with
// openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) and returns the absolute,
// symlink-free path of the result, beneath the canonical form of `root`.
// INVALID_ARGUMENT when `relative` is absolute, contains NUL, or a "..",
// symlink or magic link would leave the root; NOT_FOUND when a component is
// missing.
absl::StatusOr<std::string> ResolveBeneath(const std::string& root, absl::string_view relative);

// The same resolution, returning the O_PATH descriptor of the result (the
// caller closes it); with `no_xdev` the walk may not cross a mount either.
absl::StatusOr<int> OpenPathBeneath(const std::string& root, absl::string_view relative,
                                    bool no_xdev);

absl::Status MkdirBeneath(const std::string& root, const std::string& relative, uint32_t mode);
absl::StatusOr<FileInfo> StatBeneath(const std::string& root, const std::string& relative);
absl::StatusOr<std::string> ReadFileBeneath(const std::string& root, const std::string& relative,
                                            size_t max_bytes);
absl::Status MakeMarkedDirBeneath(const std::string& root, const std::string& relative,
                                  const MarkedDirSpec& spec);

// The error of a strict resolution of `relative` beneath `root` that failed
// with `err`: INVALID_ARGUMENT for EXDEV and ELOOP (it would leave the root,
// follow a symlink or cross a mount), else by ErrnoError.
absl::Status StrictError(int err, const std::string& root, const std::string& relative);

// The parent of the clean relative path `relative`, opened strictly beneath
// `root` (O_PATH, the caller closes it), and the last component's name.
// INVALID_ARGUMENT for a path that is not clean, not relative, empty, "." or
// ends in "..".
absl::StatusOr<int> OpenParentStrict(const std::string& root, const std::string& relative,
                                     std::string* name);

// FileInfo from statx(2) of `fd` itself (AT_EMPTY_PATH), or of `name` in the
// directory `fd` without following a final symlink.
absl::StatusOr<FileInfo> StatAt(int fd, const char* name, absl::string_view what);

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_BENEATH_H_
