// How the kubelet turns a pod's container into Container Runtime Interface
// calls, in one place, for the pod-level e2e: the pod's sandbox config, the
// container's config, and the node-side directories the kubelet prepares
// for them (hostPath types, emptyDirs, the pod's /etc/hosts and termination
// log). Written from the kubelet's documented behaviour (kuberuntime's
// sandbox and container configs). Only what the project's manifests use is
// translated; container fields, pod fields that reach the runtime
// (initContainers, securityContext, ...), env sources, securityContext and
// hostPath types it does not know are refused (LoadPodSpec, TranslatePod),
// not dropped.
#ifndef LUSTRE_CSI_E2E_KUBELET_CRI_H_
#define LUSTRE_CSI_E2E_KUBELET_CRI_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "e2e/cri_api.pb.h"
#include "e2e/pod_spec.h"

namespace lustre_csi::e2e {

// Where the kubelet keeps things on the node, and the test's own settings.
struct KubeletNode {
  std::string root_dir = "/var/lib/kubelet";
  std::string pod_log_dir = "/var/log/pods";
  std::string node_name = "node-1";
  // The cgroup every pod goes under (the kubelet's "kubepods").
  std::string cgroup_parent;
  // Where the test's older-kernel wrapper lives on the host (for
  // PodSpec::emulated_kernel).
  std::string older_kernel;
};

// One pod of one container, translated.
struct CriPod {
  std::string uid;
  std::string pod_dir;  // <root_dir>/pods/<uid>
  runtime::v1::PodSandboxConfig sandbox;
  runtime::v1::ContainerConfig container;
  // volume name -> the host path the container sees it at (hostPath, or the
  // emptyDir's directory).
  std::map<std::string, std::string> volume_paths;
  std::string log_path;  // the container's log, on the host
};

// Prepares the node for `spec` (pod and emptyDir directories, hostPath type
// checks, /etc/hosts, the termination log) and returns its CRI configs. The
// pod's name is `spec.name` plus `suffix` (a DaemonSet's pods are
// <name>-<random>), its uid `uid`.
absl::StatusOr<CriPod> TranslatePod(const PodSpec& spec, const KubeletNode& node,
                                    const std::string& uid, const std::string& suffix);

}  // namespace lustre_csi::e2e

#endif  // LUSTRE_CSI_E2E_KUBELET_CRI_H_
