#include "pkg/volume/mounter.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/safe_path.h"

extern char** environ;

namespace lustre_csi::volume {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;

struct FlagOption {
  const char* name;
  unsigned long flag;
};
constexpr FlagOption kRemountFlags[] = {
    {"ro", MS_RDONLY},         {"nosuid", MS_NOSUID},           {"nodev", MS_NODEV},
    {"noexec", MS_NOEXEC},     {"noatime", MS_NOATIME},         {"nodiratime", MS_NODIRATIME},
    {"relatime", MS_RELATIME}, {"strictatime", MS_STRICTATIME},
};
constexpr const char* kNoOpOptions[] = {"rw", "bind", "defaults", "suid", "dev", "exec", "atime"};

class BindMounter : public Mounter {
 public:
  explicit BindMounter(Syscalls* sys) : sys_(sys) {}

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, const std::vector<std::string>& options) override {
    unsigned long bind = MS_BIND;
    unsigned long remount = 0;
    for (const std::string& opt : options) {
      bool known = false;
      for (const FlagOption& f : kRemountFlags) {
        if (opt == f.name) {
          remount |= f.flag;
          known = true;
        }
      }
      for (const char* noop : kNoOpOptions) known = known || opt == noop;
      if (opt == "rbind") {
        bind |= MS_REC;
        known = true;
      }
      if (!known) {
        return absl::InvalidArgumentError(absl::StrCat("bind mount of ", source, " on ", target,
                                                       ": unsupported option \"", opt, "\""));
      }
    }
    if (remount != 0) {
      // In one step where the kernel can: a crash between a bind and its
      // remount would leave the bind without the flags (read-write).
      absl::Status atomic = sys_->BindMountWithFlags(source, target, bind & MS_REC, remount);
      if (atomic.code() != absl::StatusCode::kUnimplemented) return atomic;
    }
    if (absl::Status s = sys_->Mount(source, target, "", bind, ""); !s.ok()) return s;
    if (remount == 0) return absl::OkStatus();
    absl::Status s = sys_->Mount(source, target, "", MS_REMOUNT | MS_BIND | remount, "");
    if (s.ok()) return s;
    // Never leave the bind behind without the flags asked for.
    absl::Status undo = sys_->Unmount(target, 0);
    if (!undo.ok()) undo = sys_->Unmount(target, MNT_DETACH);
    if (!undo.ok()) {
      return Annotate(s, absl::StrCat("remount ", target,
                                      " (and undoing the bind failed: ", undo.message(), ")"));
    }
    return Annotate(s, absl::StrCat("remount ", target, " (bind undone)"));
  }

  absl::Status Unmount(const std::string& target) override { return sys_->Unmount(target, 0); }

 private:
  Syscalls* const sys_;
};

class ExecMounter : public Mounter {
 public:
  ExecMounter(std::string mount_binary, absl::Duration timeout, Syscalls* sys)
      : mount_binary_(std::move(mount_binary)), timeout_(timeout), sys_(sys) {}

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, const std::vector<std::string>& options) override {
    if (absl::Status s = CheckArg("source", source); !s.ok()) return s;
    if (absl::Status s = CheckArg("target", target); !s.ok()) return s;
    if (fstype.find('\0') != std::string::npos || absl::StartsWith(fstype, "-")) {
      return absl::InvalidArgumentError(absl::StrCat("bad file system type \"", fstype, "\""));
    }
    for (const std::string& opt : options) {
      if (opt.empty() || opt.find('\0') != std::string::npos) {
        return absl::InvalidArgumentError("mount options may not be empty or contain NUL");
      }
    }
    std::vector<std::string> argv = {mount_binary_};
    if (!fstype.empty()) argv.insert(argv.end(), {"-t", fstype});
    if (!options.empty()) argv.insert(argv.end(), {"-o", absl::StrJoin(options, ",")});
    argv.insert(argv.end(), {source, target});
    return RunCommand(argv, timeout_);
  }

  absl::Status Unmount(const std::string& target) override {
    if (sys_ != nullptr) return sys_->Unmount(target, 0);
    if (absl::Status s = CheckArg("target", target); !s.ok()) return s;
    return RunCommand({absl::StrCat(ParentPath(mount_binary_), "/umount"), target}, timeout_);
  }

 private:
  static absl::Status CheckArg(absl::string_view what, const std::string& value) {
    if (value.empty() || value.find('\0') != std::string::npos || value[0] == '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("mount ", what, " \"", absl::CEscape(value),
                       "\" is empty, contains NUL or starts with '-'"));
    }
    return absl::OkStatus();
  }

  const std::string mount_binary_;
  const absl::Duration timeout_;
  Syscalls* const sys_;
};

