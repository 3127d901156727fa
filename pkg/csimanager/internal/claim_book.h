// ClaimBook: what one node plugin's volume manager has promised, as claims
// (one allocation's use of one volume) and staging records (one stage of a
// volume and usage), held in memory and in the state store.
//
// Every change is written to the store (and synced by it) before the book
// changes in memory, so a crash leaves a record of all that may be mounted
// or staged. The users of a staging path are the claims themselves, so the
// usage counts survive restarts: Restore() rebuilds the book from the store
// and checks each claim's target against the mount table.
//
// The book knows nothing of plugins or gRPC; the volume manager decides when
// to stage, publish and undo, and records each step here. Thread-safe; the
// store is not owned and must outlive the book.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_CLAIM_BOOK_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_CLAIM_BOOK_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "pkg/csimanager/manager_types.h"
#include "pkg/csimanager/mount_inspector.h"
#include "pkg/csimanager/store.h"
#include "pkg/csimanager/types.h"

namespace lustre_csi::csimanager {

class ClaimBook {
 public:
  ClaimBook(std::string plugin, Store* store);
  ClaimBook(const ClaimBook&) = delete;
  ClaimBook& operator=(const ClaimBook&) = delete;

  // Replaces the book with this plugin's records in the store; `mounts`
  // tells which claimed targets are mounted (for the report only).
  absl::StatusOr<RestoreReport> Restore(MountInspector& mounts);
  RestoreReport last_restore();

  std::vector<Claim> Claims();
  std::optional<Claim> Find(const ClaimKey& key);
  // Inserts or replaces the claim (keyed by KeyOf).
  absl::Status SaveClaim(const Claim& claim);
  absl::Status DropClaims(const std::vector<ClaimKey>& keys);

  std::optional<StagingRecord> FindStaging(const std::string& path);
  absl::Status SaveStaging(const StagingRecord& record);
  // Drops `keys` and the staging record of `staging` (when not empty) in
  // one store transaction.
  absl::Status DropClaimsAndStaging(const std::vector<ClaimKey>& keys, const std::string& staging);

  // Claims other than `self` that hold `staging` (not yet unpublished).
  int OtherUsers(const std::string& staging, const ClaimKey& self);
  // Claims on `staging` that are unpublished and wait for its unstage.
  std::vector<ClaimKey> UnpublishedUsers(const std::string& staging);
  // The staging path recorded for a volume and usage (a staging record, or
  // a staged claim), if any.
  std::optional<std::string> RecordedStaging(const std::string& namespace_,
                                             const std::string& volume_id,
                                             const std::string& usage);
  // Paths the book holds for `key` win over computed ones: the claim's own
  // target and staging path, or the staging path in use for the same
  // volume and usage. Paths made under another layout (an earlier mount
  // root, say) keep working. Unchanged where the book holds nothing.
  // Returns `key`'s claim, if any (one lookup for both).
  std::optional<Claim> UseRecordedPaths(const ClaimKey& key, std::string* staging,
                                        std::string* target);

 private:
  std::optional<std::string> RecordedStagingLocked(const std::string& namespace_,
                                                   const std::string& volume_id,
                                                   const std::string& usage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string plugin_;
  Store* const store_;

  absl::Mutex mu_;
  std::map<ClaimKey, Claim> claims_ ABSL_GUARDED_BY(mu_);
  // What is staged through this plugin, by staging path.
  std::map<std::string, StagingRecord> stagings_ ABSL_GUARDED_BY(mu_);
  RestoreReport restore_report_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_CLAIM_BOOK_H_
