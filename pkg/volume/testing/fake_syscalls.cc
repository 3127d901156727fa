#include "pkg/volume/testing/fake_syscalls.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pkg/base/status_macros.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {

struct FakeSyscalls::Node {
  enum Type { kDir, kFile, kSymlink } type = kDir;
  uint32_t mode = 0755;  // permission bits only
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t ino = 0;
  std::string link;     // symlink target
  std::string content;  // file content
};

struct FakeSyscalls::Fs {
  uint64_t dev = 0;
  std::string fstype;
  std::string source;
  std::string data;  // super options after "rw"/"ro"
  FsStats stats;
  uint64_t next_ino = 2;
  std::map<std::string, Node> nodes;  // fs-relative path ("/", "/a", "/a/b") -> node
};

struct FakeSyscalls::MountRec {
  int id = 0;
  int parent_id = 0;
  std::shared_ptr<Fs> fs;
  std::string root;         // fs-relative path shown at the mount point
  std::string mount_point;  // absolute path in the namespace
  unsigned long flags = 0;  // per-mount flags (kMsRdonly, kMsNosuid, ...)
  int broken = 0;
  bool busy = false;
};

// One resolved component: the mount it is on, its path inside that mount's
// file system, its absolute path, and whether it is the root of that mount.
struct FakeSyscalls::Step {
  size_t mount = 0;
  std::string fs_path;
  std::string abs;
  bool at_root = false;
};

// An open descriptor: the place it names (its mount by id, which outlives
// reordering) and the inode it found there.
struct FakeSyscalls::OpenFile {
  int mount_id = 0;
  std::string fs_path;
  std::string abs;
  bool at_root = false;
  uint64_t ino = 0;
  OpenAccess access = OpenAccess::kPath;
  size_t offset = 0;   // of a file's content
  std::string listed;  // of a directory: the last name ReadDir returned
};

namespace {

constexpr unsigned long kPerMountFlags = kMsRdonly | kMsNosuid | kMsNodev | kMsNoexec | kMsNoatime |
                                         kMsNodiratime | kMsRelatime | kMsStrictatime;
constexpr unsigned long kPropagationFlags = kMsShared | kMsPrivate | kMsSlave | kMsUnbindable;
constexpr int kMaxSymlinks = 40;

std::string JoinPath(const std::string& dir, absl::string_view name) {
  return dir == "/" ? absl::StrCat("/", name) : absl::StrCat(dir, "/", name);
}

// Not cleaned lexically: "." and ".." are walked like the kernel does, after
// symlinks. Trailing slashes go.
std::string Absolute(const std::string& path) {
  std::string abs = path.empty() || path[0] != '/' ? absl::StrCat("/", path) : path;
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  return abs;
}

// Octal escapes for the characters the kernel escapes in mountinfo fields.
std::string Escape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case ' ':
        out += "\\040";
        break;
      case '\t':
        out += "\\011";
        break;
      case '\n':
        out += "\\012";
        break;
      case '\\':
        out += "\\134";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

int OpIndex(SyscallOp op) { return static_cast<int>(op); }

FsStats DefaultStats(absl::string_view fstype) {
  FsStats s;
  s.block_size = 4096;
  s.blocks = 262144;
  s.blocks_free = 131072;
  s.blocks_available = 131072;
  s.files = 65536;
  s.files_free = 65000;
  s.fs_type = fstype == "tmpfs" ? 0x01021994 : 0xef53;
  return s;
}

}  // namespace

FakeSyscalls::FakeSyscalls() {
  absl::MutexLock lock(&mu_);
  auto fs = std::make_shared<Fs>();
  fs->dev = makedev(8, 1);
  fs->fstype = "ext4";
  fs->source = "/dev/fake-root";
  fs->stats = DefaultStats("ext4");
  Node root;
  root.ino = fs->next_ino++;
  fs->nodes["/"] = root;
  auto m = std::make_unique<MountRec>();
  m->id = next_mount_id_++;
  m->parent_id = 0;
  m->fs = fs;
  m->root = "/";
  m->mount_point = "/";
  m->flags = kMsRelatime;
  mounts_.push_back(std::move(m));
}

FakeSyscalls::~FakeSyscalls() { Shutdown(); }

size_t FakeSyscalls::TopOf(size_t index, const std::string& abs) const {
  while (true) {
    int above = ChildMount(index, abs);
    if (above < 0) return index;
    index = static_cast<size_t>(above);
  }
}

