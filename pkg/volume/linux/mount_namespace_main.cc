// main() for tests that make real mounts.
//
// The tests run in a forked child that first enters a private mount
// namespace (unshare(CLONE_NEWNS), then "/" made recursively private), so no
// mount they make, or forget, can reach the namespace the test was started
// in; the namespace and all its mounts go away with the child. The parent
// stays behind in the original namespace and fails the run if that
// namespace's mount table differs afterwards from before. Without the
// privilege to unshare (not root) the run fails with a message, as the e2e
// tests' main does: a test that could not run never reports PASSED.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

std::string ReadMountTable() {
  std::string out;
  int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<unreadable>";
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fd);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string before = ReadMountTable();
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (unshare(CLONE_NEWNS) != 0) {
      if (errno == EPERM) {
        std::printf(
            "FAILED to start: entering a private mount namespace needs CAP_SYS_ADMIN (run the "
            "tests as root)\n");
        std::fflush(nullptr);
        _exit(1);
      }
      std::perror("unshare(CLONE_NEWNS)");
      _exit(1);
    }
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      std::perror("make / rprivate");
      _exit(1);
    }
    testing::InitGoogleMock(&argc, argv);
    google::InitGoogleLogging(argv[0]);
    FLAGS_logtostderr = true;
    int rc = RUN_ALL_TESTS();
    std::fflush(nullptr);
    _exit(rc);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::string after = ReadMountTable();
  if (after != before) {
    std::fprintf(stderr,
                 "FAILED: the mount table of the original namespace changed.\n"
                 "--- before ---\n%s--- after ---\n%s",
                 before.c_str(), after.c_str());
    return 1;
  }
  std::printf("The mount table of the original namespace is unchanged (%zu bytes).\n",
              after.size());
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::fprintf(stderr, "test child killed by signal %d\n", WTERMSIG(status));
  return 1;
}
