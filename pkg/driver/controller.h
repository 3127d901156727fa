// The controller side of the Lustre driver as plain logic. Lustre file
// systems already exist; a "volume" is a file system (and optionally a
// sub-dir of it) described by its id and context. The gRPC layer
// (ControllerService in services.h) validates capabilities and converts
// protos.
//
// Created volumes are remembered in memory by name, so that the same request
// again returns the same volume and a conflicting one is ALREADY_EXISTS.
//
// Sub-dir provisioning (parameter create-sub-dir) needs a FileSystemAccess that
// reaches the file system: CreateVolume creates the sub-dir with an owner
// marker; DeleteVolume deletes it only when the marker names the volume and
// says delete (so nothing it did not create is ever removed, also after a
// restart). Without one, DeleteVolume never touches a file system.
// Thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_CONTROLLER_H_
#define LUSTRE_CSI_PKG_DRIVER_CONTROLLER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/bounded_calls.h"
#include "pkg/base/clock.h"
#include "pkg/driver/lfs.h"
#include "pkg/driver/modes/mode.h"
#include "pkg/driver/mount_slots.h"
#include "pkg/driver/parameters.h"
#include "pkg/driver/project_ids.h"
#include "pkg/driver/volume_locks.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/left_behind.h"

namespace lustre_csi::driver {

using Topology = std::map<std::string, std::string>;

// Capacity defaults and rounding of the Azure Lustre driver.
inline constexpr int64_t kTiB = int64_t{1} << 40;
inline constexpr int64_t kDefaultCapacityBytes = 4 * kTiB;
inline constexpr int64_t kCapacityStepBytes = 4 * kTiB;

struct CreateVolumeArgs {
  std::string name;
  std::map<std::string, std::string> parameters;
  int64_t required_bytes = 0;
  int64_t limit_bytes = 0;
  std::vector<Topology> requisite;
  std::vector<Topology> preferred;
};

struct CreatedVolume {
  std::string volume_id;
  int64_t capacity_bytes = 0;
  std::map<std::string, std::string> context;
  std::vector<Topology> accessible_topology;
};

struct ExpandedVolume {
  int64_t capacity_bytes = 0;
};

// The capacity of a volume with a project quota: required_bytes (else
// limit_bytes, else the default) rounded up to whole KiB, the unit of
// Lustre's block limits; or the whole KiB below a non-zero limit. Errors as
// RoundCapacity, and OUT_OF_RANGE when [required, limit] holds no whole KiB.
absl::StatusOr<int64_t> QuotaCapacity(int64_t required_bytes, int64_t limit_bytes);

// 0 becomes the default; the result is rounded up to the step, or is the
// non-zero limit when the step would exceed it (so the answer always lies in
// [required, limit]). INVALID_ARGUMENT for negative values or required above
// limit; OUT_OF_RANGE only when no limit is set and rounding would overflow.
absl::StatusOr<int64_t> RoundCapacity(int64_t required_bytes, int64_t limit_bytes);

struct ControllerOptions {
  // The host's lfs, for sub-dir-quota and sub-dir-stripe-*; null: those are
  // FAILED_PRECONDITION. Borrowed.
  LustreTool* lfs = nullptr;
  ProjectIdRange project_ids = kDefaultProjectIds;
  // Where the work in a file system's root runs (borrowed; null: the
  // calling thread): in production a task of its own (volume::IsolatedTasks),
  // so a call whose servers stop answering holds no thread of the process,
  // which can then still exit.
  volume::Isolation* isolation = nullptr;
  // How long a call, and a retry of the same request while it runs, waits
  // for it, counted from when it started, before it answers UNAVAILABLE
  // saying it is still in progress (it goes on in the background): below
  // the CO's own timeout. Infinite: calls run on the caller's thread.
  absl::Duration call_timeout = absl::InfiniteDuration();
  // Calls in progress at once, stuck ones included; beyond that a call
  // answers UNAVAILABLE at once.
  int max_calls_in_flight = 256;
  // Tells when a call started (borrowed; null: the real clock).
  base::Clock* clock = nullptr;
  // Tells when a mount helper left waiting has ended (borrowed; null:
  // volume::ProcessLeftBehind()).
  volume::LeftBehind* left_behind = nullptr;
};

// Each call runs bounded by ControllerOptions::call_timeout: a call whose
// file system does not answer answers UNAVAILABLE "... is still in progress
// since ..." within it and goes on in the background, and a retry of the
// same request joins it (its outcome, or the same UNAVAILABLE at once),
// never ABORTED because of it. Another operation on the same volume while
// one runs is ABORTED, as the CSI spec has it. A call in the background
// uses this object: destroy it only once none is left (CallsInFlight), or
// not at all (the process exits). A file system whose root's mount helper
// was killed at its timeout and still waits for the servers is held up as a
// node's mounts are (MountSlots): work in it answers UNAVAILABLE at once,
// starting no other helper, until that helper has ended.
class ControllerLogic {
 public:
  // `file_systems` may be null (no sub-dir provisioning); borrowed.
  explicit ControllerLogic(FileSystemAccess* file_systems = nullptr,
                           ControllerOptions options = {});

