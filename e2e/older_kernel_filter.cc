// The filter behind e2e/older-kernel: a seccomp filter that answers ENOSYS - what a kernel answers
// for a system call it does not have - for every x86_64 system call numbered above the last one of
// Linux VERSION. The filter is inherited by everything the process execs and starts (the mount
// helper included). Numbers from the kernel's x86_64 table
// (arch/x86/entry/syscalls/syscall_64.tbl):
//   4.18: 334 rseq is the last (333 io_pgetevents and 334 rseq are new in it)
//   5.4:  435 clone3 (5.3) is the last; 5.4 added none
//   5.11: 441 epoll_pwait2 is the last; 436 close_range (5.9), 437 openat2
//         (5.6), 438-440 (5.6-5.10) are there, 442 mount_setattr (5.12) not
// What it cannot show: calls that exist on both kernels but behave
// differently (statx's STATX_MNT_ID and STATX_ATTR_MOUNT_ROOT before 5.8,
// flags a call refuses with EINVAL) - those are emulated in the unit tests
// through the probe's test hook instead.
#include "e2e/older_kernel_filter.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace lustre_csi::e2e {
namespace {

struct Table {
  const char* version;
  unsigned last;
};

constexpr Table kTables[] = {{"4.18", 334}, {"5.4", 435}, {"5.11", 441}};

}  // namespace

std::vector<std::string> KnownOlderKernels() {
  std::vector<std::string> out;
  for (const Table& t : kTables) out.push_back(t.version);
  return out;
}

std::string InstallOlderKernelFilter(const char* version) {
#if !defined(__x86_64__)
  return "only x86_64 system call tables are known";
#endif
  const Table* table = nullptr;
  for (const Table& t : kTables) {
    if (strcmp(version, t.version) == 0) table = &t;
  }
  if (table == nullptr) return std::string("no system call table for Linux ") + version;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      // Above the table (x32 numbers, with bit 30 set, are above every one).
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, table->last, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])),
                            filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    return std::string("installing the seccomp filter: ") + strerror(errno);
  }
  return "";
}

}  // namespace lustre_csi::e2e
