#include "e2e/pod_runtime.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/older_kernel_filter.h"

namespace lustre_csi::e2e {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

absl::Status MkdirAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("mkdir -p ", path, ": ", ec.message()));
  return absl::OkStatus();
}

// Fills $(VAR) from `env`, as the kubelet does for args; unknown ones stay.
std::string Expand(const std::string& arg, const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < arg.size();) {
    if (arg.compare(i, 2, "$(") == 0) {
      size_t end = arg.find(')', i);
      if (end != std::string::npos) {
        auto it = env.find(arg.substr(i + 2, end - i - 2));
        if (it != env.end()) {
          out += it->second;
          i = end + 1;
          continue;
        }
      }
    }
    out += arg[i++];
  }
  return out;
}

// Child side of Container::Start: lays out the root and execs the entrypoint.
// Returns only on failure, with a message.
std::string SetUpAndExec(const PodSpec& spec, const std::string& rootfs,
                         const std::map<std::string, std::string>& volume_paths, int log_fd) {
  if (mount(nullptr, rootfs.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) return "private rootfs";
  for (const VolumeMount& m : spec.mounts) {
    std::string dst = rootfs + m.mount_path;
    if (!MkdirAll(dst).ok()) return "mkdir " + dst;
    const std::string& src = volume_paths.at(m.name);
    if (mount(src.c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return "bind " + src + " at " + dst + ": " + strerror(errno);
    }
    unsigned long propagation = MS_REC | MS_PRIVATE;
    if (m.propagation == "Bidirectional") propagation = MS_REC | MS_SHARED;
    if (m.propagation == "HostToContainer") propagation = MS_REC | MS_SLAVE;
    if (mount(nullptr, dst.c_str(), nullptr, propagation, nullptr) != 0) return "propagation";
    if (m.read_only &&
        mount(nullptr, dst.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      return "read-only " + dst;
    }
  }
  std::string proc = rootfs + "/proc";
  if (!MkdirAll(proc).ok() || mount("proc", proc.c_str(), "proc", 0, nullptr) != 0) {
    return std::string("mount /proc: ") + strerror(errno);
  }
  // A minimal /dev, unless the pod binds one (as Nomad binds the host's).
  bool dev_volume = false;
  for (const VolumeMount& m : spec.mounts) dev_volume = dev_volume || m.mount_path == "/dev";
  std::string dev = rootfs + "/dev";
  if (!dev_volume &&
      (!MkdirAll(dev).ok() || mount("dev", dev.c_str(), "tmpfs", 0, "mode=0755") != 0)) {
    return "mount /dev";
  }
  for (const char* d : {"null", "zero", "random", "urandom"}) {
    if (dev_volume) break;
    std::string node = dev + "/" + d;
    int fd = open(node.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) close(fd);
    if (mount((std::string("/dev/") + d).c_str(), node.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return "bind /dev/" + std::string(d);
    }
  }
  // As runc does: the container's root becomes its namespace's root
  // (pivot_root, not chroot), so entering its own mount namespace again
  // leads back into the container, never to the host. pivot_root needs the
  // old root's mount not to be shared.
  if (mount(nullptr, "/", nullptr, MS_PRIVATE, nullptr) != 0) return "private /";
  int old_root = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (old_root < 0) return "open old root";
  if (chdir(rootfs.c_str()) != 0) return "chdir rootfs";
  if (syscall(SYS_pivot_root, ".", ".") != 0) return std::string("pivot_root: ") + strerror(errno);
  // The old root's mounts must not take the host's with them: make them
  // slaves before detaching (as runc does). "." must be the old root, not
  // the new one, or the container's Bidirectional mounts would turn slaves.
  if (fchdir(old_root) != 0) return "fchdir old root";
  close(old_root);
  if (mount(nullptr, ".", nullptr, MS_SLAVE | MS_REC, nullptr) != 0) return "rslave old root";
  if (umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) return "detach old root";
  int null_fd = open("/dev/null", O_RDONLY);
  dup2(null_fd, 0);
  dup2(log_fd, 1);
  dup2(log_fd, 2);
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  std::vector<std::string> argv = {"/lustre-csi"};
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> cargv, cenv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  if (!spec.emulated_kernel.empty()) {
    std::string filtered = InstallOlderKernelFilter(spec.emulated_kernel.c_str());
    if (!filtered.empty()) return filtered;
  }
  execve(cargv[0], cargv.data(), cenv.data());
  return std::string("exec /lustre-csi: ") + strerror(errno);
}

}  // namespace

absl::StatusOr<PodSpec> LoadPodSpec(const std::string& yaml, const std::string& kind,
                                    const std::string& name, const std::string& container,
                                    const std::string& node_name) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("manifest is not YAML: ", e.what()));
  }
  for (const YAML::Node& doc : docs) {
    if (!doc.IsMap() || doc["kind"].as<std::string>("") != kind ||
        doc["metadata"]["name"].as<std::string>("") != name) {
      continue;
    }
    PodSpec spec;
    spec.workload = kind + "/" + name;
    YAML::Node pod = kind == "Pod" ? doc["spec"] : doc["spec"]["template"]["spec"];
    spec.host_pid = pod["hostPID"].as<bool>(false);
    spec.host_network = pod["hostNetwork"].as<bool>(false);
    for (const YAML::Node& v : pod["volumes"]) {
      Volume vol;
      vol.name = v["name"].as<std::string>();
      if (v["hostPath"]) {
        vol.host_path = v["hostPath"]["path"].as<std::string>();
        vol.host_path_type = v["hostPath"]["type"].as<std::string>("");
      } else if (!v["emptyDir"]) {
        return absl::UnimplementedError("volume " + vol.name + " is neither hostPath nor emptyDir");
      }
      spec.volumes[vol.name] = vol;
    }
    for (const YAML::Node& c : pod["containers"]) {
      if (c["name"].as<std::string>("") != container) continue;
      spec.privileged = c["securityContext"]["privileged"].as<bool>(false);
      for (const YAML::Node& e : c["env"]) {
        std::string key = e["name"].as<std::string>();
        if (e["value"]) {
          spec.env[key] = e["value"].as<std::string>();
        } else if (e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>("") == "spec.nodeName") {
          spec.env[key] = node_name;
        }
      }
      for (const YAML::Node& a : c["args"])
        spec.args.push_back(Expand(a.as<std::string>(), spec.env));
      for (const YAML::Node& m : c["volumeMounts"]) {
        VolumeMount vm;
        vm.name = m["name"].as<std::string>();
        vm.mount_path = m["mountPath"].as<std::string>();
        vm.propagation = m["mountPropagation"].as<std::string>("None");
        vm.read_only = m["readOnly"].as<bool>(false);
        if (spec.volumes.count(vm.name) == 0) {
          return absl::InvalidArgumentError("volumeMount " + vm.name + " has no volume");
        }
        spec.mounts.push_back(vm);
      }
      return spec;
    }
    return absl::NotFoundError(absl::StrCat(kind, "/", name, " has no container ", container));
  }
  return absl::NotFoundError(absl::StrCat("no ", kind, "/", name, " in the manifest"));
}

