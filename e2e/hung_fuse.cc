// A file system whose server can stop answering the way a Lustre server
// does: it keeps taking requests and answers none of them. Speaks the FUSE
// protocol on /dev/fuse itself (no libfuse), with a tree of directories in
// memory and no caching (every lookup and stat reaches it).
//
//   hung-fuse <mount point>
//
// Mounts itself there and serves until SIGTERM (or until the mount goes).
// SIGUSR1 freezes it: requests are still read, so the kernel counts them as
// sent to the server, but none is answered. A process waiting for such a
// request that gets a fatal signal then waits on in uninterruptible sleep
// (state D) until the answer comes, exactly as a Lustre client waits for a
// server that does not answer; a frozen bindfs (SIGSTOP) leaves its requests
// unread, and those a fatal signal still ends. SIGUSR2 thaws it: the held
// requests are answered in order. Every request held prints "held <opcode>"
// on stdout. When the server exits, the kernel ends every request still
// waiting (the connection is gone), so nothing stays stuck after it.
#include <dirent.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct Node {
  uint32_t mode = S_IFDIR | 0755;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t parent = FUSE_ROOT_ID;
  std::map<std::string, uint64_t> children;
};

class Server {
 public:
  explicit Server(int fd) : fd_(fd) { nodes_[FUSE_ROOT_ID] = Node{}; }

  // Answers one request (`buf`, `len` bytes as read).
  void Handle(const char* buf, size_t len) {
    if (len < sizeof(fuse_in_header)) return;
    fuse_in_header in;
    memcpy(&in, buf, sizeof(in));
    const char* arg = buf + sizeof(fuse_in_header);
    const size_t arg_len = len - sizeof(fuse_in_header);
    switch (in.opcode) {
      case FUSE_INIT:
        return Init(in, arg, arg_len);
      case FUSE_LOOKUP:
        return Lookup(in, std::string(arg, strnlen(arg, arg_len)));
      case FUSE_FORGET:
      case FUSE_BATCH_FORGET:
      case FUSE_INTERRUPT:
        return;  // no answer is expected
      case FUSE_GETATTR:
        return AttrReply(in.unique, in.nodeid);
      case FUSE_SETATTR:
        return SetAttr(in, arg, arg_len);
      case FUSE_MKDIR:
        return Mkdir(in, arg, arg_len);
      case FUSE_RMDIR:
        return Rmdir(in, std::string(arg, strnlen(arg, arg_len)));
      case FUSE_STATFS:
        return Statfs(in);
      case FUSE_OPENDIR: {
        fuse_open_out out = {};
        return Reply(in.unique, 0, &out, sizeof(out));
      }
      case FUSE_READDIR:
        return Readdir(in, arg, arg_len);
      case FUSE_RELEASEDIR:
      case FUSE_ACCESS:
      case FUSE_FLUSH:
      case FUSE_RELEASE:
      case FUSE_FSYNCDIR:
      case FUSE_DESTROY:
        return Reply(in.unique, 0, nullptr, 0);
      default:
        return Reply(in.unique, -ENOSYS, nullptr, 0);
    }
  }

 private:
  void Reply(uint64_t unique, int error, const void* body, size_t body_len) {
    fuse_out_header out;
    out.len = sizeof(out) + (error == 0 ? body_len : 0);
    out.error = error;
    out.unique = unique;
    std::string msg(reinterpret_cast<const char*>(&out), sizeof(out));
    if (error == 0 && body_len > 0) msg.append(static_cast<const char*>(body), body_len);
    // ENOENT: the request was interrupted and is gone; nothing to do.
    if (write(fd_, msg.data(), msg.size()) < 0 && errno != ENOENT) perror("hung-fuse: write");
  }

