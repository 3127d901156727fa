// The kubelet's translation (kubelet_cri.h) on manifests written here: what
// the pod-level e2e hands containerd, checked field by field.
#include "e2e/kubelet_cri.h"

#include <sys/stat.h>

#include <filesystem>

#include "e2e/e2e_util.h"
#include "e2e/pod_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kManifest[] = R"yaml(
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node
  namespace: kube-system
spec:
  template:
    spec:
      hostNetwork: true
      hostPID: true
      containers:
      - name: driver
        image: lustre-csi:v0.1.0
        args: ["node", "--nodeid=$(KUBE_NODE_NAME)", "--left=$(UNKNOWN)"]
        env:
        - name: KUBE_NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        - name: PLAIN
          value: "1"
        ports:
        - containerPort: 29635
          name: metrics
        livenessProbe:
          httpGet:
            path: /healthz
            port: metrics
        securityContext:
          privileged: true
        volumeMounts:
        - name: kubelet
          mountPath: /var/lib/kubelet
          mountPropagation: Bidirectional
        - name: plugin
          mountPath: /csi
        - name: scratch
          mountPath: /scratch
          readOnly: true
      volumes:
      - name: kubelet
        hostPath:
          path: KUBELET_DIR
          type: Directory
      - name: plugin
        hostPath:
          path: PLUGIN_DIR
          type: DirectoryOrCreate
      - name: scratch
        emptyDir: {}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller
spec:
  template:
    spec:
      containers:
      - name: driver
        image: lustre-csi:v0.1.0
        args: ["controller"]
        ports:
        - containerPort: 29634
          name: metrics
        readinessProbe:
          httpGet:
            path: /readyz
            port: 29634
        volumeMounts:
        - name: kubelet
          mountPath: /var/lib/kubelet
          mountPropagation: Bidirectional
      volumes:
      - name: kubelet
        hostPath:
          path: /
)yaml";

class KubeletCriTest : public testing::Test {
 protected:
  void SetUp() override {
    node_.root_dir = dir_.Join("kubelet");
    node_.pod_log_dir = dir_.Join("logs");
    node_.cgroup_parent = "/kubepods";
    node_.older_kernel = "/opt/older-kernel";
    std::filesystem::create_directories(dir_.Join("kubelet"));
    std::string yaml = kManifest;
    yaml.replace(yaml.find("KUBELET_DIR"), 11, dir_.Join("kubelet"));
    yaml.replace(yaml.find("PLUGIN_DIR"), 10, dir_.Join("plugin"));
    yaml_ = yaml;
  }

  PodSpec Node() {
    absl::StatusOr<PodSpec> spec = LoadPodSpec(yaml_, "DaemonSet", "node", "driver", "node-7");
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? *spec : PodSpec{};
  }

  TempDir dir_;
  KubeletNode node_;
  std::string yaml_;
};

TEST_F(KubeletCriTest, ManifestIsReadAsTheKubeletReadsIt) {
  PodSpec spec = Node();
  EXPECT_EQ(spec.image, "lustre-csi:v0.1.0");
  EXPECT_EQ(spec.namespace_, "kube-system");
  EXPECT_THAT(spec.args, ElementsAre("node", "--nodeid=node-7", "--left=$(UNKNOWN)"));
  EXPECT_EQ(spec.liveness.port, 29635) << "the named port resolves to its number";
  EXPECT_EQ(spec.liveness.path, "/healthz");
  EXPECT_EQ(spec.readiness.port, 0);
  absl::StatusOr<PodSpec> controller =
      LoadPodSpec(yaml_, "Deployment", "controller", "driver", "node-7");
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ(controller->readiness.port, 29634) << "a numbered port is taken as it is";
  EXPECT_EQ(controller->namespace_, "default");
}

