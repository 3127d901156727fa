// Running helper programs in a child process, optionally inside another mount
// namespace (short system calls there run on namespace_threads.h instead).
//
// The child is forked, enters the namespace given by an open namespace file
// descriptor, and then execs the program. Between fork and exec the
// child only makes async-signal-safe calls; everything it needs is prepared
// before the fork. Entering a mount namespace also moves the child's root and
// working directory to that namespace's root, so paths the child uses are the
// namespace's paths.
//
// Programs run in their own process group with stdin from /dev/null (when the
// namespace has one; otherwise closed), stdout and stderr captured together
// (the first 64 KiB), and an environment given by the caller. On timeout the
// whole process group is killed. Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_PROCESS_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_PROCESS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pkg/volume/mount_namespace.h"

namespace lustre_csi::volume {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path (no PATH search)
  // The whole environment of the program; nullopt inherits this process's.
  std::optional<std::vector<std::string>> env;
  // An open mount namespace file (e.g. of /proc/1/ns/mnt) to enter first;
  // -1 runs in this process's own namespace.
  int mount_ns_fd = -1;
};

// Runs the program and waits for it for at most `timeout`.
//   OK with the result: the program ran and ended, whatever its exit status.
//   FAILED_PRECONDITION (errno attached): the namespace could not be entered
//     or the program could not be executed there (missing, not executable,
//     wrong format).
//   DEADLINE_EXCEEDED: it ran longer than `timeout`; its process group was
//     killed. Where the program has not ended 100 ms after that (it waits in
//     the kernel for a server that does not answer), it is reaped in the
//     background and the error carries its id in ProcessLeftBehind()
//     (volume::LeftBehindOf), ended once it is reaped.
//   INVALID_ARGUMENT: empty argv, a relative argv[0], or a NUL in an argument.
absl::StatusOr<ProcessResult> RunProcess(const ProcessSpec& spec, absl::Duration timeout);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_PROCESS_H_
