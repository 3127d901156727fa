#include "e2e/cri_runtime.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace lustre_csi::e2e {
namespace {

constexpr char kSocket[] = "/run/containerd/containerd.sock";
constexpr char kConfig[] = "/etc/containerd/config.toml";
constexpr char kLog[] = "/var/log/containerd.log";
constexpr absl::Duration kCallTimeout = absl::Seconds(60);

std::string RandomHex(size_t n) {
  static std::mt19937_64 rng(std::random_device{}());
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) out += kHex[rng() % 16];
  return out;
}

// A pod uid as the API server writes them (a version-4 style UUID).
std::string NewUid() {
  std::string h = RandomHex(32);
  return absl::StrCat(h.substr(0, 8), "-", h.substr(8, 4), "-", h.substr(12, 4), "-",
                      h.substr(16, 4), "-", h.substr(20, 12));
}

absl::Status FromGrpc(const std::string& what, const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

// One CRI call with a deadline; its failure says which call.
template <typename Stub, typename Req, typename Res>
absl::Status Call(Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Res*),
                  const char* what, const Req& req, Res* res,
                  absl::Duration timeout = kCallTimeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return FromGrpc(what, (stub.*method)(&ctx, req, res));
}

using runtime::v1::RuntimeService;

// Stops and removes a pod sandbox, as the kubelet does once its containers
// are gone.
void RemovePod(RuntimeService::Stub& runtime, const std::string& id) {
  runtime::v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(id);
  runtime::v1::StopPodSandboxResponse stopped;
  Call(runtime, &RuntimeService::Stub::StopPodSandbox, "StopPodSandbox", stop, &stopped)
      .IgnoreError();
  runtime::v1::RemovePodSandboxRequest remove;
  remove.set_pod_sandbox_id(id);
  runtime::v1::RemovePodSandboxResponse removed;
  Call(runtime, &RuntimeService::Stub::RemovePodSandbox, "RemovePodSandbox", remove, &removed)
      .IgnoreError();
}

// Whether the CRI knows `image`. Its image list follows containerd's image
// events, so an import shows there a moment after ctr returns: wait up to
// `patience` for it.
absl::StatusOr<bool> ImagePresent(runtime::v1::ImageService::Stub& images, const std::string& image,
                                  absl::Duration patience) {
  runtime::v1::ImageStatusRequest req;
  req.mutable_image()->set_image(image);
  absl::Status status;
  bool present = false;
  WaitUntil(
      [&] {
        runtime::v1::ImageStatusResponse res;
        status =
            Call(images, &runtime::v1::ImageService::Stub::ImageStatus, "ImageStatus", req, &res);
        present = status.ok() && res.has_image();
        return present || !status.ok();
      },
      patience);
  if (!status.ok()) return status;
  return present;
}

