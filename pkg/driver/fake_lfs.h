// A LustreTool for tests: keeps what the real tool would set (project IDs of
// directories, limits of projects, layouts of directories), records every
// call as a line ("project 7 /fs/a", "setquota 7 1024 0 /fs",
// "setstripe /fs/a"), and fails on request. Thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_FAKE_LFS_H_
#define LUSTRE_CSI_PKG_DRIVER_FAKE_LFS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "pkg/driver/lfs.h"

namespace lustre_csi::driver {

class FakeLustreTool : public LustreTool {
 public:
  absl::Status SetProject(const std::string& dir, uint32_t id) override;
  absl::Status SetProjectQuota(const std::string& mount, uint32_t id,
                               const QuotaLimits& limits) override;
  absl::Status SetDefaultLayout(const std::string& dir, const StripeLayout& layout) override;

  // Every later call of `op` ("project", "setquota", "setstripe") fails with
  // `status` (OK: succeeds again).
  void FailOp(const std::string& op, absl::Status status);

  std::vector<std::string> Calls() const;
  // 0 when `dir` has none.
  uint32_t ProjectOf(const std::string& dir) const;
  // Zeros when not set, or set to zeros.
  QuotaLimits LimitsOf(uint32_t id) const;
  // Projects whose limits are not zero.
  std::vector<uint32_t> LimitedProjects() const;
  StripeLayout LayoutOf(const std::string& dir) const;

 private:
  absl::Status Fails(const std::string& op) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, absl::Status> failing_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint32_t> projects_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, QuotaLimits> limits_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, StripeLayout> layouts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_FAKE_LFS_H_
