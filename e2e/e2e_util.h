// Support for end-to-end tests that run the real lustre-csi binary: a private
// mount namespace for the test process, temporary directories, child
// processes that are always reaped, and mount-table snapshots.
//
// Not thread-safe unless noted; meant for a test's main thread.
#ifndef LUSTRE_CSI_E2E_E2E_UTIL_H_
#define LUSTRE_CSI_E2E_E2E_UTIL_H_

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "pkg/base/wait_until.h"
#include "pkg/volume/mount_table.h"
#include "proto/csi.pb.h"
#include "proto/manager.pb.h"

namespace lustre_csi::e2e {

// Moves the calling process into a new mount namespace in which every mount
// is private, so nothing it mounts is seen by (or left on) the host. Call
// before starting threads or children.
absl::Status EnterPrivateMountNamespace();

// The runfiles path of the lustre-csi binary under test.
std::string BinaryPath();

// A data dependency of the test, by its path in the workspace
// (e.g. "e2e/standin-lfs").
std::string Runfile(const std::string& path);

// The older kernel the binary runs as (e2e/older-kernel), from a test's
// --kernel=VERSION argument (e2e_main sets LUSTRE_CSI_E2E_KERNEL); empty for
// this machine's own kernel.
std::string EmulatedKernel();

// What starts the binary: {BinaryPath()}, or under an emulated kernel
// {<older-kernel>, VERSION, BinaryPath()}. Subprocess puts it in front of an
// argv that starts with BinaryPath() by itself.
std::vector<std::string> BinaryCommand();

class TempDir {
 public:
  TempDir();
  ~TempDir();  // unmounts anything below and removes the tree
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A child process; killed (SIGKILL) and reaped on destruction if still running.
// It is also killed if the thread that started it exits (PR_SET_PDEATHSIG),
// so a test that crashes leaves no process behind even outside a sandbox:
// start Subprocesses from the test's main thread.
class Subprocess {
 public:
  explicit Subprocess(std::vector<std::string> argv, std::string log_path = "");
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int sig);
  // Waits for exit up to `timeout`; returns the exit status as from waitpid,
  // or -1 on timeout.
  int Wait(absl::Duration timeout);
  // Exit code if it exited normally, -(signal) if killed, -1000 if running.
  int ExitCode() const { return exit_code_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1000;
  // The tasks it had when last seen running (DriverTasksOf): once it is
  // reaped, Wait waits for them to be gone too (they die with it, a moment
  // later).
  std::vector<pid_t> tasks_;
  std::string cmdline_;  // as /proc shows it, for the tasks (they share it)
};

// A gRPC channel to the unix socket `path` with a connection of its own (gRPC
// otherwise shares connections between channels, and would reuse one to a
// killed server).
std::shared_ptr<grpc::Channel> UnixChannel(const std::string& path);

// Waits until something accepts on the unix socket `path`.
absl::Status WaitForSocket(const std::string& path, absl::Duration timeout);

// Waits until `done` returns true (pkg/base/wait_until.h).
using base::WaitUntil;

// A mount (not block) capability with `mode`.
csi::v1::VolumeCapability MountCapability(
    csi::v1::VolumeCapability::AccessMode::Mode mode =
        csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);

// The volume context of file system `fs` at 10.0.0.4, the tests' MGS, with
// `sub_dir` when not empty.
std::map<std::string, std::string> LustreContext(const std::string& sub_dir = "",
                                                 const std::string& fs = "lustrefs");

// The one NodePublishVolume request the e2e tests build: `volume_id` at
// `target`, a MULTI_NODE_MULTI_WRITER mount capability with `flags`, the
// context given.
csi::v1::NodePublishVolumeRequest MakePublishRequest(
    const std::string& volume_id, const std::string& target,
    const std::map<std::string, std::string>& context = LustreContext(), bool read_only = false,
    const std::vector<std::string>& flags = {});

// The plugin manager's UnmountVolume of what `like` mounted: the same
// plugin, namespace, volume ids, allocation and usage.
::lustre_csi::manager::v1::UnmountVolumeRequest UnmountRequestFor(
    const ::lustre_csi::manager::v1::MountVolumeRequest& like);

// This process's mount table (/proc/self/mountinfo), parsed by the driver's
// own parser (pkg/volume/mount_table.h); aborts on a table it cannot parse.
std::vector<volume::MountEntry> MountTable();

// The mounts stacked at exactly `point`, bottom first.
std::vector<volume::MountEntry> MountsAt(const std::string& point);

// Mount points (unescaped) at or below `prefix`.
std::vector<std::string> MountsUnder(const std::string& prefix);

// Makes this mount namespace's /proc/filesystems list `lustre`, as it does on
// a host with the Lustre client module loaded: a file holding the real list
// plus that line is bind-mounted over it (once; `scratch` must outlive the
// namespace's use of it). Only for tests in a private mount namespace.
absl::Status PretendLustreModuleLoaded(const std::string& scratch);

// Writes at `path` a stand-in mount.lustre for shared Lustre clients: it
// answers -V; otherwise it records its arguments in `calls_log` (when not
// empty), mounts a tmpfs named like a Lustre client mount
// (10.0.0.4@tcp:/lustrefs) at its last argument, makes it shared (as a
// client mount under the host's kubelet directory is) and fills it with a
// copy of `source` (symlinks as they are).
absl::Status WriteTmpfsClientHelper(const std::string& path, const std::string& source,
                                    const std::string& calls_log = "");

// Process ids of the children of `parent`, zombies included (not yet
// reaped).
std::vector<pid_t> ChildrenOf(pid_t parent);
// Those of this process.
std::vector<pid_t> ChildProcesses();

// The state letter /proc/<pid>/stat shows for a process (or a thread id):
// 'D' uninterruptible sleep, 'T' stopped, 'Z' not reaped, ...; 0 when it is
// gone.
char ProcessState(pid_t pid);

// Processes other than this one whose command line contains `needle` (say, a
// TempDir path that every child of a test is given).
std::vector<pid_t> ProcessesMentioning(const std::string& needle);

// The process `pid`'s children that run its own program: the tasks the
// driver makes (volume::IsolatedTasks) to wait on file systems, which share
// its memory and die with it.
std::vector<pid_t> DriverTasksOf(pid_t pid);

// SIGKILL to the process `pid` and its tasks at once, as the container
// runtime kills a container's every process: a task held by strace at a
// system call then dies there, as the process's threads do, instead of
// finishing it once its thread's death reaches it.
void KillWithTasks(pid_t pid);

// strace attached to a running process and all its threads and children
// (`strace -f -p <pid> <args>`), and the tasks it made before (children
// running its own program: the driver's isolated tasks), with its messages
// and trace in `log_path`.
// Used to inject faults at an exact system call, e.g.
//   {"-e", "trace=mount", "-e", "inject=mount:signal=SIGKILL:when=2"}.
// The destructor detaches (SIGINT), which lets the tracee run on.
class Strace {
 public:
  Strace(pid_t pid, std::vector<std::string> args, std::string log_path);
  ~Strace();
  Strace(const Strace&) = delete;
  Strace& operator=(const Strace&) = delete;

