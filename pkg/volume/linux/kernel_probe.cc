#include "pkg/volume/linux/kernel_probe.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace lustre_csi::volume::os {
namespace {

// Whether the call is there to use. An absent system call answers ENOSYS (a
// seccomp filter emulating an older kernel too); a seccomp profile that
// blocks a call it does not know answers EPERM, which none of the probes
// below can get otherwise: either way the fallback is taken.
bool Exists(long result) { return result >= 0 || (errno != ENOSYS && errno != EPERM); }

std::atomic<const KernelInterfaces*> g_override{nullptr};

}  // namespace

KernelInterfaces ProbeKernel() {
  KernelInterfaces k;
  {
    open_how how = {};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH;
    long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));
    k.openat2 = Exists(fd);
    if (fd >= 0) close(static_cast<int>(fd));
  }
  // Each with a bad descriptor: EBADF (or EINVAL) where the call exists,
  // nothing is opened, attached or changed.
  bool open_tree = Exists(syscall(SYS_open_tree, -1, "", 0));
  bool move_mount = Exists(syscall(SYS_move_mount, -1, "", -1, "", 0));
  bool mount_setattr = Exists(syscall(SYS_mount_setattr, -1, "", 0, nullptr, 0));
  k.mount_api = open_tree && move_mount && mount_setattr;
  {
    long fd = syscall(SYS_pidfd_open, getpid(), 0);
    k.pidfd_open = Exists(fd);
    if (fd >= 0) close(static_cast<int>(fd));
  }
  {
    struct statx stx = {};
    k.statx_mount_id =
        statx(AT_FDCWD, "/", 0, STATX_MNT_ID, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID) != 0;
  }
  return k;
}

const KernelInterfaces& Kernel() {
  if (const KernelInterfaces* k = g_override.load(std::memory_order_acquire)) return *k;
  static const KernelInterfaces probed = ProbeKernel();
  return probed;
}

void SetKernelForTesting(const KernelInterfaces* k) {
  g_override.store(k, std::memory_order_release);
}

}  // namespace lustre_csi::volume::os
