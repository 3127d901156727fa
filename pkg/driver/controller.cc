#include "pkg/driver/controller.h"

#include <glog/logging.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pkg/base/status_macros.h"
#include "pkg/driver/parameters.h"
#include "pkg/driver/volume_id.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/owned_dir.h"
#include "pkg/volume/sha256.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::driver {
namespace {

constexpr size_t kMaxNameLength = 256;

// What a CreateVolume asked, as recorded in a provisioned sub-dir's owner
// marker: parameters (sorted) and the capacity range.
std::string RequestFingerprint(const CreateVolumeArgs& args) {
  // Keys are case-insensitive (ParseLustreParams): one spelling.
  std::map<std::string, std::string> params;
  for (const auto& [key, value] : args.parameters) params[absl::AsciiStrToLower(key)] = value;
  std::string text = absl::StrCat("required=", args.required_bytes, "\nlimit=", args.limit_bytes);
  for (const auto& [key, value] : params) {
    absl::StrAppend(&text, "\n", key.size(), ":", key, "=", value.size(), ":", value);
  }
  return volume::Sha256Hex(text);
}

bool SameRequest(const CreateVolumeArgs& a, const CreateVolumeArgs& b) {
  return a.parameters == b.parameters && a.required_bytes == b.required_bytes &&
         a.limit_bytes == b.limit_bytes;
}

absl::Status CheckIdField(absl::string_view what, absl::string_view value) {
  if (absl::StrContains(value, '#')) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", value, "' cannot contain '#'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> RoundCapacity(int64_t required_bytes, int64_t limit_bytes) {
  if (required_bytes < 0 || limit_bytes < 0) {
    return absl::InvalidArgumentError("capacity range cannot be negative");
  }
  if (limit_bytes > 0 && required_bytes > limit_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("required_bytes ", required_bytes, " exceeds limit_bytes ", limit_bytes));
  }
  int64_t want = required_bytes == 0 ? kDefaultCapacityBytes : required_bytes;
  // A Lustre volume has no size of its own: the default and the 4 TiB steps
  // apply where the range allows them; below the next step, the limit itself
  // (never below required_bytes, checked above) is the answer.
  if (want > INT64_MAX - (kCapacityStepBytes - 1)) {
    if (limit_bytes > 0) return limit_bytes;
    return absl::OutOfRangeError(absl::StrCat("capacity ", want, " is too large"));
  }
  int64_t rounded = (want + kCapacityStepBytes - 1) / kCapacityStepBytes * kCapacityStepBytes;
  if (limit_bytes > 0 && rounded > limit_bytes) return limit_bytes;
  return rounded;
}

absl::StatusOr<int64_t> QuotaCapacity(int64_t required_bytes, int64_t limit_bytes) {
  constexpr int64_t kKiB = 1024;
  if (required_bytes < 0 || limit_bytes < 0) {
    return absl::InvalidArgumentError("capacity range cannot be negative");
  }
  if (limit_bytes > 0 && required_bytes > limit_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("required_bytes ", required_bytes, " exceeds limit_bytes ", limit_bytes));
  }
  int64_t want = required_bytes > 0 ? required_bytes
                 : limit_bytes > 0  ? limit_bytes
                                    : kDefaultCapacityBytes;
  if (want <= INT64_MAX - (kKiB - 1)) {
    int64_t up = (want + kKiB - 1) / kKiB * kKiB;
    if (limit_bytes == 0 || up <= limit_bytes) return up;
  }
  if (limit_bytes > 0) {
    int64_t down = limit_bytes / kKiB * kKiB;
    if (down > 0 && down >= required_bytes) return down;
    return absl::OutOfRangeError(absl::StrCat("a project quota is set in whole KiB; [",
                                              required_bytes, ", ", limit_bytes,
                                              "] bytes holds none"));
  }
  return absl::OutOfRangeError(absl::StrCat("capacity ", want, " is too large"));
}