// Removes the cgroup `relative` (and what is beneath it) from the unified
// hierarchy (cgroup v2: /sys/fs/cgroup itself) and from every hierarchy
// under /sys/fs/cgroup (v1, or v2's unified/ of a hybrid); says which could
// not be removed.
std::vector<std::string> RemoveCgroups(const std::string& relative) {
  std::vector<std::string> left;
  std::error_code ec;
  std::vector<std::string> hierarchies = {"/sys/fs/cgroup"};
  for (const auto& entry : std::filesystem::directory_iterator("/sys/fs/cgroup", ec)) {
    if (entry.is_directory(ec)) hierarchies.push_back(entry.path().string());
  }
  for (const std::string& hierarchy : hierarchies) {
    std::string top = hierarchy + relative;
    if (!std::filesystem::is_directory(top)) continue;
    std::vector<std::string> dirs;
    for (auto it = std::filesystem::recursive_directory_iterator(top, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory()) dirs.push_back(it->path().string());
    }
    dirs.push_back(top);
    // Deepest first.
    std::sort(dirs.begin(), dirs.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const std::string& d : dirs) {
      if (rmdir(d.c_str()) != 0 && errno != ENOENT) left.push_back(d);
    }
  }
  return left;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Containerd>> Containerd::Start(const ContainerdOptions& options) {
  std::unique_ptr<Containerd> c(new Containerd());
  c->options_ = options;
  c->node_.cgroup_parent = options.cgroup_parent;
  c->node_.older_kernel = options.older_kernel;
  for (const char* d : {"/etc/containerd", "/etc/cni/net.d", "/var/lib/containerd",
                        "/run/containerd", "/var/log/pods"}) {
    std::filesystem::create_directories(d);
  }
  // The CRI plugin as a node runs it, on this machine: no AppArmor, and
  // runc may only raise oom_score_adj (the machine withholds
  // CAP_SYS_RESOURCE).
  std::string config = absl::StrCat(
      "version = 2\n"
      "root = \"/var/lib/containerd\"\n"
      "state = \"/run/containerd\"\n"
      "[grpc]\n"
      "  address = \"",
      kSocket,
      "\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
      "  sandbox_image = \"",
      options.sandbox_image,
      "\"\n"
      "  restrict_oom_score_adj = true\n"
      "  disable_apparmor = true\n"
      "  [plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
      "    bin_dir = \"/usr/lib/cni\"\n"
      "    conf_dir = \"/etc/cni/net.d\"\n");
  if (absl::Status s = WriteFile(kConfig, config); !s.ok()) return s;
  // Pods off the host network get an address on a bridge of the synthetic
  // host (whose network namespace is the test's own).
  if (absl::Status s = WriteFile("/etc/cni/net.d/10-pods.conflist", R"({
  "cniVersion": "1.0.0",
  "name": "pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.88.0.0/16"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
)");
      !s.ok()) {
    return s;
  }
  c->daemon_ = std::make_unique<Subprocess>(
      std::vector<std::string>{"/usr/bin/containerd", "--config", kConfig}, kLog);
  absl::Status up = WaitForSocket(kSocket, absl::Seconds(30));
  if (!up.ok()) return absl::UnavailableError(absl::StrCat(up.message(), "\n", c->Log()));
  std::shared_ptr<grpc::Channel> channel = UnixChannel(kSocket);
  c->runtime_ = runtime::v1::RuntimeService::NewStub(channel);
  c->images_ = runtime::v1::ImageService::NewStub(channel);
  absl::Status version;
  WaitUntil([&] {
    runtime::v1::VersionRequest req;
    runtime::v1::VersionResponse res;
    version = Call(*c->runtime_, &RuntimeService::Stub::Version, "CRI Version", req, &res,
                   absl::Seconds(5));
    return version.ok();
  });
  if (!version.ok()) return absl::UnavailableError(absl::StrCat(version.message(), "\n", c->Log()));
  // As an operator loads an image on a node (docs/deploy.md).
  for (const std::string& archive : options.archives) {
    Subprocess import(
        {"/usr/bin/ctr", "--address", kSocket, "-n", "k8s.io", "images", "import", archive},
        "/var/log/ctr-import.log");
    if (import.Wait(absl::Minutes(2)) != 0) {
      return absl::InternalError(absl::StrCat("ctr -n k8s.io images import ", archive,
                                              " failed: ", ReadFile("/var/log/ctr-import.log")));
    }
  }
  absl::StatusOr<bool> sandbox =
      ImagePresent(*c->images_, options.sandbox_image, absl::Seconds(30));
  if (!sandbox.ok()) return sandbox.status();
  if (!*sandbox) {
    return absl::FailedPreconditionError("the sandbox image " + options.sandbox_image +
                                         " is not there after its import");
  }
  return c;
}

std::string Containerd::Log() const { return ReadFile(kLog); }

absl::Status Containerd::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  std::vector<std::string> problems;
  // Pods a test left (it should not have): stop and remove them. (Start
  // may have failed before the CRI was reached, or before containerd ran.)
  runtime::v1::ListPodSandboxResponse pods;
  if (runtime_ != nullptr) {
    runtime::v1::ListPodSandboxRequest list;
    if (absl::Status s =
            Call(*runtime_, &RuntimeService::Stub::ListPodSandbox, "ListPodSandbox", list, &pods);
        !s.ok()) {
      problems.push_back(std::string(s.message()));
    }
  }
  for (const runtime::v1::PodSandbox& pod : pods.items()) {
    problems.push_back("pod " + pod.metadata().name() + " was left behind");
    RemovePod(*runtime_, pod.id());
  }
  if (daemon_ == nullptr) return absl::OkStatus();
  daemon_->Signal(SIGTERM);
  if (daemon_->Wait(absl::Seconds(20)) == -1) {
    problems.push_back("containerd did not stop on SIGTERM");
    daemon_->Signal(SIGKILL);
    daemon_->Wait(absl::Seconds(10));
  }
  // Shims are reparented to this process (PID 1 here), which reaps them. A
  // shim still alive a while after every pod is gone is a leak.
  std::vector<pid_t> shims;
  WaitUntil(
      [&] {
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        shims = ProcessesMentioning("containerd-shim");
        return shims.empty();
      },
      absl::Seconds(5));
  for (pid_t shim : shims) {
    problems.push_back(absl::StrCat("a shim (pid ", shim, ") was left running"));
    kill(shim, SIGKILL);
  }
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  for (const char* dir : {"/run/containerd", "/var/lib/containerd"}) {
    for (const std::string& m : MountsUnder(dir)) {
      problems.push_back("mount left at " + m);
      umount2(m.c_str(), MNT_DETACH);
    }
  }
  for (const std::string& cgroup : RemoveCgroups(options_.cgroup_parent)) {
    problems.push_back("cgroup left: " + cgroup);
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrJoin(problems, "; "));
}

