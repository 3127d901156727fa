// openat2(2)'s resolution beneath a directory, done in user space for kernels
// before Linux 5.6: one component at a time, each opened with
// O_PATH | O_NOFOLLOW from the descriptor of the one before, so no path is
// ever resolved by the kernel as a whole and nothing renamed or swapped in
// meanwhile can redirect the walk.
//
// The same contract as the kernel's, for the flags this project uses:
// - ".." is taken from the walk's own stack of descriptors, never from the
//   kernel: one that would climb above the starting directory is EXDEV;
// - a symlink is refused (ELOOP) under RESOLVE_NO_SYMLINKS, and a magic link
//   (any symlink on procfs) under RESOLVE_NO_MAGICLINKS; otherwise an
//   absolute one is EXDEV and a relative one is walked in its place, at most
//   40 in all (ELOOP);
// - under RESOLVE_NO_XDEV every step must stay on the starting directory's
//   mount (its mount id: MountIdAt below), EXDEV otherwise;
// - after every step the descriptor's path (/proc/self/fd) must still be
//   beneath the starting directory's, so a directory moved out of it while
//   the walk holds it is EXDEV rather than a way out.
// The last component is opened like the others; without O_PATH the result is
// then reopened through /proc/self/fd with the caller's flags (O_CREAT is not
// offered: EINVAL). O_NOFOLLOW stops at a final symlink as openat2 does, and
// a trailing slash asks for a directory as it does.
// Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_WALK_BENEATH_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_WALK_BENEATH_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace lustre_csi::volume::os {

// The path the kernel gives for the open file `fd` (readlink of
// /proc/self/fd/<fd>), or false with errno set.
bool FdPath(int fd, std::string* out);

// Like openat2(dir_fd, path, {flags, mode, resolve}): a descriptor, or -1
// with errno set. `resolve` must include RESOLVE_BENEATH and may add
// RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS and RESOLVE_NO_XDEV (anything
// else: EINVAL).
int WalkBeneath(int dir_fd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve);

// The mount id of `name` in the directory `dir_fd`, a final symlink not
// followed ("" for `dir_fd` itself): statx's STATX_MNT_ID where the kernel
// has it (5.8), else name_to_handle_at(2)'s mount id, else (a file system
// without file handles) /proc/self/fdinfo of an O_PATH descriptor. -1 with
// errno set on failure.
int64_t MountIdAt(int dir_fd, const char* name);

// The mount id of the open descriptor `fd` (an O_PATH one included) without
// a stat, so without asking the file system mounted there anything:
// name_to_handle_at(2)'s mount id (Linux 2.6.39), else (a file system
// without file handles, or a seccomp profile that refuses the call)
// /proc/self/fdinfo (3.15). -1 with errno set on failure (EBADF: not open).
int64_t MountIdOfDescriptor(int fd);

// MountIdOfDescriptor of what `path` names (its final symlink followed
// only when `follow`), from name_to_handle_at(2) of the path itself, else
// of a descriptor opened O_PATH for the fallback.
int64_t MountIdOfPath(const char* path, bool follow);

// The mount id `stx` reports - a statx(2) of `name` in `dir_fd` that asked
// for STATX_MNT_ID - where the kernel gives one, else MountIdAt's.
int64_t MountIdOf(const struct statx& stx, int dir_fd, const char* name);

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_WALK_BENEATH_H_
