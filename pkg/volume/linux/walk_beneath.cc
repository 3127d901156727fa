#include "pkg/volume/linux/walk_beneath.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "pkg/volume/linux/kernel_probe.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume::os {
namespace {

// As the kernel's own limit on symlinks followed in one resolution.
constexpr int kMaxSymlinks = 40;

int Fail(int err) {
  errno = err;
  return -1;
}

// The directories the walk holds, root first; closed on every way out.
class FdStack {
 public:
  ~FdStack() {
    for (int fd : fds_) close(fd);
  }
  void Push(int fd) { fds_.push_back(fd); }
  void Pop() {
    close(fds_.back());
    fds_.pop_back();
  }
  int Top() const { return fds_.back(); }
  size_t size() const { return fds_.size(); }
  int Release() {
    int fd = fds_.back();
    fds_.pop_back();
    return fd;
  }

 private:
  std::vector<int> fds_;
};

int64_t MountIdFromFdinfo(int fd) {
  char name[48];
  std::snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
  int info = open(name, O_RDONLY | O_CLOEXEC);
  // No such entry: the descriptor is not open.
  if (info < 0) return Fail(errno == ENOENT ? EBADF : errno);
  char buf[512];
  ssize_t n;
  do {
    n = read(info, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  close(info);
  if (n < 0) return Fail(err);
  buf[n] = '\0';
  // "pos:\t0\nflags:\t...\nmnt_id:\t<id>\n...": the first lines fit.
  const char* field = std::strstr(buf, "mnt_id:");
  if (field == nullptr) return Fail(ENOTSUP);
  return std::strtoll(field + 7, nullptr, 10);
}

// name_to_handle_at(2)'s mount id: a handle of zero bytes answers EOVERFLOW
// with the mount id filled in. The file system's encode_fh is asked only for
// the handle's size, which it answers from the inode without a request.
int64_t HandleMountId(int dir_fd, const char* name, int flags) {
  struct file_handle probe = {};
  int mount_id = -1;
  if (name_to_handle_at(dir_fd, name, &probe, &mount_id, flags) == 0 || errno == EOVERFLOW) {
    return mount_id;
  }
  return -1;
}

// After HandleMountId failed: a file system without file handles
// (EOPNOTSUPP), or a seccomp profile that refuses the call (ENOSYS, EPERM),
// where /proc/self/fdinfo still tells.
bool NoHandles(int err) { return err == EOPNOTSUPP || err == ENOSYS || err == EPERM; }

// The fdinfo fallback for a name: opened O_PATH for the read, and closed.
int64_t FdinfoMountIdAt(int dir_fd, const char* name, bool follow) {
  int fd = openat(dir_fd, name, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
  if (fd < 0) return -1;
  int64_t id = MountIdFromFdinfo(fd);
  int err = errno;
  close(fd);
  errno = err;
  return id;
}

std::vector<std::string> Components(const char* path) {
  return absl::StrSplit(path, '/', absl::SkipEmpty());
}

}  // namespace

bool FdPath(int fd, std::string* out) {
  char link[40];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char buf[PATH_MAX];
  ssize_t n = readlink(link, buf, sizeof(buf));
  if (n < 0) return false;
  if (static_cast<size_t>(n) >= sizeof(buf)) {
    errno = ENAMETOOLONG;
    return false;
  }
  out->assign(buf, static_cast<size_t>(n));
  return true;
}

int64_t MountIdAt(int dir_fd, const char* name) {
  const int empty = *name == '\0' ? AT_EMPTY_PATH : 0;
  if (Kernel().statx_mount_id) {
    struct statx stx;
    if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | empty, STATX_MNT_ID, &stx) !=
        0) {
      return -1;
    }
    if ((stx.stx_mask & STATX_MNT_ID) != 0) return static_cast<int64_t>(stx.stx_mnt_id);
  }
  if (empty != 0) return MountIdOfDescriptor(dir_fd);
  int64_t id = HandleMountId(dir_fd, name, 0);
  if (id >= 0 || !NoHandles(errno)) return id;
  return FdinfoMountIdAt(dir_fd, name, false);
}

int64_t MountIdOfDescriptor(int fd) {
  int64_t id = HandleMountId(fd, "", AT_EMPTY_PATH);
  if (id >= 0 || !NoHandles(errno)) return id;
  return MountIdFromFdinfo(fd);
}

int64_t MountIdOfPath(const char* path, bool follow) {
  int64_t id = HandleMountId(AT_FDCWD, path, follow ? AT_SYMLINK_FOLLOW : 0);
  if (id >= 0 || !NoHandles(errno)) return id;
  return FdinfoMountIdAt(AT_FDCWD, path, follow);
}

int64_t MountIdOf(const struct statx& stx, int dir_fd, const char* name) {
  if (Kernel().statx_mount_id && (stx.stx_mask & STATX_MNT_ID) != 0) {
    return static_cast<int64_t>(stx.stx_mnt_id);
  }
  return MountIdAt(dir_fd, name);
}

int WalkBeneath(int dir_fd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  constexpr uint64_t kKnown =
      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  if ((resolve & RESOLVE_BENEATH) == 0 || (resolve & ~kKnown) != 0 || (flags & O_CREAT) != 0 ||
      (flags & O_TMPFILE) == O_TMPFILE) {
    return Fail(EINVAL);
  }
  // As openat2 checks its arguments: O_PATH takes only these flags, and a
  // mode only comes with O_CREAT.
  constexpr uint64_t kPathFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  if (((flags & O_PATH) != 0 && (flags & ~kPathFlags) != 0) || mode != 0) return Fail(EINVAL);
  if (*path == '\0') return Fail(ENOENT);
  if (*path == '/') return Fail(EXDEV);

  FdStack walk;
  int start = openat(dir_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (start < 0) return -1;
  walk.Push(start);
  std::string root_path;
  if (!FdPath(start, &root_path)) return -1;
  int64_t root_mount = -1;
  if ((resolve & RESOLVE_NO_XDEV) != 0 && (root_mount = MountIdAt(start, "")) < 0) return -1;

  std::vector<std::string> first = Components(path);
  // A trailing slash asks for a directory, through a final symlink too.
  if (path[std::strlen(path) - 1] == '/') first.push_back(".");
  std::deque<std::string> todo(first.begin(), first.end());
  mode_t top_type = S_IFDIR;
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      if (walk.size() == 1) return Fail(EXDEV);
      walk.Pop();
      top_type = S_IFDIR;
      continue;
    }
    const bool last = todo.empty();
    int fd = openat(walk.Top(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
      int err = errno;
      close(fd);
      return Fail(err);
    }
    const bool stop_at_link = last && (flags & O_NOFOLLOW) != 0;
    if (S_ISLNK(st.st_mode) && stop_at_link && (flags & O_PATH) == 0) {
      // As the kernel answers: a symlink is no directory, else ELOOP.
      close(fd);
      return Fail((flags & O_DIRECTORY) != 0 ? ENOTDIR : ELOOP);
    }
    if (S_ISLNK(st.st_mode) && !stop_at_link) {
      struct statfs fs;
      const bool magic = fstatfs(fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
      if ((resolve & RESOLVE_NO_SYMLINKS) != 0 ||
          ((resolve & RESOLVE_NO_MAGICLINKS) != 0 && magic) || ++links > kMaxSymlinks) {
        close(fd);
        return Fail(ELOOP);
      }
      char target[PATH_MAX];
      ssize_t n = readlinkat(fd, "", target, sizeof(target));
      int err = errno;
      close(fd);
      if (n < 0) return Fail(err);
      if (static_cast<size_t>(n) >= sizeof(target)) return Fail(ENAMETOOLONG);
      if (n == 0) return Fail(ENOENT);
      if (target[0] == '/') return Fail(EXDEV);
      target[n] = '\0';
      std::vector<std::string> parts = Components(target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      continue;
    }
    walk.Push(fd);
    top_type = st.st_mode & S_IFMT;
    if ((resolve & RESOLVE_NO_XDEV) != 0) {
      int64_t id = MountIdAt(fd, "");
      if (id < 0) return -1;
      if (id != root_mount) return Fail(EXDEV);
    }
    std::string here;
    if (!FdPath(fd, &here)) return -1;
    if (!IsPathBeneath(root_path, here)) return Fail(EXDEV);
    if (!last && !S_ISDIR(st.st_mode)) return Fail(ENOTDIR);
  }
  if ((flags & O_DIRECTORY) != 0 && top_type != S_IFDIR) return Fail(ENOTDIR);
  if ((flags & O_PATH) != 0) return walk.Release();
  // The caller's access, on exactly what the walk found.
  char link[40];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", walk.Top());
  return open(link, static_cast<int>(flags & ~static_cast<uint64_t>(O_NOFOLLOW)),
              static_cast<mode_t>(mode));
}

}  // namespace lustre_csi::volume::os
