// The whole of /proc/self/mountinfo, read as one consistent snapshot: what
// LinuxSyscalls::ReadMountInfo answers, and what the bind staging reads.
// Thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_MOUNTINFO_FILE_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_MOUNTINFO_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace lustre_csi::volume::os {

absl::StatusOr<std::string> ReadMountInfoFile();

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_MOUNTINFO_FILE_H_
