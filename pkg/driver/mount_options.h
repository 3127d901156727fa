// Validation of the mount flags a CO passes in a volume capability.
//
// Flags reach `mount -o` joined by commas, so a flag must never carry a comma
// (it would smuggle in options), whitespace, control characters or a leading
// '-' (it would read as a command-line switch), and options that change what
// is mounted or how it propagates (bind, remount, move, propagation changes)
// are refused. Pure functions, thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_MOUNT_OPTIONS_H_
#define LUSTRE_CSI_PKG_DRIVER_MOUNT_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::driver {

// Returns the options to mount with: "ro" first when `read_only`, then the
// validated flags in their order, without duplicates and without an "rw"
// that contradicts `read_only`. INVALID_ARGUMENT names the bad flag.
absl::StatusOr<std::vector<std::string>> BuildMountOptions(const std::vector<std::string>& flags,
                                                           bool read_only);

// Whether a mount whose per-mount options (as /proc/self/mountinfo shows
// them, e.g. "rw,nosuid,relatime") are `mounted` is what mounting with
// `options` (BuildMountOptions' result) gives, as far as the kernel's
// per-mount flags tell: read-only always both ways; each of nosuid, nodev,
// noexec, nodiratime, nosymfollow, noatime, relatime and strictatime that
// was asked for is present. With `exact` (a fresh mount, which gets only
// what it asks for), a flag not asked for must be absent too; without it (a
// bind mount, which inherits its source's flags) it may be there.
// File-system specific options are not compared: the kernel shows them per
// superblock, not per mount.
bool PerMountFlagsMatch(absl::string_view mounted, const std::vector<std::string>& options,
                        bool exact);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MOUNT_OPTIONS_H_
