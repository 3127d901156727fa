#include "pkg/driver/modes/mounting_mode.h"

#include <glog/logging.h>

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pkg/driver/parameters.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/left_behind.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/ownership.h"

namespace lustre_csi::driver {

namespace internal {

absl::Status EnsureSubDirIn(FileSystemAccess& fs, const LustreSource& source,
                            volume::Isolation* where) {
  if (source.sub_dir.empty()) return absl::OkStatus();
  return fs.WithFileSystemRoot(source, [&](volume::Syscalls& sys, const std::string& root) {
    return volume::RunIn(
        where, [&] { return volume::MkdirAllBeneath(sys, root, source.sub_dir, kSubDirMode); });
  });
}

absl::Status ExplainNotADirectory(FileSystemAccess& fs, const LustreSource& source,
                                  const absl::Status& status, volume::Isolation* where) {
  absl::Status named =
      fs.WithFileSystemRoot(source, [&](volume::Syscalls& sys, const std::string& root) {
        return volume::RunIn(
            where, [&] { return volume::ResolveBeneath(sys, root, source.sub_dir).status(); });
      });
  if (named.code() == absl::StatusCode::kInvalidArgument) return named;
  absl::Status said = absl::InvalidArgumentError(absl::StrCat(
      "sub-dir \"", source.sub_dir, "\" of ", source.fs_name,
      " is not a directory on the server: a component is a symlink or a file (sub-dirs are "
      "resolved without following symlinks): ",
      status.message()));
  // A root mount that gave up and left its helper waiting for the servers
  // still holds the file system up (MountSlots::Run).
  if (std::optional<uint64_t> left = volume::LeftBehindOf(named); left.has_value()) {
    return volume::WithLeftBehind(said, *left);
  }
  return said;
}

absl::Status MountingMode::Publish(const PublishTarget& t) {
  if (absl::Status s = MountHoldingSlot(t); !s.ok() || !t.volume_mount_group.has_value()) {
    return s;
  }
  if (t.read_only) {
    LOG(INFO) << "volume at " << t.target << " is read-only; fsGroup " << *t.volume_mount_group
              << " not applied";
    return absl::OkStatus();
  }
  absl::Status status = Isolated([&] {
    return volume::SetVolumeOwnership(*sys_, t.target, *t.volume_mount_group,
                                      /*read_only=*/false,
                                      volume::FsGroupChangePolicy::kOnRootMismatch);
  });
  if (status.ok()) return status;
  absl::Status undo = volume::UnmountWithEscalation(*sys_, t.target, TargetUnmount(t.target));
  if (!undo.ok()) LOG(ERROR) << "undoing mount at " << t.target << ": " << undo;
  Release(t.target, /*silent=*/false);
  return volume::Annotate(status, "applying fsGroup");
}

absl::Status MountingMode::MountHoldingSlot(const PublishTarget& t) {
  auto work = [&] {
    absl::Status status = Mount(t.source, t.target, t.options);
    if (status.code() == absl::StatusCode::kNotFound && !t.source.sub_dir.empty()) {
      // Most likely the sub-dir does not exist yet: create it and try again.
      LOG(INFO) << "mounting " << t.source.Spec() << " failed (" << status.message()
                << "); creating sub-dir " << t.source.sub_dir;
      status = EnsureSubDirIn(*this, t.source, target_unmount_.isolation);
      if (status.ok()) status = Mount(t.source, t.target, t.options);
    }
    if (volume::ErrnoOf(status) == ENOTDIR && !t.source.sub_dir.empty()) {
      return ExplainNotADirectory(*this, t.source, status, target_unmount_.isolation);
    }
    return status;
  };
  if (t.slots == nullptr) return work();
  LustreSource fs = t.source;
  fs.sub_dir.clear();
  return t.slots->Run(fs.Spec(), t.target, work);
}

absl::Status MountingMode::Unpublish(const std::string& target) {
  absl::Status status = volume::CleanupMountPoint(*sys_, target, TargetUnmount(target));
  Release(target, /*silent=*/false);
  return status;
}

absl::Status MountingMode::Detach(const std::string& target) {
  absl::Status status = volume::DetachMountPoint(*sys_, target, TargetUnmount(target));
  Release(target, /*silent=*/true);
  return status;
}

absl::Status MountingMode::Repair(const std::string& target) {
  return volume::UnmountWithEscalation(*sys_, target, TargetUnmount(target));
}

absl::StatusOr<bool> MountingMode::IsPublished(const std::string& path) {
  return volume::MountChecker(sys_).IsMountPoint(path);
}

std::string MountedSpec(const volume::MountEntry& e) {
  if (e.root.empty() || e.root == "/") return e.source;
  return absl::StrCat(absl::StripSuffix(e.source, "/"), e.root);
}

}  // namespace internal
}  // namespace lustre_csi::driver
