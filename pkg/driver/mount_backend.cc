#include "pkg/driver/mount_backend.h"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "pkg/base/status_macros.h"
#include "pkg/driver/host_tool.h"
#include "pkg/driver/mount_backend_internal.h"
#include "pkg/driver/mount_options.h"
#include "pkg/driver/parameters.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/mounter.h"
#include "pkg/volume/ownership.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::driver {
namespace internal {

absl::Status EnsureSubDirIn(FileSystemAccess& fs, const LustreSource& source) {
  if (source.sub_dir.empty()) return absl::OkStatus();
  return fs.WithFileSystemRoot(source, [&](volume::Syscalls& sys, const std::string& root) {
    return volume::MkdirAllBeneath(sys, root, source.sub_dir, kSubDirMode);
  });
}

absl::Status ExplainNotADirectory(FileSystemAccess& fs, const LustreSource& source,
                                  const absl::Status& status) {
  absl::Status named =
      fs.WithFileSystemRoot(source, [&](volume::Syscalls& sys, const std::string& root) {
        return volume::ResolveBeneath(sys, root, source.sub_dir).status();
      });
  if (named.code() == absl::StatusCode::kInvalidArgument) return named;
  return absl::InvalidArgumentError(absl::StrCat(
      "sub-dir \"", source.sub_dir, "\" of ", source.fs_name,
      " is not a directory on the server: a component is a symlink or a file (sub-dirs are "
      "resolved without following symlinks): ",
      status.message()));
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
  absl::Status status =
      volume::SetVolumeOwnership(*sys_, t.target, *t.volume_mount_group,
                                 /*read_only=*/false, volume::FsGroupChangePolicy::kOnRootMismatch);
  if (status.ok()) return status;
  absl::Status undo = volume::UnmountWithEscalation(*sys_, t.target, target_unmount_);
  if (!undo.ok()) LOG(ERROR) << "undoing mount at " << t.target << ": " << undo;
  Release(t.target);
  return volume::Annotate(status, "applying fsGroup");
}

absl::Status MountingMode::MountHoldingSlot(const PublishTarget& t) {
  if (t.slots != nullptr) {
    if (absl::Status s = t.slots->Acquire(); !s.ok()) return s;
  }
  absl::Cleanup release = [&t] {
    if (t.slots != nullptr) t.slots->Release();
  };
  absl::Status status = Mount(t.source, t.target, t.options);
  if (status.code() == absl::StatusCode::kNotFound && !t.source.sub_dir.empty()) {
    // Most likely the sub-dir does not exist yet: create it and try again.
    LOG(INFO) << "mounting " << t.source.Spec() << " failed (" << status.message()
              << "); creating sub-dir " << t.source.sub_dir;
    status = EnsureSubDirIn(*this, t.source);
    if (status.ok()) status = Mount(t.source, t.target, t.options);
  }
  if (volume::ErrnoOf(status) == ENOTDIR && !t.source.sub_dir.empty()) {
    return ExplainNotADirectory(*this, t.source, status);
  }
  return status;
}

absl::Status MountingMode::Unpublish(const std::string& target) {
  absl::Status status = volume::CleanupMountPoint(*sys_, target, target_unmount_);
  Release(target);
  return status;
}

absl::Status MountingMode::Repair(const std::string& target) {
  return volume::UnmountWithEscalation(*sys_, target, target_unmount_);
}

absl::StatusOr<bool> MountingMode::IsPublished(const std::string& path) {
  return volume::MountChecker(sys_).IsMountPoint(path);
}

std::string MountedSpec(const volume::MountEntry& e) {
  if (e.root.empty() || e.root == "/") return e.source;
  return absl::StrCat(absl::StripSuffix(e.source, "/"), e.root);
}

}  // namespace internal

namespace {

using internal::MountedSpec;

// Whether /proc/filesystems text lists `lustre` (the type is the last field).
bool ListsLustre(absl::string_view filesystems) {
  for (absl::string_view line : absl::StrSplit(filesystems, '\n')) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (!fields.empty() && fields.back() == "lustre") return true;
  }
  return false;
}

