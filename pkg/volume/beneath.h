// Paths beneath a directory, built once from Syscalls' descriptor calls, so
// they run the same over the kernel and over the fake.
//
// ResolveBeneath stops "..", absolute symlinks and magic links from leaving
// the root. The calls that create, read or change something resolve
// strictly (Resolution::kStrictlyBeneath: no symlink at all, no other mount)
// and act on what they opened, so nothing swapped into the path can redirect
// them; MakeMarkedDirBeneath does its whole job through one descriptor of the
// new directory for that reason.
//
// For the strict calls `relative` is a clean relative path, not empty, not
// ".": INVALID_ARGUMENT otherwise, and INVALID_ARGUMENT (errno EXDEV or
// ELOOP) when it would leave the root, follow a symlink or cross a mount;
// NOT_FOUND when a component is missing.
#ifndef LUSTRE_CSI_PKG_VOLUME_BENEATH_H_
#define LUSTRE_CSI_PKG_VOLUME_BENEATH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

// Resolves `relative` beneath the existing directory `root`
// (Resolution::kBeneath) and returns the absolute path of what it names, as
// the kernel gives it (PathOf): symlink-free, beneath the canonical `root`.
// INVALID_ARGUMENT (errno EXDEV or ELOOP) when `relative` is absolute,
// contains NUL, or a "..", symlink or magic link would leave the root;
// NOT_FOUND when a component is missing; "" names the root.
absl::StatusOr<std::string> ResolveBeneath(Syscalls& sys, const std::string& root,
                                           const std::string& relative);

// mkdir(2) of the last component (its parent must exist), mode subject to
// the umask. ALREADY_EXISTS (EEXIST) when something is there already.
absl::Status MkdirBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                          uint32_t mode);

// What Stat tells of the path.
absl::StatusOr<FileInfo> StatBeneath(Syscalls& sys, const std::string& root,
                                     const std::string& relative);

// The first `max_bytes` of a regular file (INVALID_ARGUMENT, errno EINVAL,
// for anything else).
absl::StatusOr<std::string> ReadFileBeneath(Syscalls& sys, const std::string& root,
                                            const std::string& relative, size_t max_bytes);

// A directory made for someone: its owner and mode, and a file in it that
// records whom it was made for.
struct MarkedDirSpec {
  uint32_t mode = 0700;  // exactly, no umask; setgid and sticky bits included
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::string marker_name;
  std::string marker_content;
  uint32_t marker_mode = 0444;
};

// mkdir of the last component (its parent must exist; ALREADY_EXISTS,
// nothing changed, when the name exists), then, through one descriptor of
// the new directory, so that nothing renamed into its path meanwhile is
// touched: chown to spec's ids (nullopt keeps one), chmod to exactly
// spec.mode (after the chown, which clears set-group-ID), and the marker
// file created (O_EXCL) with its content and mode, synced with the directory
// before OK. A directory found at the name that this process did not make
// (its owner is not EffectiveUid) is FAILED_PRECONDITION and left alone.
// When a step after the mkdir fails, what the call made is removed again:
// the marker, then the directory if it is still there and empty.
absl::Status MakeMarkedDirBeneath(Syscalls& sys, const std::string& root,
                                  const std::string& relative, const MarkedDirSpec& spec);

// The names in the directory `dir` (without "." and ".."), sorted.
absl::StatusOr<std::vector<std::string>> ListDir(Syscalls& sys, const std::string& dir);

// The parent of `relative` opened strictly beneath `root` (kPath), and the
// last component's name.
absl::StatusOr<ScopedFd> OpenParentStrictly(Syscalls& sys, const std::string& root,
                                            const std::string& relative, std::string* name);

// The error of a strict resolution of `relative` beneath `root` that failed
// with `status`: INVALID_ARGUMENT for EXDEV and ELOOP (it would leave the
// root, follow a symlink or cross a mount), else `status` itself.
absl::Status StrictError(const absl::Status& status, const std::string& root,
                         const std::string& relative);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_BENEATH_H_
