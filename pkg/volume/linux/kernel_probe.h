// Which of the newer kernel interfaces (pkg/volume/kernel.h) this kernel has,
// found by calling each one harmlessly and looking for ENOSYS (or EPERM from
// a seccomp profile), once per process at first use. The real
// implementations in this directory ask Kernel() before they use one of
// them and take its fallback when it is missing; pidfd_open is tried
// directly and falls back on any error. Thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_KERNEL_PROBE_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_KERNEL_PROBE_H_

#include "pkg/volume/kernel.h"

namespace lustre_csi::volume::os {

// What the probe found (or, in tests, what SetKernelForTesting set).
const KernelInterfaces& Kernel();

// Probes now, without the cache: for tests that compare.
KernelInterfaces ProbeKernel();

// Tests only: Kernel() answers `k` until called again with nullptr (the
// probe's answer). `k` must outlive its use.
void SetKernelForTesting(const KernelInterfaces* k);

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_KERNEL_PROBE_H_
