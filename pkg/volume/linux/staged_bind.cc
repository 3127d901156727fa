#include "pkg/volume/linux/staged_bind.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/mountinfo_file.h"
#include "pkg/volume/linux/walk_beneath.h"
#include "pkg/volume/mount_table.h"

namespace lustre_csi::volume::os {
namespace {

// The per-mount flags a bind remount sets.
constexpr unsigned long kPerMountFlags =
    MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME;
constexpr unsigned long kAtimeFlags = MS_NOATIME | MS_RELATIME | MS_STRICTATIME;
constexpr char kOwnerSuffix[] = ".owner";

// statfs(2)'s f_flags bit for nosymfollow (Linux 5.10), which older C
// libraries do not name.
constexpr unsigned long kStNosymfollow = 0x2000;

// Whether the mount with id `mount_id` is shared (a "shared:N" optional field
// in /proc/self/mountinfo): what is mounted below it then propagates.
absl::StatusOr<bool> IsShared(int64_t mount_id) {
  absl::StatusOr<std::string> text = ReadMountInfoFile();
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<MountEntry>> table = ParseMountInfo(*text);
  if (!table.ok()) return table.status();
  for (const MountEntry& e : *table) {
    if (e.mount_id != mount_id) continue;
    for (const std::string& field : e.optional_fields) {
      if (absl::StartsWith(field, "shared:")) return true;
    }
    return false;
  }
  return absl::NotFoundError(absl::StrCat("mount ", mount_id, " is not in /proc/self/mountinfo"));
}

}  // namespace

unsigned long MountFlagsOfStatfs(unsigned long f_flags) {
  constexpr std::pair<unsigned long, unsigned long> kMap[] = {
      {ST_RDONLY, MS_RDONLY},     {ST_NOSUID, MS_NOSUID},          {ST_NODEV, MS_NODEV},
      {ST_NOEXEC, MS_NOEXEC},     {ST_NOATIME, MS_NOATIME},        {ST_NODIRATIME, MS_NODIRATIME},
      {ST_RELATIME, MS_RELATIME}, {kStNosymfollow, MS_NOSYMFOLLOW}};
  unsigned long out = 0;
  for (const auto& [st, ms] : kMap) {
    if ((f_flags & st) != 0) out |= ms;
  }
  if ((out & (MS_NOATIME | MS_RELATIME)) == 0) out |= MS_STRICTATIME;
  return out;
}

namespace {

absl::Status MkdirAll(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = slash == std::string::npos ? path : path.substr(0, slash);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoError(errno, absl::StrCat("mkdir ", prefix));
    }
    if (slash == std::string::npos) return absl::OkStatus();
  }
}

}  // namespace

BindStaging::BindStaging(std::string dir) : dir_(std::move(dir)) {}

absl::Status BindStaging::Prepare() {
  absl::MutexLock lock(&mu_);
  auto fail = [&](const absl::Status& s) {
    prepared_ = false;
    return absl::FailedPreconditionError(absl::StrCat(
        "the staging directory ", dir_,
        " for bind mounts (this kernel has no mount_setattr) cannot be prepared: ", s.message()));
  };
  if (dir_.empty() || dir_[0] != '/') return fail(absl::InvalidArgumentError("not absolute"));
  // Checked again (readiness asks every period): one call when nothing
  // changed, the whole preparation when the directory or its mount did.
  if (prepared_ && MountIdAt(AT_FDCWD, dir_.c_str()) == prepared_mount_) return absl::OkStatus();
  if (absl::Status s = MkdirAll(dir_); !s.ok()) return fail(s);
  int64_t self = MountIdAt(AT_FDCWD, dir_.c_str());
  if (self < 0) return fail(ErrnoError(errno, "mount id"));
  int64_t parent = MountIdAt(AT_FDCWD, (dir_ + "/..").c_str());
  if (parent < 0) return fail(ErrnoError(errno, "mount id of the parent"));
  if (self != parent) {
    // A mount of its own already (an earlier start's): keep it private.
    if (mount(nullptr, dir_.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) {
      return fail(ErrnoError(errno, "make private"));
    }
  } else {
    // On a shared mount, what is staged would propagate (and could not be
    // moved away): give the directory a private mount of its own. On a
    // private or slave mount (a container's socket directory) it needs none,
    // and nothing new appears in anyone's mount table.
    absl::StatusOr<bool> shared = IsShared(self);
    if (!shared.ok()) return fail(shared.status());
    if (*shared) {
      if (mount(dir_.c_str(), dir_.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        return fail(ErrnoError(errno, "bind onto itself"));
      }
      if (mount(nullptr, dir_.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) {
        int err = errno;
        umount2(dir_.c_str(), MNT_DETACH);
        return fail(ErrnoError(err, "make private"));
      }
    }
  }
  if (owner_fd_ < 0) {
    // This process's mark: its staging points are named <token>-<n>, and
    // <token>.owner stays locked while it lives, so another process sharing
    // the directory (a second node pod during an update) never takes them.
    unsigned char random[8];
    if (getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
      return fail(ErrnoError(errno, "getrandom"));
    }
    token_ = absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(random), sizeof(random)));
    const std::string owner = absl::StrCat(dir_, "/", token_, kOwnerSuffix);
    int fd = open(owner.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return fail(ErrnoError(errno, absl::StrCat("create ", owner)));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      close(fd);
      unlink(owner.c_str());
      return fail(ErrnoError(err, absl::StrCat("lock ", owner)));
    }
    owner_fd_ = fd;
    SweepDeadOwners();
  }
  prepared_mount_ = MountIdAt(AT_FDCWD, dir_.c_str());
  prepared_ = true;
  return absl::OkStatus();
}

BindStaging::~BindStaging() {
  if (owner_fd_ >= 0) {
    unlink(absl::StrCat(dir_, "/", token_, kOwnerSuffix).c_str());
    close(owner_fd_);
  }
}

void BindStaging::SweepDeadOwners() {
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.push_back(e->d_name);
    }
  }
  closedir(d);
  // Live owners: a lock someone holds.
  std::set<std::string> live = {token_};
  for (const std::string& name : names) {
    if (!absl::EndsWith(name, kOwnerSuffix) || absl::StartsWith(name, token_)) continue;
    std::string owner = absl::StrCat(dir_, "/", name);
    int fd = open(owner.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (held) live.insert(name.substr(0, name.size() - std::strlen(kOwnerSuffix)));
    close(fd);
  }
  // A process that died between a bind and its move left it here: detach
  // it. Everything not of a live owner goes.
  for (const std::string& name : names) {
    std::string token = name.substr(0, name.find_first_of("-."));
    if (live.count(token) > 0) continue;
    std::string path = absl::StrCat(dir_, "/", name);
    umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    if (rmdir(path.c_str()) != 0) unlink(path.c_str());
  }
}

