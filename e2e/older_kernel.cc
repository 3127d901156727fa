// older-kernel VERSION PROGRAM [ARG...]: runs PROGRAM as on an older Linux,
// behind the seccomp filter of older_kernel_filter.h (system calls newer than
// that kernel answer ENOSYS, for PROGRAM and everything it starts).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "e2e/older_kernel_filter.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: older-kernel VERSION PROGRAM [ARG...]  (VERSION: 4.18, 5.4, 5.11)\n");
    return 2;
  }
  std::string error = lustre_csi::e2e::InstallOlderKernelFilter(argv[1]);
  if (!error.empty()) {
    fprintf(stderr, "older-kernel: %s\n", error.c_str());
    return 2;
  }
  execv(argv[2], argv + 2);
  fprintf(stderr, "older-kernel: exec %s: %s\n", argv[2], strerror(errno));
  return 127;
}
