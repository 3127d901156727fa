#!/usr/bin/env bash
# System calls only behind a seam: no source file under pkg/ (tests aside)
# includes a system-call header or calls a file-system or mount system call,
# except in the seam's Linux directory, pkg/volume/linux/, and the few files
# listed below with the reason. The list must never grow without a reason.
# Prints each offending line and exits 1; exits 0 when clean.
#   bash tools/check_seams.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# The seam itself: the real implementations, and the programs they start.
seam_dir=pkg/volume/linux/
# Test helpers: temporary directories, the fake plugins' socket files.
test_helpers=(
  pkg/volume/testing/test_dir.cc
  pkg/csimanager/testing/test_util.cc
  pkg/csimanager/testing/fake_plugin.cc
)
# Unix-socket files of the servers (bind, stale-socket removal).
sockets=(
  pkg/server/endpoint.cc
  pkg/server/grpc_server.cc
  pkg/server/http_server.cc
)
declare -A allowed=()
for f in "${test_helpers[@]}" "${sockets[@]}"; do allowed[$f]=1; done

headers='#include <(sys/mount\.h|sys/inotify\.h|sys/eventfd\.h|sys/statfs\.h|sys/vfs\.h|dirent\.h|fcntl\.h|sys/stat\.h)>'
calls='(^|[^:A-Za-z0-9_.>])(::)?(open|openat|openat2|fopen|stat|lstat|fstat|fstatat|statx|statfs|fstatfs|mkdir|mkdirat|mkdtemp|rmdir|unlink|unlinkat|opendir|fdopendir|readdir|access|faccessat|mount|umount|umount2|inotify_init1|inotify_add_watch|eventfd|chown|fchown|lchown|fchownat|chmod|fchmod|fchmodat|symlink|symlinkat|link|linkat|mknod|mknodat|mkfifo|truncate|ftruncate|readlink|rename|renameat|syscall)\(|std::filesystem::'
# A broken pattern would match nothing and pass everything: check them first.
for pattern in "$headers" "$calls"; do
  rc=0
  grep -qE "$pattern" <<<"" || rc=$?
  [[ $rc -le 1 ]] || { echo "tools/check_seams.sh: bad pattern: $pattern"; exit 2; }
done

# Tracked and new (untracked, not ignored) files; an empty list is an error,
# not a pass.
mapfile -t files < <(git ls-files --cached --others --exclude-standard 'pkg/*.cc' 'pkg/*.h' |
  grep -v '_test\.cc$' | sort -u)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "tools/check_seams.sh: no source files under pkg/ (not a git checkout?)"
  exit 2
fi

bad=0
for file in "${files[@]}"; do
  [[ -e "$file" ]] || continue  # deleted in the working tree
  [[ "$file" == "$seam_dir"* ]] && continue
  [[ -n "${allowed[$file]:-}" ]] && continue
  hits=$({ grep -nE "$headers" "$file" || true; grep -nE "$calls" "$file" || true; } |
    grep -vE '^[0-9]+:\s*//' || true)
  while IFS= read -r hit; do
    [[ -z "$hit" ]] && continue
    echo "$file:$hit"
    bad=1
  done <<<"$hits"
done

[[ -d "$seam_dir" ]] || { echo "tools/check_seams.sh: the seam directory $seam_dir is missing"; bad=1; }
for f in "${!allowed[@]}"; do
  [[ -e "$f" ]] || { echo "tools/check_seams.sh lists $f, which does not exist"; bad=1; }
done
if [[ $bad -ne 0 ]]; then
  echo "system calls outside the seam: use pkg/volume's Syscalls (or list the file above, with the reason)"
  exit 1
fi
echo "system calls only behind the seam"
