#include "e2e/synthetic_host.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "e2e/e2e_util.h"

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

}  // namespace

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
  for (const char* d : {"proc", "dev", "run", "tmp", "sys", "etc", "usr", "var/lib/kubelet",
                        "var/log", ".usr-layer/upper", ".usr-layer/work", "oldroot"}) {
    if (absl::Status s = MkdirAll(root + "/" + d); !s.ok()) return s;
  }
  chmod((root + "/tmp").c_str(), 01777);
  for (const auto& [link, target] : std::map<std::string, std::string>{{"bin", "usr/bin"},
                                                                       {"sbin", "usr/sbin"},
                                                                       {"lib", "usr/lib"},
                                                                       {"lib64", "usr/lib64"},
                                                                       {"var/run", "../run"}}) {
    if (symlink(target.c_str(), (root + "/" + link).c_str()) != 0) return Errno("symlink " + link);
  }
  std::string usr_options = absl::StrCat("lowerdir=/usr,upperdir=", root,
                                         "/.usr-layer/upper,workdir=", root, "/.usr-layer/work");
  if (mount("host-usr", (root + "/usr").c_str(), "overlay", 0, usr_options.c_str()) != 0) {
    return Errno("overlay /usr");
  }
  if (mount("/dev", (root + "/dev").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Errno("bind /dev");
  }
  // A sysfs of this network namespace, and the machine's cgroup hierarchies
  // (the runtime puts its containers in a parent of the test's own, which
  // e2e/pod_test.sh checks is gone afterwards).
  if (mount("sysfs", (root + "/sys").c_str(), "sysfs", 0, nullptr) != 0) return Errno("sysfs");
  if (mount("/sys/fs/cgroup", (root + "/sys/fs/cgroup").c_str(), nullptr, MS_BIND | MS_REC,
            nullptr) != 0) {
    return Errno("bind /sys/fs/cgroup");
  }
  if (absl::Status s = WriteFile(root + "/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost\n");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteFile(root + "/etc/resolv.conf", "nameserver 127.0.0.1\n"); !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteFile(root + "/etc/hostname", "node-1\n"); !s.ok()) return s;
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

}  // namespace lustre_csi::e2e
