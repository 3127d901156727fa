#include "pkg/driver/fake_lfs.h"

#include "absl/strings/str_cat.h"

namespace lustre_csi::driver {

absl::Status FakeLustreTool::Fails(const std::string& op) const {
  auto it = failing_.find(op);
  return it == failing_.end() ? absl::OkStatus() : it->second;
}

absl::Status FakeLustreTool::SetProject(const std::string& dir, uint32_t id) {
  absl::MutexLock l(&mu_);
  calls_.push_back(absl::StrCat("project ", id, " ", dir));
  if (absl::Status s = Fails("project"); !s.ok()) return s;
  projects_[dir] = id;
  return absl::OkStatus();
}

absl::Status FakeLustreTool::SetProjectQuota(const std::string& mount, uint32_t id,
                                             const QuotaLimits& limits) {
  absl::MutexLock l(&mu_);
  calls_.push_back(
      absl::StrCat("setquota ", id, " ", limits.block_kib, " ", limits.inodes, " ", mount));
  if (absl::Status s = Fails("setquota"); !s.ok()) return s;
  limits_[id] = limits;
  return absl::OkStatus();
}

absl::Status FakeLustreTool::SetDefaultLayout(const std::string& dir, const StripeLayout& layout) {
  absl::MutexLock l(&mu_);
  calls_.push_back(absl::StrCat("setstripe ", dir));
  if (absl::Status s = Fails("setstripe"); !s.ok()) return s;
  layouts_[dir] = layout;
  return absl::OkStatus();
}

void FakeLustreTool::FailOp(const std::string& op, absl::Status status) {
  absl::MutexLock l(&mu_);
  if (status.ok()) {
    failing_.erase(op);
  } else {
    failing_[op] = std::move(status);
  }
}

std::vector<std::string> FakeLustreTool::Calls() const {
  absl::MutexLock l(&mu_);
  return calls_;
}

uint32_t FakeLustreTool::ProjectOf(const std::string& dir) const {
  absl::MutexLock l(&mu_);
  auto it = projects_.find(dir);
  return it == projects_.end() ? 0 : it->second;
}

QuotaLimits FakeLustreTool::LimitsOf(uint32_t id) const {
  absl::MutexLock l(&mu_);
  auto it = limits_.find(id);
  return it == limits_.end() ? QuotaLimits{} : it->second;
}

std::vector<uint32_t> FakeLustreTool::LimitedProjects() const {
  absl::MutexLock l(&mu_);
  std::vector<uint32_t> out;
  for (const auto& [id, limits] : limits_) {
    if (limits.block_kib != 0 || limits.inodes != 0) out.push_back(id);
  }
  return out;
}

StripeLayout FakeLustreTool::LayoutOf(const std::string& dir) const {
  absl::MutexLock l(&mu_);
  auto it = layouts_.find(dir);
  return it == layouts_.end() ? StripeLayout{} : it->second;
}

}  // namespace lustre_csi::driver
