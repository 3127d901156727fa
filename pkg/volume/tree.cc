#include "pkg/volume/tree.h"

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pkg/base/status_macros.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {
namespace {

bool Vanished(const absl::Status& status) { return ErrnoOf(status) == ENOENT; }

// The mount a walk or removal stays on.
class HomeMount {
 public:
  explicit HomeMount(const FileInfo& root) : root_(root) {}

  // Whether what `info` tells of is on another mount than the root.
  bool IsOther(const FileInfo& info) const {
    if (info.has_mount_root && info.mount_root) return true;
    if (info.dev != root_.dev) return true;
    return info.has_mount_id && root_.has_mount_id && info.mount_id != root_.mount_id;
  }

 private:
  const FileInfo root_;
};

OpenHow DirectoryForReading() {
  OpenHow how;
  how.access = OpenAccess::kRead;
  how.directory = true;
  how.nofollow = true;
  return how;
}

class Walker {
 public:
  Walker(Syscalls& sys, const std::string& root, const TreeLimits& limits, const TreeVisitor& visit)
      : sys_(sys), root_(root), limits_(limits), visit_(visit) {}

  absl::Status Run() {
    ASSIGN_OR_RETURN(ScopedFd fd, Open(sys_, kAtCwd, root_, DirectoryForReading()));
    ASSIGN_OR_RETURN(FileInfo info, sys_.StatAt(fd.get(), ""));
    home_.emplace(info);
    TreeEntry entry = EntryOf(info, "", 0);
    RETURN_IF_ERROR(Count());
    RETURN_IF_ERROR(Visit(entry, fd.get(), ""));
    return WalkDir(fd.get(), 0, "");
  }

 private:
  static TreeEntry EntryOf(const FileInfo& info, std::string path, int depth) {
    TreeEntry e;
    e.path = std::move(path);
    e.depth = depth;
    e.mode = info.mode;
    e.uid = info.uid;
    e.gid = info.gid;
    e.nlink = info.nlink;
    e.dev = info.dev;
    e.ino = info.ino;
    e.blocks = info.blocks;
    return e;
  }

  absl::Status Count() {
    ++entries_;
    if (limits_.max_entries != 0 && entries_ > limits_.max_entries) {
      return absl::ResourceExhaustedError(
          absl::StrCat("walk of ", root_, " stopped after ", limits_.max_entries, " entries"));
    }
    return absl::OkStatus();
  }

  std::string Describe(const TreeEntry& e) const {
    return e.path.empty() ? root_ : absl::StrCat(root_, "/", e.path);
  }

  // Shows `e` to the visitor and applies what it asks, as `name` in the
  // open directory `fd` ("" when `fd` is the entry itself).
  absl::Status Visit(const TreeEntry& e, int fd, const std::string& name) {
    ASSIGN_OR_RETURN(EntryChange change, visit_(e));
    if (change.gid.has_value() && *change.gid != e.gid) {
      absl::Status s = sys_.ChownAt(fd, name, std::nullopt, change.gid);
      if (!s.ok() && !Vanished(s)) return Annotate(s, absl::StrCat("chown ", Describe(e)));
    }
    if (!change.mode.has_value() || IsSymlinkMode(e.mode)) return absl::OkStatus();
    absl::Status s = sys_.ChmodAt(fd, name, *change.mode & 07777);
    // ENOENT: removed meanwhile; EOPNOTSUPP: replaced by a symlink meanwhile.
    if (!s.ok() && !Vanished(s) && ErrnoOf(s) != EOPNOTSUPP) {
      return Annotate(s, absl::StrCat("chmod ", Describe(e)));
    }
    return absl::OkStatus();
  }

  absl::Status WalkDir(int dir_fd, int depth, const std::string& path) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, sys_.ReadDir(dir_fd));
    for (const std::string& name : names) {
      absl::StatusOr<FileInfo> info = sys_.StatAt(dir_fd, name);
      if (!info.ok() && Vanished(info.status())) continue;  // removed while we walk
      if (!info.ok()) return info.status();
      if (home_->IsOther(*info)) continue;
      RETURN_IF_ERROR(Count());
      TreeEntry entry =
          EntryOf(*info, path.empty() ? name : absl::StrCat(path, "/", name), depth + 1);
      if (!IsDirectoryMode(info->mode)) {
        RETURN_IF_ERROR(Visit(entry, dir_fd, name));
        continue;
      }
      if (depth + 1 > limits_.max_depth) {
        return absl::ResourceExhaustedError(
            absl::StrCat("walk of ", root_, " is deeper than ", limits_.max_depth, " levels"));
      }
      absl::StatusOr<ScopedFd> child = Open(sys_, dir_fd, name, DirectoryForReading());
      if (!child.ok()) {
        // Gone, or swapped for a symlink or a file since the stat: skip it.
        std::optional<int> err = ErrnoOf(child.status());
        if (err == ENOENT || err == ELOOP || err == ENOTDIR) continue;
        return child.status();
      }
      ASSIGN_OR_RETURN(FileInfo opened, sys_.StatAt(child->get(), ""));
      // Something was mounted or swapped in between: leave it alone.
      if (opened.ino != info->ino || home_->IsOther(opened)) continue;
      RETURN_IF_ERROR(Visit(entry, child->get(), ""));
      RETURN_IF_ERROR(WalkDir(child->get(), depth + 1, entry.path));
    }
    return absl::OkStatus();
  }

  Syscalls& sys_;
  const std::string& root_;
  const TreeLimits& limits_;
  const TreeVisitor& visit_;
  std::optional<HomeMount> home_;
  size_t entries_ = 0;
};

