#include "pkg/volume/linux/linux_mount_namespace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/process.h"

namespace lustre_csi::volume {
namespace {

class LinuxMountNamespace : public MountNamespace {
 public:
  LinuxMountNamespace(std::string path, absl::Duration timeout)
      : path_(std::move(path)), timeout_(timeout) {}

  std::string Describe() const override {
    if (path_.empty()) return "the driver's own mount namespace";
    return absl::StrCat("mount namespace ", path_);
  }

  absl::StatusOr<bool> IsOwn() const override {
    if (path_.empty()) return true;
    struct stat theirs, ours;
    if (stat(path_.c_str(), &theirs) != 0) {
      return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, errno,
                                absl::StrCat("stat ", path_));
    }
    if (stat("/proc/self/ns/mnt", &ours) != 0) {
      return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, errno,
                                "stat /proc/self/ns/mnt");
    }
    return theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
  }

  absl::StatusOr<ProcessResult> Run(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env,
                                    absl::Duration timeout) override {
    absl::StatusOr<int> fd = OpenNamespace();
    if (!fd.ok()) return fd.status();
    absl::Cleanup close_fd = [fd = *fd] {
      if (fd >= 0) close(fd);
    };
    absl::StatusOr<ProcessResult> result = RunProcess({argv, env, *fd}, timeout);
    if (!result.ok()) return Annotate(result.status(), Describe());
    return result;
  }

  absl::Status Unmount(const std::string& target, int flags) override {
    absl::StatusOr<ChildReply> reply =
        InNamespace([&](int fd) { return UnmountInNamespace(fd, target, flags, timeout_); });
    if (!reply.ok()) return reply.status();
    if (reply->err != 0) {
      return ErrnoError(reply->err, absl::StrCat("unmount ", target, " in ", Describe()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    absl::StatusOr<ChildReply> reply =
        InNamespace([&](int fd) { return ReadFileInNamespace(fd, path, max_bytes, timeout_); });
    if (!reply.ok()) return reply.status();
    if (reply->err != 0) {
      return ErrnoError(reply->err, absl::StrCat("read ", path, " in ", Describe()));
    }
    return std::move(reply->data);
  }

  absl::StatusOr<bool> Exists(const std::string& path) override {
    absl::StatusOr<ChildReply> reply =
        InNamespace([&](int fd) { return AccessInNamespace(fd, path, F_OK, timeout_); });
    if (!reply.ok()) return reply.status();
    if (reply->err == 0) return true;
    if (reply->err == ENOENT || reply->err == ENOTDIR) return false;
    return ErrnoError(reply->err, absl::StrCat("access ", path, " in ", Describe()));
  }

 private:
  // An open descriptor of the namespace file, or -1 for the own namespace.
  absl::StatusOr<int> OpenNamespace() const {
    if (path_.empty()) return -1;
    int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, errno,
                                absl::StrCat("open ", Describe()));
    }
    return fd;
  }

  template <typename Fn>
  absl::StatusOr<ChildReply> InNamespace(Fn fn) const {
    absl::StatusOr<int> fd = OpenNamespace();
    if (!fd.ok()) return fd.status();
    absl::StatusOr<ChildReply> reply = fn(*fd);
    if (*fd >= 0) close(*fd);
    if (!reply.ok()) return Annotate(reply.status(), Describe());
    return reply;
  }

  const std::string path_;
  const absl::Duration timeout_;
};

}  // namespace

std::unique_ptr<MountNamespace> NewLinuxMountNamespace(std::string ns_path,
                                                       absl::Duration timeout) {
  return std::make_unique<LinuxMountNamespace>(std::move(ns_path), timeout);
}

}  // namespace lustre_csi::volume