absl::Status EnterHost(const std::string& scratch,
                       const std::map<std::string, std::string>& imports) {
  if (getpid() != 1) {
    return absl::FailedPreconditionError(
        "the pod-level e2e must be PID 1 of its own PID, mount and network namespaces; run it "
        "through e2e/pod_test.sh");
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Errno("rprivate /");
  std::string root = scratch + "/host";
  if (absl::Status s = MkdirAll(root); !s.ok()) return s;
  if (mount("host", root.c_str(), "tmpfs", 0, "mode=0755") != 0) return Errno("tmpfs host root");
  for (const char* d : {"proc", "dev", "run", "tmp", "sbin", "var/lib/kubelet", "oldroot"}) {
    if (absl::Status s = MkdirAll(root + "/" + d); !s.ok()) return s;
  }
  if (mount("/dev", (root + "/dev").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Errno("bind /dev");
  }
  for (const auto& [inside, outside] : imports) {
    std::string dst = root + inside;
    struct stat st;
    if (stat(outside.c_str(), &st) != 0) return Errno("stat " + outside);
    if (S_ISDIR(st.st_mode)) {
      if (absl::Status s = MkdirAll(dst); !s.ok()) return s;
    } else {
      if (absl::Status s = MkdirAll(std::filesystem::path(dst).parent_path()); !s.ok()) return s;
      std::ofstream(dst).close();
    }
    if (mount(outside.c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return Errno("bind " + outside);
    }
    mount(nullptr, dst.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr);
  }
  if (chdir(root.c_str()) != 0) return Errno("chdir host root");
  if (syscall(SYS_pivot_root, ".", "oldroot") != 0) return Errno("pivot_root");
  if (chdir("/") != 0) return Errno("chdir /");
  if (umount2("/oldroot", MNT_DETACH) != 0) return Errno("detach old root");
  rmdir("/oldroot");
  if (mount("proc", "/proc", "proc", 0, nullptr) != 0) return Errno("mount /proc");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SHARED, nullptr) != 0) return Errno("rshared /");
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr = {};
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) return Errno("loopback flags");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) return Errno("loopback up");
  close(fd);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Container>> Container::Start(const PodSpec& spec,
                                                            const std::string& image_root,
                                                            const std::string& name) {
  std::unique_ptr<Container> c(new Container());
  c->dir_ = "/run/containers/" + name;
  std::string rootfs = c->dir_ + "/rootfs";
  for (const char* d : {"upper", "work", "rootfs", "empty"}) {
    if (absl::Status s = MkdirAll(c->dir_ + "/" + d); !s.ok()) return s;
  }
  std::string options = absl::StrCat("lowerdir=", image_root, ",upperdir=", c->dir_,
                                     "/upper,workdir=", c->dir_, "/work");
  if (mount("overlay", rootfs.c_str(), "overlay", 0, options.c_str()) != 0) {
    return Errno("overlay root");
  }
  bool bidirectional = false;
  for (const VolumeMount& m : spec.mounts) {
    const Volume& v = spec.volumes.at(m.name);
    std::string path = v.host_path.empty() ? c->dir_ + "/empty/" + v.name : v.host_path;
    if (v.host_path_type == "Directory" && !std::filesystem::is_directory(path)) {
      return absl::FailedPreconditionError("hostPath " + path + " is not a directory");
    }
    if (absl::Status s = MkdirAll(path); !s.ok()) return s;
    c->volume_paths_[m.name] = path;
    bidirectional = bidirectional || m.propagation == "Bidirectional";
  }
  int log_fd = open(c->LogPath().c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
  int pids[2];
  if (log_fd < 0 || pipe2(pids, O_CLOEXEC) != 0) return Errno("log or pipe");
  pid_t runtime = fork();
  if (runtime < 0) return Errno("fork");
  if (runtime == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (unshare(CLONE_NEWNS | (spec.host_pid ? 0 : CLONE_NEWPID)) != 0) _exit(120);
    // A runtime keeps the container's mounts shared with the host only when
    // a volume asks for Bidirectional propagation.
    if (!bidirectional && mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) _exit(121);
    pid_t init = getpid();
    if (!spec.host_pid) {
      init = fork();
      if (init > 0) {
        if (write(pids[1], &init, sizeof(init)) != sizeof(init)) _exit(123);
        int status;
        waitpid(init, &status, 0);
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
      }
      if (init < 0) _exit(122);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
    } else if (write(pids[1], &init, sizeof(init)) != sizeof(init)) {
      _exit(123);
    }
    std::string error = SetUpAndExec(spec, rootfs, c->volume_paths_, log_fd);
    error = "container runtime: " + error + "\n";
    if (write(log_fd, error.data(), error.size()) < 0) _exit(125);
    _exit(126);
  }
  close(pids[1]);
  close(log_fd);
  pid_t init = -1;
  ssize_t n = read(pids[0], &init, sizeof(init));
  close(pids[0]);
  c->runtime_pid_ = runtime;
  c->container_pid_ = n == sizeof(init) ? init : runtime;
  return c;
}

bool Container::Running() {
  if (stopped_) return false;
  return kill(container_pid_, 0) == 0 && waitpid(runtime_pid_, nullptr, WNOHANG) == 0;
}

int Container::Stop(absl::Duration grace) {
  if (stopped_) return -1;
  stopped_ = true;
  kill(container_pid_, SIGTERM);
  int status = -1;
  absl::Time deadline = absl::Now() + grace;
  while (waitpid(runtime_pid_, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      kill(container_pid_, SIGKILL);
      kill(runtime_pid_, SIGKILL);
      waitpid(runtime_pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return status;
}

int Container::Kill() {
  if (stopped_) return -1;
  stopped_ = true;
  kill(container_pid_, SIGKILL);
  int status = -1;
  waitpid(runtime_pid_, &status, 0);
  return status;
}

Container::~Container() {
  Stop(absl::Seconds(10));
  umount2((dir_ + "/rootfs").c_str(), MNT_DETACH);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string Container::Log() const {
  std::ifstream in(LogPath());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Container::HostPathOf(const std::string& volume) const {
  auto it = volume_paths_.find(volume);
  return it == volume_paths_.end() ? "" : it->second;
}

}  // namespace lustre_csi::e2e
