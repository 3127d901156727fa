// How a Lustre file system gets mounted on this node: the driver's mount
// modes behind one interface.
//
//   lustre  runs the host's Lustre mount helper (`mount.lustre -o <opts>
//           <mgs>@tcp:/<fs>[/<sub-dir>] <target>`) in a configured mount
//           namespace (volume::MountNamespace): the host's, from a container,
//           or the driver's own on a bare host. No shell, a clean
//           environment, a timeout. The mount reaches the driver's view by
//           propagation and is checked there; unmounts are made in the same
//           namespace (the Syscalls given must route them there).
//   mock    creates nothing but the target directory (conformance suites),
//           like the Go driver's mock mode.
//   local   resolves <mgs>@tcp:/<fs>[/<sub-dir>] to <local-root>/<fs>[/<sub-dir>]
//           on this machine and makes a real bind mount there, read-only when
//           asked, so every mount-table path runs without Lustre.
//
// Backends are thread-safe; the borrowed Syscalls and MountNamespace must
// outlive them.
#ifndef LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_H_
#define LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pkg/driver/mount_slots.h"
#include "pkg/server/metrics.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/mount_namespace.h"
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
class MountBackend : public FileSystemAccess {
 public:
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

  // Unmounts a corrupted mount (ENOTCONN, ESTALE, EIO) on `target`, so that
  // a publish can mount there again.
  virtual absl::Status Repair(const std::string& target) = 0;

  // Whether `path` holds a volume this mode published: a mount point (mock
  // mode makes none: any path that exists). NOT_FOUND for a path that does
  // not exist; a corrupted mount's error as it is.
  virtual absl::StatusOr<bool> IsPublished(const std::string& path) = 0;
};

struct LustreBackendOptions {
  // The mount helper, a path in the mount namespace.
  std::string mount_helper = "/sbin/mount.lustre";
  // Where root mounts go while a sub-dir is created. It must be the same
  // directory in the driver's view and in the mount namespace.
  std::string working_mount_dir = "/tmp";
  absl::Duration mount_timeout = absl::Minutes(2);
  // Bounds each readiness step (running the helper with -V, reading files).
  absl::Duration check_timeout = absl::Seconds(10);
};

// `sys` is the driver's view (its Unmount must reach `ns`, e.g.
// volume::UnmountingIn); `ns` is where the helper runs. Both borrowed.
std::unique_ptr<MountBackend> NewLustreBackend(volume::Syscalls* sys, volume::MountNamespace* ns,
                                               LustreBackendOptions options);

struct SharedClientOptions {
  // One directory per client mount, <client_dir>/<fs-name>-<key>. It must be
  // the same directory in the driver's view and in the mount namespace, on a
  // shared mount (a container: under its Bidirectional kubelet directory).
  std::string client_dir;
  // Whether the binds made in the driver's view must reach another mount
  // namespace (the host's, from a container): then readiness requires the
  // mount holding `client_dir` to be shared (a Bidirectional volume), since
  // the binds at the targets beside it go out only through such a mount.
  bool binds_must_propagate = false;
};

// Lustre mode with one client per file system and set of client-wide
// options, instead of one per volume. The first publish of a file system
// mounts its root under `client_dir` through `clients` (the lustre backend:
// the host's helper in the mount namespace); every publish is then a bind
// mount of the volume's sub-dir, resolved beneath the client root without
// following an escape (created when missing), with the per-mount flags (ro,
// nosuid, noatime, ...) set before the bind is attached so its copies in
// other namespaces (the host's) have them too. Options that are not per-mount
// flags (flock, user_xattr, lazystatfs, ...) act on the whole client and
// select another one. A client goes when the last mount of it outside
// `client_dir` goes (Unpublish). Who uses which client is kept in memory:
// read from the mount table once at start (so a restart or kill -9 loses
// nothing), kept by every publish and unpublish, and confirmed against the
// table only when a client may have become idle, before it is unmounted (a
// target whose unmount failed shows there and counts again); publishes,
// repeats and unpublishes read no table. A dead client (ENOTCONN,
// ESTALE) is unmounted lazily and mounted again for the next publish; binds of
// other clients are not touched. Metrics (may be null): lustre_csi_clients,
// lustre_csi_client_mounts_in_use, lustre_csi_publishes_total{client}.
std::unique_ptr<MountBackend> NewSharedClientBackend(volume::Syscalls* sys,
                                                     std::unique_ptr<MountBackend> clients,
                                                     SharedClientOptions options,
                                                     server::MetricsRegistry* metrics);

// Mock mode checks targets through `sys` (borrowed).
std::unique_ptr<MountBackend> NewMockBackend(volume::Syscalls* sys);
std::unique_ptr<MountBackend> NewLocalBackend(volume::Syscalls* sys, std::string local_root);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MOUNT_BACKEND_H_