ControllerLogic::ControllerLogic(FileSystemAccess* file_systems, ControllerOptions options)
    : file_systems_(file_systems),
      options_(options),
      // Never waited for (as many as calls in flight), and never held up by
      // time alone (the removal of a large sub-dir rightly takes long): only
      // by a root's mount helper left waiting.
      root_mounts_(options_.max_calls_in_flight, absl::ZeroDuration(), absl::InfiniteDuration(),
                   options_.clock, options_.left_behind),
      // Stacks as large as the gRPC handlers' (the removal of a sub-dir's
      // tree may run in place where no task can be made).
      workers_(/*max_idle=*/4, absl::Seconds(30), /*stack_bytes=*/1 << 20) {
  if (options_.call_timeout != absl::InfiniteDuration()) {
    calls_ = std::make_unique<base::BoundedCalls<Answer>>(
        options_.clock != nullptr ? options_.clock : base::RealClock(), options_.call_timeout,
        options_.max_calls_in_flight, &workers_);
  }
}

ControllerLogic::Answer ControllerLogic::Bounded(const std::string& key,
                                                 std::function<Answer()> work,
                                                 absl::Duration caller_wait) {
  if (calls_ == nullptr) return work();
  absl::StatusOr<Answer> done = calls_->Call(
      key, [work = std::move(work)]() -> absl::StatusOr<Answer> { return work(); }, caller_wait);
  if (done.ok()) return *done;
  if (absl::IsDeadlineExceeded(done.status())) {
    // Its file system does not answer, most likely: the call goes on.
    return {absl::UnavailableError(absl::StrCat(
        done.status().message(),
        "; it is still in progress and goes on in the background (a retry of the same request "
        "joins it): retry later"))};
  }
  // Shutting down, too many calls in flight, or no worker to run it.
  return {absl::UnavailableError(done.status().message())};
}

void ControllerLogic::StopWaiting() {
  if (calls_ != nullptr) calls_->StopWaiting();
}

int ControllerLogic::CallsInFlight() { return calls_ != nullptr ? calls_->InFlight() : 0; }

absl::StatusOr<CreatedVolume> ControllerLogic::Create(const CreateVolumeArgs& args,
                                                      absl::Duration caller_wait) {
  Answer answer = Bounded(
      absl::StrCat("CreateVolume ", args.name, " (request ", RequestFingerprint(args).substr(0, 12),
                   ")"),
      [this, args] {
        absl::StatusOr<CreatedVolume> created = CreateNow(args);
        return created.ok() ? Answer{absl::OkStatus(), *created, {}} : Answer{created.status()};
      },
      caller_wait);
  if (!answer.status.ok()) return answer.status;
  return answer.created;
}

absl::Status ControllerLogic::Delete(const std::string& volume_id, absl::Duration caller_wait) {
  return Bounded(
             absl::StrCat("DeleteVolume ", volume_id),
             [this, volume_id] { return Answer{DeleteNow(volume_id)}; }, caller_wait)
      .status;
}

absl::StatusOr<ExpandedVolume> ControllerLogic::Expand(const std::string& volume_id,
                                                       int64_t required_bytes, int64_t limit_bytes,
                                                       absl::Duration caller_wait) {
  Answer answer = Bounded(
      absl::StrCat("ControllerExpandVolume ", volume_id, " to ", required_bytes, "-", limit_bytes),
      [this, volume_id, required_bytes, limit_bytes] {
        absl::StatusOr<ExpandedVolume> expanded = ExpandNow(volume_id, required_bytes, limit_bytes);
        return expanded.ok() ? Answer{absl::OkStatus(), {}, *expanded} : Answer{expanded.status()};
      },
      caller_wait);
  if (!answer.status.ok()) return answer.status;
  return answer.expanded;
}

