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

  // Whether what `info` tells of is on another mount than the root: by the
  // mount ids where both are known (a btrfs subvolume, with a device of its
  // own, is still the same mount), else by the device.
  bool IsOther(const FileInfo& info) const {
    if (info.has_mount_root && info.mount_root) return true;
    if (info.has_mount_id && root_.has_mount_id) return info.mount_id != root_.mount_id;
    return info.dev != root_.dev;
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

// Names read from a directory at a time.
constexpr size_t kBatch = 1024;

class Walker {
 public:
  Walker(Syscalls& sys, const std::string& root, const TreeLimits& limits, const TreeVisitor& visit)
      : sys_(sys), root_(root), limits_(limits), visit_(visit) {}

  absl::Status Run() {
    absl::StatusOr<ScopedFd> fd = Open(sys_, kAtCwd, root_, DirectoryForReading());
    if (!fd.ok()) return fd.status();
    absl::StatusOr<FileInfo> stat = sys_.StatAt(fd->get(), "");
    if (!stat.ok()) return Annotate(stat.status(), root_);
    const FileInfo& info = *stat;
    home_.emplace(info);
    TreeEntry entry = EntryOf(info, "", 0);
    RETURN_IF_ERROR(Count());
    RETURN_IF_ERROR(Visit(entry, fd->get(), ""));
    return WalkDir(fd->get(), 0, "");
  }

 private:
  static TreeEntry EntryOf(const FileInfo& info, std::string path, int depth) {
    TreeEntry e;
    static_cast<FileInfo&>(e) = info;
    e.path = std::move(path);
    e.depth = depth;
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
    const std::string where = path.empty() ? root_ : absl::StrCat(root_, "/", path);
    // In batches, so that a directory of millions of entries is never held
    // whole, and a limit stops the walk soon after it is reached.
    while (true) {
      absl::StatusOr<std::vector<std::string>> names = sys_.ReadDir(dir_fd, kBatch);
      if (!names.ok()) return Annotate(names.status(), absl::StrCat("list ", where));
      if (names->empty()) return absl::OkStatus();
      for (const std::string& name : *names) {
        RETURN_IF_ERROR(WalkEntry(dir_fd, depth, path, name));
      }
    }
  }

  absl::Status WalkEntry(int dir_fd, int depth, const std::string& path, const std::string& name) {
    TreeEntry entry;
    entry.path = path.empty() ? name : absl::StrCat(path, "/", name);
    absl::StatusOr<FileInfo> info = sys_.StatAt(dir_fd, name);
    if (!info.ok() && Vanished(info.status())) return absl::OkStatus();  // removed meanwhile
    if (!info.ok()) return Annotate(info.status(), Describe(entry));
    if (home_->IsOther(*info)) return absl::OkStatus();
    RETURN_IF_ERROR(Count());
    entry = EntryOf(*info, std::move(entry.path), depth + 1);
    if (!IsDirectoryMode(info->mode)) return Visit(entry, dir_fd, name);
    if (depth + 1 > limits_.max_depth) {
      return absl::ResourceExhaustedError(
          absl::StrCat("walk of ", root_, " is deeper than ", limits_.max_depth, " levels"));
    }
    absl::StatusOr<ScopedFd> child = Open(sys_, dir_fd, name, DirectoryForReading());
    if (!child.ok()) {
      // Gone, or swapped for a symlink or a file since the stat: skip it.
      std::optional<int> err = ErrnoOf(child.status());
      if (err == ENOENT || err == ELOOP || err == ENOTDIR) return absl::OkStatus();
      return Annotate(child.status(), Describe(entry));
    }
    absl::StatusOr<FileInfo> opened = sys_.StatAt(child->get(), "");
    if (!opened.ok() && Vanished(opened.status())) return absl::OkStatus();
    if (!opened.ok()) return Annotate(opened.status(), Describe(entry));
    // Something was mounted or swapped in between: leave it alone.
    if (opened->ino != info->ino || home_->IsOther(*opened)) return absl::OkStatus();
    RETURN_IF_ERROR(Visit(entry, child->get(), ""));
    return WalkDir(child->get(), depth + 1, entry.path);
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
  // All names first: the directory is changed while they are removed.
  absl::StatusOr<std::vector<std::string>> names = sys.ReadDir(dir_fd, 0);
  if (!names.ok()) return Annotate(names.status(), absl::StrCat("list ", where));
  for (const std::string& name : *names) {
    const std::string path = absl::StrCat(where, "/", name);
    absl::StatusOr<FileInfo> info = sys.StatAt(dir_fd, name);
    if (!info.ok() && Vanished(info.status())) continue;  // gone meanwhile
    if (!info.ok()) return Annotate(info.status(), path);
    if (!IsDirectoryMode(info->mode)) {
      absl::Status s = sys.UnlinkAt(dir_fd, name, false);
      if (!s.ok() && !Vanished(s)) return Annotate(s, absl::StrCat("remove ", path));
      continue;
    }
    const auto another_mount = [&] {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is another mount; nothing below it was removed"));
    };
    if (home.IsOther(*info)) return another_mount();
    // Strictly: a mount that appeared since the stat is refused (EXDEV).
    OpenHow how = DirectoryForReading();
    how.resolve = Resolution::kStrictlyBeneath;
    absl::StatusOr<ScopedFd> child = Open(sys, dir_fd, name, how);
    if (!child.ok() && Vanished(child.status())) continue;
    if (!child.ok() && ErrnoOf(child.status()) == EXDEV) return another_mount();
    if (!child.ok()) return Annotate(child.status(), path);
    absl::StatusOr<FileInfo> opened = sys.StatAt(child->get(), "");
    if (!opened.ok()) return Annotate(opened.status(), path);
    if (opened->ino != info->ino || home.IsOther(*opened)) {
      return absl::AbortedError(absl::StrCat(path, " was replaced while it was being removed"));
    }
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
  if (!dir.ok()) return StrictError(sys, dir.status(), root, relative);
  const std::string what = absl::StrCat(root, "/", relative);
  absl::StatusOr<FileInfo> info = sys.StatAt(dir->get(), "");
  if (!info.ok()) return Annotate(info.status(), what);
  RETURN_IF_ERROR(RemoveContents(sys, dir->get(), HomeMount(*info), what, 0, max_depth));
  absl::Status s = sys.UnlinkAt(parent.get(), name, true);
  if (!s.ok() && !Vanished(s)) return Annotate(s, absl::StrCat("remove ", what));
  return absl::OkStatus();
}

}  // namespace lustre_csi::volume
