#include "pkg/volume/linux/inotify_dir_watch.h"

#include <dirent.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume::os {
namespace {

class InotifyDirWatch : public DirWatch {
 public:
  InotifyDirWatch(int inotify_fd, int wake_fd) : inotify_fd_(inotify_fd), wake_fd_(wake_fd) {}
  ~InotifyDirWatch() override {
    close(inotify_fd_);
    close(wake_fd_);
  }

  absl::StatusOr<std::vector<DirEvent>> Wait() override {
    std::vector<DirEvent> events;
    while (true) {
      struct pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(errno, "poll inotify");
      }
      bool woken = false;
      if (fds[1].revents & POLLIN) {
        uint64_t count;
        while (read(wake_fd_, &count, sizeof(count)) > 0) {
        }
        woken = true;
      }
      if (fds[0].revents & POLLIN) {
        if (absl::Status s = ReadEvents(events); !s.ok()) return s;
      }
      if (woken || !events.empty()) return events;
    }
  }

  void Wake() override {
    uint64_t one = 1;
    // EAGAIN: the counter is full, so a wake-up is pending anyway.
    while (write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
  }

 private:
  absl::Status ReadEvents(std::vector<DirEvent>& out) {
    alignas(struct inotify_event) char buffer[8192];
    while (true) {
      ssize_t n = read(inotify_fd_, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return absl::OkStatus();
      if (n < 0) return ErrnoError(errno, "read inotify events");
      if (n == 0) return absl::OkStatus();
      for (char* p = buffer; p < buffer + n;) {
        const auto* event = reinterpret_cast<const struct inotify_event*>(p);
        p += sizeof(struct inotify_event) + event->len;
        if (event->mask & IN_Q_OVERFLOW) {
          out.push_back({DirEvent::Kind::kOverflow, ""});
        } else if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
          out.push_back({DirEvent::Kind::kDirectoryGone, ""});
        } else if (event->len > 0 && (event->mask & (IN_CREATE | IN_MOVED_TO))) {
          out.push_back({DirEvent::Kind::kAdded, event->name});
        } else if (event->len > 0 && (event->mask & (IN_DELETE | IN_MOVED_FROM))) {
          out.push_back({DirEvent::Kind::kRemoved, event->name});
        }
      }
    }
  }

  const int inotify_fd_;
  const int wake_fd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DirWatch>> NewInotifyDirWatch(const std::string& dir) {
  int inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd < 0) {
    return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, errno, "inotify_init1");
  }
  if (inotify_add_watch(inotify_fd, dir.c_str(),
                        IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                            IN_MOVE_SELF | IN_ONLYDIR) < 0) {
    int err = errno;
    close(inotify_fd);
    return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, err,
                              absl::StrCat("watch ", dir));
  }
  int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    int err = errno;
    close(inotify_fd);
    return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, err, "eventfd");
  }
  return std::unique_ptr<DirWatch>(new InotifyDirWatch(inotify_fd, wake_fd));
}

}  // namespace lustre_csi::volume::os
