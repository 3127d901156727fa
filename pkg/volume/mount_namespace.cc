#include "pkg/volume/mount_namespace.h"

#include "absl/strings/str_cat.h"

namespace lustre_csi::volume {
namespace {

class UnmountingSyscalls : public Syscalls {
 public:
  UnmountingSyscalls(Syscalls* base, MountNamespace* ns) : base_(base), ns_(ns) {}

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    return base_->Mount(source, target, fstype, flags, data);
  }
  absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                  bool recursive, unsigned long flags) override {
    return base_->BindMountWithFlags(source, target, recursive, flags);
  }
  absl::Status BindBeneath(const std::string& root, const std::string& relative,
                           const std::string& target, unsigned long flags) override {
    return base_->BindBeneath(root, relative, target, flags);
  }
  absl::Status Unmount(const std::string& target, int flags) override {
    return ns_->Unmount(target, flags);
  }
  absl::StatusOr<FsStats> Statfs(const std::string& path) override { return base_->Statfs(path); }
  absl::StatusOr<FileInfo> Stat(const std::string& path) override { return base_->Stat(path); }
  absl::Status Mkdir(const std::string& path, uint32_t mode) override {
    return base_->Mkdir(path, mode);
  }
  absl::Status Rmdir(const std::string& path) override { return base_->Rmdir(path); }
  absl::StatusOr<std::string> ReadMountInfo() override { return base_->ReadMountInfo(); }
  absl::StatusOr<std::string> ResolveBeneath(const std::string& root,
                                             const std::string& relative) override {
    return base_->ResolveBeneath(root, relative);
  }

 private:
  Syscalls* const base_;
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
