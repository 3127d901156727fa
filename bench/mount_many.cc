// mount-many: adds N bind mounts under a directory, for benchmarks that need
// a node with many mounts. Run it inside a private mount namespace.
//
//   mount-many <dir> <n> [first]   creates <dir>/m<i> for i in [first, first+n) and
//                                  bind-mounts <dir>/src on each
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: mount-many <dir> <n> [first]\n");
    return 2;
  }
  std::string dir = argv[1];
  long n = strtol(argv[2], nullptr, 10);
  long first = argc == 4 ? strtol(argv[3], nullptr, 10) : 0;
  std::string src = dir + "/src";
  mkdir(dir.c_str(), 0755);
  mkdir(src.c_str(), 0755);
  for (long i = first; i < first + n; ++i) {
    std::string target = dir + "/m" + std::to_string(i);
    if (mkdir(target.c_str(), 0755) != 0 && errno != EEXIST) {
      perror(target.c_str());
      return 1;
    }
    if (mount(src.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      perror(target.c_str());
      return 1;
    }
  }
  return 0;
}
