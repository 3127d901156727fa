// How a Lustre file system gets mounted on this node: the driver's mount
// modes behind one interface.
//
//   lustre  `mount -t lustre <mgs>@tcp:/<fs>[/<sub-dir>] <target>` through an
//           exec mounter with a timeout (no shell).
//   mock    creates nothing but the target directory (conformance suites),
//           like the Go driver's mock mode.
//   local   resolves <mgs>@tcp:/<fs>[/<sub-dir>] to <local-root>/<fs>[/<sub-dir>]
//           on this machine and makes a real bind mount there, read-only when
//           asked, so every mount-table path runs without Lustre.
//
// Backends are thread-safe; the borrowed Syscalls must outlive them.
#ifndef LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_H_
#define LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pkg/volume/mounter.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

struct LustreSource {
  std::string mgs_address;
  std::string fs_name;
  std::string sub_dir;  // filled and normalised; empty for the root

  // "<mgs>@tcp:/<fs>[/<sub-dir>]".
  std::string Spec() const;
};

class MountBackend {
 public:
  virtual ~MountBackend() = default;

  // "lustre", "mock" or "local".
  virtual absl::string_view Mode() const = 0;

  // OK when this node can mount; otherwise why not (for Probe and /readyz).
  virtual absl::Status Ready() const = 0;

  // False for mock mode, which never makes a mount.
  virtual bool MakesMounts() const = 0;

  // Creates `source.sub_dir` (and missing parents) inside the file system
  // when it does not exist, so a per-pod sub-dir can be mounted.
  virtual absl::Status EnsureSubDir(const LustreSource& source) = 0;

  // Runs `fn` with a directory where the root of `source`'s file system is
  // reachable, then lets go of it: a temporary root mount under the working
  // mount dir in lustre mode, <local-root>/<fs> in local mode. Mock mode has
  // no file system: FAILED_PRECONDITION.
  virtual absl::Status WithFileSystemRoot(
      const LustreSource& source, const std::function<absl::Status(const std::string&)>& fn) = 0;

  // Mounts `source` on the existing directory `target`. `options` are ready
  // for `mount -o` ("ro" first when read-only).
  virtual absl::Status Mount(const LustreSource& source, const std::string& target,
                             const std::vector<std::string>& options) = 0;

  // Whether the mount on `target` (a mount point) is `source`, read-only
  // exactly when `read_only`.
  virtual absl::StatusOr<bool> IsMountOf(const LustreSource& source, const std::string& target,
                                         bool read_only) = 0;
};

struct LustreBackendOptions {
  // Where per-operation root mounts go while a sub-dir is created.
  std::string working_mount_dir = "/tmp";
  // Candidates for the Lustre mount helper; Ready() needs one of them.
  std::vector<std::string> mount_helpers = {"/sbin/mount.lustre", "/usr/sbin/mount.lustre"};
  // Tells whether a path exists; replaced in tests.
  std::function<bool(const std::string&)> exists;
};

std::unique_ptr<MountBackend> NewLustreBackend(volume::Syscalls* sys,
                                               std::unique_ptr<volume::Mounter> mounter,
                                               LustreBackendOptions options);
std::unique_ptr<MountBackend> NewMockBackend();
std::unique_ptr<MountBackend> NewLocalBackend(volume::Syscalls* sys, std::string local_root);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_H_
