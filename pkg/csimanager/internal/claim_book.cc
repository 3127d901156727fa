#include "pkg/csimanager/internal/claim_book.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "pkg/base/status_macros.h"

namespace lustre_csi::csimanager {
ClaimBook::ClaimBook(std::string plugin, Store* store)
    : plugin_(std::move(plugin)), store_(store) {}

absl::StatusOr<RestoreReport> ClaimBook::Restore(MountInspector& mounts) {
  ASSIGN_OR_RETURN(std::vector<Claim> stored, store_->ListClaims());
  RestoreReport report;
  std::map<ClaimKey, Claim> mine;
  for (Claim& claim : stored) {
    if (claim.plugin != plugin_) continue;
    absl::StatusOr<ClaimKey> key = KeyOf(claim);
    if (!key.ok()) return key.status();
    std::string what = DescribeClaim(*key);
    ++report.claims;
    absl::StatusOr<bool> target_mounted = mounts.IsMountPoint(claim.mount.target);
    if (!target_mounted.ok()) {
      report.problems.push_back(absl::StrCat(what, ": cannot check target ", claim.mount.target,
                                             ": ", target_mounted.status().message()));
    }
    bool mounted = target_mounted.value_or(false);
    switch (claim.state) {
      case ClaimState::kMounted:
        if (mounted) {
          ++report.mounted;
        } else if (target_mounted.ok()) {
          report.problems.push_back(absl::StrCat(
              what, ": target ", claim.mount.target,
              " is not mounted; the claim is kept until the volume is unmounted or mounted again"));
        }
        break;
      case ClaimState::kMounting:
        ++report.interrupted;
        report.problems.push_back(absl::StrCat(
            what, ": a mount was interrupted (target ", mounted ? "mounted" : "not mounted",
            "); the claim is kept until the volume is unmounted or mounted again"));
        break;
      case ClaimState::kUnpublished:
        ++report.interrupted;
        report.problems.push_back(absl::StrCat(what, ": unpublished but the unstage of ",
                                               claim.mount.source,
                                               " did not finish; the next unmount of the volume "
                                               "finishes it"));
        break;
    }
    if (claim.mount.staged && claim.state != ClaimState::kUnpublished) {
      ++report.usage_counts[claim.mount.source];
    }
    mine.emplace(*key, std::move(claim));
  }
  ASSIGN_OR_RETURN(std::vector<StagingRecord> stored_stagings, store_->ListStagings());
  std::map<std::string, StagingRecord> stagings;
  std::set<std::string> claimed_stagings;
  for (const auto& [key, claim] : mine) {
    if (claim.mount.staged) claimed_stagings.insert(claim.mount.source);
  }
  for (StagingRecord& record : stored_stagings) {
    if (record.plugin != plugin_) continue;
    ++report.stagings;
    // A stage some claim records is reported with that claim.
    if (claimed_stagings.count(record.path) == 0) {
      if (record.state != StagingState::kStaged) ++report.interrupted;
      report.problems.push_back(
          absl::StrCat("volume ", record.namespace_, "/", record.volume_id, " is ",
                       StagingStateName(record.state), " at ", record.path,
                       " without a claim; the next unmount of the volume unstages it"));
    }
    std::string path = record.path;
    stagings.emplace(std::move(path), std::move(record));
  }
  {
    absl::MutexLock lock(&mu_);
    claims_ = std::move(mine);
    stagings_ = std::move(stagings);
    restore_report_ = report;
  }
  LOG(INFO) << "plugin " << plugin_ << ": restored " << report.claims << " claims ("
            << report.mounted << " mounted, " << report.interrupted << " interrupted, "
            << report.stagings << " staged volumes, " << report.usage_counts.size()
            << " staging paths in use)";
  for (const std::string& problem : report.problems) {
    LOG(WARNING) << "plugin " << plugin_ << ": " << problem;
  }
  return report;
}

RestoreReport ClaimBook::last_restore() {
  absl::MutexLock lock(&mu_);
  return restore_report_;
}

std::vector<Claim> ClaimBook::Claims() {
  absl::MutexLock lock(&mu_);
  std::vector<Claim> out;
  for (const auto& [key, claim] : claims_) out.push_back(claim);
  return out;
}

std::optional<Claim> ClaimBook::Find(const ClaimKey& key) {
  absl::MutexLock lock(&mu_);
  auto it = claims_.find(key);
  if (it == claims_.end()) return std::nullopt;
  return it->second;
}

absl::Status ClaimBook::SaveClaim(const Claim& claim) {
  ASSIGN_OR_RETURN(ClaimKey key, KeyOf(claim));
  RETURN_IF_ERROR(store_->PutClaim(claim));
  absl::MutexLock lock(&mu_);
  claims_[key] = claim;
  return absl::OkStatus();
}

absl::Status ClaimBook::DropClaims(const std::vector<ClaimKey>& keys) {
  if (keys.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(store_->DeleteClaims(keys));
  absl::MutexLock lock(&mu_);
  for (const ClaimKey& key : keys) claims_.erase(key);
  return absl::OkStatus();
}

std::optional<StagingRecord> ClaimBook::FindStaging(const std::string& path) {
  absl::MutexLock lock(&mu_);
  auto it = stagings_.find(path);
  if (it == stagings_.end()) return std::nullopt;
  return it->second;
}

absl::Status ClaimBook::SaveStaging(const StagingRecord& record) {
  RETURN_IF_ERROR(store_->PutStaging(record));
  absl::MutexLock lock(&mu_);
  stagings_[record.path] = record;
  return absl::OkStatus();
}

absl::Status ClaimBook::DropClaimsAndStaging(const std::vector<ClaimKey>& keys,
                                             const std::string& staging) {
  if (keys.empty() && staging.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(store_->DeleteClaimsAndStaging(keys, plugin_, staging));
  absl::MutexLock lock(&mu_);
  for (const ClaimKey& key : keys) claims_.erase(key);
  if (!staging.empty()) stagings_.erase(staging);
  return absl::OkStatus();
}

int ClaimBook::OtherUsers(const std::string& staging, const ClaimKey& self) {
  absl::MutexLock lock(&mu_);
  int users = 0;
  for (const auto& [key, claim] : claims_) {
    if (key == self || !claim.mount.staged || claim.mount.source != staging) continue;
    if (claim.state != ClaimState::kUnpublished) ++users;
  }
  return users;
}

std::vector<ClaimKey> ClaimBook::UnpublishedUsers(const std::string& staging) {
  absl::MutexLock lock(&mu_);
  std::vector<ClaimKey> out;
  for (const auto& [key, claim] : claims_) {
    if (claim.state == ClaimState::kUnpublished && claim.mount.source == staging) {
      out.push_back(key);
    }
  }
  return out;
}

std::optional<std::string> ClaimBook::RecordedStaging(const std::string& namespace_,
                                                      const std::string& volume_id,
                                                      const std::string& usage) {
  absl::MutexLock lock(&mu_);
  return RecordedStagingLocked(namespace_, volume_id, usage);
}

std::optional<std::string> ClaimBook::RecordedStagingLocked(const std::string& namespace_,
                                                            const std::string& volume_id,
                                                            const std::string& usage) {
  for (const auto& [path, record] : stagings_) {
    if (record.namespace_ == namespace_ && record.volume_id == volume_id && record.usage == usage) {
      return path;
    }
  }
  for (const auto& [other, claim] : claims_) {
    if (other.namespace_ == namespace_ && other.volume_id == volume_id && other.usage == usage &&
        claim.mount.staged) {
      return claim.mount.source;
    }
  }
  return std::nullopt;
}

std::optional<Claim> ClaimBook::UseRecordedPaths(const ClaimKey& key, std::string* staging,
                                                 std::string* target) {
  absl::MutexLock lock(&mu_);
  auto claim = claims_.find(key);
  if (claim != claims_.end()) {
    *target = claim->second.mount.target;
    if (claim->second.mount.staged) *staging = claim->second.mount.source;
    return claim->second;
  }
  std::optional<std::string> recorded =
      RecordedStagingLocked(key.namespace_, key.volume_id, key.usage);
  if (recorded.has_value()) *staging = *recorded;
  return std::nullopt;
}

}  // namespace lustre_csi::csimanager
