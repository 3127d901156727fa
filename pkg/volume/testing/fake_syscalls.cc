#include "pkg/volume/testing/fake_syscalls.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <deque>
#include <map>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pkg/base/status_macros.h"
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

int FakeSyscalls::Walk(std::vector<Step>& stack, const std::string& path, bool follow_last,
                       size_t floor, bool beneath, bool strict) const {
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
    if (strict && node.type == Node::kSymlink) return ELOOP;
    if (node.type == Node::kSymlink && (!queue.empty() || follow_last)) {
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
  if (err != 0) return err;
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
  absl::StatusOr<std::string> source = ResolveBeneath(root, relative);
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
  {
    absl::MutexLock lock(&mu_);
    unmount_calls_.push_back(UnmountCall{target, flags});
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
  auto fail = [&](int err) { return ErrnoError(err, absl::StrCat("fake rmdir ", path)); };
  Step parent;
  std::string name;
  int err = ResolveParent(path, &parent, &name);
  if (err != 0) return fail(err);
  if (name == ".") return fail(EINVAL);
  if (name == "..") return fail(ENOTEMPTY);
  MountRec& m = *mounts_[parent.mount];
  if (m.broken != 0) return fail(m.broken);
  std::string child = JoinPath(parent.fs_path, name);
  auto it = m.fs->nodes.find(child);
  if (it == m.fs->nodes.end()) return fail(ENOENT);
  if (it->second.type != Node::kDir) return fail(ENOTDIR);
  if (ChildMount(parent.mount, JoinPath(parent.abs, name)) >= 0) return fail(EBUSY);
  // Any mount showing this directory as its root keeps it busy too.
  for (const auto& other : mounts_) {
    if (other->fs == m.fs && other->root == child) return fail(EBUSY);
  }
  std::string prefix = child + "/";
  auto next = m.fs->nodes.lower_bound(prefix);
  if (next != m.fs->nodes.end() && absl::StartsWith(next->first, prefix)) {
    return fail(ENOTEMPTY);
  }
  if (m.flags & kMsRdonly) return fail(EROFS);
  m.fs->nodes.erase(it);
  Notify(parent.abs, {DirEvent::Kind::kRemoved, name});
  Notify(JoinPath(parent.abs, name), {DirEvent::Kind::kDirectoryGone, ""});
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

absl::StatusOr<std::string> FakeSyscalls::ResolveBeneath(const std::string& root,
                                                         const std::string& relative) {
  Call call = Enter(Op::kResolveBeneath, absl::StrCat(root, " ", relative));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  std::string context = absl::StrCat("fake resolve \"", relative, "\" beneath ", root);
  if (relative.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": contains NUL"));
  }
  if (!relative.empty() && relative[0] == '/') {
    return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, EXDEV, context);
  }
  std::vector<Step> stack = {RootStep()};
  int err = Walk(stack, Absolute(root), true, 1, false);
  if (err == 0 && NodeAt(stack.back()) == nullptr) err = ENOENT;
  if (err == 0 && NodeAt(stack.back())->type != Node::kDir) err = ENOTDIR;
  if (err == 0) err = Walk(stack, relative, true, stack.size(), true);
  if (err == 0 && NodeAt(stack.back()) == nullptr) err = ENOENT;
  if (err == EXDEV || err == ELOOP) {
    return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err, context);
  }
  if (err != 0) return ErrnoError(err, context);
  return stack.back().abs;
}

// --- Trees and paths strictly beneath a root -----------------------------------

int FakeSyscalls::AddBeneath(const std::string& root, const std::string& relative,
                             const Node& node) {
  Step parent;
  std::string name;
  int err = ResolveStrict(root, relative, true, &parent, &name);
  return err != 0 ? err : AddNode(JoinPath(parent.abs, name), node, false);
}

