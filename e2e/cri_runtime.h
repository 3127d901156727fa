// The pod-level e2e's container runtime: a containerd (with its CRI plugin)
// and runc from the machine's packages, started inside the synthetic host
// (synthetic_host.h) and driven over the CRI as the kubelet drives it.
//
// Containerd keeps its root and state on the synthetic host's tmpfs, puts
// every pod in one cgroup parent of its own, and sets up non-host-network
// pods with the machine's CNI plugins (a bridge). Images come in as an
// operator loads them: `ctr -n k8s.io images import <archive>`.
#ifndef LUSTRE_CSI_E2E_CRI_RUNTIME_H_
#define LUSTRE_CSI_E2E_CRI_RUNTIME_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "e2e/cri_api.grpc.pb.h"
#include "e2e/e2e_util.h"
#include "e2e/kubelet_cri.h"
#include "e2e/pod_spec.h"

namespace lustre_csi::e2e {

struct ContainerdOptions {
  // The pod sandbox image, as containerd names it once imported.
  std::string sandbox_image;
  // Archives to import before any pod runs.
  std::vector<std::string> archives;
  // The cgroup all pods go under; removed (and checked gone) by Stop().
  std::string cgroup_parent;
  // The test's older-kernel wrapper on the host (KubeletNode::older_kernel).
  std::string older_kernel;
};

class Containerd {
 public:
  // Writes its config and the CNI config, starts containerd, waits for the
  // CRI to answer and imports the archives.
  static absl::StatusOr<std::unique_ptr<Containerd>> Start(const ContainerdOptions& options);
  ~Containerd();  // Stop(), if not stopped

  // Removes every pod left, stops containerd and checks that no shim,
  // container, mount or cgroup of it is left.
  absl::Status Stop();

  runtime::v1::RuntimeService::Stub& runtime() { return *runtime_; }
  runtime::v1::ImageService::Stub& images() { return *images_; }
  const KubeletNode& node() const { return node_; }
  std::string Log() const;

 private:
  Containerd() = default;
  ContainerdOptions options_;
  KubeletNode node_;
  std::unique_ptr<Subprocess> daemon_;
  std::unique_ptr<runtime::v1::RuntimeService::Stub> runtime_;
  std::unique_ptr<runtime::v1::ImageService::Stub> images_;
  bool stopped_ = false;
};

// One pod of one container, run through the CRI as the kubelet runs it:
// RunPodSandbox, then CreateContainer and StartContainer.
class Container {
 public:
  static absl::StatusOr<std::unique_ptr<Container>> Start(Containerd* runtime, const PodSpec& spec);
  ~Container();  // Stop() if still running, then removes the container and its pod

  // StopContainer with `grace` (SIGTERM, SIGKILL after it); the exit code.
  int Stop(absl::Duration grace = absl::Seconds(10));
  // StopContainer with no grace (SIGKILL at once); the exit code.
  int Kill();
  // The container's output, without the CRI log's time and stream fields.
  std::string Log() const;
  // Where a volume's data lives on the host (hostPath, or the emptyDir).
  std::string HostPathOf(const std::string& volume) const;
  // The pod's IP (empty for a host-network pod), where the kubelet probes.
  std::string PodIp();

 private:
  Container() = default;
  int StopWith(int64_t timeout_seconds);
  runtime::v1::ContainerStatus Status();
  Containerd* runtime_ = nullptr;
  CriPod pod_;
  std::string sandbox_id_;
  std::string container_id_;
  bool stopped_ = false;
  int exit_code_ = -1;
};

}  // namespace lustre_csi::e2e

#endif  // LUSTRE_CSI_E2E_CRI_RUNTIME_H_
