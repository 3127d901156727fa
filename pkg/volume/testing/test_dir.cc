#include "pkg/volume/testing/test_dir.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lustre_csi::volume {
namespace {

[[noreturn]] void Die(const char* what, const std::string& path) {
  std::fprintf(stderr, "test set-up: %s %s: %s\n", what, path.c_str(), std::strerror(errno));
  std::abort();
}

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
  if (remove(path) == 0 || errno == ENOENT) return 0;
  std::fprintf(stderr, "test clean-up: remove %s: %s\n", path, std::strerror(errno));
  return 0;  // go on with the rest
}

}  // namespace

TestDir::TestDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/volXXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp", tmpl);
  char real[PATH_MAX];
  if (realpath(tmpl.c_str(), real) == nullptr) Die("realpath", tmpl);
  path_ = real;
}

TestDir::~TestDir() {
  // FTW_PHYS: never follow symlinks; FTW_MOUNT: never cross into a mount.
  nftw(path_.c_str(), RemoveOne, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void MakeDir(const std::string& path, unsigned mode) {
  if (mkdir(path.c_str(), mode) != 0) Die("mkdir", path);
  if (chmod(path.c_str(), mode) != 0) Die("chmod", path);
}

void WriteFile(const std::string& path, const std::string& content) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("create", path);
  if (write(fd, content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    Die("write", path);
  }
  close(fd);
}

void MakeSymlink(const std::string& target, const std::string& path) {
  if (symlink(target.c_str(), path.c_str()) != 0) Die("symlink", path);
}

}  // namespace lustre_csi::volume
