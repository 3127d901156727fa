#include "pkg/csimanager/testing/failing_store.h"

#include <utility>

namespace lustre_csi::csimanager::fakes {

void FailingStore::FailNext(StoreOp op, absl::Status status, int skip) {
  absl::MutexLock lock(&mu_);
  faults_[op].push_back({calls_[op] + skip, std::move(status)});
}

int FailingStore::Calls(StoreOp op) const {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(op);
  return it == calls_.end() ? 0 : it->second;
}

absl::Status FailingStore::Check(StoreOp op) {
  absl::MutexLock lock(&mu_);
  int index = calls_[op]++;
  std::vector<Fault>& faults = faults_[op];
  for (auto it = faults.begin(); it != faults.end(); ++it) {
    if (it->skip == index) {
      absl::Status status = std::move(it->status);
      faults.erase(it);
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status FailingStore::PutPlugin(const PluginRecord& record) {
  if (absl::Status s = Check(StoreOp::kPutPlugin); !s.ok()) return s;
  return wrapped_->PutPlugin(record);
}

absl::Status FailingStore::DeletePlugin(absl::string_view id) {
  if (absl::Status s = Check(StoreOp::kDeletePlugin); !s.ok()) return s;
  return wrapped_->DeletePlugin(id);
}

absl::StatusOr<std::vector<PluginRecord>> FailingStore::ListPlugins() {
  if (absl::Status s = Check(StoreOp::kListPlugins); !s.ok()) return s;
  return wrapped_->ListPlugins();
}

absl::Status FailingStore::PutClaim(const Claim& claim) {
  if (absl::Status s = Check(StoreOp::kPutClaim); !s.ok()) return s;
  return wrapped_->PutClaim(claim);
}

absl::Status FailingStore::DeleteClaims(const std::vector<ClaimKey>& keys) {
  if (absl::Status s = Check(StoreOp::kDeleteClaims); !s.ok()) return s;
  return wrapped_->DeleteClaims(keys);
}

absl::StatusOr<std::optional<Claim>> FailingStore::GetClaim(const ClaimKey& key) {
  if (absl::Status s = Check(StoreOp::kGetClaim); !s.ok()) return s;
  return wrapped_->GetClaim(key);
}

absl::StatusOr<std::vector<Claim>> FailingStore::ListClaims() {
  if (absl::Status s = Check(StoreOp::kListClaims); !s.ok()) return s;
  return wrapped_->ListClaims();
}

absl::Status FailingStore::PutStaging(const StagingRecord& record) {
  if (absl::Status s = Check(StoreOp::kPutStaging); !s.ok()) return s;
  return wrapped_->PutStaging(record);
}

absl::StatusOr<std::vector<StagingRecord>> FailingStore::ListStagings() {
  if (absl::Status s = Check(StoreOp::kListStagings); !s.ok()) return s;
  return wrapped_->ListStagings();
}

absl::Status FailingStore::DeleteClaimsAndStaging(const std::vector<ClaimKey>& keys,
                                                  const std::string& plugin,
                                                  const std::string& staging_path) {
  if (absl::Status s = Check(StoreOp::kDeleteClaimsAndStaging); !s.ok()) return s;
  return wrapped_->DeleteClaimsAndStaging(keys, plugin, staging_path);
}

}  // namespace lustre_csi::csimanager::fakes
