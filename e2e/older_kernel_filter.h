// A seccomp filter that makes this process and everything it execs see an
// older kernel: every x86_64 system call numbered above the last one of
// that kernel answers ENOSYS, as the older kernel would. Test-only (used by
// e2e/older-kernel and the pod runtime).
#ifndef LUSTRE_CSI_E2E_OLDER_KERNEL_FILTER_H_
#define LUSTRE_CSI_E2E_OLDER_KERNEL_FILTER_H_

#include <string>
#include <vector>

namespace lustre_csi::e2e {

// The kernels with a known table: "4.18", "5.4", "5.11".
std::vector<std::string> KnownOlderKernels();

// Installs the filter for `version` (no_new_privs is set first). Returns ""
// on success, else what went wrong. Async-signal-safe apart from the
// error text, so a forked child may call it before exec.
std::string InstallOlderKernelFilter(const char* version);

}  // namespace lustre_csi::e2e

#endif  // LUSTRE_CSI_E2E_OLDER_KERNEL_FILTER_H_
