// A MountNamespace for tests: programs are functions registered by path,
// files are strings, and unmounts go to a borrowed Syscalls (usually the
// FakeSyscalls the code under test also inspects), so a "mount made in the
// host namespace" is simply a mount in that fake. Exists also finds what
// that Syscalls has (the tree both sides share), except below a path given
// to SetNotShared. Every program run is recorded. Thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_MOUNT_NAMESPACE_H_
#define LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_MOUNT_NAMESPACE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "pkg/volume/mount_namespace.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

class FakeMountNamespace : public MountNamespace {
 public:
  using Program = std::function<absl::StatusOr<ProcessResult>(const std::vector<std::string>&)>;

  // `sys` receives Unmount calls; it is borrowed and may be null (then
  // Unmount fails with INTERNAL).
  explicit FakeMountNamespace(Syscalls* sys, std::string name = "mount namespace /fake/ns/mnt")
      : sys_(sys), name_(std::move(name)) {}

  // Makes `path` runnable; Run calls `program` with the whole argv.
  void AddProgram(const std::string& path, Program program);
  void RemoveProgram(const std::string& path);
  void SetFile(const std::string& path, std::string content);
  void RemoveFile(const std::string& path);
  void SetOwn(bool own);
  // Below `prefix` the namespace has a tree of its own: what the borrowed
  // Syscalls has there does not show (as a directory the two views do not
  // share).
  void SetNotShared(const std::string& prefix);
  // Every later call fails as if the namespace could not be entered.
  void SetUnreachable(bool unreachable);

  // argv of every program run so far, in order.
  std::vector<std::vector<std::string>> Runs() const;
  std::vector<std::string> Unmounts() const;

  std::string Describe() const override { return name_; }
  absl::StatusOr<bool> IsOwn() const override;
  absl::StatusOr<ProcessResult> Run(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env,
                                    absl::Duration timeout) override;
  absl::Status Unmount(const std::string& target, int flags) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override;
  absl::StatusOr<bool> Exists(const std::string& path) override;

 private:
  absl::Status Reachable() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  Syscalls* const sys_;
  const std::string name_;
  mutable absl::Mutex mu_;
  std::map<std::string, Program> programs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> files_ ABSL_GUARDED_BY(mu_);
  bool own_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> not_shared_ ABSL_GUARDED_BY(mu_);
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::vector<std::string>> runs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> unmounts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_MOUNT_NAMESPACE_H_