int FakeSyscalls::ChildMount(size_t parent, const std::string& abs) const {
  int parent_id = mounts_[parent]->id;
  for (size_t i = 0; i < mounts_.size(); ++i) {
    if (mounts_[i]->parent_id == parent_id && mounts_[i]->mount_point == abs && i != parent) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

FakeSyscalls::Step FakeSyscalls::RootStep() const {
  Step s;
  s.mount = TopOf(0, "/");
  s.fs_path = mounts_[s.mount]->root;
  s.abs = "/";
  s.at_root = true;
  return s;
}

const FakeSyscalls::Node* FakeSyscalls::NodeAt(const Step& step) const {
  const auto& nodes = mounts_[step.mount]->fs->nodes;
  auto it = nodes.find(step.fs_path);
  return it == nodes.end() ? nullptr : &it->second;
}

FakeSyscalls::Node* FakeSyscalls::MutableNodeAt(const Step& step) {
  auto& nodes = mounts_[step.mount]->fs->nodes;
  auto it = nodes.find(step.fs_path);
  return it == nodes.end() ? nullptr : &it->second;
}

int FakeSyscalls::Walk(std::vector<Step>& stack, const std::string& path, bool follow_last,
                       size_t floor, bool beneath, bool strict) const {
  const bool absolute = !path.empty() && path[0] == '/';
  if (absolute && beneath) return EXDEV;
  if (absolute) stack = {RootStep()};
  std::deque<std::string> queue;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    queue.emplace_back(part);
  }
  int links = 0;
  while (!queue.empty()) {
    std::string name = std::move(queue.front());
    queue.pop_front();
    const Step cur = stack.back();
    const MountRec& m = *mounts_[cur.mount];
    if (m.broken != 0) return m.broken;
    const Node* dir = NodeAt(cur);
    if (dir == nullptr) return ENOENT;
    if (dir->type != Node::kDir) return ENOTDIR;
    if (name == ".") continue;
    if (name == "..") {
      if (stack.size() <= floor) {
        if (beneath) return EXDEV;
        continue;
      }
      stack.pop_back();
      continue;
    }
    std::string child_fs = JoinPath(cur.fs_path, name);
    auto it = m.fs->nodes.find(child_fs);
    if (it == m.fs->nodes.end()) return ENOENT;
    const Node& node = it->second;
    const bool follow = !queue.empty() || follow_last;
    if (strict && node.type == Node::kSymlink && follow) return ELOOP;
    if (node.type == Node::kSymlink && follow) {
      if (++links > kMaxSymlinks) return ELOOP;
      std::vector<std::string> parts = absl::StrSplit(node.link, '/', absl::SkipEmpty());
      if (!node.link.empty() && node.link[0] == '/') {
        if (beneath) return EXDEV;
        stack.resize(1);
      }
      queue.insert(queue.begin(), parts.begin(), parts.end());
      continue;
    }
    Step next;
    next.mount = cur.mount;
    next.fs_path = child_fs;
    next.abs = JoinPath(cur.abs, name);
    if (node.type != Node::kSymlink) {
      int child = ChildMount(cur.mount, next.abs);
      if (child >= 0 && strict) return EXDEV;
      if (child >= 0) {
        next.mount = TopOf(static_cast<size_t>(child), next.abs);
        next.fs_path = mounts_[next.mount]->root;
        next.at_root = true;
      }
    }
    stack.push_back(std::move(next));
  }
  return 0;
}

int FakeSyscalls::Resolve(const std::string& path, bool follow_last, Step* out) const {
  std::vector<Step> stack = {RootStep()};
  int err = Walk(stack, Absolute(path), follow_last, 1, false);
  if (err != 0) return err;
  *out = stack.back();
  if (NodeAt(*out) == nullptr) return ENOENT;
  return 0;
}

int FakeSyscalls::ResolveParent(const std::string& path, Step* parent, std::string* name) const {
  std::string abs = Absolute(path);
  if (abs == "/") {
    *name = ".";
    return Resolve("/", true, parent);
  }
  size_t slash = abs.rfind('/');
  *name = abs.substr(slash + 1);
  return Resolve(abs.substr(0, slash == 0 ? 1 : slash), true, parent);
}

FileInfo FakeSyscalls::InfoAt(const Step& step, const Node& node) const {
  const MountRec& m = *mounts_[step.mount];
  FileInfo info;
  uint32_t type = node.type == Node::kDir
                      ? kTypeDirectory
                      : (node.type == Node::kFile ? kTypeRegular : kTypeSymlink);
  info.mode = type | node.mode;
  info.uid = node.uid;
  info.gid = node.gid;
  info.dev = m.fs->dev;
  info.ino = node.ino;
  info.has_mount_id = report_mount_id_;
  info.mount_id = report_mount_id_ ? m.id : 0;
  info.has_mount_root = report_mount_root_;
  info.mount_root = report_mount_root_ && step.at_root;
  info.nlink = node.type == Node::kDir ? 2 : 1;
  info.blocks = node.type == Node::kDir ? 8 : (node.content.size() + 4095) / 4096 * 8;
  return info;
}

int FakeSyscalls::TopMountIndex(const std::string& target, size_t* index) const {
  Step step;
  int err = Resolve(target, true, &step);
  if (err != 0) return err;
  if (!step.at_root) return EINVAL;
  *index = step.mount;
  return 0;
}

int FakeSyscalls::AddNode(const std::string& path, const Node& proto, bool ok_if_dir) {
  Step parent;
  std::string name;
  int err = ResolveParent(path, &parent, &name);
  return err != 0 ? err : AddChild(parent, name, proto, ok_if_dir);
}

int FakeSyscalls::AddChild(const Step& parent, const std::string& name, const Node& proto,
                           bool ok_if_dir) {
  if (name == "." || name == "..") return EEXIST;
  const MountRec& m = *mounts_[parent.mount];
  if (m.broken != 0) return m.broken;
  const Node* dir = NodeAt(parent);
  if (dir == nullptr) return ENOENT;
  if (dir->type != Node::kDir) return ENOTDIR;
  std::string child = JoinPath(parent.fs_path, name);
  auto it = m.fs->nodes.find(child);
  if (it != m.fs->nodes.end()) {
    return ok_if_dir && it->second.type == Node::kDir && proto.type == Node::kDir ? 0 : EEXIST;
  }
  if (m.flags & kMsRdonly) return EROFS;
  Node node = proto;
  node.ino = m.fs->next_ino++;
  m.fs->nodes[child] = node;
  Notify(parent.abs, {DirEvent::Kind::kAdded, name});
  return 0;
}

int FakeSyscalls::RemoveChild(const Step& parent, const std::string& name, bool directory) {
  if (name == "." || name == "..") {
    return !directory ? EISDIR : (name == "." ? EINVAL : ENOTEMPTY);
  }
  MountRec& m = *mounts_[parent.mount];
  if (m.broken != 0) return m.broken;
  const Node* dir = NodeAt(parent);
  if (dir == nullptr) return ENOENT;
  if (dir->type != Node::kDir) return ENOTDIR;
  std::string child = JoinPath(parent.fs_path, name);
  auto it = m.fs->nodes.find(child);
  if (it == m.fs->nodes.end()) return ENOENT;
  const bool is_dir = it->second.type == Node::kDir;
  if (directory && !is_dir) return ENOTDIR;
  if (!directory && is_dir) return EISDIR;
  const std::string abs = JoinPath(parent.abs, name);
  if (ChildMount(parent.mount, abs) >= 0) return EBUSY;
  if (is_dir) {
    // Any mount showing this directory as its root keeps it busy too.
    for (const auto& other : mounts_) {
      if (other->fs == m.fs && other->root == child) return EBUSY;
    }
    std::string prefix = child + "/";
    auto next = m.fs->nodes.lower_bound(prefix);
    if (next != m.fs->nodes.end() && absl::StartsWith(next->first, prefix)) return ENOTEMPTY;
  }
  if (m.flags & kMsRdonly) return EROFS;
  m.fs->nodes.erase(it);
  Notify(parent.abs, {DirEvent::Kind::kRemoved, name});
  if (is_dir) Notify(abs, {DirEvent::Kind::kDirectoryGone, ""});
  return 0;
}

void FakeSyscalls::Notify(const std::string& dir, DirEvent event) {
  for (auto it = watches_.begin(); it != watches_.end();) {
    std::shared_ptr<FakeDirEvents> events = it->second.lock();
    if (events == nullptr) {
      it = watches_.erase(it);
      continue;
    }
    if (it->first == dir) events->Push(event);
    ++it;
  }
}

void FakeSyscalls::RemoveTree(size_t index) {
  std::vector<int> doomed = {mounts_[index]->id};
  for (size_t k = 0; k < doomed.size(); ++k) {
    for (const auto& m : mounts_) {
      if (m->parent_id == doomed[k]) doomed.push_back(m->id);
    }
  }
  std::vector<std::unique_ptr<MountRec>> kept;
  for (auto& m : mounts_) {
    bool gone = false;
    for (int id : doomed) gone = gone || m->id == id;
    if (!gone) kept.push_back(std::move(m));
  }
  mounts_ = std::move(kept);
}

// --- Syscalls ---------------------------------------------------------------

absl::Status FakeSyscalls::Mount(const std::string& source, const std::string& target,
                                 const std::string& fstype, unsigned long flags,
                                 const std::string& data) {
  std::string what = absl::StrCat(source, " on ", target);
  {
    absl::MutexLock lock(&mu_);
    mount_calls_.push_back(MountCall{source, target, fstype, flags, data});
  }
  Call call = Enter(Op::kMount, what);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  auto fail = [&](int err) { return ErrnoError(err, absl::StrCat("fake mount ", what)); };

  if (flags & kMsMove) return fail(EINVAL);
  if (flags & kMsRemount) {
    size_t index = 0;
    int err = TopMountIndex(target, &index);
    if (err != 0) return fail(err);
    MountRec& m = *mounts_[index];
    m.flags = flags & kPerMountFlags;
    if (!(flags & kMsBind)) m.fs->data = data;
    return absl::OkStatus();
  }
  if (flags & kPropagationFlags) {
    size_t index = 0;
    int err = TopMountIndex(target, &index);
    return err == 0 ? absl::OkStatus() : fail(err);
  }
  Step at;
  int err = Resolve(target, true, &at);
  if (err != 0) return fail(err);
  if (mounts_[at.mount]->broken != 0) return fail(mounts_[at.mount]->broken);
  const Node* target_node = NodeAt(at);

  auto m = std::make_unique<MountRec>();
  m->id = next_mount_id_++;
  m->parent_id = mounts_[at.mount]->id;
  m->mount_point = at.abs;
  if (flags & kMsBind) {
    Step from;
    err = Resolve(source, true, &from);
    if (err != 0) return fail(err);
    const MountRec& src = *mounts_[from.mount];
    if (src.broken != 0) return fail(src.broken);
    const Node* source_node = NodeAt(from);
    if ((source_node->type == Node::kDir) != (target_node->type == Node::kDir)) {
      return fail(ENOTDIR);
    }
    m->fs = src.fs;
    m->root = from.fs_path;
    m->flags = src.flags;  // a bind copies the source mount's flags; kMsRdonly etc. are ignored
  } else {
    if (fstype.empty()) return fail(ENODEV);
    if (target_node->type != Node::kDir) return fail(ENOTDIR);
    auto fs = std::make_shared<Fs>();
    fs->dev = makedev(0, next_minor_++);
    fs->fstype = fstype;
    fs->source = source;
    fs->data = data;
    fs->stats = DefaultStats(fstype);
    Node root;
    root.mode = fstype == "tmpfs" ? 01777 : 0755;
    root.ino = fs->next_ino++;
    fs->nodes["/"] = root;
    m->fs = fs;
    m->root = "/";
    m->flags = flags & kPerMountFlags;
  }
  mounts_.push_back(std::move(m));
  return absl::OkStatus();
}

void FakeSyscalls::SetAtomicBinds(bool on) { atomic_binds_ = on; }

absl::Status FakeSyscalls::BindBeneath(const std::string& root, const std::string& relative,
                                       const std::string& target, unsigned long flags) {
  if (!atomic_binds_) return Syscalls::BindBeneath(root, relative, target, flags);
  // Resolved as every caller above the seam resolves beneath a root.
  absl::StatusOr<std::string> source = ResolveBeneath(*this, root, relative);
  if (!source.ok()) return source.status();
  return BindMountWithFlags(*source, target, false, flags);
}

absl::Status FakeSyscalls::PrepareBinds() {
  if (!atomic_binds_) return Syscalls::PrepareBinds();
  return absl::OkStatus();
}

absl::Status FakeSyscalls::BindMountWithFlags(const std::string& source, const std::string& target,
                                              bool recursive, unsigned long flags) {
  if (!atomic_binds_) return Syscalls::BindMountWithFlags(source, target, recursive, flags);
  absl::Status bound = Mount(source, target, "", kMsBind | (recursive ? kMsRec : 0), "");
  if (!bound.ok()) return bound;
  absl::Status flagged = Mount("", target, "", kMsRemount | kMsBind | flags, "");
  if (!flagged.ok()) Unmount(target, kMntDetach).IgnoreError();
  return flagged;
}

absl::Status FakeSyscalls::Unmount(const std::string& target, int flags) {
  const bool in_place = (flags & kUnmountInPlace) != 0;
  flags &= ~kUnmountInPlace;  // where the call is made, not what it does
  {
    absl::MutexLock lock(&mu_);
    unmount_calls_.push_back(UnmountCall{target, flags, in_place, std::this_thread::get_id()});
  }
  Call call = Enter(Op::kUnmount, target);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  auto fail = [&](int err) {
    return ErrnoError(err, absl::StrCat("fake umount ", target, " (flags ", flags, ")"));
  };
  Step at;
  // The last component is not looked up inside the mount, so a broken mount
  // can still be unmounted.
  int err = Resolve(target, !(flags & kUmountNofollow), &at);
  if (err != 0) return fail(err);
  if (!at.at_root) return fail(EINVAL);
  if (at.mount == 0) return fail(EBUSY);
  if (!(flags & kMntDetach)) {
    if (mounts_[at.mount]->busy) return fail(EBUSY);
    for (const auto& m : mounts_) {
      if (m->parent_id == mounts_[at.mount]->id) return fail(EBUSY);
    }
  }
  RemoveTree(at.mount);
  return absl::OkStatus();
}

absl::StatusOr<FsStats> FakeSyscalls::Statfs(const std::string& path) {
  Call call = Enter(Op::kStatfs, path);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(path, true, &at);
  if (err == 0 && mounts_[at.mount]->broken != 0) err = mounts_[at.mount]->broken;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake statfs ", path));
  FsStats stats = mounts_[at.mount]->fs->stats;
  stats.mount_flags =
      mounts_[at.mount]->flags & (kMsRdonly | kMsNosuid | kMsNodev | kMsNoexec | kMsNosymfollow |
                                  kMsNoatime | kMsNodiratime | kMsRelatime | kMsStrictatime);
  return stats;
}

absl::StatusOr<FileInfo> FakeSyscalls::Stat(const std::string& path) {
  Call call = Enter(Op::kStat, path);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(path, false, &at);
  if (err == 0 && mounts_[at.mount]->broken != 0) err = mounts_[at.mount]->broken;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake statx ", path));
  return InfoAt(at, *NodeAt(at));
}

absl::Status FakeSyscalls::Mkdir(const std::string& path, uint32_t mode) {
  Call call = Enter(Op::kMkdir, path);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Node node;
  node.type = Node::kDir;
  node.mode = mode & 07777;
  int err = AddNode(path, node, false);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake mkdir ", path));
  return absl::OkStatus();
}

absl::Status FakeSyscalls::Rmdir(const std::string& path) {
  Call call = Enter(Op::kRmdir, path);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step parent;
  std::string name;
  int err = ResolveParent(path, &parent, &name);
  if (err == 0) err = RemoveChild(parent, name, true);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake rmdir ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::string> FakeSyscalls::ReadMountInfo() {
  Call call = Enter(Op::kReadMountInfo, "");
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& m : mounts_) {
    std::string super = m->fs->data.empty() ? "rw" : absl::StrCat("rw,", m->fs->data);
    absl::StrAppend(
        &out, m->id, " ", m->parent_id, " ", major(m->fs->dev), ":", minor(m->fs->dev), " ",
        Escape(m->root), " ", Escape(m->mount_point), " ", PerMountOptionsText(m->flags),
        m->parent_id == 0 ? " shared:1" : "", " - ", Escape(m->fs->fstype), " ",
        m->fs->source.empty() ? "none" : Escape(m->fs->source), " ", Escape(super), "\n");
  }
  return out;
}

// --- Descriptors ---------------------------------------------------------------

int FakeSyscalls::FileAt(int fd, Step* step, OpenFile** file) {
  auto it = files_.find(fd);
  if (it == files_.end()) return EBADF;
  int index = -1;
  for (size_t i = 0; i < mounts_.size(); ++i) {
    if (mounts_[i]->id == it->second.mount_id) index = static_cast<int>(i);
  }
  if (index < 0) return ESTALE;
  step->mount = static_cast<size_t>(index);
  step->fs_path = it->second.fs_path;
  step->abs = it->second.abs;
  step->at_root = it->second.at_root;
  const Node* node = NodeAt(*step);
  if (node == nullptr || node->ino != it->second.ino) return ENOENT;
  if (file != nullptr) *file = &it->second;
  return 0;
}

int FakeSyscalls::StartAt(int dir_fd, std::vector<Step>* stack) {
  if (dir_fd == kAtCwd) {
    *stack = {RootStep()};
    return 0;
  }
  Step start;
  int err = FileAt(dir_fd, &start, nullptr);
  if (err != 0) return err;
  *stack = {start};
  return 0;
}

int FakeSyscalls::ParentAt(int dir_fd, const std::string& name, Step* parent, std::string* last) {
  std::vector<Step> stack;
  int err = StartAt(dir_fd, &stack);
  if (err != 0) return err;
  std::string path = name;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  *last = slash == std::string::npos ? path : path.substr(slash + 1);
  if (last->empty()) return ENOENT;
  if (slash != std::string::npos) {
    err = Walk(stack, slash == 0 ? "/" : path.substr(0, slash), true, 1, false);
    if (err != 0) return err;
  }
  *parent = stack.back();
  return 0;
}

int FakeSyscalls::NewFile(const Step& step, OpenAccess access) {
  OpenFile file;
  file.mount_id = mounts_[step.mount]->id;
  file.fs_path = step.fs_path;
  file.abs = step.abs;
  file.at_root = step.at_root;
  file.ino = NodeAt(step)->ino;
  file.access = access;
  int fd = next_fd_++;
  files_[fd] = std::move(file);
  return fd;
}

absl::StatusOr<int> FakeSyscalls::OpenAt(int dir_fd, const std::string& path, const OpenHow& how) {
  Call call = Enter(Op::kOpen, path);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  auto fail = [&](int err) { return ErrnoError(err, absl::StrCat("fake open ", path)); };
  if (path.empty()) return fail(ENOENT);
  if (how.access == OpenAccess::kCreate) {
    if (how.resolve != Resolution::kAnywhere || how.directory) return fail(EINVAL);
    Step parent;
    std::string name;
    int err = ParentAt(dir_fd, path, &parent, &name);
    if (err == 0 && mounts_[parent.mount]->broken != 0) err = mounts_[parent.mount]->broken;
    if (err != 0) return fail(err);
    Node node;
    node.type = Node::kFile;
    node.mode = how.mode & 07777;
    err = AddChild(parent, name, node, false);
    if (err != 0) return fail(err);
    std::vector<Step> stack = {parent};
    err = Walk(stack, name, false, 1, false);
    if (err != 0) return fail(err);
    return NewFile(stack.back(), how.access);
  }
  std::vector<Step> stack;
  int err = StartAt(dir_fd, &stack);
  if (err != 0) return fail(err);
  const bool beneath = how.resolve != Resolution::kAnywhere && dir_fd != kAtCwd;
  const bool strict = how.resolve == Resolution::kStrictlyBeneath;
  err = Walk(stack, path, !how.nofollow, 1, beneath, strict);
  if (err != 0) return fail(err);
  const Step& at = stack.back();
  // An O_PATH open of a mount's root asks its file system nothing: it
  // answers even where the mount is broken (as the kernel's does).
  const bool root_only = how.access == OpenAccess::kPath && at.at_root;
  if (mounts_[at.mount]->broken != 0 && !root_only) return fail(mounts_[at.mount]->broken);
  const Node* node = NodeAt(at);
  if (node == nullptr) return fail(ENOENT);
  // A final symlink, not followed: only O_PATH opens it.
  if (node->type == Node::kSymlink && how.access != OpenAccess::kPath) {
    return fail(how.directory ? ENOTDIR : ELOOP);
  }
  if (how.directory && node->type != Node::kDir) return fail(ENOTDIR);
  return NewFile(at, how.access);
}

absl::Status FakeSyscalls::Close(int fd) {
  absl::MutexLock lock(&mu_);
  if (files_.erase(fd) == 0) return ErrnoError(EBADF, absl::StrCat("fake close ", fd));
  return absl::OkStatus();
}

absl::StatusOr<FileInfo> FakeSyscalls::StatAt(int dir_fd, const std::string& name) {
  Call call = Enter(Op::kStat, name);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  auto fail = [&](int err) { return ErrnoError(err, absl::StrCat("fake statx ", name)); };
  if (dir_fd == kAtCwd && name.empty()) return fail(ENOENT);
  std::vector<Step> stack;
  int err = StartAt(dir_fd, &stack);
  if (err == 0 && !name.empty()) err = Walk(stack, name, false, 1, false);
  if (err != 0) return fail(err);
  const Step& at = stack.back();
  if (mounts_[at.mount]->broken != 0) return fail(mounts_[at.mount]->broken);
  const Node* node = NodeAt(at);
  if (node == nullptr) return fail(ENOENT);
  return InfoAt(at, *node);
}

absl::StatusOr<std::vector<std::string>> FakeSyscalls::ReadDir(int fd, size_t max_names) {
  Call call = Enter(Op::kReadDir, absl::StrCat(fd));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  auto fail = [&](int err) { return ErrnoError(err, absl::StrCat("fake read directory ", fd)); };
  Step at;
  OpenFile* file = nullptr;
  int err = FileAt(fd, &at, &file);
  if (err == 0 && file->access != OpenAccess::kRead) err = EBADF;
  if (err == 0 && mounts_[at.mount]->broken != 0) err = mounts_[at.mount]->broken;
  if (err == 0 && NodeAt(at)->type != Node::kDir) err = ENOTDIR;
  if (err != 0) return fail(err);
  // Mounts on entries do not hide the names.
  const auto& nodes = mounts_[at.mount]->fs->nodes;
  const std::string prefix = at.fs_path == "/" ? "/" : at.fs_path + "/";
  // The stream goes in name order, from after the last name returned.
  std::vector<std::string> names;
  auto it =
      file->listed.empty() ? nodes.lower_bound(prefix) : nodes.upper_bound(prefix + file->listed);
  for (; it != nodes.end() && (max_names == 0 || names.size() < max_names); ++it) {
    if (!absl::StartsWith(it->first, prefix)) break;
    absl::string_view rest = absl::string_view(it->first).substr(prefix.size());
    if (!rest.empty() && rest.find('/') == absl::string_view::npos) names.emplace_back(rest);
  }
  if (!names.empty()) file->listed = names.back();
  return names;
}

absl::Status FakeSyscalls::MkdirAt(int dir_fd, const std::string& name, uint32_t mode) {
  Call call = Enter(Op::kMkdirAt, name);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step parent;
  std::string last;
  int err = ParentAt(dir_fd, name, &parent, &last);
  Node node;
  node.type = Node::kDir;
  node.mode = mode & 07777;
  if (err == 0) err = AddChild(parent, last, node, false);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake mkdir ", name));
  return absl::OkStatus();
}

absl::Status FakeSyscalls::UnlinkAt(int dir_fd, const std::string& name, bool directory) {
  Call call = Enter(Op::kUnlinkAt, name);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step parent;
  std::string last;
  int err = ParentAt(dir_fd, name, &parent, &last);
  if (err == 0) err = RemoveChild(parent, last, directory);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake remove ", name));
  return absl::OkStatus();
}

int FakeSyscalls::ChangeAt(int dir_fd, const std::string& name,
                           const std::function<int(Node&)>& change) {
  Step at;
  if (name.empty()) {
    OpenFile* file = nullptr;
    int err = FileAt(dir_fd, &at, &file);
    if (err != 0) return err;
    // As fchown and fchmod answer for an O_PATH descriptor.
    if (file->access == OpenAccess::kPath) return EBADF;
  } else {
    std::vector<Step> stack;
    int err = StartAt(dir_fd, &stack);
    if (err == 0) err = Walk(stack, name, false, 1, false);
    if (err != 0) return err;
    at = stack.back();
  }
  const MountRec& m = *mounts_[at.mount];
  if (m.broken != 0) return m.broken;
  Node* node = MutableNodeAt(at);
  if (node == nullptr) return ENOENT;
  if (m.flags & kMsRdonly) return EROFS;
  return change(*node);
}

absl::Status FakeSyscalls::ChownAt(int dir_fd, const std::string& name, std::optional<uint32_t> uid,
                                   std::optional<uint32_t> gid) {
  Call call = Enter(Op::kChown, name);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  int err = ChangeAt(dir_fd, name, [&](Node& node) {
    if (uid.has_value()) node.uid = *uid;
    if (gid.has_value()) node.gid = *gid;
    return 0;
  });
  if (err != 0) return ErrnoError(err, absl::StrCat("fake chown ", name));
  return absl::OkStatus();
}

absl::Status FakeSyscalls::ChmodAt(int dir_fd, const std::string& name, uint32_t mode) {
  Call call = Enter(Op::kChmod, name);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  int err = ChangeAt(dir_fd, name, [&](Node& node) {
    if (node.type == Node::kSymlink) return EOPNOTSUPP;
    node.mode = mode & 07777;
    return 0;
  });
  if (err != 0) return ErrnoError(err, absl::StrCat("fake chmod ", name));
  return absl::OkStatus();
}

absl::StatusOr<std::string> FakeSyscalls::Read(int fd, size_t max_bytes) {
  Call call = Enter(Op::kRead, absl::StrCat(fd));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  OpenFile* file = nullptr;
  int err = FileAt(fd, &at, &file);
  if (err == 0 && file->access != OpenAccess::kRead) err = EBADF;
  if (err == 0 && NodeAt(at)->type == Node::kDir) err = EISDIR;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake read ", fd));
  const std::string& content = NodeAt(at)->content;
  std::string out =
      file->offset < content.size() ? content.substr(file->offset, max_bytes) : std::string();
  file->offset += out.size();
  return out;
}

absl::Status FakeSyscalls::Write(int fd, const std::string& data) {
  Call call = Enter(Op::kWrite, absl::StrCat(fd));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  OpenFile* file = nullptr;
  int err = FileAt(fd, &at, &file);
  if (err == 0 && file->access != OpenAccess::kCreate) err = EBADF;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake write ", fd));
  std::string& content = MutableNodeAt(at)->content;
  content.resize(std::max(content.size(), file->offset));
  content.replace(file->offset, data.size(), data);
  file->offset += data.size();
  return absl::OkStatus();
}

absl::Status FakeSyscalls::Fsync(int fd) {
  Call call = Enter(Op::kFsync, absl::StrCat(fd));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  OpenFile* file = nullptr;
  int err = FileAt(fd, &at, &file);
  if (err == 0 && file->access == OpenAccess::kPath) err = EBADF;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake fsync ", fd));
  return absl::OkStatus();
}

absl::StatusOr<std::string> FakeSyscalls::PathOf(int fd) {
  Call call = Enter(Op::kPathOf, absl::StrCat(fd));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  auto it = files_.find(fd);
  if (it == files_.end()) return ErrnoError(EBADF, absl::StrCat("fake path of ", fd));
  return it->second.abs;
}

absl::StatusOr<uint64_t> FakeSyscalls::MountIdOf(int fd) {
  Call call = Enter(Op::kMountIdOf, absl::StrCat(fd));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  auto it = files_.find(fd);
  if (it == files_.end()) return ErrnoError(EBADF, absl::StrCat("fake mount id of ", fd));
  return static_cast<uint64_t>(it->second.mount_id);
}

absl::StatusOr<uint64_t> FakeSyscalls::MountIdAt(const std::string& path, bool follow) {
  Call call = Enter(Op::kMountIdOf, path);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(path, follow, &at);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake mount id of ", path));
  return static_cast<uint64_t>(mounts_[at.mount]->id);
}

uint32_t FakeSyscalls::EffectiveUid() { return 0; }

int FakeSyscalls::OpenFileCount() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(files_.size());
}