// Whether modules.dep text has a lustre module (lustre.ko, maybe compressed).
bool InstallsLustre(absl::string_view modules_dep) {
  for (absl::string_view line : absl::StrSplit(modules_dep, '\n')) {
    absl::string_view module = line.substr(0, line.find(':'));
    absl::string_view base = module.substr(module.rfind('/') + 1);
    if (base == "lustre.ko" || absl::StartsWith(base, "lustre.ko.")) return true;
  }
  return false;
}

class LustreBackend : public internal::MountingMode {
 public:
  LustreBackend(volume::Syscalls* sys, volume::MountNamespace* ns, LustreBackendOptions options)
      : MountingMode(sys), sys_(sys), ns_(ns), options_(std::move(options)) {}

  Readiness CheckReady() override {
    Readiness r = CheckHelperAndModule();
    if (!r.status.ok()) return r;
    return CheckWorkingDir();
  }

  // Mounts made in the namespace under the working mount dir (the shared
  // clients, sub-dir work) and at targets beside it must show in the
  // driver's view at the same paths: the directory must be one on both
  // sides. A directory made here must exist there. (Nomad: a
  // client_state_dir that is not the client's state_dir binds the plugin
  // directory at a path the host does not have.)
  Readiness CheckWorkingDir() {
    const std::string& base = options_.working_mount_dir;
    absl::StatusOr<std::string> probe = MakeWorkingDir(".view-check-");
    if (!probe.ok()) return {probe.status(), "working-dir"};
    absl::StatusOr<bool> there = ns_->Exists(*probe);
    absl::Status removed = sys_->Rmdir(*probe);
    if (!removed.ok()) LOG(WARNING) << "removing " << *probe << ": " << removed;
    if (there.ok() && *there) return {};
    return {absl::FailedPreconditionError(absl::StrCat(
                "the working mount dir ", base, " is not the same directory in ", ns_->Describe(),
                " as in the driver's view (",
                there.ok() ? "a directory made here does not show there"
                           : std::string(there.status().message()),
                "), so mounts made there would not reach the targets: it must be a directory "
                "both share at the same path (Kubernetes: under the Bidirectional kubelet "
                "directory; Nomad: client_state_dir must be the client's state_dir)")),
            "working-dir"};
  }

  Readiness CheckHelperAndModule() {
    // Can the namespace be entered at all?
    absl::StatusOr<bool> root = ns_->Exists("/");
    if (!root.ok()) {
      return {absl::FailedPreconditionError(absl::StrCat(
                  "cannot enter ", ns_->Describe(), ": ", root.status().message(),
                  " (the driver needs CAP_SYS_ADMIN and CAP_SYS_CHROOT: a privileged container)")),
              "mount-namespace"};
    }
    // Does the helper run there?
    const std::string& helper = options_.mount_helper;
    absl::StatusOr<volume::ProcessResult> version =
        ns_->Run({helper, "-V"}, HostToolEnvironment(), options_.check_timeout);
    std::string cannot_run;
    if (!version.ok()) {
      cannot_run = std::string(version.status().message());
    } else if (!version->signaled && (version->exit_code == 126 || version->exit_code == 127)) {
      cannot_run =
          absl::StrCat(helper, " -V: ", version->Describe(), ": ", HostToolOutput(version->output));
    }
    if (!cannot_run.empty()) {
      std::string hint;
      absl::StatusOr<bool> own = ns_->IsOwn();
      if (own.ok() && *own && ns_->Describe() != kOwnNamespace) {
        hint = absl::StrCat("; ", ns_->Describe(),
                            " is the driver's own mount namespace, not the host's: run the pod "
                            "with hostPID: true, or use --mount-namespace=current where the "
                            "driver runs on the host");
      }
      return {absl::FailedPreconditionError(absl::StrCat(
                  "the Lustre mount helper ", helper, " cannot run in ", ns_->Describe(), ": ",
                  cannot_run, hint, " (install the Lustre client on the host)")),
              "mount-helper"};
    }
    // Is the kernel module there, or at least installed for this kernel?
    absl::StatusOr<std::string> filesystems = ns_->ReadFile("/proc/filesystems", 64 * 1024);
    if (filesystems.ok() && ListsLustre(*filesystems)) return {};
    absl::StatusOr<bool> module = ns_->Exists("/sys/module/lustre");
    if (module.ok() && *module) return {};
    std::string installed_for = "this kernel";
    absl::StatusOr<std::string> release = ns_->ReadFile("/proc/sys/kernel/osrelease", 256);
    if (release.ok()) {
      std::string rel(absl::StripAsciiWhitespace(*release));
      installed_for = absl::StrCat("kernel ", rel, " (/lib/modules/", rel, "/modules.dep)");
      absl::StatusOr<std::string> deps =
          ns_->ReadFile(absl::StrCat("/lib/modules/", rel, "/modules.dep"), 16 << 20);
      if (deps.ok() && InstallsLustre(*deps)) return {};
    }
    return {absl::FailedPreconditionError(absl::StrCat(
                "the Lustre kernel module is neither loaded (no lustre in /proc/filesystems, no "
                "/sys/module/lustre) nor installed for ",
                installed_for, " in ", ns_->Describe(),
                " (install the Lustre client modules for the running kernel)")),
            "kernel-module"};
  }