  void Init(const fuse_in_header& in, const char* arg, size_t arg_len) {
    fuse_init_in init = {};
    memcpy(&init, arg, std::min(arg_len, sizeof(init)));
    fuse_init_out out = {};
    out.major = FUSE_KERNEL_VERSION;
    out.minor = std::min<uint32_t>(init.minor, FUSE_KERNEL_MINOR_VERSION);
    out.max_readahead = init.max_readahead;
    out.max_background = 16;
    out.congestion_threshold = 12;
    out.max_write = 128 * 1024;
    out.time_gran = 1;
    Reply(in.unique, 0, &out, sizeof(out));
  }

  void FillAttr(uint64_t id, fuse_attr* attr) {
    const Node& n = nodes_[id];
    *attr = {};
    attr->ino = id;
    attr->mode = n.mode;
    attr->nlink = 2;
    attr->uid = n.uid;
    attr->gid = n.gid;
    attr->blksize = 4096;
  }

  void EntryReply(uint64_t unique, uint64_t id) {
    fuse_entry_out out = {};
    out.nodeid = id;
    out.generation = 1;
    FillAttr(id, &out.attr);  // entry_valid and attr_valid 0: nothing cached
    Reply(unique, 0, &out, sizeof(out));
  }

  void AttrReply(uint64_t unique, uint64_t id) {
    if (nodes_.count(id) == 0) return Reply(unique, -ENOENT, nullptr, 0);
    fuse_attr_out out = {};
    FillAttr(id, &out.attr);
    Reply(unique, 0, &out, sizeof(out));
  }

  void Lookup(const fuse_in_header& in, const std::string& name) {
    auto parent = nodes_.find(in.nodeid);
    if (parent == nodes_.end()) return Reply(in.unique, -ENOENT, nullptr, 0);
    auto child = parent->second.children.find(name);
    if (child == parent->second.children.end()) return Reply(in.unique, -ENOENT, nullptr, 0);
    EntryReply(in.unique, child->second);
  }

  void SetAttr(const fuse_in_header& in, const char* arg, size_t arg_len) {
    if (arg_len < sizeof(fuse_setattr_in) || nodes_.count(in.nodeid) == 0) {
      return Reply(in.unique, -EINVAL, nullptr, 0);
    }
    fuse_setattr_in set;
    memcpy(&set, arg, sizeof(set));
    Node& n = nodes_[in.nodeid];
    if (set.valid & FATTR_MODE) n.mode = S_IFDIR | (set.mode & 07777);
    if (set.valid & FATTR_UID) n.uid = set.uid;
    if (set.valid & FATTR_GID) n.gid = set.gid;
    AttrReply(in.unique, in.nodeid);
  }

  void Mkdir(const fuse_in_header& in, const char* arg, size_t arg_len) {
    if (arg_len < sizeof(fuse_mkdir_in) || nodes_.count(in.nodeid) == 0) {
      return Reply(in.unique, -EINVAL, nullptr, 0);
    }
    fuse_mkdir_in mk;
    memcpy(&mk, arg, sizeof(mk));
    std::string name(arg + sizeof(mk), strnlen(arg + sizeof(mk), arg_len - sizeof(mk)));
    Node& parent = nodes_[in.nodeid];
    if (parent.children.count(name) > 0) return Reply(in.unique, -EEXIST, nullptr, 0);
    const uint64_t id = next_id_++;
    Node n;
    n.mode = S_IFDIR | (mk.mode & ~mk.umask & 07777);
    n.uid = in.uid;
    n.gid = in.gid;
    n.parent = in.nodeid;
    nodes_[id] = n;
    nodes_[in.nodeid].children[name] = id;
    EntryReply(in.unique, id);
  }

  void Rmdir(const fuse_in_header& in, const std::string& name) {
    auto parent = nodes_.find(in.nodeid);
    if (parent == nodes_.end()) return Reply(in.unique, -ENOENT, nullptr, 0);
    auto child = parent->second.children.find(name);
    if (child == parent->second.children.end()) return Reply(in.unique, -ENOENT, nullptr, 0);
    if (!nodes_[child->second].children.empty()) return Reply(in.unique, -ENOTEMPTY, nullptr, 0);
    parent->second.children.erase(child);
    Reply(in.unique, 0, nullptr, 0);
  }