absl::StatusOr<std::unique_ptr<DirWatch>> FakeSyscalls::WatchDir(const std::string& dir) {
  Call call = Enter(Op::kWatchDir, dir);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(dir, true, &at);
  if (err == 0 && NodeAt(at)->type != Node::kDir) err = ENOTDIR;
  if (err != 0) {
    return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, err,
                              absl::StrCat("fake watch ", dir));
  }
  auto events = std::make_shared<FakeDirEvents>();
  watches_.emplace_back(at.abs, events);
  return std::unique_ptr<DirWatch>(new FakeDirWatch(events));
}

// --- Set-up and inspection ----------------------------------------------------

absl::Status FakeSyscalls::AddDir(const std::string& path, uint32_t mode, uint32_t uid,
                                  uint32_t gid) {
  absl::MutexLock lock(&mu_);
  std::string abs = Absolute(path);
  std::string cur;
  for (absl::string_view part : absl::StrSplit(abs, '/', absl::SkipEmpty())) {
    cur = JoinPath(cur.empty() ? "/" : cur, part);
    Node node;
    node.type = Node::kDir;
    bool last = cur == abs;
    node.mode = last ? (mode & 07777) : 0755;
    node.uid = last ? uid : 0;
    node.gid = last ? gid : 0;
    int err = AddNode(cur, node, true);
    if (err != 0) return ErrnoError(err, absl::StrCat("fake add dir ", cur));
  }
  return absl::OkStatus();
}

