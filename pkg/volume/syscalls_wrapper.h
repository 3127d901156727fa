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
  absl::StatusOr<int> OpenAt(int dir_fd, const std::string& path, const OpenHow& how) override {
    return target_->OpenAt(dir_fd, path, how);
  }
  absl::Status Close(int fd) override { return target_->Close(fd); }
  absl::StatusOr<FileInfo> StatAt(int dir_fd, const std::string& name) override {
    return target_->StatAt(dir_fd, name);
  }
  absl::StatusOr<std::vector<std::string>> ReadDir(int fd, size_t max_names) override {
    return target_->ReadDir(fd, max_names);
  }
  absl::Status MkdirAt(int dir_fd, const std::string& name, uint32_t mode) override {
    return target_->MkdirAt(dir_fd, name, mode);
  }
  absl::Status UnlinkAt(int dir_fd, const std::string& name, bool directory) override {
    return target_->UnlinkAt(dir_fd, name, directory);
  }
  absl::Status ChownAt(int dir_fd, const std::string& name, std::optional<uint32_t> uid,
                       std::optional<uint32_t> gid) override {
    return target_->ChownAt(dir_fd, name, uid, gid);
  }
  absl::Status ChmodAt(int dir_fd, const std::string& name, uint32_t mode) override {
    return target_->ChmodAt(dir_fd, name, mode);
  }
  absl::StatusOr<std::string> Read(int fd, size_t max_bytes) override {
    return target_->Read(fd, max_bytes);
  }
  absl::Status Write(int fd, const std::string& data) override { return target_->Write(fd, data); }
  absl::Status Fsync(int fd) override { return target_->Fsync(fd); }
  absl::StatusOr<std::string> PathOf(int fd) override { return target_->PathOf(fd); }
  absl::StatusOr<uint64_t> MountIdOf(int fd) override { return target_->MountIdOf(fd); }
  absl::StatusOr<uint64_t> MountIdAt(const std::string& path, bool follow) override {
    return target_->MountIdAt(path, follow);
  }
  uint32_t EffectiveUid() override { return target_->EffectiveUid(); }
  absl::StatusOr<std::unique_ptr<DirWatch>> WatchDir(const std::string& dir) override {
    return target_->WatchDir(dir);
  }

 private:
  Syscalls* const target_;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_SYSCALLS_WRAPPER_H_