absl::Status ControllerLogic::CheckExists(const std::string& volume_id,
                                          const std::map<std::string, std::string>& context,
                                          absl::Duration caller_wait) {
  std::string key = absl::StrCat("ValidateVolumeCapabilities ", volume_id);
  for (const auto& [k, v] : context) absl::StrAppend(&key, " ", k, "=", v);
  return Bounded(
             key, [this, volume_id, context] { return Answer{CheckExistsNow(volume_id, context)}; },
             caller_wait)
      .status;
}

absl::StatusOr<CreatedVolume> ControllerLogic::CreateNow(const CreateVolumeArgs& args) {
  if (args.name.empty()) return absl::InvalidArgumentError("volume name missing");
  if (args.name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("volume name is ", args.name.size(), " bytes; at most ", kMaxNameLength));
  }
  if (args.name.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("volume name contains a NUL byte");
  }
  if (absl::Status s = CheckIdField("volume name", args.name); !s.ok()) return s;
  ASSIGN_OR_RETURN(LustreParams params, ParseLustreParams(args.parameters));
  for (absl::string_view field : {params.mgs_address, params.sub_dir}) {
    if (absl::Status s = CheckIdField("parameter", field); !s.ok()) return s;
  }
  // The sub-dir may hold per-pod variables the node fills at publish; check
  // now that it can be filled.
  if (absl::Status s = CheckSubDirShape(params.sub_dir); !s.ok()) return s;
  if (params.provisioning.enabled && file_systems_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        kParamCreateSubDir,
        " needs a controller that reaches the file system: start it with --mount-mode=lustre"));
  }
  const SubDirProvisioning& prov = params.provisioning;
  if ((prov.quota || prov.has_layout()) && options_.lfs == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(kParamSubDirQuota,
                     " and the sub-dir-stripe-* keys need the host's lfs: a "
                     "controller in --mount-mode=lustre (see --lfs)"));
  }
  absl::StatusOr<int64_t> capacity = prov.quota
                                         ? QuotaCapacity(args.required_bytes, args.limit_bytes)
                                         : RoundCapacity(args.required_bytes, args.limit_bytes);
  if (!capacity.ok()) return capacity.status();

  ScopedVolumeLock lock(&name_locks_, args.name);
  if (!lock.ok()) {
    return absl::AbortedError(
        absl::StrCat("an operation on volume ", args.name, " is already in progress"));
  }
  {
    absl::MutexLock l(&mu_);
    auto it = by_name_.find(args.name);
    if (it != by_name_.end()) {
      if (SameRequest(it->second.args, args)) return it->second.volume;
      return absl::AlreadyExistsError(absl::StrCat(
          "volume ", args.name, " already exists with different parameters or capacity"));
    }
  }

  VolumeId id;
  id.name = args.name;
  id.fs_name = params.fs_name;
  id.mgs_address = params.mgs_address;
  id.sub_dir = params.sub_dir;
  CreatedVolume volume;
  volume.context = args.parameters;
  if (params.provisioning.enabled) {
    absl::StatusOr<std::string> sub_dir = ProvisionSubDir(args, params, *capacity);
    if (!sub_dir.ok()) return sub_dir.status();
    // The node mounts exactly the directory created here.
    id.sub_dir = *sub_dir;
    for (auto it = volume.context.begin(); it != volume.context.end();) {
      it = absl::EqualsIgnoreCase(it->first, kParamSubDir) ? volume.context.erase(it) : ++it;
    }
    volume.context[kParamSubDir] = *sub_dir;
  }
  volume.volume_id = FormatVolumeId(id);
  volume.capacity_bytes = *capacity;
  volume.context[kParamCreatedByDynamicProvisioning] = "f";
  // A Lustre file system is reachable from every node that can route to the
  // MGS: any topology the CO requires can be met.
  volume.accessible_topology = !args.requisite.empty() ? args.requisite : args.preferred;

  absl::MutexLock l(&mu_);
  by_name_[args.name] = Record{args, volume};
  LOG(INFO) << "created volume " << volume.volume_id << " (" << volume.capacity_bytes << " bytes)";
  return volume;
}