absl::Status BindStaging::Bind(const std::string& source, const std::string& target,
                               unsigned long flags, bool make_private, bool keep_source_flags) {
  bool prepared;
  {
    absl::MutexLock lock(&mu_);
    prepared = prepared_;
  }
  if (!prepared) {
    if (absl::Status s = Prepare(); !s.ok()) return s;
  }
  const std::string what =
      absl::StrCat("bind mount of ", source, " on ", target, " (flags 0x", absl::Hex(flags), ")");
  // A directory is staged on a directory, anything else on a file.
  struct stat source_st;
  if (stat(source.c_str(), &source_st) != 0) return ErrnoError(errno, absl::StrCat(what, ": stat"));
  const bool dir = S_ISDIR(source_st.st_mode);
  const std::string stage = absl::StrCat(dir_, "/", token_, "-", next_.fetch_add(1));
  int made = dir ? mkdir(stage.c_str(), 0700)
                 : open(stage.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (made < 0) return ErrnoError(errno, absl::StrCat(what, ": staging point ", stage));
  if (!dir) close(made);
  bool mounted = false;
  absl::Cleanup undo = [&] {
    if (mounted) umount2(stage.c_str(), MNT_DETACH);
    if (dir) {
      rmdir(stage.c_str());
    } else {
      unlink(stage.c_str());
    }
  };
  auto fail = [&](const char* step) {
    return ErrnoError(errno, absl::StrCat(what, ": ", step, " (staged on ", stage, ")"));
  };
  if (mount(source.c_str(), stage.c_str(), nullptr, MS_BIND, nullptr) != 0) return fail("bind");
  mounted = true;
  if (make_private && mount(nullptr, stage.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) {
    return fail("make private");
  }
  if ((flags & (kPerMountFlags | kAtimeFlags)) != 0) {
    unsigned long keep = 0;
    if (keep_source_flags) {
      struct statvfs st;
      if (statvfs(stage.c_str(), &st) != 0) return fail("statvfs");
      keep = MountFlagsOfStatfs(st.f_flag);
      if ((flags & kAtimeFlags) != 0) keep &= ~kAtimeFlags;
    }
    unsigned long remount = MS_REMOUNT | MS_BIND | keep | (flags & (kPerMountFlags | kAtimeFlags));
    if (mount(nullptr, stage.c_str(), nullptr, remount, nullptr) != 0) return fail("bind remount");
  }
  // The target as it is now, not through a symlink swapped in later.
  int target_fd = open(target.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (target_fd < 0) return fail("open target");
  absl::Cleanup close_target = [target_fd] { close(target_fd); };
  struct stat st;
  if (fstat(target_fd, &st) != 0) return fail("stat target");
  if (S_ISLNK(st.st_mode)) {
    errno = ELOOP;
    return fail("target is a symlink");
  }
  const std::string target_link = absl::StrCat("/proc/self/fd/", target_fd);
  if (mount(stage.c_str(), target_link.c_str(), nullptr, MS_MOVE, nullptr) != 0) {
    return fail("move to the target");
  }
  mounted = false;
  return absl::OkStatus();
}

}  // namespace lustre_csi::volume::os
