#include "pkg/volume/linux_syscalls.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

const char* OrNull(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

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

class LinuxSyscalls : public Syscalls {
 public:
  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    if (mount(OrNull(source), target.c_str(), OrNull(fstype), flags, OrNull(data)) != 0) {
      return ErrnoError(errno, absl::StrCat("mount ", source, " on ", target, " (type ",
                                            fstype.empty() ? "none" : fstype, ", flags 0x",
                                            absl::Hex(flags), ")"));
    }
    return absl::OkStatus();
  }

  absl::Status Unmount(const std::string& target, int flags) override {
    if (umount2(target.c_str(), flags) != 0) {
      return ErrnoError(errno,
                        absl::StrCat("umount ", target, " (flags 0x", absl::Hex(flags), ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<FsStats> Statfs(const std::string& path) override {
    struct statfs st;
    if (statfs(path.c_str(), &st) != 0) return ErrnoError(errno, absl::StrCat("statfs ", path));
    FsStats out;
    out.block_size = st.f_frsize != 0 ? st.f_frsize : st.f_bsize;
    out.blocks = st.f_blocks;
    out.blocks_free = st.f_bfree;
    out.blocks_available = st.f_bavail;
    out.files = st.f_files;
    out.files_free = st.f_ffree;
    out.fs_type = st.f_type;
    return out;
  }

  absl::StatusOr<FileInfo> Stat(const std::string& path) override {
    struct statx stx;
    if (statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
              STATX_BASIC_STATS | STATX_MNT_ID, &stx) != 0) {
      return ErrnoError(errno, absl::StrCat("statx ", path));
    }
    FileInfo info;
    info.mode = stx.stx_mode;
    info.uid = stx.stx_uid;
    info.gid = stx.stx_gid;
    info.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    info.ino = stx.stx_ino;
    info.has_mount_id = (stx.stx_mask & STATX_MNT_ID) != 0;
    info.mount_id = info.has_mount_id ? stx.stx_mnt_id : 0;
    info.has_mount_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0;
    info.mount_root = info.has_mount_root && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
    return info;
  }

  absl::Status Mkdir(const std::string& path, uint32_t mode) override {
    if (mkdir(path.c_str(), mode) != 0) return ErrnoError(errno, absl::StrCat("mkdir ", path));
    return absl::OkStatus();
  }

  absl::Status Rmdir(const std::string& path) override {
    if (rmdir(path.c_str()) != 0) return ErrnoError(errno, absl::StrCat("rmdir ", path));
    return absl::OkStatus();
  }

  // The kernel hands out mountinfo a page at a time, so one pass can mix two
  // states of the table. A poll on the file reports POLLERR|POLLPRI once the
  // table changed after open; a pass without that signal is consistent.
  absl::StatusOr<std::string> ReadMountInfo() override {
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

  absl::StatusOr<std::string> ResolveBeneath(const std::string& root,
                                             const std::string& relative) override {
    return ::lustre_csi::volume::ResolveBeneath(root, relative);
  }
};

}  // namespace

std::unique_ptr<Syscalls> NewLinuxSyscalls() { return std::make_unique<LinuxSyscalls>(); }

}  // namespace lustre_csi::volume