// Reads what is there without blocking; false at end of file.
bool Drain(int fd, std::string& out) {
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      size_t keep = std::min(static_cast<size_t>(n), kMaxOutput - std::min(kMaxOutput, out.size()));
      out.append(buf, keep);
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN;
  }
}

}  // namespace

absl::Status RunCommand(const std::vector<std::string>& argv, absl::Duration timeout) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return absl::InvalidArgumentError("command must be an absolute path");
  }
  std::string cmdline = absl::StrJoin(argv, " ");
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoError(errno, "pipe");
  int read_fd = pipe_fds[0];
  absl::Cleanup close_read = [read_fd] { close(read_fd); };
  // The child's end must block.
  fcntl(pipe_fds[1], F_SETFL, 0);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(pipe_fds[1]);
  if (err != 0) return ErrnoError(err, absl::StrCat("run ", cmdline));

  int pid_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  absl::Cleanup close_pid = [pid_fd] {
    if (pid_fd >= 0) close(pid_fd);
  };
  std::string output;
  bool pipe_open = true;
  bool exited = false;  // only known with a pidfd; without one, end of output stands in
  bool timed_out = false;
  absl::Time deadline = absl::Now() + timeout;
  while (!exited && (pid_fd >= 0 || pipe_open)) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      timed_out = true;
      break;
    }
    struct pollfd fds[2] = {{pipe_open ? read_fd : -1, POLLIN, 0}, {pid_fd, POLLIN, 0}};
    int wait_ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left), 60000)) + 1;
    int ready = poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) {
      err = errno;
      kill(-pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return ErrnoError(err, "poll");
    }
    if (ready <= 0) continue;
    if (fds[0].revents != 0) pipe_open = Drain(read_fd, output);
    if (fds[1].revents != 0) exited = true;
  }
  if (pipe_open) Drain(read_fd, output);

  int status = 0;
  while (!timed_out) {
    pid_t r = waitpid(pid, &status, exited ? 0 : WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError(errno, absl::StrCat("wait for ", cmdline));
    timed_out = absl::Now() >= deadline;
    if (!timed_out) absl::SleepFor(absl::Milliseconds(2));
  }
  if (timed_out) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return absl::DeadlineExceededError(
        absl::StrCat(cmdline, ": did not finish within ", absl::FormatDuration(timeout),
                     ", killed; output: ", absl::StripAsciiWhitespace(output)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  std::string how = WIFEXITED(status) ? absl::StrCat("exit status ", WEXITSTATUS(status))
                                      : absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::InternalError(
      absl::StrCat(cmdline, ": ", how, ": ", absl::StripAsciiWhitespace(output)));
}

std::unique_ptr<Mounter> NewBindMounter(Syscalls* sys) {
  return std::make_unique<BindMounter>(sys);
}

std::unique_ptr<Mounter> NewExecMounter(std::string mount_binary, absl::Duration timeout,
                                        Syscalls* sys) {
  return std::make_unique<ExecMounter>(std::move(mount_binary), timeout, sys);
}

}  // namespace lustre_csi::volume
