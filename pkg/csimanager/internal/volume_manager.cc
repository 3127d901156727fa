#include "pkg/csimanager/internal/volume_manager.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "pkg/base/annotate.h"
#include "pkg/base/status_macros.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::csimanager {
namespace {

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

// `id` as one path segment of the POSIX portable filename set (pkg/volume's
// escaping): the paths go to other vendors' plugins. INVALID_ARGUMENT,
// naming `what`, for an empty id and for one too long to escape reversibly.
absl::StatusOr<std::string> Segment(absl::string_view id, absl::string_view what) {
  constexpr volume::SegmentAlphabet kAlphabet = volume::SegmentAlphabet::kPortable;
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  std::string segment = volume::EscapePathSegment(id, kAlphabet);
  if (!volume::UnescapePathSegment(segment, kAlphabet).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is too long for a path segment (", id.size(), " bytes)"));
  }
  return segment;
}

absl::Status IgnoreNotFound(absl::Status status) {
  return status.code() == absl::StatusCode::kNotFound ? absl::OkStatus() : status;
}

using base::Annotate;

}  // namespace

bool IsRetryable(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kResourceExhausted ||
         code == absl::StatusCode::kAborted || code == absl::StatusCode::kDeadlineExceeded;
}

VolumeManager::VolumeManager(std::string plugin, VolumeManagerOptions options,
                             InstanceResolver resolver, Store* store, MountInspector* mounts,
                             base::Clock* clock, base::CancelToken* cancel)
    : plugin_(std::move(plugin)),
      options_(std::move(options)),
      resolver_(std::move(resolver)),
      mounts_(mounts),
      clock_(clock),
      cancel_(cancel),
      book_(plugin_, store) {}

std::string VolumeManager::JoinStaging(absl::string_view ns, absl::string_view volume,
                                       absl::string_view use) const {
  return absl::StrCat(options_.root, "/staging/", ns, "/", volume, "/", use);
}

std::string VolumeManager::JoinTarget(absl::string_view alloc, absl::string_view volume,
                                      absl::string_view use) const {
  return absl::StrCat(options_.root, "/per-alloc/", alloc, "/", volume, "/", use);
}

absl::StatusOr<std::string> VolumeManager::StagingPath(const std::string& namespace_,
                                                       const std::string& volume_id,
                                                       const std::string& usage) const {
  ASSIGN_OR_RETURN(std::string ns, Segment(namespace_, "namespace"));
  ASSIGN_OR_RETURN(std::string volume, Segment(volume_id, "volume id"));
  ASSIGN_OR_RETURN(std::string use, Segment(usage, "usage"));
  return JoinStaging(ns, volume, use);
}

absl::StatusOr<std::string> VolumeManager::VolumeKey(const std::string& namespace_,
                                                     const std::string& volume_id) const {
  ASSIGN_OR_RETURN(std::string ns, Segment(namespace_, "namespace"));
  ASSIGN_OR_RETURN(std::string volume, Segment(volume_id, "volume id"));
  return absl::StrCat(ns, "/", volume);
}

absl::StatusOr<std::string> VolumeManager::TargetPath(const std::string& alloc_id,
                                                      const std::string& volume_id,
                                                      const std::string& usage) const {
  ASSIGN_OR_RETURN(std::string alloc, Segment(alloc_id, "alloc id"));
  ASSIGN_OR_RETURN(std::string volume, Segment(volume_id, "volume id"));
  ASSIGN_OR_RETURN(std::string use, Segment(usage, "usage"));
  return JoinTarget(alloc, volume, use);
}

absl::StatusOr<VolumeManager::Layout> VolumeManager::LayoutOf(const std::string& namespace_,
                                                              const std::string& volume_id,
                                                              const std::string& alloc_id,
                                                              const VolumeUsage& usage) const {
  // Each id is escaped once, in the order the paths above check them.
  ASSIGN_OR_RETURN(std::string name, UsageName(usage));
  ASSIGN_OR_RETURN(std::string ns, Segment(namespace_, "namespace"));
  ASSIGN_OR_RETURN(std::string volume, Segment(volume_id, "volume id"));
  ASSIGN_OR_RETURN(std::string use, Segment(name, "usage"));
  ASSIGN_OR_RETURN(std::string alloc, Segment(alloc_id, "alloc id"));
  Layout at;
  at.staging = JoinStaging(ns, volume, use);
  at.target = JoinTarget(alloc, volume, use);
  at.volume_key = absl::StrCat(ns, "/", volume);
  at.key = ClaimKey{plugin_, namespace_, volume_id, alloc_id, std::move(name)};
  return at;
}

