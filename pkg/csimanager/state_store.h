// StateStore: the plugin manager's durable memory, one SQLite file.
//
// It holds the plugin registry and every volume claim. Each mutation is on
// disk (WAL, synchronous=FULL) before the call returns, and is atomic: a
// crash or kill -9 at any point leaves either the state before or the state
// after a call, never a mix.
//
// Group commit: mutations that arrive while a commit is being written wait
// for it, then go to disk together in the next transaction, one sync for
// all of them; each in a savepoint of its own, so one that fails is undone
// alone and reported to its caller only. A single writer pays one sync per
// mutation as before; 16 concurrent writers pay far fewer than 16.
//
// Open() refuses to guess: a file that is not a database, fails SQLite's
// integrity check, carries a schema version newer than this code, or is held
// by another process gives FAILED_PRECONDITION with a message that says what
// is wrong and what to do. The file is opened in exclusive locking mode, so
// a second manager pointed at the same store fails at Open() instead of
// sharing it.
//
// Schema version (PRAGMA user_version) 2: tables `plugins`, `claims` and
// `stagings`. A version-1 store is migrated at Open(), in one transaction:
// every staging path a claim records becomes a "staged" staging record.
//
// Thread-safe: one lock serialises all access. Owned by the caller; every
// user (registry, volume managers) holds a plain pointer and must not outlive
// it.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_STATE_STORE_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_STATE_STORE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/csimanager/store.h"
#include "pkg/csimanager/types.h"

struct sqlite3;

namespace lustre_csi::csimanager {

struct StateStoreOptions {
  // PRAGMA integrity_check at open; false runs the faster quick_check.
  bool full_integrity_check = true;
  // How long Open() waits for another process's lock before giving up.
  absl::Duration lock_timeout = absl::Seconds(1);
  // Called with the number of mutations a transaction carries just before it
  // commits, on the committing thread, with the database lock held (tests
  // and statistics). It may call waiting_writes(); it must not use the store
  // otherwise.
  std::function<void(int mutations)> before_commit;
};

class StateStore : public Store {
 public:
  // The schema version this code reads and writes.
  static constexpr int kSchemaVersion = 2;

  // Opens or creates the store at `path`; its directory must exist.
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(const std::string& path,
                                                          const StateStoreOptions& options = {});
  ~StateStore() override;
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  const std::string& path() const { return path_; }

  // Mutations waiting for the commit in progress to finish.
  int waiting_writes() const;

  // Registry records, keyed by PluginRecord::id. `restored` is not stored.
  absl::Status PutPlugin(const PluginRecord& record) override;
  absl::Status DeletePlugin(absl::string_view id) override;
  absl::StatusOr<std::vector<PluginRecord>> ListPlugins() override;  // ordered by id

  // Claims, keyed by KeyOf(claim). PutClaim inserts or replaces.
  absl::Status PutClaim(const Claim& claim) override;
  // Deletes all of `keys` in one transaction; missing keys are ignored.
  absl::Status DeleteClaims(const std::vector<ClaimKey>& keys) override;
  absl::StatusOr<std::optional<Claim>> GetClaim(const ClaimKey& key) override;
  absl::StatusOr<std::vector<Claim>> ListClaims() override;  // ordered by key

  // Staging records, keyed by (plugin, path). PutStaging inserts or replaces.
  absl::Status PutStaging(const StagingRecord& record) override;
  absl::StatusOr<std::vector<StagingRecord>> ListStagings() override;  // ordered by plugin, path
  // Deletes the claims `keys` and the staging record (plugin, `staging_path`)
  // (when not empty) in one transaction; missing ones are ignored.
  absl::Status DeleteClaimsAndStaging(const std::vector<ClaimKey>& keys, const std::string& plugin,
                                      const std::string& staging_path) override;

 private:
  struct PendingWrite;

  StateStore(std::string path, sqlite3* db, StateStoreOptions options);

  // Runs `apply` (statements only, no transaction control) in a savepoint of
  // the next group commit; returns once that commit is on disk.
  absl::Status Write(std::function<absl::Status()> apply);
  void CommitBatch(const std::vector<PendingWrite*>& batch) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Exec(absl::string_view sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inside a transaction the caller opened.
  absl::Status DeleteClaimsLocked(const std::vector<ClaimKey>& keys)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const StateStoreOptions options_;
  absl::Mutex mu_;
  sqlite3* const db_ ABSL_PT_GUARDED_BY(mu_);

  mutable absl::Mutex write_mu_;
  std::vector<PendingWrite*> waiting_ ABSL_GUARDED_BY(write_mu_);
  bool committing_ ABSL_GUARDED_BY(write_mu_) = false;
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_STATE_STORE_H_
