// FakeMountInspector: an in-memory MountInspector for tests.
//
// It keeps a set of directories and a set of mount points. Fake plugins mark
// paths mounted and unmounted through SetMounted; RemoveDir refuses a mount
// point (EBUSY-like) and a directory with children. Errors can be injected
// per operation. Thread-safe.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_FAKE_MOUNT_INSPECTOR_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_FAKE_MOUNT_INSPECTOR_H_

#include <deque>
#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "pkg/csimanager/mount_inspector.h"

namespace lustre_csi::csimanager::fakes {

class FakeMountInspector : public MountInspector {
 public:
  absl::StatusOr<bool> IsMountPoint(const std::string& path) override;
  absl::Status MkdirAll(const std::string& path, uint32_t mode) override;
  absl::Status RemoveDir(const std::string& path) override;

  // Marks `path` (and its parents as directories) mounted or not.
  void SetMounted(const std::string& path, bool mounted);
  // The next call of `op` ("IsMountPoint", "MkdirAll", "RemoveDir") fails.
  void FailNext(const std::string& op, absl::Status status);

  std::set<std::string> mounts();
  std::set<std::string> dirs();

 private:
  absl::Status Injected(const std::string& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddDirs(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::set<std::string> dirs_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> mounts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::deque<absl::Status>> failures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::csimanager::fakes

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_FAKE_MOUNT_INSPECTOR_H_