absl::StatusOr<RestoreReport> VolumeManager::Restore() { return book_.Restore(*mounts_); }

RestoreReport VolumeManager::last_restore() { return book_.last_restore(); }

std::vector<Claim> VolumeManager::Claims() { return book_.Claims(); }

absl::StatusOr<std::shared_ptr<InstanceManager>> VolumeManager::Instance(bool require_healthy) {
  std::shared_ptr<InstanceManager> instance = resolver_ ? resolver_() : nullptr;
  if (instance == nullptr) {
    return absl::UnavailableError(absl::StrCat("plugin ", plugin_, " is not registered"));
  }
  if (require_healthy) {
    PluginStatus status = instance->Status();
    if (!status.healthy || !status.fingerprinted) {
      RETURN_IF_ERROR(instance->Fingerprint());
    }
  }
  return instance;
}

absl::Status VolumeManager::WithRetries(
    absl::string_view what, absl::Time answer_by,
    const std::function<absl::Status(const CallOptions&)>& call) {
  const RetryPolicy& retry = options_.retry;
  absl::Duration backoff = retry.initial_backoff;
  absl::Status status;
  int attempt = 0;
  while (true) {
    ++attempt;
    const absl::Duration left = answer_by - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, " not called: the caller's deadline has passed"));
    }
    CallOptions options;
    options.timeout = std::min(retry.per_attempt_timeout, left);
    options.cancel = cancel_;
    status = call(options);
    if (status.ok() || !IsRetryable(status.code())) return status;
    if (attempt >= retry.max_attempts || (cancel_ != nullptr && cancel_->cancelled())) break;
    if (absl::Now() + backoff >= answer_by) {
      return base::WithMessage(
          status, absl::StrCat(status.message(), " (gave up after ", attempt,
                               " attempts: the caller's deadline comes before the next)"));
    }
    LOG(WARNING) << what << " failed (attempt " << attempt << " of " << retry.max_attempts
                 << "), retrying in " << backoff << ": " << status;
    if (!clock_->SleepFor(backoff, cancel_)) {
      return absl::CancelledError(
          absl::StrCat("cancelled while waiting to retry after: ", status.message()));
    }
    backoff = std::min(backoff * retry.multiplier, retry.max_backoff);
  }
  return base::WithMessage(
      status, absl::StrCat(status.message(), " (gave up after ", attempt, " attempts)"));
}

int VolumeManager::UsageCount(const std::string& namespace_, const std::string& volume_id,
                              const std::string& usage) {
  std::optional<std::string> staging = book_.RecordedStaging(namespace_, volume_id, usage);
  return staging.has_value() ? book_.OtherUsers(*staging, ClaimKey()) : 0;
}

absl::Status VolumeManager::Unstage(StagingRecord record, absl::Time answer_by) {
  record.state = StagingState::kUnstaging;
  RETURN_IF_ERROR(book_.SaveStaging(record));
  ASSIGN_OR_RETURN(std::shared_ptr<InstanceManager> instance, Instance(false));
  ASSIGN_OR_RETURN(CsiClient * client, instance->Client());
  return IgnoreNotFound(WithRetries("NodeUnstageVolume", answer_by, [&](const CallOptions& o) {
    return client->NodeUnstageVolume(record.remote_id, record.path, o);
  }));
}

void VolumeManager::RemoveDirs(const std::string& path, const std::string& stop_at) {
  for (std::string dir = path; dir.size() > stop_at.size() && absl::StartsWith(dir, stop_at + "/");
       dir = Dirname(dir)) {
    absl::Status removed = mounts_->RemoveDir(dir);
    if (!removed.ok()) {
      VLOG(1) << "keeping " << dir << ": " << removed;
      return;
    }
  }
}

