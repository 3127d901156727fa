// Runs a container of a rendered Kubernetes manifest the way the kubelet and
// a container runtime would, on a synthetic host, for the pod-level e2e.
//
// The synthetic host: the test process is PID 1 of fresh PID, mount and
// network namespaces (e2e/pod_test.sh starts it with unshare). EnterHost()
// builds a tmpfs root holding only what the test puts there, pivots into it
// (so the host's mount namespace, /proc/1/ns/mnt, is this synthetic host and
// nothing can reach the machine's real one), mounts /proc, makes / shared as
// systemd does on a real node, and brings up loopback.
//
// A container: an overlay of the unpacked image as its root, the pod's
// volumes bind-mounted at their mountPaths (hostPath as given, emptyDir from
// a scratch directory; Bidirectional as rshared, HostToContainer as rslave,
// None as private), its own mount namespace (and PID namespace unless the pod
// has hostPID), /proc and a minimal /dev (unless a volume is mounted at
// /dev), then pivot_root (as runc does) and
// exec of the image's
// entrypoint with the container's args ($(VAR) filled from its env).
#ifndef LUSTRE_CSI_E2E_POD_RUNTIME_H_
#define LUSTRE_CSI_E2E_POD_RUNTIME_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace lustre_csi::e2e {

struct VolumeMount {
  std::string name;
  std::string mount_path;
  std::string propagation = "None";  // None, HostToContainer or Bidirectional
  bool read_only = false;
};

struct Volume {
  std::string name;
  std::string host_path;  // empty for emptyDir
  std::string host_path_type;
};

struct PodSpec {
  std::string workload;  // "<Kind>/<name>"
  bool host_pid = false;
  bool host_network = false;
  bool privileged = false;
  std::vector<std::string> args;  // with $(VAR) filled
  std::map<std::string, std::string> env;
  std::vector<VolumeMount> mounts;
  std::map<std::string, Volume> volumes;
  // Not of the pod spec: the test's own. When set ("4.18", ...), the
  // entrypoint runs as on that older kernel (older_kernel_filter.h).
  std::string emulated_kernel;
};

// Reads `kind`/`name`'s container `container` from multi-document YAML (as
// rendered by kubectl kustomize); a workload's pod template, or a Pod's spec
// (as tools/manifest-check/nomad-pod.mjs renders a Nomad task). Env values come from `value` or,
// for a fieldRef to spec.nodeName, from `node_name`.
absl::StatusOr<PodSpec> LoadPodSpec(const std::string& yaml, const std::string& kind,
                                    const std::string& name, const std::string& container,
                                    const std::string& node_name);

// Builds the synthetic host (see above). `imports` maps a path in the new
// host to a file or directory of the old root to bind there (read-only).
absl::Status EnterHost(const std::string& scratch,
                       const std::map<std::string, std::string>& imports);

class Container {
 public:
  // Starts `spec` with the image whose unpacked root is `image_root` (a path
  // on the synthetic host). Its output goes to `LogPath()`.
  static absl::StatusOr<std::unique_ptr<Container>> Start(const PodSpec& spec,
                                                          const std::string& image_root,
                                                          const std::string& name);
  ~Container();  // Stop() if still running, then removes its root

  // SIGTERM, then SIGKILL after `grace`; returns the exit status (waitpid).
  int Stop(absl::Duration grace = absl::Seconds(10));
  // SIGKILL at once, as kill -9 does; returns the exit status (waitpid).
  int Kill();
  bool Running();
  std::string LogPath() const { return dir_ + "/log"; }
  std::string Log() const;
  // Where a volume's data lives on the host (hostPath, or the emptyDir).
  std::string HostPathOf(const std::string& volume) const;

 private:
  Container() = default;
  std::string dir_;
  std::map<std::string, std::string> volume_paths_;
  pid_t runtime_pid_ = -1;    // the process that unshared (waits for the init)
  pid_t container_pid_ = -1;  // the container's init, as seen from the host
  bool stopped_ = false;
};

}  // namespace lustre_csi::e2e

#endif  // LUSTRE_CSI_E2E_POD_RUNTIME_H_
