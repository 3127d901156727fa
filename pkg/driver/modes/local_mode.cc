#include "pkg/driver/modes/local_mode.h"

#include "absl/strings/str_cat.h"
#include "pkg/base/status_macros.h"
#include "pkg/driver/modes/mounting_mode.h"
#include "pkg/driver/mount_options.h"
#include "pkg/driver/parameters.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/mounter.h"

namespace lustre_csi::driver {
namespace {

class LocalMode : public internal::MountingMode {
 public:
  LocalMode(volume::Syscalls* sys, std::string local_root, volume::Isolation* isolation)
      : MountingMode(sys, internal::BindUnmountOptions(isolation)),
        sys_(sys),
        root_(std::move(local_root)) {}

  Readiness CheckReady() override {
    absl::StatusOr<volume::FileInfo> info = sys_->Stat(root_);
    if (!info.ok()) {
      return {absl::FailedPreconditionError(
                  absl::StrCat("local root ", root_, " is not usable: ", info.status().message())),
              "local-root"};
    }
    return {};
  }

  absl::Status WithFileSystemRoot(const LustreSource& source, const FsRootFn& fn) override {
    absl::StatusOr<std::string> fs_root = FsRoot(source);
    if (!fs_root.ok()) return fs_root.status();
    return fn(*sys_, *fs_root);
  }

  // A bind from the directory resolved strictly beneath the file system's
  // root (volume::BindDirBeneath), never from a path resolved again.
  absl::Status Mount(const LustreSource& source, const std::string& target,
                     const std::vector<std::string>& options) override {
    absl::StatusOr<volume::BindOptions> flags = volume::ParseBindOptions(options);
    if (!flags.ok() || flags->recursive) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind mount of ", source.Spec(), " on ", target, ": ",
                       flags.ok() ? "recursive binds are not offered" : flags.status().message()));
    }
    // The root's file system may not answer: in a task of its own.
    absl::Status bound = Isolated([&] {
      absl::StatusOr<std::string> fs_root = FsRoot(source);
      if (!fs_root.ok()) return fs_root.status();
      return volume::BindDirBeneath(*sys_, *fs_root, source.sub_dir, target, flags->flags);
    });
    if (bound.code() == absl::StatusCode::kUnimplemented) {
      return absl::FailedPreconditionError(
          absl::StrCat("bind mount of ", source.Spec(), " on ", target, ": ", bound.message()));
    }
    return bound;
  }

  absl::StatusOr<bool> IsMountOf(const LustreSource& source, const std::string& target,
                                 const std::vector<std::string>& options) override {
    ASSIGN_OR_RETURN(std::string fs_root, FsRoot(source));
    absl::StatusOr<volume::FileInfo> want =
        source.sub_dir.empty() ? sys_->Stat(fs_root)
                               : volume::StatBeneath(*sys_, fs_root, source.sub_dir);
    if (absl::IsNotFound(want.status())) return false;
    if (!want.ok()) return want.status();
    ASSIGN_OR_RETURN(volume::FileInfo have, sys_->Stat(target));
    if (want->dev != have.dev || want->ino != have.ino) return false;
    volume::MountChecker checker(sys_);
    ASSIGN_OR_RETURN(std::optional<volume::MountEntry> entry, checker.FindMountAt(target));
    // A bind mount inherits its source mount's flags on top of those asked for.
    return entry.has_value() && PerMountFlagsMatch(entry->options, options, false);
  }

 private:
  // <local-root>/<fs>, which must be a directory: it stands for the file
  // system (the fs-name is checked: one component of [A-Za-z0-9_-]).
  absl::StatusOr<std::string> FsRoot(const LustreSource& source) {
    // Not every caller has validated it (a delete of any id).
    if (absl::Status s = ValidateFsName(source.fs_name); !s.ok()) return s;
    std::string fs_root = absl::StrCat(root_, "/", source.fs_name);
    absl::StatusOr<volume::FileInfo> info = sys_->Stat(fs_root);
    if (absl::IsNotFound(info.status())) {
      return absl::NotFoundError(absl::StrCat("file system ", source.fs_name,
                                              " does not exist (no directory ", fs_root, ")"));
    }
    if (!info.ok()) return info.status();
    if (!volume::IsDirectoryMode(info->mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("file system ", source.fs_name, ": ", fs_root, " is not a directory"));
    }
    return fs_root;
  }

  volume::Syscalls* const sys_;
  const std::string root_;
};

}  // namespace

std::unique_ptr<internal::MountingMode> NewLocalMode(volume::Syscalls* sys, std::string local_root,
                                                     volume::Isolation* isolation) {
  return std::make_unique<LocalMode>(sys, std::move(local_root), isolation);
}

}  // namespace lustre_csi::driver