absl::Status VolumeManager::CleanUpFailedMount(const Claim& claim, const ClaimKey& key,
                                               StageOutcome stage, absl::Time answer_by) {
  absl::StatusOr<bool> target_mounted = mounts_->IsMountPoint(claim.mount.target);
  if (!target_mounted.ok() || *target_mounted) {
    return absl::FailedPreconditionError(
        absl::StrCat("the target ", claim.mount.target,
                     " may be mounted; the claim is kept until the volume is unmounted"));
  }
  RemoveDirs(claim.mount.target, options_.root + "/per-alloc");
  std::string drop_staging;
  std::optional<StagingRecord> record =
      claim.mount.staged ? book_.FindStaging(claim.mount.source) : std::nullopt;
  if (record.has_value() && book_.OtherUsers(claim.mount.source, key) == 0) {
    if (stage == StageOutcome::kStaged || stage == StageOutcome::kMaybeStaged) {
      // Undo the stage this call made (or may have made).
      absl::Status unstaged = Unstage(*record, answer_by);
      if (!unstaged.ok()) {
        return base::WithMessage(
            unstaged, absl::StrCat("undoing the stage failed too (", unstaged.message(),
                                   "); the claim is kept until the volume is unmounted"));
      }
      drop_staging = record->path;
      RemoveDirs(claim.mount.source, options_.root + "/staging");
    } else if (stage == StageOutcome::kFailedNew) {
      // The plugin refused a stage this call started: nothing to undo there.
      drop_staging = record->path;
      RemoveDirs(claim.mount.source, options_.root + "/staging");
    }
  }
  return book_.DropClaimsAndStaging({key}, drop_staging);
}

absl::StatusOr<MountInfo> VolumeManager::MountVolume(const MountRequest& request) {
  if (request.remote_id.empty()) return absl::InvalidArgumentError("remote volume id is empty");
  ASSIGN_OR_RETURN(
      Layout at, LayoutOf(request.namespace_, request.volume_id, request.alloc_id, request.usage));
  std::string what = DescribeClaim(at.key);
  absl::StatusOr<KeyedQueue::Turn> turn = queue_.Enter(at.volume_key, request.answer_by);
  if (!turn.ok()) return Annotate(turn.status(), absl::StrCat("mounting ", what));
  std::optional<Claim> existing = book_.UseRecordedPaths(at.key, &at.staging, &at.target);
  if (existing.has_value()) {
    if (existing->remote_id != request.remote_id) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " is already claimed with remote id \"", existing->remote_id,
                       "\", not \"", request.remote_id, "\"; unmount it first"));
    }
    if (existing->state == ClaimState::kMounted) {
      absl::StatusOr<bool> mounted = mounts_->IsMountPoint(existing->mount.target);
      if (!mounted.ok()) return mounted.status();
      if (*mounted) return existing->mount;
    }
  }

  absl::StatusOr<std::shared_ptr<InstanceManager>> instance = Instance(true);
  if (!instance.ok()) return Annotate(instance.status(), absl::StrCat("mounting ", what));
  ASSIGN_OR_RETURN(CsiClient * client, (*instance)->Client());
  bool staged = (*instance)->Status().stage_unstage;

  Claim claim = existing.value_or(Claim());
  claim.plugin = plugin_;
  claim.namespace_ = request.namespace_;
  claim.volume_id = request.volume_id;
  claim.remote_id = request.remote_id;
  claim.alloc_id = request.alloc_id;
  claim.usage = request.usage;
  claim.mount.staged = staged;
  claim.mount.source = staged ? at.staging : "";
  claim.mount.target = at.target;
  claim.state = ClaimState::kMounting;
  if (!existing.has_value()) claim.created_at = clock_->Now();
  absl::Status saved = book_.SaveClaim(claim);
  if (!saved.ok()) return Annotate(saved, absl::StrCat("recording ", what));

  absl::Status result;
  // Staged or not is what the book says, whatever the plugin left at the
  // staging path: stage unless a finished stage is recorded.
  StageOutcome stage_outcome = StageOutcome::kNotCalled;
  if (staged) {
    result = mounts_->MkdirAll(at.staging, options_.dir_mode);
    std::optional<StagingRecord> record = book_.FindStaging(at.staging);
    if (result.ok() && (!record.has_value() || record->state != StagingState::kStaged)) {
      bool new_record = !record.has_value();
      StagingRecord staging_record = record.value_or(StagingRecord());
      staging_record.plugin = plugin_;
      staging_record.path = at.staging;
      staging_record.namespace_ = request.namespace_;
      staging_record.volume_id = request.volume_id;
      staging_record.remote_id = request.remote_id;
      staging_record.usage = at.key.usage;
      staging_record.state = StagingState::kStaging;
      result = book_.SaveStaging(staging_record);
      if (result.ok()) {
        StageRequest stage;
        stage.volume_id = request.remote_id;
        stage.staging_path = at.staging;
        stage.usage = request.usage;
        stage.publish_context = request.publish_context;
        stage.volume_context = request.volume_context;
        stage.secrets = request.secrets;
        result = WithRetries("NodeStageVolume", request.answer_by, [&](const CallOptions& o) {
          return client->NodeStageVolume(stage, o);
        });
        if (result.ok()) {
          stage_outcome = StageOutcome::kStaged;
          staging_record.state = StagingState::kStaged;
          result = book_.SaveStaging(staging_record);
        } else if (result.code() == absl::StatusCode::kDeadlineExceeded ||
                   result.code() == absl::StatusCode::kCancelled ||
                   result.code() == absl::StatusCode::kUnknown || !new_record) {
          // The plugin may hold it (or held it before this call).
          stage_outcome = new_record ? StageOutcome::kMaybeStaged : StageOutcome::kFailedOld;
        } else {
          stage_outcome = StageOutcome::kFailedNew;
        }
      }
    }
  }
  if (result.ok()) result = mounts_->MkdirAll(Dirname(at.target), options_.dir_mode);
  if (result.ok()) {
    absl::StatusOr<bool> mounted = mounts_->IsMountPoint(at.target);
    result = mounted.status();
    if (result.ok() && !*mounted) {
      PublishRequest publish;
      publish.volume_id = request.remote_id;
      if (staged) publish.staging_path = at.staging;
      publish.target_path = at.target;
      publish.usage = request.usage;
      publish.publish_context = request.publish_context;
      publish.volume_context = request.volume_context;
      publish.secrets = request.secrets;
      result = WithRetries("NodePublishVolume", request.answer_by, [&](const CallOptions& o) {
        return client->NodePublishVolume(publish, o);
      });
    }
  }
  if (!result.ok()) {
    absl::Status cleanup = CleanUpFailedMount(claim, at.key, stage_outcome, request.answer_by);
    std::string message = absl::StrCat("mounting ", what, ": ", result.message());
    if (!cleanup.ok()) absl::StrAppend(&message, "; ", cleanup.message());
    LOG(WARNING) << message;
    return absl::Status(result.code(), message);
  }
  claim.state = ClaimState::kMounted;
  saved = book_.SaveClaim(claim);
  if (!saved.ok()) return Annotate(saved, absl::StrCat("recording ", what));
  LOG(INFO) << "mounted " << what << " at " << claim.mount.target
            << (staged ? " (staged at " + claim.mount.source + ")" : "");
  return claim.mount;
}

