#include "pkg/driver/modes/mock_mode.h"

#include <glog/logging.h>

#include "absl/strings/str_join.h"
#include "pkg/volume/cleanup.h"

namespace lustre_csi::driver {
namespace {

// The conformance suites' mode: a publish leaves the target a plain
// directory, and an unpublish removes it.
class MockMode : public MountMode {
 public:
  explicit MockMode(volume::Syscalls* sys) : sys_(sys) {}
  Readiness CheckReady() override { return {}; }
  absl::Status Publish(const PublishTarget& t) override {
    VLOG(1) << "mock mount " << t.source.Spec() << " on " << t.target << " -o "
            << absl::StrJoin(t.options, ",");
    return absl::OkStatus();
  }
  absl::Status Unpublish(const std::string& target) override {
    return volume::CleanupMountPoint(*sys_, target);
  }
  absl::Status Detach(const std::string& target) override {
    return volume::DetachMountPoint(*sys_, target);
  }
  absl::Status Repair(const std::string& target) override {
    return volume::UnmountWithEscalation(*sys_, target);
  }
  absl::StatusOr<bool> IsPublished(const std::string& path) override {
    absl::StatusOr<volume::FileInfo> info = sys_->Stat(path);
    if (!info.ok()) return info.status();
    return true;
  }
  absl::StatusOr<bool> IsMountOf(const LustreSource&, const std::string&,
                                 const std::vector<std::string>&) override {
    return false;
  }

 private:
  volume::Syscalls* const sys_;
};

}  // namespace

std::unique_ptr<MountMode> NewMockMode(volume::Syscalls* sys) {
  return std::make_unique<MockMode>(sys);
}

}  // namespace lustre_csi::driver