absl::StatusOr<std::string> ControllerLogic::ProvisionSubDir(const CreateVolumeArgs& args,
                                                             const LustreParams& params,
                                                             int64_t capacity) {
  absl::StatusOr<std::string> sub_dir = FillSubDir(params.sub_dir, params.kubernetes);
  if (!sub_dir.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kParamCreateSubDir, " needs a sub-dir known at CreateVolume (only ",
                     "${pvc.*} and ${pv.*} variables): ", sub_dir.status().message()));
  }
  if (sub_dir->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kParamCreateSubDir, " needs a non-empty ", kParamSubDir));
  }
  const SubDirProvisioning& prov = params.provisioning;
  volume::OwnedDirOptions options;
  options.mode = prov.mode;
  options.uid = prov.uid;
  options.gid = prov.gid;
  volume::DirOwner owner{args.name, prov.delete_on_delete, RequestFingerprint(args)};
  LustreSource root{params.mgs_address, params.fs_name, ""};
  std::optional<uint32_t> project;
  absl::Status status = InFileSystem(root, [&](volume::Syscalls& sys, const std::string& fs_root) {
    // The project ID first (the one the volume holds, after a retry or a
    // restart), so the marker can record it.
    std::optional<ProjectClaim> claim;
    if (prov.quota) {
      ASSIGN_OR_RETURN(claim, ClaimProjectId(sys, fs_root, options_.project_ids, args.name));
      project = claim->id;
      owner.project = claim->id;
    }
    auto give_back_claim = [&] {
      if (!claim.has_value() || !claim->made) return;
      absl::Status released = ReleaseProjectId(sys, fs_root, args.name);
      if (!released.ok()) LOG(ERROR) << "freeing project ID " << claim->id << ": " << released;
    };
    bool made = false;
    absl::Status created = volume::CreateOwnedDir(sys, fs_root, *sub_dir, options, owner, &made);
    if (!created.ok()) {
      give_back_claim();
      return created;
    }
    if (!prov.quota && !prov.has_layout()) return absl::OkStatus();
    absl::Status applied = ApplyCapacityAndLayout(sys, fs_root, *sub_dir, prov, project, capacity);
    // Nothing half-done: what this call made goes again; what it found (a
    // retry's, or a twin call's on another controller) stays for the retry.
    if (applied.ok() || !made) return applied;
    absl::Status undo =
        volume::RemoveTreeBeneath(sys, fs_root, *sub_dir, volume::kMaxOwnedDirDepth);
    if (!undo.ok()) {
      LOG(ERROR) << "taking back sub-dir " << *sub_dir << ": " << undo;
    } else {
      give_back_claim();
    }
    return applied;
  });
  if (!status.ok()) return status;
  LOG(INFO) << "created sub-dir " << *sub_dir << " on " << root.Spec() << " for volume "
            << args.name << " (on delete: " << (owner.delete_on_release ? "delete" : "retain")
            << (project.has_value()
                    ? absl::StrCat("; project ", *project, ", limit ", capacity, " bytes")
                    : std::string())
            << (prov.has_layout() ? "; default layout set" : "") << ")";
  return *sub_dir;
}

absl::Status ControllerLogic::ApplyCapacityAndLayout(volume::Syscalls& sys, const std::string& root,
                                                     const std::string& sub_dir,
                                                     const SubDirProvisioning& prov,
                                                     std::optional<uint32_t> project,
                                                     int64_t capacity) {
  // The path the tool gets is resolved beneath the root first: a directory,
  // no symlink or mount on the way.
  ASSIGN_OR_RETURN(std::string dir, volume::ResolveBeneath(sys, root, sub_dir));
  if (prov.has_layout()) {
    RETURN_IF_ERROR(options_.lfs->SetDefaultLayout(
        dir, StripeLayout{prov.stripe_count, prov.stripe_size, prov.stripe_pool}));
  }
  if (!prov.quota) return absl::OkStatus();
  RETURN_IF_ERROR(options_.lfs->SetProject(dir, *project));
  // Never below what the volume has (an expansion since).
  ASSIGN_OR_RETURN(RecordedLimits recorded, ReadRecordedLimits(sys, root, *project));
  return SetLimits(sys, root, *project,
                   {std::max(recorded.bytes, static_cast<uint64_t>(capacity)), prov.inode_limit});
}

