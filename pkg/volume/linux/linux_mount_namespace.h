// The Linux MountNamespace: every operation runs in a child process that has
// entered the namespace file (process.h), opened afresh each time so that a
// namespace that appears later (or goes away) is seen. With an empty path the
// children stay in the caller's own namespace: one code path either way.
//
// `timeout` bounds unmounts and file reads; programs get the timeout their
// caller passes. Visible only to the binary, e2e tests and this package.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_MOUNT_NAMESPACE_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_MOUNT_NAMESPACE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "pkg/volume/mount_namespace.h"

namespace lustre_csi::volume {

std::unique_ptr<MountNamespace> NewLinuxMountNamespace(std::string ns_path, absl::Duration timeout);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_MOUNT_NAMESPACE_H_
