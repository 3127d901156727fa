#include "pkg/driver/modes/lustre_mode.h"

#include <glog/logging.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "pkg/base/status_macros.h"
#include "pkg/driver/host_tool.h"
#include "pkg/driver/modes/mounting_mode.h"
#include "pkg/driver/mount_options.h"
#include "pkg/driver/parameters.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::driver {
namespace {

using internal::MountedSpec;

// How a per-volume client (or a root mount) is unmounted: the escalation's
// defaults, MNT_FORCE included (the client is this mount's alone).
volume::UnmountOptions TargetUnmountOptions(volume::Isolation* isolation) {
  volume::UnmountOptions options;
  options.isolation = isolation;
  return options;
}

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

class LustreMode : public internal::MountingMode {
 public:
  LustreMode(volume::Syscalls* sys, volume::MountNamespace* ns, LustreModeOptions options)
      : MountingMode(sys, TargetUnmountOptions(options.isolation)),
        sys_(sys),
        ns_(ns),
        options_(std::move(options)) {}

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
    absl::Status cleanup =
        volume::CleanupMountPoint(*sys_, *dir, TargetUnmountOptions(options_.isolation));
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
    // Looked at without asking its file system anything (LookAt).
    absl::StatusOr<volume::MountChecker::Look> look = volume::MountChecker(sys_).LookAt(target);
    absl::StatusOr<bool> visible =
        look.ok() ? absl::StatusOr<bool>(look->mounted) : absl::StatusOr<bool>(look.status());
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
  const LustreModeOptions options_;
  std::atomic<uint64_t> next_dir_{0};
};

}  // namespace

std::unique_ptr<internal::MountingMode> NewLustreMode(volume::Syscalls* sys,
                                                      volume::MountNamespace* ns,
                                                      LustreModeOptions options) {
  return std::make_unique<LustreMode>(sys, ns, std::move(options));
}

}  // namespace lustre_csi::driver