absl::Status ControllerLogic::SetLimits(volume::Syscalls& sys, const std::string& root,
                                        uint32_t project, const RecordedLimits& limits) {
  RETURN_IF_ERROR(
      options_.lfs->SetProjectQuota(root, project, {limits.bytes / 1024, limits.inodes}));
  return RecordLimits(sys, root, project, limits);
}

absl::Status ControllerLogic::FreeProject(volume::Syscalls& sys, const std::string& root,
                                          const std::string& volume) {
  ASSIGN_OR_RETURN(std::optional<uint32_t> id, FindProjectClaim(sys, root, volume));
  if (!id.has_value()) return absl::OkStatus();
  if (options_.lfs != nullptr) {
    absl::Status cleared = options_.lfs->SetProjectQuota(root, *id, {});
    if (!cleared.ok()) {
      return volume::Annotate(cleared, absl::StrCat("clearing the quota of project ", *id));
    }
  } else {
    LOG(WARNING) << "project " << *id << " of volume " << volume
                 << ": no lfs here to clear its quota; the next volume given the ID sets its own";
  }
  RETURN_IF_ERROR(ReleaseProjectId(sys, root, volume));
  LOG(INFO) << "volume " << volume << ": project ID " << *id << " freed";
  return absl::OkStatus();
}

absl::Status ControllerLogic::DeleteNow(const std::string& volume_id) {
  if (volume_id.empty()) return absl::InvalidArgumentError("volume id missing");
  absl::StatusOr<VolumeId> id = ParseVolumeId(volume_id);
  if (!id.ok()) {
    LOG(INFO) << "delete of volume " << volume_id << ": not an id of ours, nothing to do";
    return absl::OkStatus();
  }
  if (id->created_file_system) {
    // The Go driver's dynamic provisioning created an Azure Managed Lustre
    // cluster named after the volume: an OK here would leave it running, and
    // paid for, with nothing left pointing at it.
    return absl::FailedPreconditionError(absl::StrCat(
        "volume ", volume_id,
        " is an Azure Managed Lustre cluster that dynamic provisioning "
        "created (cluster ",
        id->name, ", resource group ",
        id->resource_group.empty() ? "<the cluster's>" : id->resource_group,
        "); this driver does not delete clusters, so nothing was deleted: delete the cluster (for "
        "example az amlfs delete --name ",
        id->name, " --resource-group ", id->resource_group.empty() ? "<group>" : id->resource_group,
        "), then the PersistentVolume with reclaim policy Retain"));
  }
  ScopedVolumeLock lock(&name_locks_, id->name);
  if (!lock.ok()) {
    return absl::AbortedError(
        absl::StrCat("an operation on volume ", id->name, " is already in progress"));
  }
  // A concrete sub-dir may have been provisioned here: its owner marker
  // decides whether it goes.
  if (file_systems_ != nullptr && !id->sub_dir.empty() && !absl::StrContains(id->sub_dir, "${")) {
    LustreSource root{id->mgs_address, id->fs_name, ""};
    bool removed = false;
    absl::Status status = InFileSystem(root, [&](volume::Syscalls& sys,
                                                 const std::string& fs_root) {
      absl::StatusOr<bool> released = volume::ReleaseOwnedDir(sys, fs_root, id->sub_dir, id->name);
      if (!released.ok()) return released.status();
      removed = *released;
      // Once its files are gone (now, or before a retry), the project the
      // volume holds (as the claims say, never a marker) can be another's.
      if (removed || absl::IsNotFound(volume::StatBeneath(sys, fs_root, id->sub_dir).status())) {
        return FreeProject(sys, fs_root, id->name);
      }
      return absl::OkStatus();
    });
    if (!status.ok()) {
      return volume::Annotate(status, absl::StrCat("releasing sub-dir ", id->sub_dir));
    }
    LOG(INFO) << "volume " << volume_id << ": sub-dir " << id->sub_dir
              << (removed ? " deleted" : " kept");
  }
  absl::MutexLock l(&mu_);
  auto it = by_name_.find(id->name);
  if (it != by_name_.end() && it->second.volume.volume_id == volume_id) by_name_.erase(it);
  LOG(INFO) << "deleted volume " << volume_id << " (the file system itself is kept)";
  return absl::OkStatus();
}

