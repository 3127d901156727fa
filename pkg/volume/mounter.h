// Mounters: make and remove one mount.
//
// NewBindMounter bind-mounts a source directory (or file) through the syscall
// seam. When the options ask for per-mount flags ("ro", "nosuid", "nodev",
// "noexec", "noatime", "nodiratime", "relatime", "strictatime") the bind gets
// them before it appears at the target (Syscalls::BindMountWithFlags), so not
// even a crash can leave a volume asked for read-only mounted read-write.
// Where the kernel cannot do that, bind mounts ignore per-mount flags on the
// first call, so a second call remounts the bind with MS_REMOUNT | MS_BIND and
// those flags; if that fails the bind is undone. "rw",
// "bind", "defaults" and the positive forms ("suid", "dev", "exec", "atime")
// are accepted and change nothing, "rbind" binds recursively; anything else is
// INVALID_ARGUMENT.
//
// Mounters do not own the Syscalls, which must outlive them. Stateless and
// thread-safe. (Mounts made with a helper program go through MountNamespace::Run.)
#ifndef LUSTRE_CSI_PKG_VOLUME_MOUNTER_H_
#define LUSTRE_CSI_PKG_VOLUME_MOUNTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

class Mounter {
 public:
  virtual ~Mounter() = default;
  virtual absl::Status Mount(const std::string& source, const std::string& target,
                             const std::string& fstype,
                             const std::vector<std::string>& options) = 0;
  virtual absl::Status Unmount(const std::string& target) = 0;
};

// Bind mounts with per-mount flags (ParseBindOptions), set before the bind is
// attached where the kernel can. With `flags_at_once`, a kernel that cannot
// is FAILED_PRECONDITION instead of bind-then-remount: a remount changes only
// the mount in this namespace, never its propagated copies in others.
std::unique_ptr<Mounter> NewBindMounter(Syscalls* sys, bool flags_at_once = false);

// Options a bind mount applies itself: the per-mount flags (ro, nosuid,
// nodev, noexec, noatime, nodiratime, relatime, strictatime), their no-op
// opposites and defaults, and rbind.
bool IsBindOption(absl::string_view option);

struct BindOptions {
  unsigned long flags = 0;  // MS_RDONLY, MS_NOSUID, ...
  bool recursive = false;   // rbind
};
// INVALID_ARGUMENT naming the first option that is not a bind option.
absl::StatusOr<BindOptions> ParseBindOptions(const std::vector<std::string>& options);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_MOUNTER_H_
