#include "pkg/volume/linux/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <thread>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "pkg/base/worker_pool.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/left_behind.h"

extern char** environ;

namespace lustre_csi::volume {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;

// What a child reports on its status pipe: the step that failed and why.
enum Stage : int32_t { kEnterNamespace = 1, kExec = 2 };
struct StatusWord {
  int32_t stage;
  int32_t err;
};

// Owns argv/envp as NUL-terminated arrays built before the fork.
class CStringArray {
 public:
  explicit CStringArray(const std::vector<std::string>& strings) : strings_(strings) {
    for (std::string& s : strings_) ptrs_.push_back(s.data());
    ptrs_.push_back(nullptr);
  }
  char* const* get() { return ptrs_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> ptrs_;
};

struct Pipe {
  int read = -1;
  int write = -1;
  ~Pipe() {
    if (read >= 0) close(read);
    if (write >= 0) close(write);
  }
  void CloseWrite() {
    if (write >= 0) close(write);
    write = -1;
  }
};

absl::Status MakePipe(Pipe& p) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  p.read = fds[0];
  p.write = fds[1];
  return absl::OkStatus();
}

// Child side: write all of `buf`; async-signal-safe.
void WriteAll(int fd, const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    len -= static_cast<size_t>(n);
  }
}

[[noreturn]] void ChildFail(int status_fd, Stage stage, int err) {
  StatusWord word{stage, err};
  WriteAll(status_fd, &word, sizeof(word));
  _exit(127);
}

// Child side, right after fork: enter the namespace and reset signal state.
void ChildEnter(int mount_ns_fd, int status_fd) {
  if (mount_ns_fd >= 0 && syscall(SYS_setns, mount_ns_fd, CLONE_NEWNS) != 0) {
    ChildFail(status_fd, kEnterNamespace, errno);
  }
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Forks with every signal blocked around the fork, so no handler of this
// process runs in the child before ChildEnter resets them.
pid_t ForkQuietly() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid != 0) pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return pid;
}

// Whether the child `pid` is reaped now (or is no child of this process).
bool Reaped(pid_t pid) {
  int status;
  int r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  return r != 0;
}

// Children killed at their timeout that had not ended yet. A child killed
// while it waits for a server that does not answer (a mount helper, in
// uninterruptible sleep) ends only when the server answers: one thread
// reaps them all, looking every 100 ms, and ends once none is left, instead
// of a thread per child. Each is work left behind (ProcessLeftBehind), ended
// when reaped.
class Reaper {
 public:
  void Add(pid_t pid, uint64_t left_behind) {
    absl::MutexLock lock(&mu_);
    children_.push_back({pid, left_behind});
    if (running_) return;
    running_ = true;
    std::thread([this] { Loop(); }).detach();
  }

 private:
  struct Child {
    pid_t pid;
    uint64_t left_behind;
  };

  void Loop() {
    while (true) {
      std::vector<uint64_t> ended;
      bool done = false;
      {
        absl::MutexLock lock(&mu_);
        auto gone = std::remove_if(children_.begin(), children_.end(), [&](const Child& c) {
          if (!Reaped(c.pid)) return false;
          ended.push_back(c.left_behind);
          return true;
        });
        children_.erase(gone, children_.end());
        done = children_.empty();
        if (done) running_ = false;
      }
      // What waits for them (a file system's mounts) runs without the lock.
      for (uint64_t id : ended) ProcessLeftBehind().End(id);
      if (done) return;
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  absl::Mutex mu_;
  std::vector<Child> children_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
};

// How long a killed child is given to end before it counts as left
// behind: one that is not waiting in the kernel ends within a few
// milliseconds of SIGKILL.
constexpr absl::Duration kEndAfterKill = absl::Milliseconds(100);

// Reaps the killed child `pid`, waiting for it no longer than kEndAfterKill:
// a child stuck in the kernel (a mount or an unmount of a dead server) may
// take arbitrarily long to go, and is reaped in the background. The id of
// the work left behind, or nullopt where the child has ended or is a child
// of a task (base::InIsolatedTask, which starts no thread): that is left to
// the task, and goes to init when the task ends.
std::optional<uint64_t> ReapInBackground(pid_t pid) {
  const absl::Time give_up = absl::Now() + kEndAfterKill;
  bool reaped = Reaped(pid);
  while (!reaped && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(2));
    reaped = Reaped(pid);
  }
  if (reaped || base::InIsolatedTask()) return std::nullopt;
  static Reaper* reaper = new Reaper;
  const uint64_t id = ProcessLeftBehind().Add();
  reaper->Add(pid, id);
  return id;
}

// Reads what is there without blocking; false at end of file.
bool Drain(int fd, std::string& out, size_t max) {
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      size_t keep = std::min(static_cast<size_t>(n), max - std::min(max, out.size()));
      out.append(buf, keep);
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN;
  }
}

