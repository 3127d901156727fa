// FaultSyscalls: the fault switches of fault_injector.h in front of any
// Syscalls, the real one included, so a test can make one call of the real
// kernel fail or hang and see what the code above does with it. Calls that
// pass go to the wrapped implementation unchanged. BindMountWithFlags and
// BindBeneath count as kMount, StatAt as kStat; Close and EffectiveUid
// neither count nor fail. The target is borrowed and must outlive the
// wrapper. Thread-safe when the target is.
#ifndef LUSTRE_CSI_PKG_VOLUME_TESTING_FAULT_SYSCALLS_H_
#define LUSTRE_CSI_PKG_VOLUME_TESTING_FAULT_SYSCALLS_H_

#include <memory>
#include <string>
#include <vector>

#include "pkg/volume/syscalls_wrapper.h"
#include "pkg/volume/testing/fault_injector.h"

namespace lustre_csi::volume {

class FaultSyscalls : public SyscallsWrapper, public FaultInjector {
 public:
  explicit FaultSyscalls(Syscalls* target) : SyscallsWrapper(target) {}
  ~FaultSyscalls() override { Shutdown(); }

  absl::Status Mount(const std::string& source, const std::string& target,
                     const std::string& fstype, unsigned long flags,
                     const std::string& data) override;
  absl::Status BindMountWithFlags(const std::string& source, const std::string& target,
                                  bool recursive, unsigned long flags) override;
  absl::Status BindBeneath(const std::string& root, const std::string& relative,
                           const std::string& target, unsigned long flags) override;
  absl::Status Unmount(const std::string& target, int flags) override;
  absl::StatusOr<FsStats> Statfs(const std::string& path) override;
  absl::StatusOr<FileInfo> Stat(const std::string& path) override;
  absl::Status Mkdir(const std::string& path, uint32_t mode) override;
  absl::Status Rmdir(const std::string& path) override;
  absl::StatusOr<std::string> ReadMountInfo() override;
  absl::StatusOr<int> OpenAt(int dir_fd, const std::string& path, const OpenHow& how) override;
  absl::StatusOr<FileInfo> StatAt(int dir_fd, const std::string& name) override;
  absl::StatusOr<std::vector<std::string>> ReadDir(int fd, size_t max_names) override;
  absl::Status MkdirAt(int dir_fd, const std::string& name, uint32_t mode) override;
  absl::Status UnlinkAt(int dir_fd, const std::string& name, bool directory) override;
  absl::Status ChownAt(int dir_fd, const std::string& name, std::optional<uint32_t> uid,
                       std::optional<uint32_t> gid) override;
  absl::Status ChmodAt(int dir_fd, const std::string& name, uint32_t mode) override;
  absl::StatusOr<std::string> Read(int fd, size_t max_bytes) override;
  absl::Status Write(int fd, const std::string& data) override;
  absl::Status Fsync(int fd) override;
  absl::StatusOr<std::string> PathOf(int fd) override;
  absl::StatusOr<uint64_t> MountIdOf(int fd) override;
  absl::StatusOr<uint64_t> MountIdAt(const std::string& path, bool follow) override;
  absl::StatusOr<std::unique_ptr<DirWatch>> WatchDir(const std::string& dir) override;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_TESTING_FAULT_SYSCALLS_H_
