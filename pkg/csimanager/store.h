// Store: what the plugin manager keeps durably (plugin registry, volume
// claims, staging records), as an interface. StateStore (SQLite) is the
// implementation the daemon runs; fakes::FailingStore wraps any Store to
// make chosen operations fail, so the paths that handle a failed write can
// be tested.
//
// Every mutation is durable and atomic when it returns OK (see
// state_store.h for how the SQLite store does it). Implementations are
// thread-safe.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_STORE_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_STORE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/csimanager/types.h"

namespace lustre_csi::csimanager {

class Store {
 public:
  virtual ~Store() = default;

  // Registry records, keyed by PluginRecord::id. `restored` is not stored.
  virtual absl::Status PutPlugin(const PluginRecord& record) = 0;
  virtual absl::Status DeletePlugin(absl::string_view id) = 0;
  virtual absl::StatusOr<std::vector<PluginRecord>> ListPlugins() = 0;  // ordered by id

  // Claims, keyed by KeyOf(claim). PutClaim inserts or replaces.
  virtual absl::Status PutClaim(const Claim& claim) = 0;
  // Deletes all of `keys` at once; missing keys are ignored.
  virtual absl::Status DeleteClaims(const std::vector<ClaimKey>& keys) = 0;
  virtual absl::StatusOr<std::optional<Claim>> GetClaim(const ClaimKey& key) = 0;
  virtual absl::StatusOr<std::vector<Claim>> ListClaims() = 0;  // ordered by key

  // Staging records, keyed by (plugin, path). PutStaging inserts or replaces.
  virtual absl::Status PutStaging(const StagingRecord& record) = 0;
  virtual absl::StatusOr<std::vector<StagingRecord>> ListStagings() = 0;  // by plugin, path
  // Deletes the claims `keys` and the staging record (plugin,
  // `staging_path`) (when not empty) at once; missing ones are ignored.
  virtual absl::Status DeleteClaimsAndStaging(const std::vector<ClaimKey>& keys,
                                              const std::string& plugin,
                                              const std::string& staging_path) = 0;
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_STORE_H_
