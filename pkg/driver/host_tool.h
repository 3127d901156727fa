// Running the host's Lustre programs (the mount helper, lfs) where they
// belong: in the configured mount namespace (volume::MountNamespace), with no
// shell, an environment of their own and a timeout. The host's programs
// match the host's kernel modules, so no Lustre interface is copied into
// this binary; what they say is turned into a status here, the same way for
// every program.
#ifndef LUSTRE_CSI_PKG_DRIVER_HOST_TOOL_H_
#define LUSTRE_CSI_PKG_DRIVER_HOST_TOOL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pkg/volume/mount_namespace.h"

namespace lustre_csi::driver {

// The environment a host program gets: nothing of the driver's.
const std::vector<std::string>& HostToolEnvironment();

// A program's output for a message: trimmed, at most 1 KiB.
std::string HostToolOutput(absl::string_view output);

// The code for a failure with errno `err`: ENODEV (no kernel module), EPERM
// and EOPNOTSUPP (the file system lacks a feature) are FAILED_PRECONDITION,
// ENOENT NOT_FOUND, EINVAL, E2BIG and ERANGE INVALID_ARGUMENT, EACCES
// PERMISSION_DENIED, EDQUOT and ENOSPC RESOURCE_EXHAUSTED, network and busy
// errnos UNAVAILABLE, anything else INTERNAL.
absl::StatusCode CodeForErrno(int err);

// The status for a host program that ran and failed with errno `err` (0:
// unknown, INTERNAL): a signal is UNAVAILABLE, exit status 126/127 (could not
// run) FAILED_PRECONDITION, otherwise CodeForErrno. The message names the
// command, the exit status, the errno's name, and the output cut to 1 KiB;
// the errno is attached (volume::ErrnoOf).
absl::Status ToolFailure(const std::string& what, const volume::ProcessResult& result, int err);

// ToolFailure for a program that exits with the errno of what failed, as
// mount.lustre does.
absl::Status HelperFailure(const std::string& what, const volume::ProcessResult& result);

// How a program tells what failed: the errno it means by `result`, 0 when
// unknown.
using ErrnoOfFailure = std::function<int(const volume::ProcessResult& result)>;

// Runs `argv` (argv[0] an absolute path there) in `ns` with
// HostToolEnvironment() and `timeout`: the result when it exited 0, its
// ToolFailure otherwise (the errno from `errno_of`; by default the exit
// status, as mount.lustre exits), and the namespace's own status when it
// could not be run at all (DEADLINE_EXCEEDED after `timeout`). The caller
// checks its arguments: nothing here is read as a shell would.
absl::StatusOr<volume::ProcessResult> RunHostTool(volume::MountNamespace& ns,
                                                  const std::vector<std::string>& argv,
                                                  absl::Duration timeout,
                                                  const ErrnoOfFailure& errno_of = nullptr);

// "<argv joined by spaces> in <ns>", for messages.
std::string DescribeRun(volume::MountNamespace& ns, const std::vector<std::string>& argv);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_HOST_TOOL_H_