// Collects the child's output from `read_fd` until it has exited and the
// pipe is at end of file, or until `deadline`. Returns the wait status, or
// nullopt on timeout (the child is then still running).
absl::StatusOr<std::optional<int>> Supervise(pid_t pid, int read_fd, absl::Time deadline,
                                             size_t max_output, std::string& output) {
  fcntl(read_fd, F_SETFL, O_NONBLOCK);
  int pid_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  absl::Cleanup close_pid = [pid_fd] {
    if (pid_fd >= 0) close(pid_fd);
  };
  bool pipe_open = true;
  bool exited = false;  // only known with a pidfd; without one, end of output stands in
  while (!exited && (pid_fd >= 0 || pipe_open)) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return std::optional<int>();
    struct pollfd fds[2] = {{pipe_open ? read_fd : -1, POLLIN, 0}, {pid_fd, POLLIN, 0}};
    int wait_ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left), 60000)) + 1;
    int ready = poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) return ErrnoError(errno, "poll");
    if (ready <= 0) continue;
    if (fds[0].revents != 0) pipe_open = Drain(read_fd, output, max_output);
    if (fds[1].revents != 0) exited = true;
  }
  if (pipe_open) Drain(read_fd, output, max_output);
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, exited ? 0 : WNOHANG);
    if (r == pid) return std::optional<int>(status);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError(errno, "waitpid");
    if (absl::Now() >= deadline) return std::optional<int>();
    absl::SleepFor(absl::Milliseconds(2));
  }
}

// Reads the status word, blocking until the child wrote one or closed the
// pipe (exec succeeded or the child exited). nullopt for a closed pipe.
std::optional<StatusWord> ReadStatusWord(int fd) {
  StatusWord word{};
  size_t got = 0;
  while (got < sizeof(word)) {
    ssize_t n = read(fd, reinterpret_cast<char*>(&word) + got, sizeof(word) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got < sizeof(word)) return std::nullopt;
  return word;
}

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const ProcessSpec& spec, absl::Duration timeout) {
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/') {
    return absl::InvalidArgumentError("command must be an absolute path");
  }
  for (const std::string& a : spec.argv) {
    if (a.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("command arguments may not contain NUL");
    }
  }
  if (spec.env.has_value()) {
    for (const std::string& e : *spec.env) {
      if (e.find('\0') != std::string::npos) {
        return absl::InvalidArgumentError("environment entries may not contain NUL");
      }
    }
  }
  std::string cmdline = absl::StrJoin(spec.argv, " ");
  CStringArray argv(spec.argv);
  std::optional<CStringArray> envp;
  if (spec.env.has_value()) envp.emplace(*spec.env);
  char* const* env = envp.has_value() ? envp->get() : environ;

  Pipe out, status;
  if (absl::Status s = MakePipe(out); !s.ok()) return s;
  if (absl::Status s = MakePipe(status); !s.ok()) return s;
  int dev_null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  absl::Cleanup close_null = [dev_null] {
    if (dev_null >= 0) close(dev_null);
  };

  pid_t pid = ForkQuietly();
  if (pid < 0) return ErrnoError(errno, "fork");
  if (pid == 0) {
    ChildEnter(spec.mount_ns_fd, status.write);
    setpgid(0, 0);
    if (dev_null >= 0) {
      dup2(dev_null, 0);
    } else {
      close(0);
    }
    dup2(out.write, 1);
    dup2(out.write, 2);
    execve(argv.get()[0], argv.get(), env);
    ChildFail(status.write, kExec, errno);
  }
  setpgid(pid, pid);  // also from here, so the group exists before any kill
  out.CloseWrite();
  status.CloseWrite();

  std::optional<StatusWord> failed = ReadStatusWord(status.read);
  if (failed.has_value()) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (failed->stage == kEnterNamespace) {
      return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, failed->err,
                                absl::StrCat("entering the mount namespace to run ", cmdline));
    }
    return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, failed->err,
                              absl::StrCat("run ", cmdline));
  }

  ProcessResult result;
  absl::StatusOr<std::optional<int>> waited =
      Supervise(pid, out.read, absl::Now() + timeout, kMaxOutput, result.output);
  if (!waited.ok() || !waited->has_value()) {
    kill(-pid, SIGKILL);
    std::optional<uint64_t> left = ReapInBackground(pid);
    // The error says what was left behind, if anything.
    auto leaving = [&left](absl::Status status) {
      return left.has_value() ? WithLeftBehind(std::move(status), *left) : status;
    };
    if (!waited.ok()) return leaving(waited.status());
    absl::Status late = absl::DeadlineExceededError(
        absl::StrCat(cmdline, ": did not finish within ", absl::FormatDuration(timeout),
                     left.has_value() ? ", killed, and has not ended yet" : ", killed",
                     "; output: ", result.output));
    return leaving(late);
  }
  int wait_status = **waited;
  if (WIFSIGNALED(wait_status)) {
    result.signaled = true;
    result.signal = WTERMSIG(wait_status);
  } else {
    result.exit_code = WEXITSTATUS(wait_status);
  }
  return result;
}

}  // namespace lustre_csi::volume
