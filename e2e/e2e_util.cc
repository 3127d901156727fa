#include "e2e/e2e_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pkg/volume/linux/linux_syscalls.h"

namespace lustre_csi::e2e {

absl::Status EnterPrivateMountNamespace() {
  if (unshare(CLONE_NEWNS) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("unshare(CLONE_NEWNS): ", strerror(errno)));
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("make / rprivate: ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status PretendLustreModuleLoaded(const std::string& scratch) {
  std::string list = ReadFile("/proc/filesystems");
  if (list.find("\tlustre\n") != std::string::npos) return absl::OkStatus();
  std::string file = scratch + "/filesystems";
  if (absl::Status s = WriteFile(file, list + "nodev\tlustre\n"); !s.ok()) return s;
  if (mount(file.c_str(), "/proc/filesystems", nullptr, MS_BIND, nullptr) != 0) {
    return absl::InternalError(absl::StrCat("bind over /proc/filesystems: ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteTmpfsClientHelper(const std::string& path, const std::string& source,
                                    const std::string& calls_log) {
  std::string script = absl::StrCat(
      "#!/bin/sh\n"
      "[ \"$1\" = -V ] && { echo 'mount.lustre stand-in'; exit 0; }\n",
      calls_log.empty() ? "" : absl::StrCat("echo \"$@\" >> ", calls_log, "\n"),
      "for last; do :; done\n"
      "mount -t tmpfs 10.0.0.4@tcp:/lustrefs \"$last\" || exit 19\n"
      "mount --make-shared \"$last\" || exit 19\n"
      "exec cp -a ",
      source, "/. \"$last\"/\n");
  if (absl::Status s = WriteFile(path, script); !s.ok()) return s;
  if (chmod(path.c_str(), 0755) != 0) {
    return absl::InternalError(absl::StrCat("chmod ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  std::string base = srcdir != nullptr ? srcdir : ".";
  return base + "/lustre_csi/" + path;
}

std::string BinaryPath() { return Runfile("cmd/lustre-csi/lustre-csi"); }

std::string EmulatedKernel() {
  const char* kernel = std::getenv("LUSTRE_CSI_E2E_KERNEL");
  return kernel != nullptr ? kernel : "";
}

std::vector<std::string> BinaryCommand() {
  std::string kernel = EmulatedKernel();
  if (kernel.empty()) return {BinaryPath()};
  const char* srcdir = std::getenv("TEST_SRCDIR");
  std::string launcher =
      std::string(srcdir != nullptr ? srcdir : ".") + "/lustre_csi/e2e/older-kernel";
  return {launcher, kernel, BinaryPath()};
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/lustre-csi-e2e.XXXXXX";
  path_ = mkdtemp(tmpl);
}

TempDir::~TempDir() {
  // Deepest first.
  std::vector<std::string> mounts = MountsUnder(path_);
  std::sort(mounts.begin(), mounts.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& m : mounts) umount2(m.c_str(), MNT_DETACH);
  std::string cmd = absl::StrCat("rm -rf --one-file-system '", path_, "'");
  if (system(cmd.c_str()) != 0) fprintf(stderr, "could not remove %s\n", path_.c_str());
}

namespace {

std::vector<pid_t> AllPids() {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

}  // namespace

Subprocess::Subprocess(std::vector<std::string> argv, std::string log_path) {
  if (!argv.empty() && argv[0] == BinaryPath()) {
    std::vector<std::string> command = BinaryCommand();
    argv.erase(argv.begin());
    argv.insert(argv.begin(), command.begin(), command.end());
  }
  for (const std::string& arg : argv) absl::StrAppend(&cmdline_, arg, std::string(1, '\0'));
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    if (!log_path.empty()) {
      int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
    }
    // Die with the test if it dies.
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !reaped_) {
    tasks_ = DriverTasksOf(pid_);
    kill(pid_, SIGKILL);
    Wait(absl::Seconds(10));
  }
}

bool Subprocess::running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return false;
  }
  return true;
}

void Subprocess::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

int Subprocess::Wait(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (running()) {
    if (absl::Now() > deadline) return -1;
    std::vector<pid_t> tasks = DriverTasksOf(pid_);
    if (running()) tasks_ = std::move(tasks);  // else it may have lost them already
    absl::SleepFor(absl::Milliseconds(5));
  }
  // Its tasks die with it (killed as their threads end), a moment later:
  // until then they hold what it held (its descriptors, a listening socket
  // among them). A task shows the command line of the process it belongs
  // to; a zombie shows none.
  for (pid_t task : tasks_) {
    while (!ReadFile(absl::StrCat("/proc/", task, "/cmdline")).empty() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(2));
    }
  }
  tasks_.clear();
  auto alive_tasks = [this] {
    for (pid_t pid : AllPids()) {
      if (pid != getpid() && ReadFile(absl::StrCat("/proc/", pid, "/cmdline")) == cmdline_) {
        return true;
      }
    }
    return false;
  };
  while (!cmdline_.empty() && alive_tasks() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  return exit_code_;
}

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args);
}

absl::Status WaitForSocket(const std::string& path, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    close(fd);
    if (rc == 0) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(5));
  }
  return absl::DeadlineExceededError(absl::StrCat("nothing listens on ", path));
}

csi::v1::VolumeCapability MountCapability(csi::v1::VolumeCapability::AccessMode::Mode mode) {
  csi::v1::VolumeCapability cap;
  cap.mutable_mount();
  cap.mutable_access_mode()->set_mode(mode);
  return cap;
}

std::map<std::string, std::string> LustreContext(const std::string& sub_dir,
                                                 const std::string& fs) {
  std::map<std::string, std::string> context = {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", fs}};
  if (!sub_dir.empty()) context["sub-dir"] = sub_dir;
  return context;
}

csi::v1::NodePublishVolumeRequest MakePublishRequest(
    const std::string& volume_id, const std::string& target,
    const std::map<std::string, std::string>& context, bool read_only,
    const std::vector<std::string>& flags) {
  csi::v1::NodePublishVolumeRequest req;
  req.set_volume_id(volume_id);
  req.set_target_path(target);
  req.set_readonly(read_only);
  *req.mutable_volume_capability() = MountCapability();
  for (const std::string& f : flags)
    req.mutable_volume_capability()->mutable_mount()->add_mount_flags(f);
  for (const auto& [k, v] : context) (*req.mutable_volume_context())[k] = v;
  return req;
}

::lustre_csi::manager::v1::UnmountVolumeRequest UnmountRequestFor(
    const ::lustre_csi::manager::v1::MountVolumeRequest& like) {
  ::lustre_csi::manager::v1::UnmountVolumeRequest req;
  req.set_plugin(like.plugin());
  req.set_namespace_(like.namespace_());
  req.set_volume_id(like.volume_id());
  req.set_remote_id(like.remote_id());
  req.set_alloc_id(like.alloc_id());
  *req.mutable_usage() = like.usage();
  return req;
}

std::vector<volume::MountEntry> MountTable() {
  // The driver's own read: one consistent snapshot, even while mounts change.
  static volume::Syscalls* const sys = volume::NewLinuxSyscalls({}).release();
  absl::StatusOr<std::string> text = sys->ReadMountInfo();
  absl::StatusOr<std::vector<volume::MountEntry>> table =
      text.ok() ? volume::ParseMountInfo(*text) : text.status();
  if (!table.ok()) {
    fprintf(stderr, "e2e: /proc/self/mountinfo: %s\n",
            std::string(table.status().message()).c_str());
    abort();
  }
  return *std::move(table);
}

std::vector<volume::MountEntry> MountsAt(const std::string& point) {
  std::vector<volume::MountEntry> out;
  for (volume::MountEntry& e : MountTable()) {
    if (e.mount_point == point) out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> MountsUnder(const std::string& prefix) {
  std::vector<std::string> out;
  for (const volume::MountEntry& e : MountTable()) {
    if (e.mount_point == prefix || absl::StartsWith(e.mount_point, prefix + "/")) {
      out.push_back(e.mount_point);
    }
  }
  return out;
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (pid_t pid : AllPids()) {
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces.
    std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
    if (fields.size() > 1 && fields[1] == absl::StrCat(parent)) out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> ChildProcesses() { return ChildrenOf(getpid()); }

char ProcessState(pid_t pid) {
  std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  for (pid_t pid : AllPids()) {
    if (pid == getpid()) continue;
    std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

namespace {

std::vector<std::string> StraceArgv(pid_t pid, const std::vector<pid_t>& tasks,
                                    std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/bin/strace", "-f", "-p", absl::StrCat(pid)};
  for (pid_t task : tasks) argv.insert(argv.end(), {"-p", absl::StrCat(task)});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// `path`, emptied, so that what a Strace waits for is its own output.
std::string EmptyLog(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  return path;
}

}  // namespace

std::vector<pid_t> DriverTasksOf(pid_t pid) {
  std::vector<pid_t> out;
  char exe[PATH_MAX];
  ssize_t n = readlink(absl::StrCat("/proc/", pid, "/exe").c_str(), exe, sizeof(exe));
  if (n <= 0) return out;
  const std::string own(exe, static_cast<size_t>(n));
  for (pid_t child : ChildrenOf(pid)) {
    n = readlink(absl::StrCat("/proc/", child, "/exe").c_str(), exe, sizeof(exe));
    if (n > 0 && std::string(exe, static_cast<size_t>(n)) == own) out.push_back(child);
  }
  return out;
}

void KillWithTasks(pid_t pid) {
  for (pid_t task : DriverTasksOf(pid)) kill(task, SIGKILL);
  kill(pid, SIGKILL);
}

Strace::Strace(pid_t pid, std::vector<std::string> args, std::string log_path)
    : log_path_(EmptyLog(log_path)),
      tasks_(DriverTasksOf(pid)),
      process_(StraceArgv(pid, tasks_, std::move(args)), log_path_) {}

Strace::~Strace() {
  if (process_.running()) {
    process_.Signal(SIGINT);
    process_.Wait(absl::Seconds(10));
  }
}

absl::Status Strace::WaitAttached(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  for (pid_t task : tasks_) {
    if (!WaitForLog(absl::StrCat("Process ", task, " attached"), deadline - absl::Now())) {
      return absl::DeadlineExceededError(
          absl::StrCat("strace did not attach task ", task, ": ", Log()));
    }
  }
  if (WaitForLog(" attached", deadline - absl::Now())) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat("strace did not attach: ", Log()));
}

bool Strace::WaitForLog(const std::string& text, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    bool alive = process_.running();
    if (Log().find(text) != std::string::npos) return true;
    if (!alive || absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

std::string Strace::Log() const { return ReadFile(log_path_); }

std::string HttpGet(int port, const std::string& path) { return HttpGet("127.0.0.1", port, path); }

std::string HttpGet(const std::string& ip, int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  std::string out;
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) == 1 &&
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, n);
  }
  close(fd);
  return out;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path);
  out << data;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace lustre_csi::e2e