absl::StatusOr<UnmountResult> VolumeManager::UnmountVolume(const UnmountRequest& request) {
  ASSIGN_OR_RETURN(
      Layout at, LayoutOf(request.namespace_, request.volume_id, request.alloc_id, request.usage));
  std::string what = DescribeClaim(at.key);
  absl::StatusOr<KeyedQueue::Turn> turn = queue_.Enter(at.volume_key, request.answer_by);
  if (!turn.ok()) return Annotate(turn.status(), absl::StrCat("unmounting ", what));
  std::optional<Claim> existing = book_.UseRecordedPaths(at.key, &at.staging, &at.target);
  const std::string& target = at.target;  // the claim's own when there is one
  const std::string staging =
      existing ? existing->mount.source : at.staging;  // empty when not staged
  const std::string remote_id = existing ? existing->remote_id : request.remote_id;

  auto client = [&]() -> absl::StatusOr<CsiClient*> {
    ASSIGN_OR_RETURN(std::shared_ptr<InstanceManager> instance, Instance(false));
    return instance->Client();
  };

  // Unpublish.
  if (!existing || existing->state != ClaimState::kUnpublished) {
    bool needed = existing.has_value();
    if (!needed) {
      absl::StatusOr<bool> mounted = mounts_->IsMountPoint(target);
      if (!mounted.ok()) return mounted.status();
      needed = *mounted;
    }
    if (needed) {
      if (remote_id.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": ", target, " is mounted but there is no claim; the remote id is needed"));
      }
      absl::StatusOr<CsiClient*> c = client();
      if (!c.ok()) return Annotate(c.status(), absl::StrCat("unmounting ", what));
      absl::Status result = IgnoreNotFound(WithRetries(
          "NodeUnpublishVolume", request.answer_by,
          [&](const CallOptions& o) { return (*c)->NodeUnpublishVolume(remote_id, target, o); }));
      if (!result.ok()) return Annotate(result, absl::StrCat("unmounting ", what));
      absl::StatusOr<bool> still = mounts_->IsMountPoint(target);
      if (!still.ok()) return still.status();
      if (*still) {
        return absl::InternalError(absl::StrCat("unmounting ", what,
                                                ": the plugin reported success but ", target,
                                                " is still a mount point"));
      }
    }
    RemoveDirs(target, options_.root + "/per-alloc");
    if (existing) {
      if (!existing->mount.staged) {
        absl::Status dropped = book_.DropClaims({at.key});
        if (!dropped.ok()) return dropped;
        LOG(INFO) << "unmounted " << what;
        return UnmountResult{};
      }
      existing->state = ClaimState::kUnpublished;
      RETURN_IF_ERROR(book_.SaveClaim(*existing));
    }
  }

  // Unstage when this was the last user of a stage the book records (or of
  // a stray mount at the staging path that no claim explains).
  if (book_.OtherUsers(staging, at.key) > 0) {
    if (!existing) return UnmountResult{};
    absl::Status dropped = book_.DropClaims({at.key});
    if (!dropped.ok()) return dropped;
    LOG(INFO) << "unmounted " << what << "; " << staging << " stays staged for other users";
    return UnmountResult{};
  }
  std::optional<StagingRecord> record = book_.FindStaging(staging);
  if (!record.has_value()) {
    ASSIGN_OR_RETURN(bool stray, mounts_->IsMountPoint(staging));
    if (!stray || remote_id.empty()) {
      // Nothing staged: the claim (if any) goes.
      if (existing) {
        absl::Status dropped = book_.DropClaims({at.key});
        if (!dropped.ok()) return dropped;
        RemoveDirs(staging, options_.root + "/staging");
        LOG(INFO) << "unmounted " << what << " (no stage was recorded)";
      }
      return UnmountResult{};
    }
    record = StagingRecord{plugin_,   staging,      request.namespace_,   request.volume_id,
                           remote_id, at.key.usage, StagingState::kStaged};
  }
  absl::Status result = Unstage(*record, request.answer_by);
  if (!result.ok()) return Annotate(result, absl::StrCat("unstaging ", what));
  absl::StatusOr<bool> still = mounts_->IsMountPoint(staging);
  if (!still.ok()) return still.status();
  if (*still) {
    return absl::InternalError(absl::StrCat("unstaging ", what,
                                            ": the plugin reported success but ", staging,
                                            " is still a mount point"));
  }
  RemoveDirs(staging, options_.root + "/staging");
  std::vector<ClaimKey> done = book_.UnpublishedUsers(staging);
  if (std::find(done.begin(), done.end(), at.key) == done.end()) done.push_back(at.key);
  RETURN_IF_ERROR(book_.DropClaimsAndStaging(done, staging));
  LOG(INFO) << "unmounted " << what << " and unstaged " << staging;
  return UnmountResult{true};
}

