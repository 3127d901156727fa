// The one wrapper of openat2(2) (glibc has none), for the code in pkg/volume
// that resolves paths beneath a directory without following what could lead
// out of it.
#ifndef LUSTRE_CSI_PKG_VOLUME_OPENAT2_H_
#define LUSTRE_CSI_PKG_VOLUME_OPENAT2_H_

#include <linux/openat2.h>

#include <cstdint>

namespace lustre_csi::volume {

// Beneath the directory, no symlinks, no other mounts, no magic links: what
// the tree walkers that delete or take ownership use.
inline constexpr uint64_t kResolveStrictlyBeneath =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS;

// openat2(dir_fd, path, {flags, mode, resolve}): a file descriptor, or -1
// with errno set (ENOSYS before Linux 5.6).
int OpenAt2(int dir_fd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve);

// OpenAt2 with kResolveStrictlyBeneath.
inline int OpenStrictlyBeneath(int dir_fd, const char* path, uint64_t flags, uint64_t mode = 0) {
  return OpenAt2(dir_fd, path, flags, mode, kResolveStrictlyBeneath);
}

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_OPENAT2_H_
