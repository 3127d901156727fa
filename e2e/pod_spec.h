// One container of a rendered Kubernetes manifest, as the pod-level e2e
// reads it: what the kubelet would hand a container runtime for it.
#ifndef LUSTRE_CSI_E2E_POD_SPEC_H_
#define LUSTRE_CSI_E2E_POD_SPEC_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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

struct Port {
  std::string name;
  int container_port = 0;
  int host_port = 0;
};

// An httpGet probe, its named port resolved to the container's number.
struct HttpProbe {
  std::string path;
  int port = 0;
};

struct PodSpec {
  std::string workload;  // "<Kind>/<name>"
  std::string name;      // the workload's name (a Pod's own name)
  std::string namespace_ = "default";
  std::string container;  // the container's name
  std::string image;      // as the manifest names it
  bool host_pid = false;
  bool host_network = false;
  bool privileged = false;
  std::vector<std::string> command;  // empty: the image's entrypoint
  std::vector<std::string> args;     // with $(VAR) filled
  std::map<std::string, std::string> env;
  std::vector<VolumeMount> mounts;
  std::map<std::string, Volume> volumes;
  std::vector<Port> ports;
  HttpProbe liveness;   // port 0 when the container has none
  HttpProbe readiness;  // port 0 when the container has none
  // Not of the pod spec: the test's own. When set ("4.18", ...), the
  // entrypoint runs as on that older kernel, behind the older-kernel wrapper
  // (older_kernel_filter.h).
  std::string emulated_kernel;
};

// Reads `kind`/`name`'s container `container` from multi-document YAML (as
// rendered by kubectl kustomize); a workload's pod template, or a Pod's spec
// (as tools/manifest-check/nomad-pod.mjs renders a Nomad task). Env values
// come from `value` or, for a fieldRef to spec.nodeName, from `node_name`.
absl::StatusOr<PodSpec> LoadPodSpec(const std::string& yaml, const std::string& kind,
                                    const std::string& name, const std::string& container,
                                    const std::string& node_name);

}  // namespace lustre_csi::e2e

#endif  // LUSTRE_CSI_E2E_POD_SPEC_H_
