// How a Lustre file system gets mounted on this node: the driver's mount
// modes behind one interface, MountMode, each in a file pair of its own in
// this folder, chosen by name in factory.h (--mount-mode, --lustre-client):
//
//   lustre  runs the host's Lustre mount helper (`mount.lustre -o <opts>
//           <mgs>@tcp:/<fs>[/<sub-dir>] <target>`) in a configured mount
//           namespace (volume::MountNamespace): the host's, from a container,
//           or the driver's own on a bare host. No shell, a clean
//           environment, a timeout. The mount reaches the driver's view by
//           propagation and is checked there; unmounts are made in the same
//           namespace (the Syscalls given must route them there).
//   shared  lustre with --lustre-client=shared (the default): one client
//           mount per file system, every publish a bind from it.
//   mock    creates nothing but the target directory (conformance suites),
//           like the Go driver's mock mode.
//   local   resolves <mgs>@tcp:/<fs>[/<sub-dir>] to <local-root>/<fs>[/<sub-dir>]
//           on this machine and makes a real bind mount there, read-only when
//           asked, so every mount-table path runs without Lustre.
//
// Modes are thread-safe; the borrowed Syscalls and MountNamespace must
// outlive them.
#ifndef LUSTRE_CSI_PKG_DRIVER_MODES_MODE_H_
#define LUSTRE_CSI_PKG_DRIVER_MODES_MODE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/driver/mount_slots.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

struct LustreSource {
  std::string mgs_address;
  std::string fs_name;
  std::string sub_dir;  // filled and normalised; empty for the root

  // "<mgs>@tcp:/<fs>[/<sub-dir>]".
  std::string Spec() const;
};

// Whether this node can mount now, and if not, why.
struct Readiness {
  absl::Status status;  // OK, or FAILED_PRECONDITION saying what to fix
  // A short label for metrics when not ready: "mount-namespace",
  // "mount-helper", "kernel-module", "working-dir", "bind-mounts",
  // "propagation" or "local-root"; empty when ready.
  std::string reason;
};

// The controller's way into a file system: sub-dir provisioning works in it
// (ControllerLogic), and nothing else of a mount mode is asked for there.
class FileSystemAccess {
 public:
  virtual ~FileSystemAccess() = default;

  // Runs `fn` with the Syscalls to work there and a directory where the root
  // of `source`'s file system is reachable, then lets go of it: a root mount
  // in a fresh directory under the working mount dir in lustre mode (removed
  // again), <local-root>/<fs> in local mode. Mock mode has no file system:
  // FAILED_PRECONDITION.
  using FsRootFn = std::function<absl::Status(volume::Syscalls& sys, const std::string& root)>;
  virtual absl::Status WithFileSystemRoot(const LustreSource& source, const FsRootFn& fn) = 0;
};

// What NodeLogic hands a mount mode to publish, already checked: the
// request's validation, the per-target lock and idempotency stay there.
struct PublishTarget {
  LustreSource source;
  std::string target;                // an existing directory with nothing mounted on it
  std::vector<std::string> options;  // ready for -o ("ro" first when read-only)
  bool read_only = false;
  std::optional<uint32_t> volume_mount_group;  // fsGroup, when the CO passes one
  // Held while the mode mounts; null: no bound.
  MountSlots* slots = nullptr;
};

// A mount mode owns a node's publish and unpublish from start to end.
class MountMode {
 public:
  virtual ~MountMode() = default;

  // Checks the exact path a mount takes (may block for a few seconds; see
  // ReadinessMonitor for a cached answer).
  virtual Readiness CheckReady() = 0;

  // Publishes `t`: mounts the source on the target (a sub-dir is mounted
  // directly; only when it does not exist is it created first, through the
  // file system's root, and mounted again), holding one of `t.slots` while
  // it mounts, and gives a writable volume the group asked for. On failure
  // it unmounts what it mounted (an unmount that fails is logged, and the
  // target then still holds the mount).
  virtual absl::Status Publish(const PublishTarget& t) = 0;

  // Whether the mount on `target` (a mount point) is `source` mounted with
  // `options` (as given to Publish), as far as the mount table tells
  // (PerMountFlagsMatch).
  virtual absl::StatusOr<bool> IsMountOf(const LustreSource& source, const std::string& target,
                                         const std::vector<std::string>& options) = 0;

  // Unmounts everything on `target` (escalating when needed) and removes the
  // directory, never deleting anything below it; then lets go of what no
  // target needs any more. A missing target is OK.
  virtual absl::Status Unpublish(const std::string& target) = 0;

  // Unpublish for a target whose file system does not answer: what is
  // mounted there is detached without being looked at
  // (volume::DetachMountPoint) and the directory removed; then the mode
  // lets go of what no target needs any more.
  virtual absl::Status Detach(const std::string& target) = 0;

  // Unmounts a corrupted mount (ENOTCONN, ESTALE, EIO) on `target`, so that
  // a publish can mount there again.
  virtual absl::Status Repair(const std::string& target) = 0;

  // Whether `path` holds a volume this mode published: a mount point (mock
  // mode makes none: any path that exists). NOT_FOUND for a path that does
  // not exist; a corrupted mount's error as it is.
  virtual absl::StatusOr<bool> IsPublished(const std::string& path) = 0;
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MODES_MODE_H_
