// FakeNode: a node's file system for the manager's tests: pkg/volume's
// FakeSyscalls, with the MountInspector the daemon uses over it, so the
// tests check mounts the way the daemon does. Fake plugins mount and
// unmount through SetMounted. Thread-safe.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAKE_NODE_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAKE_NODE_H_

#include <memory>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "pkg/csimanager/mount_inspector.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::csimanager::fakes {

class FakeNode {
 public:
  FakeNode();

  // What the manager is given (ManagerDeps::mounts, VolumeManager).
  MountInspector* inspector() { return inspector_.get(); }
  volume::FakeSyscalls& sys() { return sys_; }

  // What a plugin does at `path`: mounts a file system there (making the
  // directory and its parents) unless one is there, or unmounts it.
  void SetMounted(const std::string& path, bool mounted);
  // Mount points, "/" aside.
  std::set<std::string> mounts();
  bool Exists(const std::string& path) const { return sys_.Exists(path); }

 private:
  volume::FakeSyscalls sys_;
  std::unique_ptr<MountInspector> inspector_;
  absl::Mutex set_mu_;  // one SetMounted at a time: check and mount together
};

}  // namespace lustre_csi::csimanager::fakes

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAKE_NODE_H_
