#include "pkg/volume/mounter.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

struct FlagOption {
  const char* name;
  unsigned long flag;
};
constexpr FlagOption kRemountFlags[] = {
    {"ro", kMsRdonly},         {"nosuid", kMsNosuid},           {"nodev", kMsNodev},
    {"noexec", kMsNoexec},     {"noatime", kMsNoatime},         {"nodiratime", kMsNodiratime},
    {"relatime", kMsRelatime}, {"strictatime", kMsStrictatime},
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
    unsigned long bind = kMsBind | (parsed->recursive ? kMsRec : 0);
    unsigned long remount = parsed->flags;
    if (remount != 0) {
      // In one step where the kernel can: a crash between a bind and its
      // remount would leave the bind without the flags (read-write).
      absl::Status atomic = sys_->BindMountWithFlags(source, target, bind & kMsRec, remount);
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
    absl::Status s = sys_->Mount(source, target, "", kMsRemount | kMsBind | remount, "");
    if (s.ok()) return s;
    // Never leave the bind behind without the flags asked for.
    absl::Status undo = sys_->Unmount(target, 0);
    if (!undo.ok()) undo = sys_->Unmount(target, kMntDetach);
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

}  // namespace

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

}  // namespace lustre_csi::volume