  // A repeat of a name is decided from this process's record, and, after a
  // restart, for a provisioned sub-dir, from the request recorded in its
  // owner marker: another request is ALREADY_EXISTS.
  absl::StatusOr<CreatedVolume> Create(const CreateVolumeArgs& args,
                                       absl::Duration caller_wait = absl::InfiniteDuration());

  // Idempotent: an unknown or foreign id is OK. A deleted provisioned
  // sub-dir's project quota is cleared and its project ID freed; a retained
  // one keeps both (its files still carry the ID).
  absl::Status Delete(const std::string& volume_id,
                      absl::Duration caller_wait = absl::InfiniteDuration());

  // Raises the limit of a volume with a project quota to QuotaCapacity; a
  // volume already that large is OK with its size (no shrinking). A volume
  // without one has no size to change (the file system is shared): OK with
  // required_bytes (else limit_bytes), recorded nowhere. NOT_FOUND for an
  // id that is not ours or a provisioned sub-dir that is gone.
  absl::StatusOr<ExpandedVolume> Expand(const std::string& volume_id, int64_t required_bytes,
                                        int64_t limit_bytes,
                                        absl::Duration caller_wait = absl::InfiniteDuration());

  // NOT_FOUND unless `volume_id` is a volume of ours: an id in our format;
  // for a volume created by this process, the same id as recorded; and, when
  // `context` (the volume's) says create-sub-dir and this controller reaches
  // file systems, a sub-dir that still exists with an owner marker naming
  // the volume. A file system that cannot be reached now does not decide.
  absl::Status CheckExists(const std::string& volume_id,
                           const std::map<std::string, std::string>& context = {},
                           absl::Duration caller_wait = absl::InfiniteDuration());

  // Ends every wait for a call now (they answer UNAVAILABLE) and refuses
  // later calls: the process ends.
  void StopWaiting();

  // Calls running now, stuck ones included.
  int CallsInFlight();

 private:
  // What a call answered, as the bounded calls carry it.
  struct Answer {
    absl::Status status;
    CreatedVolume created;
    ExpandedVolume expanded;
  };
  // Runs `work` bounded by options_.call_timeout (see the class comment)
  // and by `caller_wait` (what is left of the caller's deadline); `key`
  // names the request (equal for a retry of it).
  Answer Bounded(const std::string& key, std::function<Answer()> work, absl::Duration caller_wait);

  absl::StatusOr<CreatedVolume> CreateNow(const CreateVolumeArgs& args);
  absl::Status DeleteNow(const std::string& volume_id);
  absl::StatusOr<ExpandedVolume> ExpandNow(const std::string& volume_id, int64_t required_bytes,
                                           int64_t limit_bytes);
  absl::Status CheckExistsNow(const std::string& volume_id,
                              const std::map<std::string, std::string>& context);

  struct Record {
    CreateVolumeArgs args;
    CreatedVolume volume;
  };

  absl::StatusOr<std::string> ProvisionSubDir(const CreateVolumeArgs& args,
                                              const LustreParams& params, int64_t capacity);
  // Gives the sub-dir at `dir` (beneath `root`) its layout and quota.
  absl::Status ApplyCapacityAndLayout(volume::Syscalls& sys, const std::string& root,
                                      const std::string& sub_dir, const SubDirProvisioning& prov,
                                      std::optional<uint32_t> project, int64_t capacity);
  // Sets the project's hard limits (lfs setquota) and records them with its
  // claim, so a later expansion knows them.
  absl::Status SetLimits(volume::Syscalls& sys, const std::string& root, uint32_t project,
                         const RecordedLimits& limits);
  // Clears the quota of the project `volume` (name) holds and frees it,
  // once its sub-dir is gone; none held: OK.
  absl::Status FreeProject(volume::Syscalls& sys, const std::string& root,
                           const std::string& volume);

  // file_systems_->WithFileSystemRoot with `fn` run in options_.isolation:
  // what it asks of the file system may wait for servers that do not
  // answer.
  absl::Status InFileSystem(const LustreSource& root, const FileSystemAccess::FsRootFn& fn);

  FileSystemAccess* const file_systems_;
  const ControllerOptions options_;
  // Work in a file system's root, per file system.
  MountSlots root_mounts_;
  base::WorkerPool workers_;  // runs the bounded calls
  // Null when calls are not bounded.
  std::unique_ptr<base::BoundedCalls<Answer>> calls_;
  VolumeLocks name_locks_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Record> by_name_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_CONTROLLER_H_
