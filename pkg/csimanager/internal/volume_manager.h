// VolumeManager: mounts volumes for allocations through one node plugin and
// remembers every claim.
//
// Paths, below the manager's root for this plugin:
//   staging: <root>/staging/<namespace>/<volume>/<usage>
//   publish: <root>/per-alloc/<alloc>/<volume>/<usage>
// where usage is UsageName() (e.g. "rw-file-system-multi-node-multi-writer")
// and ids are escaped into single segments of the POSIX portable filename
// set by pkg/volume's EscapePathSegment (an id too long to escape reversibly
// is INVALID_ARGUMENT). Paths already in the book win over computed ones, so
// claims and stages made under another layout keep their paths
// (ClaimBook::UseRecordedPaths), for mounts and unmounts alike.
//
// MountVolume stages only when the plugin advertises STAGE_UNSTAGE_VOLUME and
// the book (the staging records in the store) has no finished stage of that
// staging path, whatever the plugin left on disk there; then it publishes
// (an already mounted target is reused). UnmountVolume unpublishes, and
// unstages when the last claim on the staging path leaves: once per stage.
// The usage counts behind that decision are the claims themselves, so they
// survive restarts: Restore() rebuilds them and the staging records from the
// store (Nomad keeps them only in memory and can unstage a volume still in use
// after a restart; this must not happen here). A staging record is written
// ("staging") before NodeStageVolume, ("staged") after it succeeds, and
// ("unstaging") before NodeUnstageVolume; it goes with the last claim once
// the unstage succeeded.
//
// The claims and staging records live in a ClaimBook (claim_book.h); this
// class is the orchestration around it. Each claim is written to the state
// store, and synced, before the plugin is
// called ("mounting") and again before success is returned ("mounted"); a
// staged claim whose target is gone but whose unstage has not finished stays
// as "unpublished". A crash at any point therefore leaves a record of all
// that may be mounted or staged. When a mount fails, what it did is undone in
// reverse order: the stage it made (or may have made) is unstaged when no one
// else uses it, and the claim is dropped unless something it would own may
// still be held; a failed undo keeps the claim and the staging record.
//
// HasMount answers only for targets under <root>/per-alloc.
//
// Operations on one volume (namespace + volume id) are queued and run one at
// a time, in arrival order; different volumes run in parallel. Plugin calls
// answering UNAVAILABLE, RESOURCE_EXHAUSTED, ABORTED or DEADLINE_EXCEEDED
// (the per-attempt timeout) are retried with exponential backoff;
// NOT_FOUND from unpublish or unstage means it is already done.
//
// Thread-safe. The store, mount inspector, clock and cancel token are not
// owned and must outlive the manager. Cancelling the token makes retries and
// calls in flight end with CANCELLED (shutdown).
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_VOLUME_MANAGER_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_VOLUME_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/cancel.h"
#include "pkg/base/clock.h"
#include "pkg/csimanager/internal/claim_book.h"
#include "pkg/csimanager/internal/instance_manager.h"
#include "pkg/csimanager/internal/keyed_queue.h"
#include "pkg/csimanager/manager_types.h"
#include "pkg/csimanager/mount_inspector.h"
#include "pkg/csimanager/store.h"
#include "pkg/csimanager/types.h"

namespace lustre_csi::csimanager {

// Whether a plugin error is worth another attempt.
bool IsRetryable(absl::StatusCode code);

struct VolumeManagerOptions {
  // This plugin's mount root; absolute.
  std::string root;
  RetryPolicy retry;
  uint32_t dir_mode = 0750;
};

// The plugin's currently active instance; null when none is registered.
using InstanceResolver = std::function<std::shared_ptr<InstanceManager>()>;

class VolumeManager {
 public:
  VolumeManager(std::string plugin, VolumeManagerOptions options, InstanceResolver resolver,
                Store* store, MountInspector* mounts, base::Clock* clock,
                base::CancelToken* cancel);
  VolumeManager(const VolumeManager&) = delete;
  VolumeManager& operator=(const VolumeManager&) = delete;

  // Reads this plugin's claims back, checks each against the mount table and
  // rebuilds the usage counts. Call once, before any operation.
  absl::StatusOr<RestoreReport> Restore();

