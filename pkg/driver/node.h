// The node side of the Lustre driver as plain logic: publish, unpublish and
// stats on this node, through a MountMode and pkg/volume. The gRPC layer
// (NodeService in services.h) checks the protocol-level fields and converts to and from
// these structs.
//
// Thread-safe. A publish or an unpublish runs on a worker of its own, and
// its caller waits for it at most `retry_wait` from when it started, then
// answers UNAVAILABLE saying what is still in progress: no call waits past
// that, whatever the file system does, and what goes on in the background
// goes on holding its target. Operations on one target path are exclusive:
// another one while the first runs is ABORTED at once, but a retry of the
// very same publish or unpublish joins it (its outcome, or UNAVAILABLE), and
// an unpublish that meets a publish abandons it (see Unpublish); different
// targets never wait on each other. Mounts that really reach the
// network are bounded by `max_concurrent_mounts` and a mount that hangs fails with
// DEADLINE_EXCEEDED after `mount_timeout`, releasing its target.
#ifndef LUSTRE_CSI_PKG_DRIVER_NODE_H_
#define LUSTRE_CSI_PKG_DRIVER_NODE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/bounded_calls.h"
#include "pkg/base/clock.h"
#include "pkg/base/worker_pool.h"
#include "pkg/driver/lustre_imports.h"
#include "pkg/driver/modes/mode.h"
#include "pkg/driver/mount_slots.h"
#include "pkg/driver/parameters.h"
#include "pkg/driver/readiness.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/metrics.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

struct NodeOptions {
  std::string node_id;
  int64_t max_volumes_per_node = 0;  // 0: not reported
  std::map<std::string, std::string> topology;
  int max_concurrent_mounts = 8;
  // How long a publish waits for a free mount slot.
  absl::Duration mount_slot_timeout = absl::Minutes(2);
  // Once a mount of a file system has waited on it this long (its servers
  // do not answer), further publishes of that file system answer
  // UNAVAILABLE at once instead of waiting behind it (MountSlots).
  absl::Duration mount_stalled_after = absl::Seconds(10);
  // How long NodeGetVolumeStats waits for the file system (a mount-point
  // check and a statfs) before it reports the volume abnormal, and how many
  // targets may have such a look in flight, not returned, at once.
  absl::Duration stats_timeout = absl::Seconds(5);
  int max_stuck_stats = 8;
  // How long a publish or an unpublish, and a retry of one still running
  // (the same request for the same target), waits for it, counted from when
  // it started, before it answers UNAVAILABLE: below the CO's own 2 minutes.
  absl::Duration retry_wait = absl::Seconds(100);
  // Publishes and unpublishes (targets) in progress at once, stuck ones
  // included; beyond that a call answers UNAVAILABLE at once.
  int max_calls_in_flight = 1024;
  // Tells the time of a look or a call that has not returned (borrowed;
  // null: the real clock).
  base::Clock* clock = nullptr;
  // The host's Lustre client's connection states (borrowed; null: none are
  // looked at). A volume whose file system has a target that is not
  // connected is reported abnormal by Stats.
  LustreImports* client_imports = nullptr;
  // Where the looks that may wait for a file system run (borrowed; null:
  // on the worker thread itself): stats' look, and a repeat publish's check
  // of the mount at its target. In production a task of its own, so that
  // one that never returns holds no thread of the process
  // (volume::IsolatedTasks).
  volume::Isolation* isolation = nullptr;
};

struct PublishRequest {
  std::string volume_id;
  std::string target_path;
  bool read_only = false;  // readonly flag or a *_READER_ONLY access mode
  std::vector<std::string> mount_flags;
  std::optional<uint32_t> volume_mount_group;  // fsGroup, when the CO passes one
  std::map<std::string, std::string> volume_context;
};

struct VolumeStats {
  // Bytes and inodes, when they could be read.
  std::optional<volume::VolumeMetrics> usage;
  bool abnormal = false;
  std::string message;
};

class NodeLogic {
 public:
  // `sys`, `mode` and `readiness` are borrowed and must outlive this
  // object; `readiness` may be null (no gate before mounting).
  NodeLogic(NodeOptions options, volume::Syscalls* sys, MountMode* mode,
            ReadinessMonitor* readiness = nullptr);

  // Mounts the volume described by `req.volume_context` on `req.target_path`
  // (created when missing). Already mounted there with the same source and
  // the same per-mount flags (read-only, nosuid, noatime, ...), and, when this
  // process published the target, with the same volume_mount_group: OK.
  // Anything else mounted there: ALREADY_EXISTS, and the mount is left as it
  // is. (After a restart the group of an earlier publish is not known.) A
  // corrupted mount there is unmounted and mounted again. A node that cannot
  // mount (readiness) fails with FAILED_PRECONDITION before trying. A sub-dir
  // is mounted directly; only when it does not exist is it created first
  // (through a root mount) and mounted again. On failure what was mounted is
  // unmounted again (an unmount that fails is logged) and a target directory
  // this call created is removed.
  //
  // Publish and Unpublish wait for their work at most `retry_wait` from its
  // start, and at most `caller_wait` (what is left of the caller's
  // deadline): then they answer UNAVAILABLE, the work going on, joined by a
  // retry.
  absl::Status Publish(const PublishRequest& req,
                       absl::Duration caller_wait = absl::InfiniteDuration());

  // Unmounts everything on `target_path` (escalating when needed) and removes
  // the directory; never deletes anything below it. A missing target is OK.
  // A publish of the target still in progress (a CO that gave up on it
  // unpublishes) is abandoned: it undoes what it mounted when it returns and
  // answers ABORTED; the unpublish waits for it to return and then proceeds
  // (its caller meanwhile gets UNAVAILABLE, never ABORTED).
  absl::Status Unpublish(const std::string& volume_id, const std::string& target_path,
                         absl::Duration caller_wait = absl::InfiniteDuration());

