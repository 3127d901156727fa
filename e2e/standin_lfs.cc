// A stand-in for the host's Lustre user tool `lfs`, for test hosts without
// Lustre: the sub-commands the driver uses, with the real command lines,
// refusals and messages (exit status 1 with strerror's words, 4 for a usage
// error), keeping what they set in files instead of on Lustre servers.
//
//   lfs project [-d] [-r] [-s] [-p ID] [-C [-k]] PATH...
//       set the project ID (0 to 4294967294) and/or the inherit flag of PATH
//       and, unless -d, of its direct children (-r: the whole tree); clear
//       with -C; without -p/-s/-C list them ("%5u %c %s").
//   lfs setquota -p ID [-b N] [-B N] [-i N] [-I N] PATH
//       block limits in KiB unless suffixed (k, M, G, T), inode counts; ID 0
//       is refused; at least one limit.
//   lfs setstripe [-c COUNT] [-S SIZE] [-p POOL] DIR
//       COUNT -1..2000, SIZE a multiple of 64 KiB below 4 GiB (below 4096:
//       KiB), POOL must exist.
//   lfs --version
//
// A path is on a "Lustre" file system when its mount's source in
// /proc/self/mountinfo reads "<nids>:/<fsname>" (as the stand-in clients'
// mounts do); a file is known by device and inode. State lives in
// <dir of argv[0]>/lfs-state:
//   calls.log        every command line
//   projects         "<dev>:<ino> <id> <inherit 0|1>"
//   quotas           "<fsname> <id> <block-hard-kib> <inode-hard>"
//   layouts          "<dev>:<ino> <count> <size> <pool>"
// and the servers' side, written by tests:
//   no-project-quota fs names whose targets lack the project feature (project
//                    IDs other than 0 fail: Operation not supported)
//   squash           fs names whose servers refuse this node's root
//                    (setquota fails: Operation not permitted)
//   pools            "<fsname>.<pool>" lines: the OST pools that exist
// It cannot make statfs(2) report a project's limits, nor enforce one.
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kMaxProjectId = 4294967294u;
std::string g_state;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(ReadAll(g_state + "/" + path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

bool Listed(const std::string& file, const std::string& value) {
  for (const std::string& line : Lines(file)) {
    if (line == value) return true;
  }
  return false;
}

// Replaces the line whose first field is `key` (or adds it).
void Put(const std::string& file, const std::string& key, const std::string& line) {
  std::vector<std::string> lines = Lines(file);
  std::string out;
  bool put = false;
  for (const std::string& l : lines) {
    if (l.substr(0, l.find(' ')) == key) {
      if (!put) out += line + "\n";
      put = true;
    } else {
      out += l + "\n";
    }
  }
  if (!put) out += line + "\n";
  std::string tmp = g_state + "/" + file + ".tmp";
  std::ofstream(tmp) << out;
  rename(tmp.c_str(), (g_state + "/" + file).c_str());
}

std::string Get(const std::string& file, const std::string& key) {
  for (const std::string& l : Lines(file)) {
    if (l.substr(0, l.find(' ')) == key) return l;
  }
  return "";
}

int Usage(const char* command) {
  printf("usage: lfs %s ... (see lfs help %s)\n", command, command);
  return 4;
}

bool ParseU64(const char* text, uint64_t* out) {
  if (text == nullptr || *text == '\0' || *text == '-' || *text == '+') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// The file system `path` is on: the longest mount point above it.
bool LustreFsOf(const std::string& path, std::string* fsname) {
  char real[PATH_MAX];
  if (realpath(path.c_str(), real) == nullptr) return false;
  std::string best_point, best_source;
  std::istringstream in(ReadAll("/proc/self/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    std::string word, source;
    while (fields >> word && word != "-") {
    }
    std::string type;
    fields >> type >> source;
    std::string r = real;
    bool under = point == "/" || r == point || r.rfind(point + "/", 0) == 0;
    if (under && point.size() >= best_point.size()) {
      best_point = point;
      best_source = source;
    }
  }
  size_t sep = best_source.find(":/");
  if (sep == std::string::npos || best_source.find('@') == std::string::npos) return false;
  *fsname = best_source.substr(sep + 2);
  *fsname = fsname->substr(0, fsname->find('/'));
  return true;
}

std::string FileKey(const struct stat& st) {
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

int NotLustre(const char* command, const std::string& path) {
  fprintf(stderr, "lfs %s: '%s' is not on a Lustre file system: Inappropriate ioctl for device\n",
          command, path.c_str());
  return 1;
}

// ------------------------------------------------------------------ project

int SetProjectOf(const std::string& path, const std::string& fsname, bool set_id, uint64_t id,
                 bool set_inherit, bool clear, bool keep) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    fprintf(stderr, "lfs: failed to lstat '%s': %s\n", path.c_str(), strerror(errno));
    return 1;
  }
  std::string key = FileKey(st);
  uint64_t cur_id = 0;
  int cur_inherit = 0;
  std::string line = Get("projects", key);
  if (!line.empty()) sscanf(line.c_str(), "%*s %lu %d", &cur_id, &cur_inherit);
  uint64_t new_id = clear ? (keep ? cur_id : 0) : (set_id ? id : cur_id);
  int new_inherit = clear ? 0 : (set_inherit ? 1 : cur_inherit);
  if (new_id != 0 && Listed("no-project-quota", fsname)) {
    fprintf(stderr, "lfs: failed to set xattr for '%s': %s\n", path.c_str(), strerror(EOPNOTSUPP));
    return 1;
  }
  // Only directories carry the inherit flag.
  if (!S_ISDIR(st.st_mode)) new_inherit = 0;
  Put("projects", key, key + " " + std::to_string(new_id) + " " + std::to_string(new_inherit));
  return 0;
}

int ForTree(const std::string& path, int depth, const std::function<int(const std::string&)>& fn) {
  int rc = fn(path);
  if (rc != 0 || depth == 0) return rc;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return 0;
  std::vector<std::string> names;
  while (struct dirent* e = readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(dir);
  for (const std::string& n : names) {
    std::string child = path + "/" + n;
    struct stat st;
    if (lstat(child.c_str(), &st) != 0) continue;
    rc = S_ISDIR(st.st_mode) ? ForTree(child, depth - 1, fn) : fn(child);
    if (rc != 0) return rc;
  }
  return 0;
}

int Project(int argc, char** argv) {
  bool dir_only = false, recursive = false, set_inherit = false, set_id = false, clear = false,
       keep = false, check = false;
  uint64_t id = 0;
  int opt;
  optind = 1;
  while ((opt = getopt(argc, argv, "0cCdkp:rs")) != -1) {
    switch (opt) {
      case 'd':
        dir_only = true;
        break;
      case 'r':
        recursive = true;
        break;
      case 's':
        set_inherit = true;
        break;
      case 'C':
        clear = true;
        break;
      case 'k':
        keep = true;
        break;
      case 'c':
      case '0':
        check = true;
        break;
      case 'p':
        if (!ParseU64(optarg, &id) || id > kMaxProjectId) {
          fprintf(stderr, "lfs project: invalid project id '%s'\n", optarg);
          return 1;
        }
        set_id = true;
        break;
      default:
        return Usage("project");
    }
  }
  if (optind >= argc) return Usage("project");
  if (check || (clear && (set_inherit || set_id))) {
    fprintf(stderr, "lfs: cannot specify '-c' '-C' '-s' together\n");
    return Usage("project");
  }
  for (int i = optind; i < argc; ++i) {
    std::string path = argv[i];
    std::string fsname;
    if (!LustreFsOf(path, &fsname)) return NotLustre("project", path);
    if (!set_id && !set_inherit && !clear) {
      struct stat st;
      if (lstat(path.c_str(), &st) != 0) {
        fprintf(stderr, "lfs: failed to lstat '%s': %s\n", path.c_str(), strerror(errno));
        return 1;
      }
      uint64_t pid = 0;
      int inherit = 0;
      std::string line = Get("projects", FileKey(st));
      if (!line.empty()) sscanf(line.c_str(), "%*s %lu %d", &pid, &inherit);
      printf("%5lu %c %s\n", pid, inherit ? 'P' : '-', path.c_str());
      continue;
    }
    int depth = dir_only ? 0 : recursive ? INT_MAX : 1;
    int rc = ForTree(path, depth, [&](const std::string& p) {
      return SetProjectOf(p, fsname, set_id, id, set_inherit, clear, keep);
    });
    if (rc != 0) return rc;
  }
  return 0;
}

// ----------------------------------------------------------------- setquota

bool ParseLimit(const char* text, bool blocks, uint64_t* out) {
  std::string t = text;
  uint64_t unit = 1;
  if (!t.empty() && !isdigit(static_cast<unsigned char>(t.back()))) {
    switch (tolower(t.back())) {
      case 'k':
        unit = blocks ? 1 : 1024;
        break;
      case 'm':
        unit = blocks ? 1024 : 1 << 20;
        break;
      case 'g':
        unit = blocks ? 1 << 20 : 1 << 30;
        break;
      case 't':
        unit = blocks ? 1 << 30 : uint64_t{1} << 40;
        break;
      default:
        return false;
    }
    t.pop_back();
  }
  uint64_t n = 0;
  if (!ParseU64(t.c_str(), &n) || n > UINT64_MAX / unit) return false;
  *out = n * unit;
  return true;
}

int SetQuota(int argc, char** argv) {
  static const option kLong[] = {{"projid", required_argument, nullptr, 'p'},
                                 {"block-softlimit", required_argument, nullptr, 'b'},
                                 {"block-hardlimit", required_argument, nullptr, 'B'},
                                 {"inode-softlimit", required_argument, nullptr, 'i'},
                                 {"inode-hardlimit", required_argument, nullptr, 'I'},
                                 {nullptr, 0, nullptr, 0}};
  bool have_id = false, have_limit = false;
  uint64_t id = 0, bhard = 0, ihard = 0, ignored = 0;
  bool set_b = false, set_i = false;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "p:b:B:i:I:", kLong, nullptr)) != -1) {
    switch (opt) {
      case 'p':
        if (!ParseU64(optarg, &id) || id > kMaxProjectId) {
          fprintf(stderr, "lfs setquota: invalid project id '%s'\n", optarg);
          return 1;
        }
        have_id = true;
        break;
      case 'b':
      case 'B':
      case 'i':
      case 'I': {
        bool blocks = opt == 'b' || opt == 'B';
        uint64_t* into = opt == 'B' ? &bhard : opt == 'I' ? &ihard : &ignored;
        if (!ParseLimit(optarg, blocks, into)) {
          fprintf(stderr, "lfs setquota: bad limit '%s'\n", optarg);
          return Usage("setquota");
        }
        set_b = set_b || opt == 'B';
        set_i = set_i || opt == 'I';
        have_limit = true;
        break;
      }
      default:
        return Usage("setquota");
    }
  }
  if (!have_id || !have_limit || argc - optind != 1) return Usage("setquota");
  if (id == 0) {
    fprintf(stderr, "lfs setquota: can't set quota for root usr/group/project.\n");
    return 1;
  }
  std::string path = argv[optind];
  std::string fsname;
  if (!LustreFsOf(path, &fsname)) return NotLustre("setquota", path);
  if (Listed("squash", fsname)) {
    fprintf(stderr, "lfs setquota: quotactl failed: %s\nsetquota failed: %s\n", strerror(EPERM),
            strerror(EPERM));
    return 1;
  }
  std::string key = fsname + "/" + std::to_string(id);
  uint64_t old_b = 0, old_i = 0;
  std::string line = Get("quotas", key);
  if (!line.empty()) sscanf(line.c_str(), "%*s %lu %lu", &old_b, &old_i);
  Put("quotas", key,
      key + " " + std::to_string(set_b ? bhard : old_b) + " " +
          std::to_string(set_i ? ihard : old_i));
  return 0;
}

// ---------------------------------------------------------------- setstripe

int SetStripe(int argc, char** argv) {
  long long count = 0;
  uint64_t size = 0;
  std::string pool;
  bool have_count = false, have_size = false;
  int opt;
  optind = 1;
  while ((opt = getopt(argc, argv, "c:S:p:")) != -1) {
    switch (opt) {
      case 'c': {
        char* end = nullptr;
        count = strtoll(optarg, &end, 10);
        if (*optarg == '\0' || *end != '\0' || count < -1 || count > 2000) {
          fprintf(stderr, "lfs setstripe: invalid stripe count '%s'\n", optarg);
          return Usage("setstripe");
        }
        have_count = true;
        break;
      }
      case 'S': {
        uint64_t bytes = 0;
        if (!ParseLimit(optarg, false, &bytes)) {
          fprintf(stderr, "lfs setstripe: invalid stripe size '%s'\n", optarg);
          return Usage("setstripe");
        }
        if (bytes < 4096) bytes *= 1024;
        if (bytes >= (uint64_t{1} << 32)) {
          fprintf(stderr, "lfs setstripe: stripe size '%lu' over 4GB limit\n", bytes);
          return Usage("setstripe");
        }
        if (bytes % 65536 != 0) {
          fprintf(stderr, "lfs setstripe: invalid stripe size '%s', must be a multiple of 64KiB\n",
                  optarg);
          return Usage("setstripe");
        }
        size = bytes;
        have_size = true;
        break;
      }
      case 'p':
        pool = optarg;
        if (pool.size() > 15) {
          fprintf(stderr, "lfs setstripe: pool name '%s' is too long (max 15)\n", optarg);
          return Usage("setstripe");
        }
        break;
      default:
        return Usage("setstripe");
    }
  }
  if (argc - optind != 1) return Usage("setstripe");
  std::string path = argv[optind];
  std::string fsname;
  if (!LustreFsOf(path, &fsname)) return NotLustre("setstripe", path);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    fprintf(stderr, "lfs setstripe: cannot open '%s': %s\n", path.c_str(), strerror(errno));
    return errno;
  }
  if (!pool.empty() && !Listed("pools", fsname + "." + pool)) {
    fprintf(stderr, "lfs setstripe: pool '%s.%s' does not exist\n", fsname.c_str(), pool.c_str());
    fprintf(stderr, "error: lfs setstripe: create stripe file '%s' failed: %s\n", path.c_str(),
            strerror(EINVAL));
    return 1;
  }
  std::string key = FileKey(st);
  Put("layouts", key,
      key + " " + (have_count ? std::to_string(count) : "-") + " " +
          (have_size ? std::to_string(size) : "-") + " " + (pool.empty() ? "-" : pool));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string self = argv[0];
  g_state = self.substr(0, self.rfind('/') + 1) + "lfs-state";
  mkdir(g_state.c_str(), 0755);
  int lock = open((g_state + "/lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    fprintf(stderr, "lfs stand-in: locking its state: %s\n", strerror(errno));
    return 1;
  }
  {
    std::string line;
    for (int i = 0; i < argc; ++i) line += (i ? " " : "") + std::string(argv[i]);
    std::ofstream(g_state + "/calls.log", std::ios::app) << line << "\n";
  }
  if (argc < 2) return Usage("");
  std::string command = argv[1];
  if (command == "--version") {
    printf("lfs 2.15.5 (lustre-csi stand-in)\n");
    return 0;
  }
  if (command == "project") return Project(argc - 1, argv + 1);
  if (command == "setquota") return SetQuota(argc - 1, argv + 1);
  if (command == "setstripe") return SetStripe(argc - 1, argv + 1);
  fprintf(stderr, "lfs: unknown command '%s' (this stand-in has project, setquota, setstripe)\n",
          command.c_str());
  return 4;
}