  // Stages (when supported) and publishes; idempotent for the same claim.
  absl::StatusOr<MountInfo> MountVolume(const MountRequest& request);
  // Unpublishes, and unstages when this was the last user. Unmounting a
  // claim that does not exist succeeds (after cleaning up a stray mount).
  absl::StatusOr<UnmountResult> UnmountVolume(const UnmountRequest& request);
  // Whether the mount's target is mounted.
  absl::StatusOr<bool> HasMount(const MountInfo& mount);
  // The node id the plugin reported: the node's id in the storage system.
  absl::StatusOr<std::string> ExternalID();
  // Unmounts every claim of this plugin.
  DrainResult Drain();

  std::vector<Claim> Claims();
  // The report of the last Restore().
  RestoreReport last_restore();
  // Claims holding the staging path of (namespace, volume, usage name).
  int UsageCount(const std::string& namespace_, const std::string& volume_id,
                 const std::string& usage);

  absl::StatusOr<std::string> StagingPath(const std::string& namespace_,
                                          const std::string& volume_id,
                                          const std::string& usage) const;
  absl::StatusOr<std::string> TargetPath(const std::string& alloc_id, const std::string& volume_id,
                                         const std::string& usage) const;

  // Operations running or queued for the volume.
  int QueuedOperations(const std::string& namespace_, const std::string& volume_id);

  const std::string& plugin() const { return plugin_; }

 private:
  // The queue key of a volume: its escaped namespace and id.
  absl::StatusOr<std::string> VolumeKey(const std::string& namespace_,
                                        const std::string& volume_id) const;
  // The paths from escaped segments.
  std::string JoinStaging(absl::string_view ns, absl::string_view volume,
                          absl::string_view use) const;
  std::string JoinTarget(absl::string_view alloc, absl::string_view volume,
                         absl::string_view use) const;
  // Where a request's volume lives, computed once per request.
  struct Layout {
    std::string staging;     // its staging path (used when the plugin stages)
    std::string target;      // the allocation's target path
    std::string volume_key;  // the queue key
    ClaimKey key;            // the claim's key; key.usage is the usage's name
  };
  absl::StatusOr<Layout> LayoutOf(const std::string& namespace_, const std::string& volume_id,
                                  const std::string& alloc_id, const VolumeUsage& usage) const;
  // Runs `call` with the retry policy, each attempt's deadline and the
  // retries cut short at `answer_by` (real time).
  absl::Status WithRetries(absl::string_view what, absl::Time answer_by,
                           const std::function<absl::Status(const CallOptions&)>& call);
  absl::StatusOr<std::shared_ptr<InstanceManager>> Instance(bool require_healthy);
  // Removes `path` and its empty parents up to (not including) `stop_at`.
  void RemoveDirs(const std::string& path, const std::string& stop_at);
  // What a mount did with NodeStageVolume.
  enum class StageOutcome {
    kNotCalled,    // no staging, or a finished stage was recorded already
    kStaged,       // this call staged
    kMaybeStaged,  // this call's stage ended without a clear answer (deadline, cancel)
    kFailedNew,    // the plugin refused a stage this call started
    kFailedOld,    // the plugin refused to finish a stage recorded before (kept)
  };
  // Undoes what a failed mount did, in reverse order (the publish's
  // directories, then the stage this call made when no one else uses it),
  // and drops its claim; an error says what could not be undone (the claim
  // is then kept, and the staging record too). The undo's plugin calls stop
  // at the request's `answer_by` too.
  absl::Status CleanUpFailedMount(const Claim& claim, const ClaimKey& key, StageOutcome stage,
                                  absl::Time answer_by);
  // Records the unstage, then calls NodeUnstageVolume (NOT_FOUND is done)
  // until `answer_by`.
  absl::Status Unstage(StagingRecord record, absl::Time answer_by);

  const std::string plugin_;
  const VolumeManagerOptions options_;
  const InstanceResolver resolver_;
  MountInspector* const mounts_;
  base::Clock* const clock_;
  base::CancelToken* const cancel_;
  KeyedQueue queue_;

  ClaimBook book_;
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_VOLUME_MANAGER_H_
