#include "e2e/kubelet_cri.h"

#include <sys/stat.h>

#include <filesystem>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "e2e/e2e_util.h"

namespace lustre_csi::e2e {
namespace {

using runtime::v1::NamespaceMode;

// The paths the kubelet masks and makes read-only in every container that
// is not privileged (the default procMount).
constexpr const char* kMaskedPaths[] = {
    "/proc/asound",        "/proc/acpi",       "/proc/kcore",       "/proc/keys",
    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
    "/proc/scsi",          "/sys/firmware",
};
constexpr const char* kReadonlyPaths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

absl::Status MkdirAll(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("mkdir -p ", path, ": ", ec.message()));
  chmod(path.c_str(), mode);
  return absl::OkStatus();
}

runtime::v1::MountPropagation Propagation(const std::string& name) {
  if (name == "Bidirectional") return runtime::v1::PROPAGATION_BIDIRECTIONAL;
  if (name == "HostToContainer") return runtime::v1::PROPAGATION_HOST_TO_CONTAINER;
  return runtime::v1::PROPAGATION_PRIVATE;
}

// A hostPath volume's `type` check, as the kubelet makes it before the
// container starts.
absl::Status CheckHostPath(const Volume& v) {
  struct stat st;
  bool exists = stat(v.host_path.c_str(), &st) == 0;
  if (v.host_path_type.empty()) return absl::OkStatus();
  if (v.host_path_type == "DirectoryOrCreate") {
    if (!exists) return MkdirAll(v.host_path, 0755);
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError("hostPath " + v.host_path + " is not a directory");
    }
    return absl::OkStatus();
  }
  if (v.host_path_type == "Directory") {
    if (!exists || !S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError("hostPath type check failed: " + v.host_path +
                                           " is not a directory");
    }
    return absl::OkStatus();
  }
  return absl::UnimplementedError("hostPath type " + v.host_path_type + " is not translated");
}

}  // namespace

