#include "pkg/volume/mount_namespace.h"

#include "absl/strings/str_cat.h"
#include "pkg/volume/syscalls_wrapper.h"

namespace lustre_csi::volume {
namespace {

class UnmountingSyscalls : public SyscallsWrapper {
 public:
  UnmountingSyscalls(Syscalls* base, MountNamespace* ns) : SyscallsWrapper(base), ns_(ns) {}

  absl::Status Unmount(const std::string& target, int flags) override {
    return ns_->Unmount(target, flags);
  }

 private:
  MountNamespace* const ns_;
};

}  // namespace

std::string ProcessResult::Describe() const {
  if (signaled) return absl::StrCat("killed by signal ", signal);
  return absl::StrCat("exit status ", exit_code);
}

std::unique_ptr<Syscalls> UnmountingIn(Syscalls* base, MountNamespace* ns) {
  return std::make_unique<UnmountingSyscalls>(base, ns);
}

}  // namespace lustre_csi::volume