  void Statfs(const fuse_in_header& in) {
    fuse_statfs_out out = {};
    out.st.blocks = 1 << 20;
    out.st.bfree = 1 << 19;
    out.st.bavail = 1 << 19;
    out.st.files = 1 << 16;
    out.st.ffree = (1 << 16) - nodes_.size();
    out.st.bsize = 4096;
    out.st.frsize = 4096;
    out.st.namelen = 255;
    Reply(in.unique, 0, &out, sizeof(out));
  }

  // Entries from offset `off` on: ".", "..", then the children in name
  // order; an entry's offset is its index + 1.
  void Readdir(const fuse_in_header& in, const char* arg, size_t arg_len) {
    if (arg_len < sizeof(fuse_read_in) || nodes_.count(in.nodeid) == 0) {
      return Reply(in.unique, -EINVAL, nullptr, 0);
    }
    fuse_read_in rd;
    memcpy(&rd, arg, sizeof(rd));
    const Node& dir = nodes_[in.nodeid];
    std::vector<std::pair<std::string, uint64_t>> entries = {{".", in.nodeid}, {"..", dir.parent}};
    for (const auto& [name, id] : dir.children) entries.emplace_back(name, id);
    std::string out;
    for (uint64_t i = rd.offset; i < entries.size(); ++i) {
      const std::string& name = entries[i].first;
      size_t size = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + name.size());
      if (out.size() + size > rd.size) break;
      std::string ent(size, '\0');
      fuse_dirent d = {};
      d.ino = entries[i].second;
      d.off = i + 1;
      d.namelen = name.size();
      d.type = DT_DIR;
      memcpy(ent.data(), &d, FUSE_NAME_OFFSET);
      memcpy(ent.data() + FUSE_NAME_OFFSET, name.data(), name.size());
      out += ent;
    }
    Reply(in.unique, 0, out.data(), out.size());
  }

  const int fd_;
  std::map<uint64_t, Node> nodes_;
  uint64_t next_id_ = FUSE_ROOT_ID + 1;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <mount point>\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (sfd < 0 || fd < 0) {
    perror("hung-fuse: /dev/fuse");
    return 1;
  }
  std::string options =
      "fd=" + std::to_string(fd) + ",rootmode=40755,user_id=0,group_id=0,allow_other";
  if (mount("hung-fuse", argv[1], "fuse.hung-fuse", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    perror("hung-fuse: mount");
    return 1;
  }
  Server server(fd);
  bool frozen = false;
  std::vector<std::string> held;
  std::vector<char> buf(FUSE_MIN_READ_BUFFER + 128 * 1024);
  while (true) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      perror("hung-fuse: poll");
      return 1;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si;
      if (read(sfd, &si, sizeof(si)) != sizeof(si)) continue;
      if (si.ssi_signo == SIGUSR1) {
        frozen = true;
        printf("frozen\n");
      } else if (si.ssi_signo == SIGUSR2) {
        frozen = false;
        for (const std::string& req : held) server.Handle(req.data(), req.size());
        held.clear();
        printf("thawed\n");
      } else {
        return 0;  // the connection goes with the descriptor
      }
    }
    if (fds[0].revents & (POLLERR | POLLHUP)) return 0;
    if (fds[0].revents & POLLIN) {
      ssize_t n = read(fd, buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == ENOENT) continue;
        if (errno == ENODEV) return 0;  // unmounted
        perror("hung-fuse: read");
        return 1;
      }
      if (frozen) {
        fuse_in_header in;
        memcpy(&in, buf.data(), sizeof(in));
        held.emplace_back(buf.data(), n);
        printf("held %u\n", in.opcode);
        continue;
      }
      server.Handle(buf.data(), n);
    }
  }
}
