// The shared-client mode (--lustre-client=shared, the default of lustre
// mode): one Lustre client mount per file system and set of client-wide
// options on the node, every publish a bind from it.
#ifndef LUSTRE_CSI_PKG_DRIVER_MODES_SHARED_CLIENT_MODE_H_
#define LUSTRE_CSI_PKG_DRIVER_MODES_SHARED_CLIENT_MODE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "pkg/driver/modes/mode.h"
#include "pkg/driver/modes/mounting_mode.h"
#include "pkg/server/metrics.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

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
  // Where the looks at targets and clients an unmount makes run (borrowed;
  // null: the calling thread), volume::UnmountOptions.
  volume::Isolation* isolation = nullptr;
  // Whether the unmounts `sys` makes wait at most a bound of their own (made
  // in a mount namespace: volume::MountNamespace::Unmount). Then the
  // unpublish of a bind of a live client runs on the calling thread, with
  // no hand-over (volume::UnmountOptions::unmount_bounded).
  bool unmounts_bounded = false;
  // How long a publish that found its client dead waits, before detaching
  // it, for the unpublishes already unmounting binds of it in place (each
  // of which counts on the client staying mounted, so as not to end it);
  // past it the publish answers UNAVAILABLE and leaves the client be.
  absl::Duration in_place_unmount_wait = absl::Seconds(5);
};

// Lustre mode with one client per file system and set of client-wide
// options, instead of one per volume. The first publish of a file system
// mounts its root under `client_dir` through `clients` (the lustre mode:
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
std::unique_ptr<internal::MountingMode> NewSharedClientMode(volume::Syscalls* sys,
                                                            std::unique_ptr<MountMode> clients,
                                                            SharedClientOptions options,
                                                            server::MetricsRegistry* metrics);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MODES_SHARED_CLIENT_MODE_H_