  absl::Status WithFileSystemRoot(const LustreSource& source, const FsRootFn& fn) override {
    absl::StatusOr<std::string> dir = MakeWorkingDir();
    if (!dir.ok()) return dir.status();
    LustreSource root = source;
    root.sub_dir.clear();
    absl::Status status = Mount(root, *dir, {});
    if (status.ok()) status = fn(*sys_, *dir);
    // Unmounts (in the namespace) and removes the directory, whatever happened.
    absl::Status cleanup = volume::CleanupMountPoint(*sys_, *dir);
    if (!cleanup.ok()) LOG(ERROR) << "cleaning up " << *dir << ": " << cleanup;
    return status;
  }

  absl::Status Mount(const LustreSource& source, const std::string& target,
                     const std::vector<std::string>& options) override {
    std::string spec = source.Spec();
    for (const std::string* arg : {static_cast<const std::string*>(&spec), &target}) {
      if (arg->empty() || (*arg)[0] == '-' || arg->find('\0') != std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("mount argument \"", absl::CEscape(*arg),
                         "\" is empty, starts with '-' or contains NUL"));
      }
    }
    std::vector<std::string> argv = {options_.mount_helper};
    if (!options.empty()) argv.insert(argv.end(), {"-o", absl::StrJoin(options, ",")});
    argv.insert(argv.end(), {spec, target});
    absl::StatusOr<volume::ProcessResult> result = RunHostTool(*ns_, argv, options_.mount_timeout);
    if (!result.ok()) return result.status();
    std::string what = DescribeRun(*ns_, argv);