  // Usage from statfs. INVALID_ARGUMENT for a path over 4096 bytes or with a
  // NUL. NOT_FOUND where the volume is not published: a path that does not
  // exist, is not absolute and clean (never looked at), names something
  // through a symlink, or, where this node makes mounts, is not a mount
  // point. A corrupted mount (ENOTCONN, ESTALE, EIO) is reported as an
  // abnormal volume condition, not as an error; so is a file system that
  // does not answer within `stats_timeout` ("not responding since ..."),
  // without figures. The look at the file system runs on a worker: at most
  // one per target is in flight (a retry joins it, and once its bound is
  // past answers at once), at most `max_stuck_stats` targets at once (then
  // UNAVAILABLE at once), and while a look at one target of a file system
  // has not returned, the other targets of that file system (the volume
  // id's MGS and fs-name) are reported not responding without a look. Where the host's Lustre
  // client reports a target of the volume's file system not connected (`client_imports`), the
  // volume is abnormal too, naming the targets and their states.
  absl::StatusOr<VolumeStats> Stats(const std::string& volume_id, const std::string& path);

  // For a process that ends: every call waiting for a publish, an unpublish
  // or a look at a file system answers UNAVAILABLE now, and so does every
  // later one; what runs goes on in the background.
  void StopWaiting();
  // Publishes, unpublishes and looks at file systems that have not returned
  // (they use this object, its mode and its syscalls until they do).
  int WorkInFlight();

  const NodeOptions& options() const { return options_; }

 private:
  absl::Status PublishWork(const PublishRequest& req);
  // `params`: VolumeParams of the request, read once by PublishWork.
  absl::Status PublishLocked(const PublishRequest& req, const LustreParams& params);
  absl::Status UnpublishWork(const std::string& volume_id, const std::string& target_path);
  // Runs `work` for `target` on a worker, joined by the same `key`, waiting
  // for it as long as `retry_wait` from its start, and `caller_wait` at most.
  absl::Status RunBounded(const std::string& key, const std::string& target,
                          std::function<absl::Status()> work, absl::Duration caller_wait);
  // Marks `stats` abnormal when the Lustre client reports a target of the
  // volume's file system not connected.
  void AddClientState(const std::string& volume_id, VolumeStats* stats);
  // A file system (its MGS and name, FileSystemOf) that does not answer: a
  // stats look at one of its targets has not returned. Publishes of it fail
  // at once, unpublishes detach without looking, other targets' stats say
  // so without a look of their own.
  struct Silence {
    std::string target;  // whose look has not returned
    std::string why;     // "<fs>: a look at <target> has not returned since <time>"
  };
  std::optional<Silence> Silent(const std::string& fs);
  // The file system published at `target` by this process (from the volume
  // context), else the one `volume_id` names; "" when neither tells.
  std::string FileSystemAt(const std::string& volume_id, const std::string& target);
  // What runs on `target` and since when, for a caller that stops waiting.
  std::string InProgress(const std::string& target);

  // What runs on a target now: one publish or unpublish at a time.
  struct TargetWork {
    bool publish = false;
    absl::Time started;
    // An unpublish arrived while this publish ran: it undoes what it made.
    bool abandoned = false;
  };
  // Claims `target` for a publish; false when something runs on it.
  bool ClaimForPublish(const std::string& target);
  // Claims `target` for an unpublish, abandoning a publish that holds it and
  // waiting for it to return. ABORTED when an unpublish holds it.
  absl::Status ClaimForUnpublish(const std::string& target);
  // Whether the publish holding `target` was abandoned.
  bool Abandoned(const std::string& target);
  void ReleaseTarget(const std::string& target);

  const NodeOptions options_;
  volume::Syscalls* const sys_;
  MountMode* const mode_;
  ReadinessMonitor* const readiness_;
  absl::Mutex targets_mu_;
  std::map<std::string, TargetWork> targets_ ABSL_GUARDED_BY(targets_mu_);
  absl::CondVar targets_cv_;  // signalled when a target is released
  // What this process published at each target: the volume_mount_group it
  // mounted with (unset: not known, e.g. a repeat after a restart), and the
  // file system (FileSystemAt).
  struct Published {
    std::optional<std::optional<uint32_t>> group;
    std::string fs;
  };
  // The volume_mount_group `target` was published with, by this process.
  std::optional<std::optional<uint32_t>> PublishedGroup(const std::string& target);
  absl::Mutex published_mu_;
  std::map<std::string, Published> published_ ABSL_GUARDED_BY(published_mu_);
  base::Clock* const clock_;  // options_.clock, or the real one
  MountSlots mount_slots_;
  volume::Isolation* const isolation_;  // options_.isolation, or the calling thread
  base::BoundedCalls<VolumeStats> stats_calls_;
  // File systems with a look that has not returned, and at which target.
  absl::Mutex silent_mu_;
  std::map<std::string, std::string> silent_fs_ ABSL_GUARDED_BY(silent_mu_);
  base::WorkerPool workers_;  // runs publishes and unpublishes
  // The outcome of a publish or an unpublish, told apart from the calls' own
  // errors (its bound passed).
  struct Outcome {
    absl::Status status;
  };
  base::BoundedCalls<Outcome> calls_;
};

// Checks an absolute, NUL-free, normalised target path of bounded length.
absl::Status ValidateTargetPath(const std::string& path);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_NODE_H_
