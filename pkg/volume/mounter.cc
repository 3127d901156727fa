#include "pkg/volume/mounter.h"

#include <sys/mount.h>

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/process.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

struct FlagOption {
  const char* name;
  unsigned long flag;
};
constexpr FlagOption kRemountFlags[] = {
    {"ro", MS_RDONLY},         {"nosuid", MS_NOSUID},           {"nodev", MS_NODEV},
    {"noexec", MS_NOEXEC},     {"noatime", MS_NOATIME},         {"nodiratime", MS_NODIRATIME},
    {"relatime", MS_RELATIME}, {"strictatime", MS_STRICTATIME},
};
constexpr const char* kNoOpOptions[] = {"rw", "bind", "defaults", "suid", "dev", "exec", "atime"};

class BindMounter : public Mounter {
 public:
  BindMounter(Syscalls* sys, bool flags_at_once) : sys_(sys), flags_at_once_(flags_at_once) {}

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, const std::vector<std::string>& options) override {
    absl::StatusOr<BindOptions> parsed = ParseBindOptions(options);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind mount of ", source, " on ", target, ": ", parsed.status().message()));
    }
    unsigned long bind = MS_BIND | (parsed->recursive ? MS_REC : 0);
    unsigned long remount = parsed->flags;
    if (remount != 0) {
      // In one step where the kernel can: a crash between a bind and its
      // remount would leave the bind without the flags (read-write).
      absl::Status atomic = sys_->BindMountWithFlags(source, target, bind & MS_REC, remount);
      if (atomic.code() != absl::StatusCode::kUnimplemented) return atomic;
      if (flags_at_once_) {
        return absl::FailedPreconditionError(absl::StrCat(
            "bind mount of ", source, " on ", target,
            ": this kernel cannot set the flags of a bind mount before attaching it "
            "(mount_setattr, Linux 5.12), and set afterwards they would not reach other mount "
            "namespaces"));
      }
    }
    if (absl::Status s = sys_->Mount(source, target, "", bind, ""); !s.ok()) return s;
    if (remount == 0) return absl::OkStatus();
    absl::Status s = sys_->Mount(source, target, "", MS_REMOUNT | MS_BIND | remount, "");
    if (s.ok()) return s;
    // Never leave the bind behind without the flags asked for.
    absl::Status undo = sys_->Unmount(target, 0);
    if (!undo.ok()) undo = sys_->Unmount(target, MNT_DETACH);
    if (!undo.ok()) {
      return Annotate(s, absl::StrCat("remount ", target,
                                      " (and undoing the bind failed: ", undo.message(), ")"));
    }
    return Annotate(s, absl::StrCat("remount ", target, " (bind undone)"));
  }

  absl::Status Unmount(const std::string& target) override { return sys_->Unmount(target, 0); }

 private:
  Syscalls* const sys_;
  const bool flags_at_once_;
};

class ExecMounter : public Mounter {
 public:
  ExecMounter(std::string mount_binary, absl::Duration timeout, Syscalls* sys)
      : mount_binary_(std::move(mount_binary)), timeout_(timeout), sys_(sys) {}

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, const std::vector<std::string>& options) override {
    if (absl::Status s = CheckArg("source", source); !s.ok()) return s;
    if (absl::Status s = CheckArg("target", target); !s.ok()) return s;
    if (fstype.find('\0') != std::string::npos || absl::StartsWith(fstype, "-")) {
      return absl::InvalidArgumentError(absl::StrCat("bad file system type \"", fstype, "\""));
    }
    for (const std::string& opt : options) {
      if (opt.empty() || opt.find('\0') != std::string::npos) {
        return absl::InvalidArgumentError("mount options may not be empty or contain NUL");
      }
    }
    std::vector<std::string> argv = {mount_binary_};
    if (!fstype.empty()) argv.insert(argv.end(), {"-t", fstype});
    if (!options.empty()) argv.insert(argv.end(), {"-o", absl::StrJoin(options, ",")});
    argv.insert(argv.end(), {source, target});
    return RunCommand(argv, timeout_);
  }

  absl::Status Unmount(const std::string& target) override {
    if (sys_ != nullptr) return sys_->Unmount(target, 0);
    if (absl::Status s = CheckArg("target", target); !s.ok()) return s;
    return RunCommand({absl::StrCat(ParentPath(mount_binary_), "/umount"), target}, timeout_);
  }

 private:
  static absl::Status CheckArg(absl::string_view what, const std::string& value) {
    if (value.empty() || value.find('\0') != std::string::npos || value[0] == '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("mount ", what, " \"", absl::CEscape(value),
                       "\" is empty, contains NUL or starts with '-'"));
    }
    return absl::OkStatus();
  }

  const std::string mount_binary_;
  const absl::Duration timeout_;
  Syscalls* const sys_;
};

}  // namespace

absl::Status RunCommand(const std::vector<std::string>& argv, absl::Duration timeout) {
  absl::StatusOr<ProcessResult> result = RunProcess({argv, std::nullopt, -1}, timeout);
  if (!result.ok()) {
    // A program that cannot be started is named by its errno (missing:
    // NOT_FOUND), as for any other system call.
    std::optional<int> err = ErrnoOf(result.status());
    if (err.has_value()) return ErrnoError(*err, absl::StrCat("run ", absl::StrJoin(argv, " ")));
    return result.status();
  }
  if (result->Succeeded()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(absl::StrJoin(argv, " "), ": ", result->Describe(), ": ",
                                          absl::StripAsciiWhitespace(result->output)));
}

std::unique_ptr<Mounter> NewBindMounter(Syscalls* sys, bool flags_at_once) {
  return std::make_unique<BindMounter>(sys, flags_at_once);
}

bool IsBindOption(absl::string_view option) {
  for (const FlagOption& f : kRemountFlags) {
    if (option == f.name) return true;
  }
  for (const char* noop : kNoOpOptions) {
    if (option == noop) return true;
  }
  return option == "rbind";
}

absl::StatusOr<BindOptions> ParseBindOptions(const std::vector<std::string>& options) {
  BindOptions out;
  for (const std::string& opt : options) {
    if (!IsBindOption(opt)) {
      return absl::InvalidArgumentError(absl::StrCat("unsupported option \"", opt, "\""));
    }
    for (const FlagOption& f : kRemountFlags) {
      if (opt == f.name) out.flags |= f.flag;
    }
    if (opt == "rbind") out.recursive = true;
  }
  return out;
}

std::unique_ptr<Mounter> NewExecMounter(std::string mount_binary, absl::Duration timeout,
                                        Syscalls* sys) {
  return std::make_unique<ExecMounter>(std::move(mount_binary), timeout, sys);
}

}  // namespace lustre_csi::volume
