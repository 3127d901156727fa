// The synthetic host of the pod-level e2e: the test process is PID 1 of
// fresh PID, mount and network namespaces (e2e/pod_test.sh starts it with
// unshare). EnterHost() builds a tmpfs root holding only what the test puts
// there, pivots into it (so the host's mount namespace, /proc/1/ns/mnt, is
// this synthetic host and nothing can reach the machine's real one), and
// gives it what a node has:
//   - /usr: the machine's, under an overlay whose upper layer is on the
//     synthetic root, so the container runtime's programs run and the test
//     can install host programs (mount.lustre, lfs) without touching the
//     machine; /bin, /sbin, /lib and /lib64 link into it (merged /usr);
//   - /proc, a fresh /sys with the machine's cgroup hierarchies, /dev, /etc
//     with hosts and resolv.conf, /run (also /var/run);
//   - / shared, as systemd makes it on a real node, and loopback up.
#ifndef LUSTRE_CSI_E2E_SYNTHETIC_HOST_H_
#define LUSTRE_CSI_E2E_SYNTHETIC_HOST_H_

#include <map>
#include <string>

#include "absl/status/status.h"

namespace lustre_csi::e2e {

// Builds the synthetic host (see above) in `scratch`. `imports` maps a path
// in the new host to a file or directory of the old root to bind there
// (read-only).
absl::Status EnterHost(const std::string& scratch,
                       const std::map<std::string, std::string>& imports);

}  // namespace lustre_csi::e2e

#endif  // LUSTRE_CSI_E2E_SYNTHETIC_HOST_H_