TEST_F(KubeletCriTest, HostNetworkPrivilegedPodSharesTheNodesNamespaces) {
  absl::StatusOr<CriPod> pod = TranslatePod(Node(), node_, "0123abcd-uid", "-x1");
  ASSERT_TRUE(pod.ok()) << pod.status();
  const runtime::v1::PodSandboxConfig& sandbox = pod->sandbox;
  EXPECT_EQ(sandbox.metadata().name(), "node-x1");
  EXPECT_EQ(sandbox.metadata().namespace_(), "kube-system");
  EXPECT_EQ(sandbox.hostname(), "") << "a host-network pod keeps the node's UTS namespace";
  EXPECT_EQ(sandbox.log_directory(), dir_.Join("logs") + "/kube-system_node-x1_0123abcd-uid");
  EXPECT_EQ(sandbox.linux().cgroup_parent(), "/kubepods/pod0123abcd-uid");
  const auto& ns = sandbox.linux().security_context().namespace_options();
  EXPECT_EQ(ns.network(), runtime::v1::NODE);
  EXPECT_EQ(ns.pid(), runtime::v1::NODE);
  EXPECT_TRUE(sandbox.linux().security_context().privileged());

  const runtime::v1::ContainerConfig& c = pod->container;
  EXPECT_EQ(c.image().image(), "lustre-csi:v0.1.0");
  EXPECT_THAT(c.command(), IsEmpty()) << "no command: the image's entrypoint runs";
  EXPECT_THAT(c.args(), ElementsAre("node", "--nodeid=node-7", "--left=$(UNKNOWN)"));
  EXPECT_TRUE(c.linux().security_context().privileged());
  EXPECT_THAT(c.linux().security_context().masked_paths(), IsEmpty());
  EXPECT_EQ(c.log_path(), "driver/0.log");
  EXPECT_EQ(pod->log_path, sandbox.log_directory() + "/driver/0.log");
  std::map<std::string, const runtime::v1::Mount*> mounts;
  for (const runtime::v1::Mount& m : c.mounts()) mounts[m.container_path()] = &m;
  ASSERT_EQ(mounts.count("/var/lib/kubelet"), 1u);
  EXPECT_EQ(mounts["/var/lib/kubelet"]->host_path(), dir_.Join("kubelet"));
  EXPECT_EQ(mounts["/var/lib/kubelet"]->propagation(), runtime::v1::PROPAGATION_BIDIRECTIONAL);
  ASSERT_EQ(mounts.count("/csi"), 1u);
  EXPECT_EQ(mounts["/csi"]->propagation(), runtime::v1::PROPAGATION_PRIVATE);
  EXPECT_TRUE(std::filesystem::is_directory(dir_.Join("plugin"))) << "DirectoryOrCreate";
  ASSERT_EQ(mounts.count("/scratch"), 1u);
  EXPECT_TRUE(mounts["/scratch"]->readonly());
  std::string empty_dir =
      dir_.Join("kubelet") + "/pods/0123abcd-uid/volumes/kubernetes.io~empty-dir/scratch";
  EXPECT_EQ(mounts["/scratch"]->host_path(), empty_dir);
  EXPECT_TRUE(std::filesystem::is_directory(empty_dir));
  EXPECT_EQ(pod->volume_paths.at("scratch"), empty_dir);
  ASSERT_EQ(mounts.count("/etc/hosts"), 1u);
  EXPECT_THAT(ReadFile(mounts["/etc/hosts"]->host_path()), HasSubstr("(host network)"));
  ASSERT_EQ(mounts.count("/dev/termination-log"), 1u);
  EXPECT_EQ(mounts.count("/older-kernel"), 0u);
}

TEST_F(KubeletCriTest, OlderKernelRunsTheEntrypointBehindTheWrapper) {
  PodSpec spec = Node();
  spec.emulated_kernel = "4.18";
  absl::StatusOr<CriPod> pod = TranslatePod(spec, node_, "uid-2", "");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_THAT(pod->container.command(), ElementsAre("/older-kernel", "4.18", "/lustre-csi"));
  bool mounted = false;
  for (const runtime::v1::Mount& m : pod->container.mounts()) {
    if (m.container_path() == "/older-kernel") {
      mounted = true;
      EXPECT_EQ(m.host_path(), "/opt/older-kernel");
      EXPECT_TRUE(m.readonly());
    }
  }
  EXPECT_TRUE(mounted);
}

TEST_F(KubeletCriTest, PodNetworkUnprivilegedPodGetsTheDefaultMasks) {
  PodSpec spec = Node();
  spec.host_network = false;
  spec.host_pid = false;
  spec.privileged = false;
  spec.mounts.erase(spec.mounts.begin());  // Bidirectional needs privileged
  absl::StatusOr<CriPod> pod = TranslatePod(spec, node_, "uid-3", "-y");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->sandbox.hostname(), "node-y");
  const auto& ns = pod->sandbox.linux().security_context().namespace_options();
  EXPECT_EQ(ns.network(), runtime::v1::POD);
  EXPECT_EQ(ns.pid(), runtime::v1::CONTAINER);
  const auto& sc = pod->container.linux().security_context();
  EXPECT_FALSE(sc.privileged());
  EXPECT_THAT(sc.masked_paths(), testing::Contains("/proc/kcore"));
  EXPECT_THAT(sc.readonly_paths(), testing::Contains("/proc/sys"));
}

TEST_F(KubeletCriTest, RefusesWhatTheKubeletRefuses) {
  PodSpec unprivileged = Node();
  unprivileged.privileged = false;
  absl::StatusOr<CriPod> pod = TranslatePod(unprivileged, node_, "uid-4", "");
  EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument) << pod.status();
  EXPECT_THAT(pod.status().message(), HasSubstr("Bidirectional"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("kubelet") + "/pods/uid-4"))
      << "refused before anything was prepared";

  PodSpec missing = Node();
  missing.volumes["kubelet"].host_path = dir_.Join("no-such-dir");
  pod = TranslatePod(missing, node_, "uid-5", "");
  EXPECT_EQ(pod.status().code(), absl::StatusCode::kFailedPrecondition) << pod.status();
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("no-such-dir")))
      << "type Directory is checked, never created";
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("kubelet") + "/pods/uid-5"))
      << "a refusal takes the pod's directory back";
}

}  // namespace
}  // namespace lustre_csi::e2e
