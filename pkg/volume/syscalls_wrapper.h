// A Syscalls that forwards every call to another one.
//
// Derive from it to change one or two calls of an implementation and keep
// the rest (LevelDB's EnvWrapper idea): a Syscalls whose unmounts go to
// another mount namespace, a test double that records mounts, fault
// injection (fault_syscalls.h). The target is borrowed and must outlive the
// wrapper; thread-safe when the target is.
#ifndef LUSTRE_CSI_PKG_VOLUME_SYSCALLS_WRAPPER_H_
#define LUSTRE_CSI_PKG_VOLUME_SYSCALLS_WRAPPER_H_

#include <string>

#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

class SyscallsWrapper : public Syscalls {
 public:
  explicit SyscallsWrapper(Syscalls* target) : target_(target) {}

  Syscalls* target() const { return target_; }

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override {
    return target_->Mount(source, target, fstype, flags, data);
  }
  absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                  bool recursive, unsigned long flags) override {
    return target_->BindMountWithFlags(source, target, recursive, flags);
  }
  absl::Status BindBeneath(const std::string& root, const std::string& relative,
                           const std::string& target, unsigned long flags) override {
    return target_->BindBeneath(root, relative, target, flags);
  }
  absl::Status PrepareBinds() override { return target_->PrepareBinds(); }
  absl::Status Unmount(const std::string& target, int flags) override {
    return target_->Unmount(target, flags);
  }
  absl::StatusOr<FsStats> Statfs(const std::string& path) override { return target_->Statfs(path); }
  absl::StatusOr<FileInfo> Stat(const std::string& path) override { return target_->Stat(path); }
  absl::Status Mkdir(const std::string& path, uint32_t mode) override {
    return target_->Mkdir(path, mode);
  }
  absl::Status Rmdir(const std::string& path) override { return target_->Rmdir(path); }
  absl::StatusOr<std::string> ReadMountInfo() override { return target_->ReadMountInfo(); }
  absl::StatusOr<std::string> ResolveBeneath(const std::string& root,
                                             const std::string& relative) override {
    return target_->ResolveBeneath(root, relative);
  }
  absl::Status WalkTree(const std::string& root, const TreeLimits& limits,
                        const TreeVisitor& visit) override {
    return target_->WalkTree(root, limits, visit);
  }
  absl::Status MkdirBeneath(const std::string& root, const std::string& relative,
                            uint32_t mode) override {
    return target_->MkdirBeneath(root, relative, mode);
  }
  absl::StatusOr<FileInfo> StatBeneath(const std::string& root,
                                       const std::string& relative) override {
    return target_->StatBeneath(root, relative);
  }
  absl::StatusOr<std::string> ReadFileBeneath(const std::string& root, const std::string& relative,
                                              size_t max_bytes) override {
    return target_->ReadFileBeneath(root, relative, max_bytes);
  }
  absl::Status MakeMarkedDirBeneath(const std::string& root, const std::string& relative,
                                    const MarkedDirSpec& spec) override {
    return target_->MakeMarkedDirBeneath(root, relative, spec);
  }
  absl::Status RemoveTreeBeneath(const std::string& root, const std::string& relative,
                                 int max_depth) override {
    return target_->RemoveTreeBeneath(root, relative, max_depth);
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    return target_->ListDir(dir);
  }
  absl::StatusOr<std::unique_ptr<DirWatch>> WatchDir(const std::string& dir) override {
    return target_->WatchDir(dir);
  }

 private:
  Syscalls* const target_;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_SYSCALLS_WRAPPER_H_