absl::Status FakeSyscalls::AddFile(const std::string& path, uint32_t mode,
                                   const std::string& content) {
  std::string abs = Absolute(path);
  absl::Status parent = AddDir(ParentPath(abs));
  if (!parent.ok()) return parent;
  absl::MutexLock lock(&mu_);
  Node node;
  node.type = Node::kFile;
  node.mode = mode & 07777;
  node.content = content;
  int err = AddNode(abs, node, false);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake add file ", abs));
  return absl::OkStatus();
}

absl::Status FakeSyscalls::AddSymlink(const std::string& path, const std::string& target) {
  std::string abs = Absolute(path);
  absl::Status parent = AddDir(ParentPath(abs));
  if (!parent.ok()) return parent;
  absl::MutexLock lock(&mu_);
  Node node;
  node.type = Node::kSymlink;
  node.mode = 0777;
  node.link = target;
  int err = AddNode(abs, node, false);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake add symlink ", abs));
  return absl::OkStatus();
}

absl::StatusOr<FileInfo> FakeSyscalls::Peek(const std::string& path) const {
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(path, false, &at);
  if (err == 0 && mounts_[at.mount]->broken != 0) err = mounts_[at.mount]->broken;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake peek ", path));
  return InfoAt(at, *NodeAt(at));
}