absl::StatusOr<bool> VolumeManager::HasMount(const MountInfo& mount) {
  if (mount.target.empty()) return absl::InvalidArgumentError("mount has no target path");
  // Only the manager's own targets: <root>/per-alloc/<alloc>/<volume>/<usage>.
  const std::string prefix = options_.root + "/per-alloc/";
  if (!absl::StartsWith(mount.target, prefix) || absl::StrContains(mount.target, "/../") ||
      absl::EndsWith(mount.target, "/..") || absl::StrContains(mount.target, "/./") ||
      absl::StrContains(mount.target, "//")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target ", mount.target, " is not a path of this plugin manager (under ", prefix, ")"));
  }
  return mounts_->IsMountPoint(mount.target);
}

absl::StatusOr<std::string> VolumeManager::ExternalID() {
  ASSIGN_OR_RETURN(std::shared_ptr<InstanceManager> instance, Instance(false));
  PluginStatus status = instance->Status();
  if (!status.fingerprinted) {
    RETURN_IF_ERROR(instance->Fingerprint());
    status = instance->Status();
  }
  return status.node_id;
}

DrainResult VolumeManager::Drain() {
  DrainResult result;
  for (const Claim& claim : Claims()) {
    UnmountRequest request;
    request.namespace_ = claim.namespace_;
    request.volume_id = claim.volume_id;
    request.remote_id = claim.remote_id;
    request.alloc_id = claim.alloc_id;
    request.usage = claim.usage;
    absl::StatusOr<UnmountResult> unmounted = UnmountVolume(request);
    if (unmounted.ok()) {
      ++result.unmounted;
    } else {
      result.errors.push_back(std::string(unmounted.status().message()));
    }
  }
  return result;
}

int VolumeManager::QueuedOperations(const std::string& namespace_, const std::string& volume_id) {
  absl::StatusOr<std::string> key = VolumeKey(namespace_, volume_id);
  return key.ok() ? queue_.Queued(*key) : 0;
}

}  // namespace lustre_csi::csimanager
