#include "pkg/volume/linux/linux_mount_namespace.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/namespace_threads.h"
#include "pkg/volume/linux/process.h"

namespace lustre_csi::volume {
namespace {

class LinuxMountNamespace : public MountNamespace {
 public:
  LinuxMountNamespace(std::string path, absl::Duration timeout, Isolation* isolation)
      : path_(std::move(path)), timeout_(timeout), isolation_(isolation) {}

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
    const bool in_place = (flags & kUnmountInPlace) != 0;
    flags &= ~kUnmountInPlace;
    absl::StatusOr<CallReply> reply = InNamespace(
        absl::StrCat("unmount ", target),
        [target, flags](std::string*) { return umount2(target.c_str(), flags) == 0 ? 0 : errno; },
        /*isolate=*/!in_place);
    if (!reply.ok()) return reply.status();
    if (reply->err != 0) {
      return ErrnoError(reply->err, absl::StrCat("unmount ", target, " in ", Describe()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    absl::StatusOr<CallReply> reply =
        InNamespace(absl::StrCat("read ", path), [path, max_bytes](std::string* data) {
          int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
          if (fd < 0) return errno;
          absl::Cleanup close_fd = [fd] { close(fd); };
          char buf[4096];
          while (data->size() < max_bytes) {
            ssize_t n = read(fd, buf, std::min(sizeof(buf), max_bytes - data->size()));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return errno;
            if (n == 0) break;
            data->append(buf, static_cast<size_t>(n));
          }
          return 0;
        });
    if (!reply.ok()) return reply.status();
    if (reply->err != 0) {
      return ErrnoError(reply->err, absl::StrCat("read ", path, " in ", Describe()));
    }
    return std::move(reply->data);
  }

  absl::StatusOr<bool> Exists(const std::string& path) override {
    absl::StatusOr<CallReply> reply =
        InNamespace(absl::StrCat("access ", path),
                    [path](std::string*) { return access(path.c_str(), F_OK) == 0 ? 0 : errno; });
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

  // Runs `call` on a thread that has entered the namespace, bounded by the
  // timeout. The namespace file is opened at the first call that can.
  absl::StatusOr<CallReply> InNamespace(const std::string& what, NamespaceThreads::Call call,
                                        bool isolate = true) {
    NamespaceThreads* threads = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (threads_ == nullptr) {
        absl::StatusOr<int> fd = OpenNamespace();
        if (!fd.ok()) return fd.status();
        NamespaceThreads::Options options;
        options.isolation = isolation_;
        threads_ = std::make_unique<NamespaceThreads>(*fd, options);
      }
      threads = threads_.get();
    }
    absl::StatusOr<CallReply> reply = threads->Run(what, timeout_, std::move(call), isolate);
    if (!reply.ok()) return Annotate(reply.status(), Describe());
    return reply;
  }

  const std::string path_;
  const absl::Duration timeout_;
  Isolation* const isolation_;
  absl::Mutex mu_;
  std::unique_ptr<NamespaceThreads> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<MountNamespace> NewLinuxMountNamespace(std::string ns_path, absl::Duration timeout,
                                                       Isolation* isolation) {
  return std::make_unique<LinuxMountNamespace>(std::move(ns_path), timeout, isolation);
}

}  // namespace lustre_csi::volume