FakeSyscalls::Node* FakeSyscalls::MutableNodeAt(const Step& step) {
  auto& nodes = mounts_[step.mount]->fs->nodes;
  auto it = nodes.find(step.fs_path);
  return it == nodes.end() ? nullptr : &it->second;
}

int FakeSyscalls::ResolveStrict(const std::string& root, const std::string& relative,
                                bool parent_only, Step* out, std::string* name) const {
  if (relative.empty() || relative[0] == '/' || relative.find('\0') != std::string::npos ||
      CleanPath(relative) != relative || relative == ".") {
    return EINVAL;
  }
  std::vector<Step> stack = {RootStep()};
  int err = Walk(stack, Absolute(root), true, 1, false);
  if (err == 0 && NodeAt(stack.back()) == nullptr) err = ENOENT;
  if (err == 0 && NodeAt(stack.back())->type != Node::kDir) err = ENOTDIR;
  if (err != 0) return err;
  std::string walk = relative;
  if (parent_only) {
    size_t slash = relative.rfind('/');
    *name = slash == std::string::npos ? relative : relative.substr(slash + 1);
    if (*name == "..") return EXDEV;
    walk = slash == std::string::npos ? "" : relative.substr(0, slash);
  }
  err = Walk(stack, walk, false, stack.size(), true, true);
  if (err != 0) return err;
  const MountRec& m = *mounts_[stack.back().mount];
  if (m.broken != 0) return m.broken;
  const Node* node = NodeAt(stack.back());
  if (node == nullptr) return ENOENT;
  if (parent_only && node->type != Node::kDir) return ENOTDIR;
  *out = stack.back();
  return 0;
}

namespace {

absl::Status StrictError(int err, const std::string& op, const std::string& root,
                         const std::string& relative) {
  std::string what = absl::StrCat("fake ", op, " ", root, "/", relative);
  if (err == EXDEV || err == ELOOP || err == EINVAL) {
    return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                              absl::StrCat(what, ": not strictly beneath ", root));
  }
  return ErrnoError(err, what);
}

}  // namespace

absl::Status FakeSyscalls::WalkTree(const std::string& root, const TreeLimits& limits,
                                    const TreeVisitor& visit) {
  struct Item {
    TreeEntry entry;
    std::string fs_path;
  };
  std::vector<Item> items;
  absl::Status stopped;
  std::shared_ptr<Fs> fs;
  Call call = Enter(Op::kWalkTree, root);
  RETURN_IF_ERROR(call.status());
  {
    absl::MutexLock lock(&mu_);
    auto fail = [&](int err) { return ErrnoError(err, absl::StrCat("fake walk ", root)); };
    Step at;
    int err = Resolve(root, false, &at);
    if (err == 0 && mounts_[at.mount]->broken != 0) err = mounts_[at.mount]->broken;
    // Like open(O_DIRECTORY | O_NOFOLLOW): a symlink is no directory.
    if (err == 0 && NodeAt(at)->type != Node::kDir) err = ENOTDIR;
    if (err != 0) return fail(err);
    const MountRec& m = *mounts_[at.mount];
    fs = m.fs;
    // Mount points below the root hide what is beneath them.
    std::vector<std::string> hidden;
    for (const auto& other : mounts_) {
      if (other->parent_id == m.id && IsPathBeneath(at.abs, other->mount_point)) {
        hidden.push_back(other->mount_point);
      }
    }
    const std::string prefix = at.fs_path == "/" ? "/" : at.fs_path + "/";
    for (auto it = fs->nodes.lower_bound(at.fs_path); it != fs->nodes.end(); ++it) {
      const bool is_root = it->first == at.fs_path;
      if (!is_root && !absl::StartsWith(it->first, prefix)) {
        if (it->first > prefix) break;
        continue;
      }
      Item item;
      item.fs_path = it->first;
      item.entry.path = is_root ? "" : it->first.substr(prefix.size());
      std::string abs = item.entry.path.empty() ? at.abs : JoinPath(at.abs, item.entry.path);
      bool skip = false;
      for (const std::string& h : hidden) skip = skip || IsPathBeneath(h, abs);
      if (skip) continue;
      const Node& node = it->second;
      item.entry.depth =
          is_root
              ? 0
              : static_cast<int>(std::count(item.entry.path.begin(), item.entry.path.end(), '/')) +
                    1;
      FileInfo info = InfoAt(at, node);
      item.entry.mode = info.mode;
      item.entry.uid = node.uid;
      item.entry.gid = node.gid;
      item.entry.nlink = node.type == Node::kDir ? 2 : 1;
      item.entry.dev = info.dev;
      item.entry.ino = node.ino;
      item.entry.blocks = node.type == Node::kDir ? 8 : (node.content.size() + 4095) / 4096 * 8;
      // Like the real walk, a limit stops it after what came before was
      // visited (and changed).
      if (limits.max_entries != 0 && items.size() >= limits.max_entries) {
        stopped = absl::ResourceExhaustedError(
            absl::StrCat("fake walk of ", root, " stopped after ", limits.max_entries, " entries"));
        break;
      }
      if (node.type == Node::kDir && item.entry.depth > limits.max_depth) {
        stopped = absl::ResourceExhaustedError(
            absl::StrCat("fake walk of ", root, " is deeper than ", limits.max_depth, " levels"));
        break;
      }
      items.push_back(std::move(item));
    }
  }
  for (const Item& item : items) {
    absl::StatusOr<EntryChange> change = visit(item.entry);
    if (!change.ok()) return change.status();
    absl::MutexLock lock(&mu_);
    auto it = fs->nodes.find(item.fs_path);
    if (it == fs->nodes.end()) continue;  // removed meanwhile
    if (change->gid.has_value()) it->second.gid = *change->gid;
    if (change->mode.has_value() && it->second.type != Node::kSymlink) {
      it->second.mode = *change->mode & 07777;
    }
  }
  return stopped;
}