    // The mount was made there; it is only of use if it shows here too.
    volume::MountChecker checker(sys_);
    absl::StatusOr<bool> visible = checker.IsMountPoint(target);
    if (visible.ok() && *visible) return absl::OkStatus();
    absl::Status undo = ns_->Unmount(target, 0);
    if (!undo.ok()) LOG(ERROR) << "undoing the invisible mount at " << target << ": " << undo;
    return absl::FailedPreconditionError(absl::StrCat(
        what, " succeeded, but the mount does not show at ", target, " in the driver's view (",
        visible.ok() ? "not a mount point" : std::string(visible.status().message()),
        "): the directory must be shared between the two namespaces, e.g. under a "
        "Bidirectional mount of the kubelet directory"));
  }

  absl::StatusOr<bool> IsMountOf(const LustreSource& source, const std::string& target,
                                 const std::vector<std::string>& options) override {
    volume::MountChecker checker(sys_);
    absl::StatusOr<std::optional<volume::MountEntry>> entry = checker.FindMountAt(target);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) return false;
    const volume::MountEntry& e = **entry;
    // The helper makes a fresh mount: it has exactly the flags it was given.
    return MountedSpec(e) == source.Spec() && PerMountFlagsMatch(e.options, options, true);
  }

 private:
  static constexpr absl::string_view kOwnNamespace = "the driver's own mount namespace";

  // A new, empty directory under the working mount dir, named
  // <prefix><time>-<n>.
  absl::StatusOr<std::string> MakeWorkingDir(absl::string_view prefix = "fs-") {
    const std::string& base = options_.working_mount_dir;
    if (absl::Status s = volume::MkdirAll(*sys_, base, 0750); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("working mount dir ", base, " is not usable: ", s.message()));
    }
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string dir = absl::StrCat(base, "/", prefix, absl::ToUnixNanos(absl::Now()), "-",
                                     next_dir_.fetch_add(1));
      absl::Status made = sys_->Mkdir(dir, 0700);
      if (made.ok()) return dir;
      if (made.code() != absl::StatusCode::kAlreadyExists) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot create a directory in working mount dir ", base, ": ", made.message()));
      }
    }
    return absl::UnavailableError(absl::StrCat("no free directory name in ", base));
  }

  volume::Syscalls* const sys_;
  volume::MountNamespace* const ns_;
  const LustreBackendOptions options_;
  std::atomic<uint64_t> next_dir_{0};
};

// The conformance suites' mode: a publish leaves the target a plain
// directory, and an unpublish removes it.
class MockBackend : public MountBackend {
 public:
  explicit MockBackend(volume::Syscalls* sys) : sys_(sys) {}
  Readiness CheckReady() override { return {}; }
  absl::Status Publish(const PublishTarget& t) override {
    VLOG(1) << "mock mount " << t.source.Spec() << " on " << t.target << " -o "
            << absl::StrJoin(t.options, ",");
    return absl::OkStatus();
  }
  absl::Status Unpublish(const std::string& target) override {
    return volume::CleanupMountPoint(*sys_, target);
  }
  absl::Status Repair(const std::string& target) override {
    return volume::UnmountWithEscalation(*sys_, target);
  }
  absl::StatusOr<bool> IsPublished(const std::string& path) override {
    absl::StatusOr<volume::FileInfo> info = sys_->Stat(path);
    if (!info.ok()) return info.status();
    return true;
  }
  absl::Status WithFileSystemRoot(const LustreSource&, const FsRootFn&) override {
    return absl::FailedPreconditionError("mock mount mode has no file system to work in");
  }
  absl::StatusOr<bool> IsMountOf(const LustreSource&, const std::string&,
                                 const std::vector<std::string>&) override {
    return false;
  }

 private:
  volume::Syscalls* const sys_;
};

class LocalBackend : public internal::MountingMode {
 public:
  LocalBackend(volume::Syscalls* sys, std::string local_root)
      : MountingMode(sys, internal::BindUnmountOptions()),
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
    absl::StatusOr<std::string> fs_root = FsRoot(source);
    if (!fs_root.ok()) return fs_root.status();
    absl::Status bound =
        volume::BindDirBeneath(*sys_, *fs_root, source.sub_dir, target, flags->flags);
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

std::string LustreSource::Spec() const { return MountSource(mgs_address, fs_name, sub_dir); }

std::unique_ptr<MountBackend> NewLustreBackend(volume::Syscalls* sys, volume::MountNamespace* ns,
                                               LustreBackendOptions options) {
  return std::make_unique<LustreBackend>(sys, ns, std::move(options));
}

std::unique_ptr<MountBackend> NewMockBackend(volume::Syscalls* sys) {
  return std::make_unique<MockBackend>(sys);
}

std::unique_ptr<MountBackend> NewLocalBackend(volume::Syscalls* sys, std::string local_root) {
  return std::make_unique<LocalBackend>(sys, std::move(local_root));
}

}  // namespace lustre_csi::driver