Containerd::~Containerd() {
  if (!stopped_) Stop().IgnoreError();
}

absl::StatusOr<std::unique_ptr<Container>> Container::Start(Containerd* runtime,
                                                            const PodSpec& spec) {
  std::unique_ptr<Container> c(new Container());
  c->runtime_ = runtime;
  // A Pod keeps its name; a workload's pod gets a suffix, as a DaemonSet's
  // or a Deployment's does.
  std::string suffix = spec.workload.rfind("Pod/", 0) == 0 ? "" : "-" + RandomHex(5);
  absl::StatusOr<CriPod> pod = TranslatePod(spec, runtime->node(), NewUid(), suffix);
  if (!pod.ok()) return pod.status();
  c->pod_ = *pod;

  // imagePullPolicy IfNotPresent: the image must be on the node already.
  absl::StatusOr<bool> present = ImagePresent(runtime->images(), spec.image, absl::Seconds(10));
  if (!present.ok()) return present.status();
  if (!*present) {
    return absl::FailedPreconditionError("image " + spec.image +
                                         " is not on the node (nothing here pulls it)");
  }
  RuntimeService::Stub& cri = runtime->runtime();
  runtime::v1::RunPodSandboxRequest run;
  *run.mutable_config() = c->pod_.sandbox;
  runtime::v1::RunPodSandboxResponse ran;
  if (absl::Status s = Call(cri, &RuntimeService::Stub::RunPodSandbox, "RunPodSandbox", run, &ran);
      !s.ok()) {
    return s;
  }
  c->sandbox_id_ = ran.pod_sandbox_id();
  runtime::v1::CreateContainerRequest create;
  create.set_pod_sandbox_id(c->sandbox_id_);
  *create.mutable_config() = c->pod_.container;
  *create.mutable_sandbox_config() = c->pod_.sandbox;
  runtime::v1::CreateContainerResponse created;
  if (absl::Status s =
          Call(cri, &RuntimeService::Stub::CreateContainer, "CreateContainer", create, &created);
      !s.ok()) {
    return s;
  }
  c->container_id_ = created.container_id();
  runtime::v1::StartContainerRequest start;
  start.set_container_id(c->container_id_);
  runtime::v1::StartContainerResponse started;
  if (absl::Status s =
          Call(cri, &RuntimeService::Stub::StartContainer, "StartContainer", start, &started);
      !s.ok()) {
    return s;
  }
  return c;
}