absl::Status FakeSyscalls::MkdirBeneath(const std::string& root, const std::string& relative,
                                        uint32_t mode) {
  Call call = Enter(Op::kMkdirBeneath, absl::StrCat(root, "/", relative));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Node node;
  node.type = Node::kDir;
  node.mode = mode & 07777;
  int err = AddBeneath(root, relative, node);
  if (err != 0) return StrictError(err, "mkdir", root, relative);
  return absl::OkStatus();
}

absl::StatusOr<FileInfo> FakeSyscalls::StatBeneath(const std::string& root,
                                                   const std::string& relative) {
  Call call = Enter(Op::kStatBeneath, absl::StrCat(root, "/", relative));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = ResolveStrict(root, relative, false, &at, nullptr);
  if (err != 0) return StrictError(err, "statx", root, relative);
  return InfoAt(at, *NodeAt(at));
}

absl::StatusOr<std::string> FakeSyscalls::ReadFileBeneath(const std::string& root,
                                                          const std::string& relative,
                                                          size_t max_bytes) {
  Call call = Enter(Op::kReadFileBeneath, absl::StrCat(root, "/", relative));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = ResolveStrict(root, relative, false, &at, nullptr);
  if (err != 0) return StrictError(err, "read", root, relative);
  if (NodeAt(at)->type != Node::kFile) {
    return ErrnoError(EINVAL,
                      absl::StrCat("fake read ", root, "/", relative, ": not a regular file"));
  }
  return NodeAt(at)->content.substr(0, max_bytes);
}

