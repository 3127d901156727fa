// FailingStore: a Store that forwards to another and fails the operations a
// test chooses, without touching the store underneath (a failed write leaves
// it as it was, like a write the database refused).
//
//   FailingStore store(real.get());
//   store.FailNext(StoreOp::kPutClaim, absl::UnavailableError("disk full"), /*skip=*/1);
//
// Thread-safe. The wrapped store must outlive it.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAILING_STORE_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAILING_STORE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "pkg/csimanager/store.h"

namespace lustre_csi::csimanager::fakes {

enum class StoreOp {
  kPutPlugin,
  kDeletePlugin,
  kListPlugins,
  kPutClaim,
  kDeleteClaims,
  kGetClaim,
  kListClaims,
  kPutStaging,
  kListStagings,
  kDeleteClaimsAndStaging,
};

class FailingStore : public Store {
 public:
  explicit FailingStore(Store* wrapped) : wrapped_(wrapped) {}

  // The call of `op` after the next `skip` ones fails with `status`, once.
  void FailNext(StoreOp op, absl::Status status, int skip = 0);
  // Calls of `op` so far, failed ones included.
  int Calls(StoreOp op) const;

  absl::Status PutPlugin(const PluginRecord& record) override;
  absl::Status DeletePlugin(absl::string_view id) override;
  absl::StatusOr<std::vector<PluginRecord>> ListPlugins() override;
  absl::Status PutClaim(const Claim& claim) override;
  absl::Status DeleteClaims(const std::vector<ClaimKey>& keys) override;
  absl::StatusOr<std::optional<Claim>> GetClaim(const ClaimKey& key) override;
  absl::StatusOr<std::vector<Claim>> ListClaims() override;
  absl::Status PutStaging(const StagingRecord& record) override;
  absl::StatusOr<std::vector<StagingRecord>> ListStagings() override;
  absl::Status DeleteClaimsAndStaging(const std::vector<ClaimKey>& keys, const std::string& plugin,
                                      const std::string& staging_path) override;

 private:
  struct Fault {
    int skip;
    absl::Status status;
  };
  // Counts the call; the fault's status when this call is to fail.
  absl::Status Check(StoreOp op);

  Store* const wrapped_;
  mutable absl::Mutex mu_;
  std::map<StoreOp, int> calls_ ABSL_GUARDED_BY(mu_);
  std::map<StoreOp, std::vector<Fault>> faults_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::csimanager::fakes

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAILING_STORE_H_
