// The Linux implementation of the syscall seam: direct system calls (mount,
// umount2, statfs, statx, mkdir, rmdir, openat2), no shell and no helper
// processes. Stateless and thread-safe; one instance may be shared by the
// whole process. Visible only to the binary, e2e tests, benchmarks and this
// package; everything else takes a Syscalls*.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_SYSCALLS_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_SYSCALLS_H_

#include <memory>

#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

std::unique_ptr<Syscalls> NewLinuxSyscalls();

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_SYSCALLS_H_
