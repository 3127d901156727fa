#include "pkg/csimanager/testing/fake_node.h"

#include "glog/logging.h"
#include "pkg/csimanager/volume_mount_inspector.h"
#include "pkg/volume/mount_table.h"

namespace lustre_csi::csimanager::fakes {

FakeNode::FakeNode() : inspector_(NewVolumeMountInspector(&sys_)) {}

void FakeNode::SetMounted(const std::string& path, bool mounted) {
  absl::MutexLock lock(&set_mu_);
  absl::StatusOr<bool> now = inspector_->IsMountPoint(path);
  CHECK(now.ok()) << now.status();
  if (mounted && !*now) {
    absl::Status made = volume::MkdirAll(sys_, path, 0755);
    CHECK(made.ok()) << made;
    absl::Status done = sys_.Mount("fake", path, "tmpfs", 0, "");
    CHECK(done.ok()) << done;
  } else if (!mounted && *now) {
    absl::Status done = sys_.Unmount(path, 0);
    CHECK(done.ok()) << done;
  }
}

std::set<std::string> FakeNode::mounts() {
  absl::StatusOr<std::vector<volume::MountEntry>> entries = volume::MountChecker(&sys_).List();
  CHECK(entries.ok()) << entries.status();
  std::set<std::string> out;
  for (const volume::MountEntry& entry : *entries) {
    if (entry.mount_point != "/") out.insert(entry.mount_point);
  }
  return out;
}

}  // namespace lustre_csi::csimanager::fakes
