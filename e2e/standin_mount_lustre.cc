// A stand-in for the host's Lustre client helper, installed as
// /sbin/mount.lustre on a test host that has no Lustre. It takes the helper's
// command line (`mount.lustre [-fhnvV] [-o <opts>] <device> <mountpt>`),
// checks it the way the real helper and kernel would, and exits with an errno
// as the real one does:
//   - `lustre` must be listed in /proc/filesystems (else ENODEV: no module);
//   - <device> is <nid>[,<nid>...][:<nid>...]:/<fsname>[/<sub-dir>], each NID
//     <address>@<net> (else EINVAL); fsname 1-8 of [A-Za-z0-9_-];
//   - the target must be an existing directory (else its errno);
//   - options are the mount flags the kernel knows and Lustre client options
//     (else EINVAL);
//   - a file system exists when /run/lustre-standin/servers/<fsname> does
//     (else ENOENT). Its contents live on a tmpfs mounted there on first use,
//     named "<nids>:/<fsname>" like a Lustre client mount;
//   - the sub-dir is looked up one component at a time without following
//     any symlink, as a Lustre server resolves a fileset: a missing
//     component is ENOENT, a symlink or anything else that is no directory
//     ENOTDIR.
// The mount itself is a bind of <server>/<sub-dir> (the directory the
// lookup opened) with the per-mount flags,
// so the mount table shows the file system's name as the source and the
// sub-dir as the root, as a Lustre fileset mount reads.
// Each client mount gets the devices a Lustre client has, one metadata and
// one object storage target, with the connection state a client shows in
// /proc/fs/lustre/{mdc,osc}/<device>/import, under
// /run/lustre-standin/params: <fsname>-MDT0000-mdc-<instance> and
// <fsname>-OST0000-osc-<instance>, the instance 16 hex digits of the mount
// point, "state: FULL" (tests rewrite it; nothing removes them).
// Every invocation is appended to /run/lustre-standin/calls.log. A file
// /run/lustre-standin/fail holding an errno makes every mount fail with it;
// /run/lustre-standin/delay_ms makes every mount take that long.
#include <fcntl.h>
#include <getopt.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr char kState[] = "/run/lustre-standin";

std::vector<std::string> Split(const std::string& s, const std::string& seps) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (seps.find(c) != std::string::npos) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Fail(int err, const std::string& what) {
  fprintf(stderr, "mount.lustre: %s: %s\n", what.c_str(), strerror(err));
  return err;
}

bool ValidNid(const std::string& nid) {
  size_t at = nid.find('@');
  if (at == 0 || at == std::string::npos || at + 1 >= nid.size()) return false;
  for (size_t i = 0; i < at; ++i) {
    char c = nid[i];
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') return false;
  }
  std::string net = nid.substr(at + 1);
  size_t letters = 0;
  while (letters < net.size() && islower(static_cast<unsigned char>(net[letters]))) ++letters;
  if (letters == 0) return false;
  for (size_t i = letters; i < net.size(); ++i) {
    if (!isdigit(static_cast<unsigned char>(net[i]))) return false;
  }
  return true;
}

bool IsMountPoint(const std::string& path) {
  struct stat self, parent;
  if (stat(path.c_str(), &self) != 0) return false;
  if (stat((path + "/..").c_str(), &parent) != 0) return false;
  return self.st_dev != parent.st_dev;
}

// mkdir -p.
void MakeDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    mkdir(path.substr(0, slash).c_str(), 0755);
  }
  mkdir(path.c_str(), 0755);
}

