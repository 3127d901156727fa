// Paths beneath a directory, built once from Syscalls' descriptor calls, so
// they run the same over the kernel and over the fake.
//
// Everything beneath a root is resolved strictly
// (Resolution::kStrictlyBeneath): no symlink at any component, no "..", no
// other mount, no magic link, as a Lustre server resolves a fileset (a
// sub-dir mount): what a writer of the file system plants cannot lead a call
// anywhere else. The calls that create, read or change something act on what
// they opened, so nothing swapped into the path meanwhile can redirect them;
// MakeMarkedDirBeneath does its whole job through one descriptor of the new
// directory for that reason, MkdirAllBeneath makes each level with mkdirat on
// the level above it as it opened it.
//
// `relative` is a clean relative path, not empty, not ".": INVALID_ARGUMENT
// otherwise (ResolveBeneath and BindDirBeneath also take "" for the root),
// and INVALID_ARGUMENT (errno EXDEV or ELOOP) naming the component when it
// would leave the root, follow a symlink or cross a mount; NOT_FOUND when a
// component is missing.
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

// Resolves `relative` strictly beneath the existing directory `root` and
// returns the absolute path of what it names, as the kernel gives it
// (PathOf), beneath the canonical `root`; "" names the root. For a check or
// a message: acting on the path again would resolve it again.
absl::StatusOr<std::string> ResolveBeneath(Syscalls& sys, const std::string& root,
                                           const std::string& relative);

// mkdir -p beneath `root`: each missing level of `relative` made with
// mkdirat(2) on its parent as opened strictly beneath `root` (mode subject
// to the umask), each existing one opened the same way; a symlink or a
// non-directory at any level is refused (INVALID_ARGUMENT naming it, or
// ENOTDIR), and nothing is made below it. Existing directories are fine.
absl::Status MkdirAllBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                             uint32_t mode);

// Syscalls::BindBeneath of the directory `relative` strictly beneath `root`
// ("" for the root itself) at `target` with the per-mount `flags`: bound
// from the descriptor the resolution opened and checked to be it. A refused
// component is named (StrictError).
absl::Status BindDirBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                            const std::string& target, unsigned long flags);

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
// with `status`: for EXDEV and ELOOP, INVALID_ARGUMENT (errno kept) naming
// the first component that is a symlink, another mount or a "..", as far as
// a second look finds it; else `status` itself.
absl::Status StrictError(Syscalls& sys, const absl::Status& status, const std::string& root,
                         const std::string& relative);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_BENEATH_H_
