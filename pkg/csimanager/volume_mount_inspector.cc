#include "pkg/csimanager/volume_mount_inspector.h"

#include "absl/strings/str_cat.h"
#include "pkg/volume/mount_table.h"

namespace lustre_csi::csimanager {
namespace {

class VolumeMountInspector : public MountInspector {
 public:
  explicit VolumeMountInspector(volume::Syscalls* sys) : sys_(sys), checker_(sys) {}

  absl::StatusOr<bool> IsMountPoint(const std::string& path) override {
    absl::StatusOr<bool> mounted = checker_.IsMountPoint(path);
    if (mounted.status().code() == absl::StatusCode::kNotFound) return false;
    return mounted;
  }

  absl::Status MkdirAll(const std::string& path, uint32_t mode) override {
    return volume::MkdirAll(*sys_, path, mode);
  }

  absl::Status RemoveDir(const std::string& path) override {
    absl::StatusOr<bool> mounted = IsMountPoint(path);
    if (!mounted.ok()) return mounted.status();
    if (*mounted) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is still a mount point; not removed"));
    }
    absl::Status status = sys_->Rmdir(path);
    if (status.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    return status;
  }

 private:
  volume::Syscalls* const sys_;
  volume::MountChecker checker_;
};

}  // namespace

std::unique_ptr<MountInspector> NewVolumeMountInspector(volume::Syscalls* sys) {
  return std::make_unique<VolumeMountInspector>(sys);
}

}  // namespace lustre_csi::csimanager