absl::Status FakeSyscalls::MakeMarkedDirBeneath(const std::string& root,
                                                const std::string& relative,
                                                const MarkedDirSpec& spec) {
  Call call = Enter(Op::kMakeMarkedDirBeneath, absl::StrCat(root, "/", relative));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  if (spec.marker_name.empty() || spec.marker_name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("bad marker name \"", spec.marker_name, "\""));
  }
  Node dir;
  dir.type = Node::kDir;
  dir.mode = spec.mode & 07777;
  if (spec.uid.has_value()) dir.uid = *spec.uid;
  if (spec.gid.has_value()) dir.gid = *spec.gid;
  int err = AddBeneath(root, relative, dir);
  if (err == 0) {
    Node marker;
    marker.type = Node::kFile;
    marker.mode = spec.marker_mode & 07777;
    marker.content = spec.marker_content;
    err = AddBeneath(root, absl::StrCat(relative, "/", spec.marker_name), marker);
  }
  if (err != 0) return StrictError(err, "make marked dir", root, relative);
  return absl::OkStatus();
}

absl::Status FakeSyscalls::RemoveTreeBeneath(const std::string& root, const std::string& relative,
                                             int max_depth) {
  Call call = Enter(Op::kRemoveTreeBeneath, absl::StrCat(root, "/", relative));
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = ResolveStrict(root, relative, false, &at, nullptr);
  if (err == 0 && NodeAt(at)->type != Node::kDir) err = ENOTDIR;
  if (err == 0 && (mounts_[at.mount]->flags & kMsRdonly)) err = EROFS;
  if (err != 0) return StrictError(err, "remove tree", root, relative);
  MountRec& m = *mounts_[at.mount];
  for (const auto& other : mounts_) {
    if (other->parent_id == m.id && IsPathBeneath(at.abs, other->mount_point)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "fake remove tree ", root, "/", relative, ": ", other->mount_point, " is another mount"));
    }
  }
  const std::string prefix = at.fs_path + "/";
  auto first = m.fs->nodes.lower_bound(prefix);
  auto last = first;
  while (last != m.fs->nodes.end() && absl::StartsWith(last->first, prefix)) {
    // Like the real removal: directories at most `max_depth` levels below.
    if (last->second.type == Node::kDir &&
        std::count(last->first.begin() + prefix.size(), last->first.end(), '/') >= max_depth) {
      return absl::ResourceExhaustedError(
          absl::StrCat("fake remove tree ", root, "/", relative, ": deeper than ", max_depth));
    }
    ++last;
  }
  m.fs->nodes.erase(first, last);
  m.fs->nodes.erase(at.fs_path);
  size_t slash = at.abs.rfind('/');
  Notify(slash == 0 ? "/" : at.abs.substr(0, slash),
         {DirEvent::Kind::kRemoved, at.abs.substr(slash + 1)});
  std::vector<std::string> gone;
  for (const auto& [dir, events] : watches_) {
    if (IsPathBeneath(at.abs, dir)) gone.push_back(dir);
  }
  for (const std::string& dir : gone) Notify(dir, {DirEvent::Kind::kDirectoryGone, ""});
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FakeSyscalls::ListDir(const std::string& dir) {
  Call call = Enter(Op::kListDir, dir);
  RETURN_IF_ERROR(call.status());
  absl::MutexLock lock(&mu_);
  Step at;
  int err = Resolve(dir, true, &at);
  if (err == 0 && mounts_[at.mount]->broken != 0) err = mounts_[at.mount]->broken;
  if (err == 0 && NodeAt(at)->type != Node::kDir) err = ENOTDIR;
  if (err != 0) return ErrnoError(err, absl::StrCat("fake opendir ", dir));
  // Mounts on entries do not hide the names.
  const auto& nodes = mounts_[at.mount]->fs->nodes;
  const std::string prefix = at.fs_path == "/" ? "/" : at.fs_path + "/";
  std::vector<std::string> names;
  for (auto it = nodes.lower_bound(prefix); it != nodes.end(); ++it) {
    if (!absl::StartsWith(it->first, prefix)) break;
    absl::string_view rest = absl::string_view(it->first).substr(prefix.size());
    if (!rest.empty() && rest.find('/') == absl::string_view::npos) names.emplace_back(rest);
  }
  std::sort(names.begin(), names.end());
  return names;
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