// The client devices of a mount at `target` and their import files.
void WriteImports(const std::string& fsname, const std::string& target) {
  char instance[17];
  snprintf(instance, sizeof(instance), "%016zx", std::hash<std::string>()(target));
  const std::string params = std::string(kState) + "/params/proc/fs/lustre";
  for (const auto& [kind, index] : {std::pair<std::string, std::string>{"mdc", "MDT0000"},
                                    std::pair<std::string, std::string>{"osc", "OST0000"}}) {
    std::string device = fsname + "-" + index + "-" + kind + "-" + instance;
    std::string dir = params + "/" + kind + "/" + device;
    MakeDirs(dir);
    std::ofstream out(dir + "/import");
    out << "import:\n    name: " << device << "\n    target: " << fsname << "-" << index
        << "_UUID\n    state: FULL\n    connect_flags: [ write_grant ]\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  mkdir(kState, 0755);
  {
    std::string line;
    for (int i = 0; i < argc; ++i) line += (i ? " " : "") + std::string(argv[i]);
    std::ofstream log(std::string(kState) + "/calls.log", std::ios::app);
    log << line << "\n";
  }
  std::string options;
  int opt;
  while ((opt = getopt(argc, argv, "fhno:vV")) != -1) {
    switch (opt) {
      case 'V':
        printf("mount.lustre 2.15.0 (lustre-csi stand-in)\n");
        return 0;
      case 'o':
        options = optarg;
        break;
      case 'f':
      case 'n':
      case 'v':
        break;
      default:
        fprintf(stderr, "usage: mount.lustre [-fhnvV] [-o <mntopt>] <device> <mountpt>\n");
        return EINVAL;
    }
  }
  if (argc - optind != 2) {
    fprintf(stderr, "mount.lustre: too few arguments\n");
    return EINVAL;
  }
  std::string device = argv[optind];
  std::string target = argv[optind + 1];

  std::string filesystems = ReadAll("/proc/filesystems");
  if (filesystems.find("\tlustre\n") == std::string::npos) {
    Fail(ENODEV, "mount " + device + " at " + target + " failed");
    fprintf(stderr, "Are the lustre modules loaded?\n");
    return ENODEV;
  }
  std::string failure = ReadAll(std::string(kState) + "/fail");
  if (!failure.empty()) return Fail(atoi(failure.c_str()), "mount " + device + " failed");
  // As long as a real client mount takes, when asked (benchmarks).
  std::string delay = ReadAll(std::string(kState) + "/delay_ms");
  if (!delay.empty()) usleep(static_cast<useconds_t>(atoi(delay.c_str())) * 1000);

  size_t sep = device.find(":/");
  if (sep == std::string::npos) return Fail(EINVAL, "not a client device: " + device);
  for (const std::string& nid : Split(device.substr(0, sep), ",:")) {
    if (!ValidNid(nid)) return Fail(EINVAL, "Can't parse NID '" + nid + "'");
  }
  std::string path = device.substr(sep + 2);
  std::string fsname = path.substr(0, path.find('/'));
  std::string sub = path.size() > fsname.size() ? path.substr(fsname.size() + 1) : "";
  if (fsname.empty() || fsname.size() > 8) return Fail(EINVAL, "bad fsname '" + fsname + "'");
  for (char c : fsname) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return Fail(EINVAL, "bad fsname '" + fsname + "'");
    }
  }
  for (const std::string& part : Split(sub, "/")) {
    if (!sub.empty() && (part.empty() || part == "." || part == "..")) {
      return Fail(EINVAL, "bad sub-dir '" + sub + "'");
    }
  }

  struct stat st;
  if (stat(target.c_str(), &st) != 0) return Fail(errno, target + " inaccessible");
  if (!S_ISDIR(st.st_mode)) return Fail(ENOTDIR, target);

  unsigned long flags = 0;
  const struct {
    const char* name;
    unsigned long flag;
  } kFlags[] = {{"ro", MS_RDONLY},         {"nosuid", MS_NOSUID},   {"nodev", MS_NODEV},
                {"noexec", MS_NOEXEC},     {"noatime", MS_NOATIME}, {"nodiratime", MS_NODIRATIME},
                {"relatime", MS_RELATIME}, {"sync", MS_SYNCHRONOUS}};
  const char* kLustreOptions[] = {"rw",         "flock",        "localflock",    "noflock",
                                  "user_xattr", "nouser_xattr", "acl",           "noacl",
                                  "lazystatfs", "nolazystatfs", "user_fid2path", "defaults",
                                  "_netdev",    "atime",        "diratime",      "strictatime"};
  if (!options.empty()) {
    for (const std::string& o : Split(options, ",")) {
      bool known = false;
      for (const auto& f : kFlags) {
        if (o == f.name) {
          flags |= f.flag;
          known = true;
        }
      }
      for (const char* l : kLustreOptions) known = known || o == l;
      known = known || o.rfind("retry=", 0) == 0 || o.rfind("mgssec=", 0) == 0;
      if (!known) return Fail(EINVAL, "unknown mount option '" + o + "'");
    }
  }

  std::string server = std::string(kState) + "/servers/" + fsname;
  if (stat(server.c_str(), &st) != 0) {
    Fail(ENOENT, "mount " + device + " at " + target + " failed");
    fprintf(stderr, "Is the filesystem name correct?\n");
    return ENOENT;
  }
  int lock = open((std::string(kState) + "/lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) return Fail(errno, "lock");
  if (!IsMountPoint(server)) {
    std::string name = device.substr(0, sep) + ":/" + fsname;
    if (mount(name.c_str(), server.c_str(), "tmpfs", 0, "mode=0755") != 0) {
      return Fail(errno, "starting file system " + fsname);
    }
  }
  close(lock);
  // The lookup, as the server's: one component at a time, no symlink.
  int dir = open(server.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return Fail(errno, "mount " + device + " at " + target + " failed");
  for (const std::string& part : sub.empty() ? std::vector<std::string>{} : Split(sub, "/")) {
    int next = openat(dir, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    if (next >= 0 && (fstat(next, &st) != 0 || !S_ISDIR(st.st_mode))) {
      close(next);
      next = -1;
      err = ENOTDIR;
    }
    close(dir);
    if (next < 0) return Fail(err, "mount " + device + " at " + target + " failed");
    dir = next;
  }
  std::string source = "/proc/self/fd/" + std::to_string(dir);
  if (mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Fail(errno, "mount " + device + " at " + target + " failed");
  }
  close(dir);
  if (flags != 0 &&
      mount(nullptr, target.c_str(), nullptr, MS_REMOUNT | MS_BIND | flags, nullptr) != 0) {
    int err = errno;
    umount2(target.c_str(), MNT_DETACH);
    return Fail(err, "remount " + target);
  }
  WriteImports(fsname, target);
  return 0;
}