absl::Status ControllerLogic::InFileSystem(const LustreSource& root,
                                           const FileSystemAccess::FsRootFn& fn) {
  LustreSource fs = root;
  fs.sub_dir.clear();
  return root_mounts_.Run(fs.Spec(), "its root", [&] {
    return file_systems_->WithFileSystemRoot(
        root, [&](volume::Syscalls& sys, const std::string& fs_root) {
          return volume::RunIn(options_.isolation, [&] { return fn(sys, fs_root); });
        });
  });
}

absl::StatusOr<ExpandedVolume> ControllerLogic::ExpandNow(const std::string& volume_id,
                                                          int64_t required_bytes,
                                                          int64_t limit_bytes) {
  if (volume_id.empty()) return absl::InvalidArgumentError("volume id missing");
  if (required_bytes < 0 || limit_bytes < 0) {
    return absl::InvalidArgumentError("capacity range cannot be negative");
  }
  if (required_bytes == 0 && limit_bytes == 0) {
    return absl::InvalidArgumentError("capacity_range needs required_bytes or limit_bytes");
  }
  if (limit_bytes > 0 && required_bytes > limit_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("required_bytes ", required_bytes, " exceeds limit_bytes ", limit_bytes));
  }
  absl::StatusOr<VolumeId> id = ParseValidVolumeId(volume_id);
  if (!id.ok()) {
    return absl::NotFoundError(
        absl::StrCat("volume ", volume_id, " does not exist: ", id.status().message()));
  }
  ScopedVolumeLock lock(&name_locks_, id->name);
  if (!lock.ok()) {
    return absl::AbortedError(
        absl::StrCat("an operation on volume ", id->name, " is already in progress"));
  }
  // Without a project quota, the size is the CO's record only.
  const ExpandedVolume unenforced{required_bytes > 0 ? required_bytes : limit_bytes};
  if (file_systems_ == nullptr || id->sub_dir.empty() || absl::StrContains(id->sub_dir, "${")) {
    return unenforced;
  }
  std::optional<ExpandedVolume> enforced;
  bool missing = false;
  const LustreSource fs{id->mgs_address, id->fs_name, ""};
  absl::Status status = InFileSystem(fs, [&](volume::Syscalls& sys, const std::string& root) {
    absl::Status there = volume::StatBeneath(sys, root, id->sub_dir).status();
    if (absl::IsNotFound(there)) {
      missing = true;
      return absl::OkStatus();
    }
    if (!there.ok()) return there;
    // The claims decide whether the volume has a quota, never a marker
    // in the volume's own directory (a pod can write there).
    ASSIGN_OR_RETURN(std::optional<uint32_t> held, FindProjectClaim(sys, root, id->name));
    if (!held.has_value()) return absl::OkStatus();
    const uint32_t project = *held;
    if (options_.lfs == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("volume ", volume_id, " has a project quota (project ", project,
                       "); raising it needs the host's lfs: a controller in "
                       "--mount-mode=lustre"));
    }
    ASSIGN_OR_RETURN(int64_t want, QuotaCapacity(required_bytes, limit_bytes));
    ASSIGN_OR_RETURN(RecordedLimits recorded, ReadRecordedLimits(sys, root, project));
    if (recorded.bytes >= static_cast<uint64_t>(want)) {
      if (limit_bytes > 0 && recorded.bytes > static_cast<uint64_t>(limit_bytes)) {
        return absl::OutOfRangeError(absl::StrCat("volume ", volume_id, " is ", recorded.bytes,
                                                  " bytes already, above ", "limit_bytes ",
                                                  limit_bytes, "; a quota is never lowered"));
      }
      enforced = ExpandedVolume{static_cast<int64_t>(recorded.bytes)};
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(SetLimits(sys, root, project, {static_cast<uint64_t>(want), recorded.inodes}));
    LOG(INFO) << "volume " << volume_id << ": project " << project << " limit raised from "
              << recorded.bytes << " to " << want << " bytes";
    enforced = ExpandedVolume{want};
    return absl::OkStatus();
  });
  if (!status.ok()) return volume::Annotate(status, absl::StrCat("expanding volume ", volume_id));
  if (missing) {
    return absl::NotFoundError(absl::StrCat("volume ", volume_id, " does not exist: its sub-dir ",
                                            id->sub_dir, " is gone"));
  }
  return enforced.has_value() ? *enforced : unenforced;
}

