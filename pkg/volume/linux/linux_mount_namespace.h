// The Linux MountNamespace. Programs (the mount helper) run in a child
// process that has entered the namespace file, opened afresh for each
// (process.h). Unmounts, file reads and existence checks run on threads that
// entered it once (namespace_threads.h): no process per call. With an empty
// path both stay in the caller's own namespace: one code path either way.
//
// `timeout` bounds unmounts and file reads (a call stuck in the kernel past
// it is DEADLINE_EXCEEDED, and its thread is given up); programs get the
// timeout their caller passes. With an `isolation` (borrowed), each unmount,
// read and check runs in it (namespace_threads.h). Visible only to the binary, e2e tests and this
// package.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_MOUNT_NAMESPACE_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_MOUNT_NAMESPACE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/mount_namespace.h"

namespace lustre_csi::volume {

std::unique_ptr<MountNamespace> NewLinuxMountNamespace(std::string ns_path, absl::Duration timeout,
                                                       Isolation* isolation = nullptr);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_LINUX_MOUNT_NAMESPACE_H_
