// tree-rss: the peak of the summed resident memory (VmRSS) of a process and
// all its descendants, sampled every millisecond until a file appears, for
// sizing a container's memory limit, which counts every process in it. A
// descendant that shares its parent's memory (the driver's isolated tasks,
// made with CLONE_VM; kcmp(2) KCMP_VM tells) is counted once, with its
// parent.
//
//   tree-rss <pid> <stop-file>   prints "peak_tree_rss_kb=N peak_processes=M
//                                 samples=S"
#include <dirent.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace {

// pid -> (ppid, VmRSS in kB) of every process now.
std::map<int, std::pair<int, long>> Processes() {
  std::map<int, std::pair<int, long>> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream status(std::string("/proc/") + e->d_name + "/status");
    int ppid = -1;
    long rss = 0;
    for (std::string line; std::getline(status, line);) {
      std::istringstream in(line);
      std::string key;
      in >> key;
      if (key == "PPid:") in >> ppid;
      if (key == "VmRSS:") in >> rss;
    }
    if (ppid >= 0) out[pid] = {ppid, rss};
  }
  closedir(d);
  return out;
}

// Whether `pid` and `parent` share one address space (the kernel's answer;
// false where it cannot tell).
bool SharesMemory(int pid, int parent) {
  return syscall(SYS_kcmp, pid, parent, KCMP_VM, 0, 0) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: tree-rss <pid> <stop-file>\n");
    return 2;
  }
  const int root = std::atoi(argv[1]);
  long peak = 0;
  size_t peak_procs = 0;
  long samples = 0;
  while (access(argv[2], F_OK) != 0) {
    std::map<int, std::pair<int, long>> procs = Processes();
    std::set<int> tree = {root};
    // Parents have lower numbers mostly, but not always: repeat until stable.
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [pid, info] : procs) {
        if (tree.count(info.first) > 0 && tree.insert(pid).second) grew = true;
      }
    }
    long sum = 0;
    for (int pid : tree) {
      auto it = procs.find(pid);
      if (it == procs.end()) continue;
      if (pid != root && SharesMemory(pid, it->second.first)) continue;
      sum += it->second.second;
    }
    if (sum > peak) {
      peak = sum;
      peak_procs = tree.size();
    }
    ++samples;
    usleep(1000);
  }
  printf("peak_tree_rss_kb=%ld peak_processes=%zu samples=%ld\n", peak, peak_procs, samples);
  return 0;
}