  // Waits until every thread of the process, and each of its tasks, is
  // attached (strace said so).
  absl::Status WaitAttached(absl::Duration timeout);
  // Waits until the log contains `text`; false on timeout or when strace
  // ended without writing it.
  bool WaitForLog(const std::string& text, absl::Duration timeout);
  std::string Log() const;
  // Waits for strace to end (it does when its tracee dies).
  int Wait(absl::Duration timeout) { return process_.Wait(timeout); }
  // Kills strace (SIGKILL), which releases a thread it holds in a delay. To
  // kill the tracee at a held system call, SIGKILL the tracee first: a
  // thread released with a fatal signal pending dies before it returns.
  void Kill() {
    process_.Signal(SIGKILL);
    process_.Wait(absl::Seconds(10));
  }

 private:
  std::string log_path_;
  std::vector<pid_t> tasks_;
  std::string cmdline_;  // as /proc shows it, for the tasks (they share it)  // attached to by pid
  Subprocess process_;
};

// A raw HTTP GET against 127.0.0.1:`port`: the whole answer, empty when
// nothing listens.
std::string HttpGet(int port, const std::string& path);
// The same, to the IPv4 address `ip`.
std::string HttpGet(const std::string& ip, int port, const std::string& path);

// A free TCP port on loopback (bound, read, released).
int FreePort();

// Reads a whole file; empty on error.
std::string ReadFile(const std::string& path);
absl::Status WriteFile(const std::string& path, const std::string& data);

}  // namespace lustre_csi::e2e

#endif  // LUSTRE_CSI_E2E_E2E_UTIL_H_
