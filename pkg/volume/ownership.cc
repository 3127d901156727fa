#include "pkg/volume/ownership.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "pkg/volume/dir_walk.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {
namespace {

constexpr uint32_t kReadWriteMask = S_IRUSR | S_IWUSR | S_IRGRP | S_IWGRP;
constexpr uint32_t kReadOnlyMask = S_IRUSR | S_IRGRP;
constexpr uint32_t kExecMask = S_IXUSR | S_IXGRP;

uint32_t MaskFor(uint32_t mode, bool read_only) {
  uint32_t mask = read_only ? kReadOnlyMask : kReadWriteMask;
  if (S_ISDIR(mode)) mask |= kExecMask | S_ISGID;
  return mask;
}

std::string NameOf(const std::string& dir, const WalkEntry& e) {
  return e.name == nullptr ? dir : absl::StrCat(e.name, " (depth ", e.depth, " in ", dir, ")");
}

absl::Status Apply(const std::string& dir, const WalkEntry& e, uint32_t gid, bool read_only) {
  uint32_t perms = e.st.mode & 07777;
  bool is_link = S_ISLNK(e.st.mode);
  bool regroup = e.st.gid != gid;
  if (regroup) {
    int rc = e.fd >= 0
                 ? fchown(e.fd, static_cast<uid_t>(-1), gid)
                 : fchownat(e.parent_fd, e.name, static_cast<uid_t>(-1), gid, AT_SYMLINK_NOFOLLOW);
    if (rc != 0 && errno != ENOENT) {
      return ErrnoError(errno, absl::StrCat("chown ", NameOf(dir, e)));
    }
  }
  if (is_link) return absl::OkStatus();
  if (regroup && !S_ISDIR(e.st.mode)) {
    // The kernel clears set-user-ID (and set-group-ID on group-executable
    // files) when the group changes; do not put them back.
    perms &= ~S_ISUID;
    if (perms & S_IXGRP) perms &= ~S_ISGID;
  }
  uint32_t want = perms | MaskFor(e.st.mode, read_only);
  if (want == (e.st.mode & 07777)) return absl::OkStatus();
  int rc =
      e.fd >= 0 ? fchmod(e.fd, want) : fchmodat(e.parent_fd, e.name, want, AT_SYMLINK_NOFOLLOW);
  if (rc != 0) {
    // ENOENT: removed meanwhile; EOPNOTSUPP: replaced by a symlink meanwhile.
    if (errno == ENOENT || errno == EOPNOTSUPP) return absl::OkStatus();
    return ErrnoError(errno, absl::StrCat("chmod ", NameOf(dir, e)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SetVolumeOwnership(const std::string& dir, uint32_t gid, bool read_only,
                                FsGroupChangePolicy policy) {
  if (policy == FsGroupChangePolicy::kOnRootMismatch) {
    struct stat st;
    if (fstatat(AT_FDCWD, dir.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoError(errno, absl::StrCat("stat ", dir));
    }
    uint32_t mask = MaskFor(st.st_mode, read_only);
    if (S_ISDIR(st.st_mode) && st.st_gid == gid && (st.st_mode & mask) == mask) {
      return absl::OkStatus();
    }
  }
  WalkOptions opts;
  opts.max_depth = kMaxOwnershipDepth;
  return WalkTree(dir, opts, [&](const WalkEntry& e) { return Apply(dir, e, gid, read_only); });
}

}  // namespace lustre_csi::volume
