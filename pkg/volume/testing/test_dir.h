// A temporary directory for tests, under $TEST_TMPDIR, removed (with all it
// holds) when the object goes out of scope. Test-only; not thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_TESTING_TEST_DIR_H_
#define LUSTRE_CSI_PKG_VOLUME_TESTING_TEST_DIR_H_

#include <string>

namespace lustre_csi::volume {

class TestDir {
 public:
  TestDir();
  ~TestDir();
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  // The directory's canonical absolute path.
  const std::string& path() const { return path_; }
  // path() + "/" + relative.
  std::string Sub(const std::string& relative) const { return path_ + "/" + relative; }

 private:
  std::string path_;
};

// Small helpers that abort the test binary on failure (set-up only).
void MakeDir(const std::string& path, unsigned mode = 0755);
void WriteFile(const std::string& path, const std::string& content);
void MakeSymlink(const std::string& target, const std::string& path);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_TESTING_TEST_DIR_H_