absl::Status ControllerLogic::CheckExistsNow(const std::string& volume_id,
                                             const std::map<std::string, std::string>& context) {
  if (volume_id.empty()) return absl::InvalidArgumentError("volume id missing");
  absl::StatusOr<VolumeId> id = ParseValidVolumeId(volume_id);
  if (!id.ok()) {
    return absl::NotFoundError(
        absl::StrCat("volume ", volume_id, " does not exist: ", id.status().message()));
  }
  {
    absl::MutexLock l(&mu_);
    auto it = by_name_.find(id->name);
    if (it != by_name_.end() && it->second.volume.volume_id != volume_id) {
      return absl::NotFoundError(absl::StrCat("volume ", volume_id, " does not exist; ", id->name,
                                              " is ", it->second.volume.volume_id));
    }
  }
  // A provisioned sub-dir (the context says create-sub-dir) exists while its
  // owner marker names the volume; a file system this controller cannot
  // reach now decides nothing.
  bool provisioned = false;
  for (const auto& [key, value] : context) {
    if (absl::EqualsIgnoreCase(key, kParamCreateSubDir))
      provisioned = absl::EqualsIgnoreCase(value, "true");
  }
  if (!provisioned || file_systems_ == nullptr || id->sub_dir.empty() ||
      absl::StrContains(id->sub_dir, "${")) {
    return absl::OkStatus();
  }
  std::optional<volume::DirOwner> owner;
  bool missing = false;
  bool reached = false;
  const LustreSource fs{id->mgs_address, id->fs_name, ""};
  absl::Status result = InFileSystem(fs, [&](volume::Syscalls& sys, const std::string& root) {
    reached = true;
    absl::StatusOr<std::optional<volume::DirOwner>> read =
        volume::ReadDirOwner(sys, root, id->sub_dir);
    if (read.status().code() == absl::StatusCode::kNotFound) {
      missing = true;
      return absl::OkStatus();
    }
    if (!read.ok()) return read.status();
    owner = *read;
    return absl::OkStatus();
  });
  if (!result.ok() && reached) {
    return volume::Annotate(result, absl::StrCat("checking the sub-dir of volume ", volume_id));
  }
  if (!result.ok()) {
    LOG(WARNING) << "volume " << volume_id << ": cannot reach its file system to check sub-dir "
                 << id->sub_dir << " (" << result << "); confirming from the id alone";
    return absl::OkStatus();
  }
  if (missing || !owner.has_value() || owner->volume != id->name) {
    return absl::NotFoundError(
        absl::StrCat("volume ", volume_id, " does not exist: its sub-dir ", id->sub_dir,
                     missing ? " is gone" : " is no longer the one created for it"));
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::driver
