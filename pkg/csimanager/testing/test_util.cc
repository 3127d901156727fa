#include "pkg/csimanager/testing/test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"

namespace lustre_csi::csimanager::fakes {
namespace {

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
  if (::remove(path) != 0) PLOG(WARNING) << "removing " << path;
  return 0;
}

}  // namespace

TempDir::TempDir() {
  char tmpl[] = "/tmp/csim.XXXXXX";
  char* made = ::mkdtemp(tmpl);
  PCHECK(made != nullptr) << "mkdtemp";
  path_ = made;
}

TempDir::~TempDir() { ::nftw(path_.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); }

std::string TempDir::Sub(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

absl::Status WriteFile(const std::string& path, absl::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), contents.size());
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("writing ", path));
  return absl::OkStatus();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

absl::Status MakeOlder(const std::string& path) {
  timespec when = absl::ToTimespec(absl::Now() - absl::Minutes(1));
  timespec times[2] = {when, when};
  if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("utimensat ", path));
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::csimanager::fakes
