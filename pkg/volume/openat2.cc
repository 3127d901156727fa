#include "pkg/volume/openat2.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace lustre_csi::volume {

int OpenAt2(int dir_fd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  open_how how = {};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dir_fd, path, &how, sizeof(how)));
}

}  // namespace lustre_csi::volume
