// Test helpers: a private temporary directory that is removed, with all it
// holds, when the helper goes out of scope.
//
// Directories are made under /tmp rather than TEST_TMPDIR because unix
// socket paths must stay under 108 bytes. Removal never crosses into another
// file system, so a mount left by a failed test is not emptied.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_TESTING_TEST_UTIL_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_TESTING_TEST_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::csimanager::fakes {

class TempDir {
 public:
  TempDir();  // aborts the test binary when /tmp is unusable
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Sub(absl::string_view name) const;

 private:
  std::string path_;
};

// Writes `contents` to `path`, replacing it.
absl::Status WriteFile(const std::string& path, absl::string_view contents);
bool PathExists(const std::string& path);
// Sets the modification time of `path` (not following a symlink) to a
// minute ago, so that anything made from now on is strictly newer.
absl::Status MakeOlder(const std::string& path);

}  // namespace lustre_csi::csimanager::fakes

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_TESTING_TEST_UTIL_H_