absl::StatusOr<std::string> FakeSyscalls::PeekContent(const std::string& path) const {
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(path, true, &at);
  if (err == 0 && NodeAt(at)->type != Node::kFile) err = EISDIR;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake peek content ", path));
  return NodeAt(at)->content;
}

absl::Status FakeSyscalls::BreakMount(const std::string& target, int err) {
  absl::MutexLock lock(&mu_);
  size_t index = 0;
  int e = TopMountIndex(target, &index);
  if (e != 0) return ErrnoError(e, absl::StrCat("fake break mount ", target));
  mounts_[index]->broken = err;
  return absl::OkStatus();
}

absl::Status FakeSyscalls::SetBusy(const std::string& target, bool busy) {
  absl::MutexLock lock(&mu_);
  size_t index = 0;
  int e = TopMountIndex(target, &index);
  if (e != 0) return ErrnoError(e, absl::StrCat("fake set busy ", target));
  mounts_[index]->busy = busy;
  return absl::OkStatus();
}

absl::Status FakeSyscalls::SetFsStats(const std::string& path, const FsStats& stats) {
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(path, true, &at);
  if (err != 0) return ErrnoError(err, absl::StrCat("fake set fs stats ", path));
  mounts_[at.mount]->fs->stats = stats;
  return absl::OkStatus();
}

void FakeSyscalls::SetStatxSupport(bool mount_id, bool mount_root) {
  absl::MutexLock lock(&mu_);
  report_mount_id_ = mount_id;
  report_mount_root_ = mount_root;
}

int FakeSyscalls::MountCount() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(mounts_.size()) - 1;
}

std::vector<FakeSyscalls::MountCall> FakeSyscalls::MountCalls() const {
  absl::MutexLock lock(&mu_);
  return mount_calls_;
}

std::vector<FakeSyscalls::UnmountCall> FakeSyscalls::UnmountCalls() const {
  absl::MutexLock lock(&mu_);
  return unmount_calls_;
}

void FakeSyscalls::ResetCounters() {
  ResetCalls();
  absl::MutexLock lock(&mu_);
  mount_calls_.clear();
  unmount_calls_.clear();
}

}  // namespace lustre_csi::volume
