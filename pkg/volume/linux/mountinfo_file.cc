#include "pkg/volume/linux/mountinfo_file.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume::os {
namespace {

// Reads all of `fd` from its current position.
absl::Status ReadAll(int fd, std::string& out) {
  out.clear();
  size_t chunk = 64 * 1024;
  while (true) {
    size_t old = out.size();
    out.resize(old + chunk);
    ssize_t n = read(fd, out.data() + old, chunk);
    if (n < 0) {
      if (errno == EINTR) {
        out.resize(old);
        continue;
      }
      return ErrnoError(errno, "read /proc/self/mountinfo");
    }
    out.resize(old + n);
    if (n == 0) return absl::OkStatus();
  }
}

}  // namespace

// The kernel hands out mountinfo a page at a time, so one pass can mix two
// states of the table. A poll on the file reports POLLERR|POLLPRI once the
// table changed after open; a pass without that signal is consistent.
absl::StatusOr<std::string> ReadMountInfoFile() {
  std::string text;
  for (int attempt = 0; attempt < 5; ++attempt) {
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError(errno, "open /proc/self/mountinfo");
    absl::Status s = ReadAll(fd, text);
    struct pollfd pfd = {fd, POLLPRI, 0};
    int ready = s.ok() ? poll(&pfd, 1, 0) : 0;
    close(fd);
    if (!s.ok()) return s;
    if (ready <= 0 || (pfd.revents & (POLLERR | POLLPRI)) == 0) break;
  }
  return text;
}

}  // namespace lustre_csi::volume::os