// The container's status; state CONTAINER_UNKNOWN when the runtime cannot
// say.
runtime::v1::ContainerStatus Container::Status() {
  runtime::v1::ContainerStatusRequest req;
  req.set_container_id(container_id_);
  runtime::v1::ContainerStatusResponse res;
  if (!Call(runtime_->runtime(), &RuntimeService::Stub::ContainerStatus, "ContainerStatus", req,
            &res)
           .ok()) {
    res.mutable_status()->set_state(runtime::v1::CONTAINER_UNKNOWN);
  }
  return res.status();
}

int Container::StopWith(int64_t timeout_seconds) {
  if (stopped_ || container_id_.empty()) return exit_code_;
  stopped_ = true;
  runtime::v1::StopContainerRequest stop;
  stop.set_container_id(container_id_);
  stop.set_timeout(timeout_seconds);
  runtime::v1::StopContainerResponse stopped;
  Call(runtime_->runtime(), &RuntimeService::Stub::StopContainer, "StopContainer", stop, &stopped,
       absl::Seconds(timeout_seconds) + kCallTimeout)
      .IgnoreError();
  runtime::v1::ContainerStatus status = Status();
  if (status.state() == runtime::v1::CONTAINER_EXITED) exit_code_ = status.exit_code();
  return exit_code_;
}

int Container::Stop(absl::Duration grace) {
  return StopWith(std::max<int64_t>(1, absl::ToInt64Seconds(grace)));
}

int Container::Kill() { return StopWith(0); }

std::string Container::PodIp() {
  runtime::v1::PodSandboxStatusRequest req;
  req.set_pod_sandbox_id(sandbox_id_);
  runtime::v1::PodSandboxStatusResponse res;
  if (!Call(runtime_->runtime(), &RuntimeService::Stub::PodSandboxStatus, "PodSandboxStatus", req,
            &res)
           .ok()) {
    return "";
  }
  return res.status().network().ip();
}

Container::~Container() {
  StopWith(10);
  // As the kubelet removes a pod: the container, the sandbox, then the
  // pod's directory and logs (once nothing is mounted in them).
  if (!container_id_.empty()) {
    runtime::v1::RemoveContainerRequest remove;
    remove.set_container_id(container_id_);
    runtime::v1::RemoveContainerResponse removed;
    Call(runtime_->runtime(), &RuntimeService::Stub::RemoveContainer, "RemoveContainer", remove,
         &removed)
        .IgnoreError();
  }
  if (!sandbox_id_.empty()) RemovePod(runtime_->runtime(), sandbox_id_);
  std::error_code ec;
  if (!pod_.pod_dir.empty() && MountsUnder(pod_.pod_dir).empty()) {
    std::filesystem::remove_all(pod_.pod_dir, ec);
  }
  if (!pod_.sandbox.log_directory().empty()) {
    std::filesystem::remove_all(pod_.sandbox.log_directory(), ec);
  }
}

std::string Container::Log() const {
  // Each line: <time> <stream> <P|F> <text>; P is a part of a longer line.
  std::string out;
  for (absl::string_view line : absl::StrSplit(ReadFile(pod_.log_path), '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(' ', 3));
    if (fields.size() < 4) continue;
    out.append(fields[3].data(), fields[3].size());
    if (fields[2] != "P") out += '\n';
  }
  return out;
}

std::string Container::HostPathOf(const std::string& volume) const {
  auto it = pod_.volume_paths.find(volume);
  return it == pod_.volume_paths.end() ? "" : it->second;
}

}  // namespace lustre_csi::e2e
