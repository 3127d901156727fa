// The mount namespace where file systems are mounted for workloads.
//
// A driver in a container cannot run the host's mount helper (mount.lustre is
// built against the host's libraries and must match its kernel modules), so it
// runs the helper in the host's mount namespace instead: MountNamespace is that
// place. Mounts made there reach the driver's own view through mount
// propagation (a Bidirectional kubelet directory), so the driver inspects
// them locally; unmounts are made where the mounts were made.
//
// NewLinuxMountNamespace (linux_mount_namespace.h) enters a namespace file
// such as /proc/1/ns/mnt in a child process for every operation, or works in
// the caller's own namespace. FakeMountNamespace (fake_mount_namespace.h) is
// the test stand-in. Implementations are thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_MOUNT_NAMESPACE_H_
#define LUSTRE_CSI_PKG_VOLUME_MOUNT_NAMESPACE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

// How a program that ran ended.
struct ProcessResult {
  int exit_code = 0;  // valid when !signaled
  bool signaled = false;
  int signal = 0;      // valid when signaled
  std::string output;  // stdout and stderr, interleaved, at most 64 KiB

  bool Succeeded() const { return !signaled && exit_code == 0; }
  // "exit status 19" or "killed by signal 9".
  std::string Describe() const;
};

class MountNamespace {
 public:
  virtual ~MountNamespace() = default;

  // For messages: "mount namespace /proc/1/ns/mnt" or "the driver's own
  // mount namespace".
  virtual std::string Describe() const = 0;

  // Whether the namespace is the caller's own. True for a namespace file
  // that names it (e.g. /proc/1/ns/mnt in a container without hostPID).
  virtual absl::StatusOr<bool> IsOwn() const = 0;

  // Runs `argv` there (argv[0] absolute, resolved in that namespace) with
  // exactly the environment `env`. OK with the result when the program ran,
  // whatever its exit status; FAILED_PRECONDITION (errno attached) when the
  // namespace cannot be entered or the program cannot be executed there;
  // DEADLINE_EXCEEDED after `timeout` (the program is killed).
  virtual absl::StatusOr<ProcessResult> Run(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& env,
                                            absl::Duration timeout) = 0;

  // umount2(2) there; errors as Syscalls::Unmount (ErrnoError), plus
  // FAILED_PRECONDITION when the namespace cannot be entered, and
  // DEADLINE_EXCEEDED when it has not returned within the namespace's own
  // bound (what is stuck in the kernel is left behind).
  virtual absl::Status Unmount(const std::string& target, int flags) = 0;

  // At most `max_bytes` of a file there; NOT_FOUND when it does not exist.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) = 0;

  // Whether `path` exists there.
  virtual absl::StatusOr<bool> Exists(const std::string& path) = 0;
};

// A Syscalls that forwards everything to `base` except Unmount, which is
// made in `ns`, where the mounts were made. Both are borrowed.
std::unique_ptr<Syscalls> UnmountingIn(Syscalls* base, MountNamespace* ns);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_MOUNT_NAMESPACE_H_