// Removes everything inside the open directory `dir_fd`.
absl::Status RemoveContents(Syscalls& sys, int dir_fd, const HomeMount& home,
                            const std::string& where, int depth, int max_depth) {
  if (depth > max_depth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("directory tree deeper than ", max_depth, " at ", where));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, sys.ReadDir(dir_fd));
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(where, "/", name);
    absl::StatusOr<FileInfo> info = sys.StatAt(dir_fd, name);
    if (!info.ok() && Vanished(info.status())) continue;  // gone meanwhile
    if (!info.ok()) return info.status();
    if (!IsDirectoryMode(info->mode)) {
      absl::Status s = sys.UnlinkAt(dir_fd, name, false);
      if (!s.ok() && !Vanished(s)) return Annotate(s, absl::StrCat("remove ", path));
      continue;
    }
    if (home.IsOther(*info)) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is another mount; nothing below it was removed"));
    }
    absl::StatusOr<ScopedFd> child = Open(sys, dir_fd, name, DirectoryForReading());
    if (!child.ok() && Vanished(child.status())) continue;
    if (!child.ok()) return child.status();
    RETURN_IF_ERROR(RemoveContents(sys, child->get(), home, path, depth + 1, max_depth));
    absl::Status s = sys.UnlinkAt(dir_fd, name, true);
    if (!s.ok() && !Vanished(s)) return Annotate(s, absl::StrCat("remove ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WalkTree(Syscalls& sys, const std::string& root, const TreeLimits& limits,
                      const TreeVisitor& visit) {
  return Walker(sys, root, limits, visit).Run();
}

absl::Status RemoveTreeBeneath(Syscalls& sys, const std::string& root, const std::string& relative,
                               int max_depth) {
  std::string name;
  ASSIGN_OR_RETURN(ScopedFd parent, OpenParentStrictly(sys, root, relative, &name));
  // Strictly beneath: a symlink or a mount point is refused here.
  OpenHow how = DirectoryForReading();
  how.resolve = Resolution::kStrictlyBeneath;
  absl::StatusOr<ScopedFd> dir = Open(sys, parent.get(), name, how);
  if (!dir.ok()) return StrictError(dir.status(), root, relative);
  ASSIGN_OR_RETURN(FileInfo info, sys.StatAt(dir->get(), ""));
  const std::string what = absl::StrCat(root, "/", relative);
  RETURN_IF_ERROR(RemoveContents(sys, dir->get(), HomeMount(info), what, 0, max_depth));
  absl::Status s = sys.UnlinkAt(parent.get(), name, true);
  if (!s.ok() && !Vanished(s)) return Annotate(s, absl::StrCat("remove ", what));
  return absl::OkStatus();
}

}  // namespace lustre_csi::volume
