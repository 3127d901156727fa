// The Linux implementation of the syscall seam: direct system calls (mount,
// umount2, statfs, statx, mkdir, rmdir, openat2), no shell and no helper
// processes. Where the kernel lacks a newer interface (kernel_probe.h) it
// takes that interface's fallback: the user-space walk for openat2, staged
// binds (staged_bind.h) for the mount API. Thread-safe; one instance may be
// shared by the whole process. Visible only to the binary, e2e tests, benchmarks and this
// package; everything else takes a Syscalls*.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_SYSCALLS_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_SYSCALLS_H_

#include <memory>
#include <string>

#include "pkg/volume/isolation.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

struct LinuxSyscallsOptions {
  // Where BindBeneath and BindMountWithFlags stage their binds on kernels
  // without mount_setattr (before Linux 5.12); created at first use, and
  // made a private mount of its own there when its mount is shared
  // (staged_bind.h). Empty: such binds are UNIMPLEMENTED there.
  std::string bind_staging_dir;
  // Where each Unmount runs (borrowed; null: on the calling thread). An
  // unmount of a file system whose server is gone can sleep in the kernel
  // until it answers; in a task of its own (linux/isolated_task.h) that
  // holds no thread of the process, which can still exit.
  Isolation* isolation = nullptr;
};

std::unique_ptr<Syscalls> NewLinuxSyscalls(LinuxSyscallsOptions options = {});

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_SYSCALLS_H_