absl::StatusOr<CriPod> TranslatePod(const PodSpec& spec, const KubeletNode& node,
                                    const std::string& uid, const std::string& suffix) {
  // What the kubelet refuses before it prepares anything.
  for (const VolumeMount& m : spec.mounts) {
    if (spec.volumes.count(m.name) == 0) {
      return absl::InvalidArgumentError("volumeMount " + m.name + " has no volume");
    }
    if (m.propagation == "Bidirectional" && !spec.privileged) {
      return absl::InvalidArgumentError("Bidirectional mount propagation of " + m.name +
                                        " needs a privileged container");
    }
  }
  CriPod pod;
  pod.uid = uid;
  pod.pod_dir = absl::StrCat(node.root_dir, "/pods/", uid);
  std::string pod_name = spec.name + suffix;

  // The sandbox: the pod's namespaces, its log directory and cgroup.
  runtime::v1::PodSandboxConfig& sandbox = pod.sandbox;
  sandbox.mutable_metadata()->set_name(pod_name);
  sandbox.mutable_metadata()->set_uid(uid);
  sandbox.mutable_metadata()->set_namespace_(spec.namespace_);
  sandbox.mutable_metadata()->set_attempt(0);
  // A host-network pod keeps the node's hostname (and UTS namespace).
  if (!spec.host_network) sandbox.set_hostname(pod_name);
  sandbox.set_log_directory(
      absl::StrCat(node.pod_log_dir, "/", spec.namespace_, "_", pod_name, "_", uid));
  (*sandbox.mutable_labels())["io.kubernetes.pod.name"] = pod_name;
  (*sandbox.mutable_labels())["io.kubernetes.pod.namespace"] = spec.namespace_;
  (*sandbox.mutable_labels())["io.kubernetes.pod.uid"] = uid;
  for (const Port& p : spec.ports) {
    if (p.host_port == 0) continue;  // only host ports are the runtime's business
    runtime::v1::PortMapping* m = sandbox.add_port_mappings();
    m->set_container_port(p.container_port);
    m->set_host_port(p.host_port);
  }
  runtime::v1::NamespaceOption namespaces;
  namespaces.set_network(spec.host_network ? runtime::v1::NODE : runtime::v1::POD);
  namespaces.set_pid(spec.host_pid ? runtime::v1::NODE : runtime::v1::CONTAINER);
  namespaces.set_ipc(runtime::v1::POD);
  runtime::v1::LinuxPodSandboxConfig* linux = sandbox.mutable_linux();
  linux->set_cgroup_parent(absl::StrCat(node.cgroup_parent, "/pod", uid));
  *linux->mutable_security_context()->mutable_namespace_options() = namespaces;
  // The sandbox is privileged when one of its containers is.
  linux->mutable_security_context()->set_privileged(spec.privileged);
  linux->mutable_security_context()->mutable_seccomp()->set_profile_type(
      runtime::v1::SecurityProfile::Unconfined);

  // The node side: the pod's directory, its emptyDirs, its hosts file and
  // the container's termination log.
  if (absl::Status s = MkdirAll(pod.pod_dir, 0750); !s.ok()) return s;
  // A refusal below takes the pod's directory back (hostPaths it made stay,
  // as the kubelet leaves them).
  bool prepared = false;
  absl::Cleanup unprepare = [&] {
    std::error_code ec;
    if (!prepared) std::filesystem::remove_all(pod.pod_dir, ec);
  };
  for (const auto& [name, v] : spec.volumes) {
    if (!v.host_path.empty()) {
      if (absl::Status s = CheckHostPath(v); !s.ok()) return s;
      pod.volume_paths[name] = v.host_path;
      continue;
    }
    std::string dir = absl::StrCat(pod.pod_dir, "/volumes/kubernetes.io~empty-dir/", name);
    if (absl::Status s = MkdirAll(dir, 0777); !s.ok()) return s;
    pod.volume_paths[name] = dir;
  }
  std::string hosts = pod.pod_dir + "/etc-hosts";
  std::string hosts_text =
      "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost\n";
  if (spec.host_network) {
    hosts_text = "# Kubernetes-managed hosts file (host network).\n" + ReadFile("/etc/hosts");
  }
  if (absl::Status s = WriteFile(hosts, hosts_text); !s.ok()) return s;
  std::string termination_dir = absl::StrCat(pod.pod_dir, "/containers/", spec.container);
  if (absl::Status s = MkdirAll(termination_dir, 0750); !s.ok()) return s;
  std::string termination_log = termination_dir + "/" + uid.substr(0, 8);
  if (absl::Status s = WriteFile(termination_log, ""); !s.ok()) return s;

  // The container.
  runtime::v1::ContainerConfig& c = pod.container;
  c.mutable_metadata()->set_name(spec.container);
  c.mutable_metadata()->set_attempt(0);
  c.mutable_image()->set_image(spec.image);
  for (const std::string& a : spec.command) c.add_command(a);
  for (const std::string& a : spec.args) c.add_args(a);
  for (const auto& [k, v] : spec.env) {
    runtime::v1::KeyValue* kv = c.add_envs();
    kv->set_key(k);
    kv->set_value(v);
  }
  for (const VolumeMount& m : spec.mounts) {
    runtime::v1::Mount* mount = c.add_mounts();
    mount->set_container_path(m.mount_path);
    mount->set_host_path(pod.volume_paths.at(m.name));
    mount->set_readonly(m.read_only);
    mount->set_propagation(Propagation(m.propagation));
  }
  runtime::v1::Mount* hosts_mount = c.add_mounts();
  hosts_mount->set_container_path("/etc/hosts");
  hosts_mount->set_host_path(hosts);
  runtime::v1::Mount* termination = c.add_mounts();
  termination->set_container_path("/dev/termination-log");
  termination->set_host_path(termination_log);
  if (!spec.emulated_kernel.empty()) {
    // Not the kubelet's: the test runs the image's entrypoint (/lustre-csi,
    // deploy/Containerfile) behind its older-kernel wrapper, mounted in.
    // Seccomp profiles do not apply to privileged containers, so a profile
    // could not do this.
    c.clear_command();
    c.add_command("/older-kernel");
    c.add_command(spec.emulated_kernel);
    if (spec.command.empty()) c.add_command("/lustre-csi");
    for (const std::string& a : spec.command) c.add_command(a);
    runtime::v1::Mount* wrapper = c.add_mounts();
    wrapper->set_container_path("/older-kernel");
    wrapper->set_host_path(node.older_kernel);
    wrapper->set_readonly(true);
  }
  pod.log_path = absl::StrCat(sandbox.log_directory(), "/", spec.container, "/0.log");
  c.set_log_path(absl::StrCat(spec.container, "/0.log"));
  (*c.mutable_labels())["io.kubernetes.container.name"] = spec.container;
  (*c.mutable_labels())["io.kubernetes.pod.name"] = pod_name;
  (*c.mutable_labels())["io.kubernetes.pod.namespace"] = spec.namespace_;
  (*c.mutable_labels())["io.kubernetes.pod.uid"] = uid;
  (*c.mutable_annotations())["io.kubernetes.container.terminationMessagePath"] =
      "/dev/termination-log";
  runtime::v1::LinuxContainerSecurityContext* sc = c.mutable_linux()->mutable_security_context();
  sc->set_privileged(spec.privileged);
  *sc->mutable_namespace_options() = namespaces;
  sc->mutable_seccomp()->set_profile_type(runtime::v1::SecurityProfile::Unconfined);
  if (!spec.privileged) {
    for (const char* p : kMaskedPaths) sc->add_masked_paths(p);
    for (const char* p : kReadonlyPaths) sc->add_readonly_paths(p);
  }
  prepared = true;
  return pod;
}

}  // namespace lustre_csi::e2e
