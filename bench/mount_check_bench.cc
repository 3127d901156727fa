// Prints the cost of one mount-point check as the mount table grows.
//
// In a private mount namespace of its own (nothing reaches the host), it
// bind-mounts a directory N times for N = 10, 1,000 and 10,000 (or the counts
// given as arguments) and times, per call:
//   statx        MountChecker::IsMountPoint as shipped (STATX_ATTR_MOUNT_ROOT)
//   mnt-id       the same with STATX_ATTR_MOUNT_ROOT hidden: statx of the path
//                and its parent, mount ids compared (kernels 5.8 before ..)
//   table        reading and parsing /proc/self/mountinfo and looking the path
//                up (FindMountAt; what a table-based check costs every time)
// each for a mount point and for a plain directory. Needs root.
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/syscalls.h"
#include "pkg/volume/syscalls_wrapper.h"

namespace lustre_csi::volume {
namespace {

// The real system calls, with STATX_ATTR_MOUNT_ROOT hidden, as an older
// kernel would report them.
class NoMountRoot : public SyscallsWrapper {
 public:
  explicit NoMountRoot(Syscalls* real) : SyscallsWrapper(real) {}
  absl::StatusOr<FileInfo> Stat(const std::string& p) override {
    absl::StatusOr<FileInfo> info = SyscallsWrapper::Stat(p);
    if (info.ok()) info->has_mount_root = info->mount_root = false;
    return info;
  }
};

// Nanoseconds per call of `fn`, run for about `budget` (at least 5 calls).
template <typename Fn>
double NsPerCall(Fn fn, std::chrono::milliseconds budget) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) fn();  // warm up
  long calls = 0;
  Clock::time_point start = Clock::now();
  Clock::time_point end = start + budget;
  Clock::time_point now = start;
  while (now < end || calls < 5) {
    for (int i = 0; i < 16; ++i) fn();
    calls += 16;
    now = Clock::now();
  }
  return std::chrono::duration<double, std::nano>(now - start).count() / calls;
}

[[noreturn]] void Die(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "mount_check_bench: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

int Run(const std::vector<int>& counts) {
  if (unshare(CLONE_NEWNS) != 0) {
    std::perror("mount_check_bench: unshare(CLONE_NEWNS) (needs root)");
    return 1;
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    std::perror("mount_check_bench: make / private");
    return 1;
  }
  std::unique_ptr<Syscalls> sys = NewLinuxSyscalls();
  NoMountRoot old_kernel(sys.get());
  MountChecker checker(sys.get());
  MountChecker fallback(&old_kernel);

  char tmpl[] = "/tmp/mount-check-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  std::string base = tmpl;
  if (absl::Status s = sys->Mount("bench", base, "tmpfs", 0, "size=16m"); !s.ok()) {
    Die("mount tmpfs", s);
  }
  std::string src = base + "/src";
  std::string plain = base + "/plain";
  for (const std::string& d : {src, plain, base + "/m"}) {
    if (absl::Status s = sys->Mkdir(d, 0755); !s.ok()) Die("mkdir", s);
  }

  std::printf("Per-call cost of a mount-point check (ns/call), private mount namespace.\n");
  std::printf("%8s %8s | %12s %12s | %12s %12s | %12s %12s\n", "added", "table", "statx:mnt",
              "statx:dir", "mnt-id:mnt", "mnt-id:dir", "table:mnt", "table:dir");
  int added = 0;
  for (int want : counts) {
    for (; added < want; ++added) {
      std::string d = base + "/m/" + std::to_string(added);
      if (absl::Status s = sys->Mkdir(d, 0755); !s.ok()) Die("mkdir", s);
      if (absl::Status s = sys->Mount(src, d, "", MS_BIND, ""); !s.ok()) Die("bind", s);
    }
    absl::StatusOr<std::vector<MountEntry>> table = checker.List();
    if (!table.ok()) Die("list", table.status());
    std::string mnt = base + "/m/" + std::to_string(added / 2);
    // Sanity: every method must agree before it is timed.
    absl::StatusOr<bool> a = checker.IsMountPoint(mnt);
    absl::StatusOr<bool> b = fallback.IsMountPoint(mnt);
    absl::StatusOr<std::optional<MountEntry>> c = checker.FindMountAt(mnt);
    if (!a.ok() || !b.ok() || !c.ok() || !*a || !*b || !c->has_value() ||
        *checker.IsMountPoint(plain) || *fallback.IsMountPoint(plain)) {
      std::fprintf(stderr, "mount_check_bench: methods disagree at %s\n", mnt.c_str());
      return 1;
    }
    auto fast = std::chrono::milliseconds(300);
    auto slow = std::chrono::milliseconds(1000);
    double statx_mnt = NsPerCall([&] { (void)checker.IsMountPoint(mnt); }, fast);
    double statx_dir = NsPerCall([&] { (void)checker.IsMountPoint(plain); }, fast);
    double id_mnt = NsPerCall([&] { (void)fallback.IsMountPoint(mnt); }, fast);
    double id_dir = NsPerCall([&] { (void)fallback.IsMountPoint(plain); }, fast);
    double table_mnt = NsPerCall([&] { (void)checker.FindMountAt(mnt); }, slow);
    double table_dir = NsPerCall([&] { (void)checker.FindMountAt(plain); }, slow);
    std::printf("%8d %8zu | %12.0f %12.0f | %12.0f %12.0f | %12.0f %12.0f\n", added, table->size(),
                statx_mnt, statx_dir, id_mnt, id_dir, table_mnt, table_dir);
    std::fflush(stdout);
  }
  // Everything below the base goes with one detach; the namespace goes with
  // the process anyway.
  if (absl::Status s = sys->Unmount(base, MNT_DETACH); !s.ok()) Die("unmount", s);
  if (absl::Status s = sys->Rmdir(base); !s.ok()) Die("rmdir", s);
  return 0;
}

}  // namespace
}  // namespace lustre_csi::volume

int main(int argc, char** argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) {
    int n = 0;
    if (!absl::SimpleAtoi(argv[i], &n) || n < 1 || (!counts.empty() && n < counts.back())) {
      std::fprintf(stderr, "usage: %s [ascending mount counts, default 10 1000 10000]\n", argv[0]);
      return 2;
    }
    counts.push_back(n);
  }
  if (counts.empty()) counts = {10, 1000, 10000};
  return lustre_csi::volume::Run(counts);
}
