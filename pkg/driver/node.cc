#include "pkg/driver/node.h"

#include <glog/logging.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pkg/driver/mount_options.h"
#include "pkg/driver/parameters.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/metrics.h"
#include "pkg/volume/mount_table.h"

namespace lustre_csi::driver {
namespace {

using volume::OpenHow;

constexpr size_t kMaxTargetPath = 4096;

// Absolute, with no empty, "." or ".." component and no trailing slash; the
// same rule as CleanPath(path) == path, without building a copy.
bool IsCleanAbsolutePath(absl::string_view path) {
  if (path.empty() || path[0] != '/') return false;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == absl::string_view::npos) end = path.size();
    absl::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

absl::Status Aborted(const std::string& target) {
  return absl::AbortedError(
      absl::StrCat("an operation on target ", target, " is already in progress"));
}

// The file system a volume id of this driver names, "<mgs>:/<fs-name>"; ""
// for an opaque id.
std::string FileSystemOf(const std::string& volume_id) {
  absl::StatusOr<VolumeId> id = ParseValidVolumeId(volume_id);
  return id.ok() ? absl::StrCat(id->mgs_address, ":/", id->fs_name) : "";
}

// Whether `path` holds the volume and its figures: the calls that reach the
// file system, which may never return.
absl::StatusOr<VolumeStats> LookAtVolume(MountMode& mode, volume::Syscalls& sys,
                                         const std::string& volume_id, const std::string& path) {
  // The path must name a target itself, with no symlink on the way: below a
  // target everything is the tenant's, and a link there would lead to the
  // figures of whatever it names.
  OpenHow how;
  how.nofollow = true;
  absl::StatusOr<volume::ScopedFd> fd = volume::Open(sys, volume::kAtCwd, path, how);
  if (fd.ok()) {
    absl::StatusOr<std::string> named = sys.PathOf(fd->get());
    if (!named.ok()) return named.status();
    if (*named != path) {
      return absl::NotFoundError(absl::StrCat("volume ", volume_id, " is not published at ", path,
                                              ": it names ", *named,
                                              " through a symlink, which is never followed"));
    }
  } else if (absl::IsNotFound(fd.status())) {
    return absl::NotFoundError(absl::StrCat("volume path ", path, " does not exist"));
  }
  VolumeStats stats;
  absl::StatusOr<bool> mounted = mode.IsPublished(path);
  if (!mounted.ok()) {
    if (mounted.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("volume path ", path, " does not exist"));
    }
    if (volume::IsCorruptedError(mounted.status())) {
      stats.abnormal = true;
      stats.message =
          absl::StrCat("the mount at ", path, " is corrupted: ", mounted.status().message());
      return stats;
    }
    return mounted.status();
  }
  if (!*mounted) {
    return absl::NotFoundError(
        absl::StrCat("volume ", volume_id, " is not published at ", path, " (not a mount point)"));
  }
  absl::StatusOr<volume::VolumeMetrics> metrics =
      volume::NewStatfsMetrics(&sys, path)->GetMetrics();
  if (!metrics.ok()) {
    if (volume::IsCorruptedError(metrics.status())) {
      stats.abnormal = true;
      stats.message = absl::StrCat("statfs of ", path, " failed: ", metrics.status().message());
      return stats;
    }
    return metrics.status();
  }
  stats.usage = *metrics;
  stats.message = "volume is healthy";
  return stats;
}

}  // namespace

absl::Status ValidateTargetPath(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("target path missing");
  if (path.size() > kMaxTargetPath) {
    return absl::InvalidArgumentError(
        absl::StrCat("target path is ", path.size(), " bytes; at most ", kMaxTargetPath));
  }
  if (path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("target path contains a NUL byte");
  }
  if (path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("target path ", path, " is not absolute"));
  }
  if (path == "/") return absl::InvalidArgumentError("target path cannot be /");
  if (!IsCleanAbsolutePath(path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("target path ", path, " is not clean (., .. or repeated /)"));
  }
  return absl::OkStatus();
}

NodeLogic::NodeLogic(NodeOptions options, volume::Syscalls* sys, MountMode* mode,
                     ReadinessMonitor* readiness)
    : options_(std::move(options)),
      sys_(sys),
      mode_(mode),
      readiness_(readiness),
      clock_(options_.clock != nullptr ? options_.clock : base::RealClock()),
      mount_slots_(options_.max_concurrent_mounts, options_.mount_slot_timeout,
                   options_.mount_stalled_after, clock_),
      isolation_(options_.isolation != nullptr ? options_.isolation : volume::OnTheCallingThread()),
      stats_calls_(clock_, options_.stats_timeout, options_.max_stuck_stats),
      // Stacks as large as the gRPC handlers' (a publish walks fsGroup trees).
      workers_(/*max_idle=*/4, absl::Seconds(30), /*stack_bytes=*/1 << 20),
      calls_(clock_, options_.retry_wait, options_.max_calls_in_flight, &workers_) {}

absl::Status NodeLogic::RunBounded(const std::string& key, const std::string& target,
                                   std::function<absl::Status()> work, absl::Duration caller_wait) {
  absl::StatusOr<Outcome> done = calls_.Call(
      key, [work = std::move(work)]() -> absl::StatusOr<Outcome> { return Outcome{work()}; },
      caller_wait);
  if (done.ok()) return done->status;
  if (absl::IsDeadlineExceeded(done.status())) {
    return absl::UnavailableError(absl::StrCat(InProgress(target), "; retry later"));
  }
  return absl::UnavailableError(
      absl::StrCat("too many publishes and unpublishes are in progress to start one at ", target,
                   " (", done.status().message(), ")"));
}

std::string NodeLogic::InProgress(const std::string& target) {
  absl::MutexLock lock(&targets_mu_);
  auto it = targets_.find(target);
  if (it == targets_.end()) {
    return absl::StrCat("the call for ", target, " is still in progress");
  }
  std::string since =
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", it->second.started, absl::UTCTimeZone());
  std::string age = absl::FormatDuration(clock_->Now() - it->second.started);
  if (it->second.abandoned) {
    return absl::StrCat("a publish at ", target, " is still in progress since ", since, " (", age,
                        "); an unpublish abandoned it and waits for it to return, and what it "
                        "mounts is undone then");
  }
  return absl::StrCat("the ", it->second.publish ? "publish" : "unpublish", " at ", target,
                      " is still in progress since ", since, " (", age, ")");
}

absl::Status NodeLogic::Publish(const PublishRequest& req, absl::Duration caller_wait) {
  if (absl::Status s = ValidateTargetPath(req.target_path); !s.ok()) return s;
  // A retry of this very publish while it runs joins it.
  std::string key =
      absl::StrCat("publish\n", req.target_path, "\n", req.volume_id, "\n", req.read_only, "\n",
                   absl::StrJoin(req.mount_flags, ","), "\n",
                   req.volume_mount_group.has_value() ? absl::StrCat(*req.volume_mount_group)
                                                      : std::string("-"));
  for (const auto& [k, v] : req.volume_context) absl::StrAppend(&key, "\n", k, "=", v);
  return RunBounded(
      key, req.target_path, [this, req] { return PublishWork(req); }, caller_wait);
}

absl::Status NodeLogic::PublishWork(const PublishRequest& req) {
  if (!ClaimForPublish(req.target_path)) return Aborted(req.target_path);
  // A file system that does not answer would hold this publish (and a mount
  // slot) where it looks at the target or mounts.
  absl::StatusOr<LustreParams> params = VolumeParams(req.volume_id, req.volume_context);
  const std::string fs =
      params.ok() ? absl::StrCat(params->mgs_address, ":/", params->fs_name) : "";
  absl::Status status = absl::OkStatus();
  if (!params.ok()) {
    status = params.status();
  } else if (std::optional<Silence> silent = Silent(fs); silent.has_value()) {
    status = absl::UnavailableError(
        absl::StrCat("the file system of volume ", req.volume_id, " is not responding (",
                     silent->why, "); not publishing at ", req.target_path, " until it answers"));
  } else {
    status = PublishLocked(req, *params);
  }
  if (status.ok() && !fs.empty()) {
    absl::MutexLock lock(&published_mu_);
    published_[req.target_path].fs = fs;
  }
  if (status.ok() && Abandoned(req.target_path)) {
    // The CO gave up on this publish and unpublished: nothing may stay.
    absl::Status undone = mode_->Unpublish(req.target_path);
    {
      absl::MutexLock lock(&published_mu_);
      published_.erase(req.target_path);
    }
    LOG(WARNING) << "publish of volume " << req.volume_id << " at " << req.target_path
                 << " returned after an unpublish of the target abandoned it; undoing it: "
                 << undone;
    status = absl::AbortedError(absl::StrCat(
        "the publish at ", req.target_path,
        " was abandoned by an unpublish of the target while it ran; what it mounted is undone"));
  }
  ReleaseTarget(req.target_path);
  if (status.ok()) {
    LOG(INFO) << "published volume " << req.volume_id << " at " << req.target_path
              << (req.read_only ? " (read-only)" : "");
  } else {
    LOG(WARNING) << "publish of volume " << req.volume_id << " at " << req.target_path
                 << " failed: " << status;
  }
  return status;
}

absl::Status NodeLogic::PublishLocked(const PublishRequest& req, const LustreParams& params) {
  absl::StatusOr<std::string> sub_dir = FillSubDir(params.sub_dir, params.kubernetes);
  if (!sub_dir.ok()) return sub_dir.status();
  absl::StatusOr<std::vector<std::string>> options =
      BuildMountOptions(req.mount_flags, req.read_only);
  if (!options.ok()) return options.status();
  LustreSource source{params.mgs_address, params.fs_name, *sub_dir};

  // What is at the target now? Looked at without a stat of a mount there:
  // the file system mounted there may not answer, and only a repeat publish
  // needs to ask it anything (in a task of its own, below).
  bool created_target = false;
  volume::MountChecker checker(sys_);
  absl::StatusOr<volume::MountChecker::Look> look = checker.LookAt(req.target_path);
  if (!look.ok()) return volume::Annotate(look.status(), "inspecting target");
  if (!look->exists) {
    absl::Status made = sys_->Mkdir(req.target_path, 0750);
    if (!made.ok() && made.code() != absl::StatusCode::kAlreadyExists) {
      return volume::Annotate(made, "creating target directory");
    }
    created_target = made.ok();
  }
  // A repeat publish: the mount there alive (a stat: a corrupted mount
  // answers its errno) and of this volume? Asked in a task of its own.
  auto inspect = [&] {
    return volume::RunIn(isolation_, [&]() -> absl::StatusOr<bool> {
      absl::StatusOr<bool> alive = checker.IsMountPoint(req.target_path);
      if (!alive.ok()) return alive;
      if (!*alive) {
        return absl::UnavailableError(
            absl::StrCat("the mount at ", req.target_path, " went while it was looked at"));
      }
      return mode_->IsMountOf(source, req.target_path, *options);
    });
  };
  bool mounted = look->mounted;
  absl::StatusOr<bool> same = false;
  if (mounted) {
    same = inspect();
    if (!same.ok() && volume::IsCorruptedError(same.status())) {
      LOG(WARNING) << "target " << req.target_path << " holds a corrupted mount (" << same.status()
                   << "); unmounting it before mounting again";
      if (absl::Status s = mode_->Repair(req.target_path); !s.ok()) {
        return volume::Annotate(s, "repairing corrupted mount at target");
      }
      absl::StatusOr<volume::MountChecker::Look> again = checker.LookAt(req.target_path);
      if (!again.ok()) return volume::Annotate(again.status(), "inspecting target");
      mounted = again->mounted;
      if (mounted) same = inspect();
    }
  }

  if (mounted) {
    if (!same.ok()) return volume::Annotate(same.status(), "inspecting the mount at target");
    if (!*same) {
      return absl::AlreadyExistsError(
          absl::StrCat("target ", req.target_path, " already holds a different mount than ",
                       source.Spec(), " with options '", absl::StrJoin(*options, ","), "'"));
    }
    // volume_mount_group, as this process published the target (the root's
    // group is shared by every publish of the volume, so it cannot tell).
    std::optional<std::optional<uint32_t>> group = PublishedGroup(req.target_path);
    if (group.has_value() && *group != req.volume_mount_group) {
      auto name = [](const std::optional<uint32_t>& g) {
        return g.has_value() ? absl::StrCat("group ", *g) : std::string("no group");
      };
      return absl::AlreadyExistsError(
          absl::StrCat("target ", req.target_path, " is already published with ", name(*group),
                       ", not volume_mount_group ", name(req.volume_mount_group)));
    }
    return absl::OkStatus();
  }

  absl::Status status = absl::OkStatus();
  if (readiness_ != nullptr) {
    status = readiness_->EnsureReady();
    if (!status.ok()) {
      status = absl::FailedPreconditionError(
          absl::StrCat("this node cannot mount Lustre now: ", status.message()));
    }
  }
  if (status.ok()) {
    status = mode_->Publish({std::move(source), req.target_path, std::move(*options), req.read_only,
                             req.volume_mount_group, &mount_slots_});
  }
  if (!status.ok() && created_target) {
    absl::Status removed = sys_->Rmdir(req.target_path);
    if (!removed.ok()) LOG(ERROR) << "removing target " << req.target_path << ": " << removed;
  }
  if (status.ok()) {
    absl::MutexLock lock(&published_mu_);
    published_[req.target_path].group = req.volume_mount_group;
  }
  return status;
}

std::optional<std::optional<uint32_t>> NodeLogic::PublishedGroup(const std::string& target) {
  absl::MutexLock lock(&published_mu_);
  auto it = published_.find(target);
  if (it == published_.end()) return std::nullopt;
  return it->second.group;
}

absl::Status NodeLogic::Unpublish(const std::string& volume_id, const std::string& target_path,
                                  absl::Duration caller_wait) {
  if (absl::Status s = ValidateTargetPath(target_path); !s.ok()) return s;
  // A retry while the unpublish of the target runs joins it.
  return RunBounded(
      absl::StrCat("unpublish\n", target_path), target_path,
      [this, volume_id, target_path] { return UnpublishWork(volume_id, target_path); },
      caller_wait);
}

absl::Status NodeLogic::UnpublishWork(const std::string& volume_id,
                                      const std::string& target_path) {
  if (absl::Status s = ClaimForUnpublish(target_path); !s.ok()) return s;
  // Where the file system does not answer, looking at the target (or a
  // plain unmount) would wait for it: detach what is there instead.
  std::optional<Silence> silent = Silent(FileSystemAt(volume_id, target_path));
  if (silent.has_value()) {
    LOG(WARNING) << "unpublish of volume " << volume_id << " from " << target_path
                 << ": its file system is not responding (" << silent->why
                 << "); detaching what is mounted there";
  }
  absl::Status status =
      silent.has_value() ? mode_->Detach(target_path) : mode_->Unpublish(target_path);
  if (status.ok()) {
    absl::MutexLock lock(&published_mu_);
    published_.erase(target_path);
  }
  ReleaseTarget(target_path);
  if (status.ok()) {
    LOG(INFO) << "unpublished volume " << volume_id << " from " << target_path;
  } else {
    LOG(WARNING) << "unpublish of volume " << volume_id << " from " << target_path
                 << " failed: " << status;
  }
  return status;
}

void NodeLogic::StopWaiting() {
  calls_.StopWaiting();
  stats_calls_.StopWaiting();
}

int NodeLogic::WorkInFlight() { return calls_.InFlight() + stats_calls_.InFlight(); }

bool NodeLogic::ClaimForPublish(const std::string& target) {
  absl::MutexLock lock(&targets_mu_);
  auto [it, inserted] = targets_.try_emplace(target);
  if (!inserted) return false;
  it->second.publish = true;
  it->second.started = clock_->Now();
  return true;
}

absl::Status NodeLogic::ClaimForUnpublish(const std::string& target) {
  absl::MutexLock lock(&targets_mu_);
  while (true) {
    auto it = targets_.find(target);
    if (it == targets_.end()) break;
    if (!it->second.publish) return Aborted(target);
    if (!it->second.abandoned) {
      it->second.abandoned = true;
      LOG(WARNING) << "unpublish of " << target << " abandons the publish in progress there since "
                   << absl::FormatTime(it->second.started) << " and waits for it to return";
    }
    targets_cv_.Wait(&targets_mu_);
  }
  TargetWork& work = targets_[target];
  work.started = clock_->Now();
  return absl::OkStatus();
}

bool NodeLogic::Abandoned(const std::string& target) {
  absl::MutexLock lock(&targets_mu_);
  auto it = targets_.find(target);
  return it != targets_.end() && it->second.abandoned;
}

void NodeLogic::ReleaseTarget(const std::string& target) {
  absl::MutexLock lock(&targets_mu_);
  targets_.erase(target);
  targets_cv_.SignalAll();
}

std::string NodeLogic::FileSystemAt(const std::string& volume_id, const std::string& target) {
  {
    absl::MutexLock lock(&published_mu_);
    auto it = published_.find(target);
    if (it != published_.end() && !it->second.fs.empty()) return it->second.fs;
  }
  return FileSystemOf(volume_id);
}

std::optional<NodeLogic::Silence> NodeLogic::Silent(const std::string& fs) {
  if (fs.empty()) return std::nullopt;
  std::string stuck_at;
  {
    absl::MutexLock lock(&silent_mu_);
    auto it = silent_fs_.find(fs);
    if (it == silent_fs_.end()) return std::nullopt;
    stuck_at = it->second;
  }
  std::optional<absl::Time> since = stats_calls_.StuckSince(stuck_at);
  if (!since.has_value() || clock_->Now() - *since < options_.stats_timeout) {
    // It returned (or a new look there is within its bound): the file
    // system answers again.
    absl::MutexLock lock(&silent_mu_);
    auto it = silent_fs_.find(fs);
    if (it != silent_fs_.end() && it->second == stuck_at) silent_fs_.erase(it);
    return std::nullopt;
  }
  return Silence{stuck_at,
                 absl::StrCat(fs, ": a look at ", stuck_at, " has not returned since ",
                              absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", *since, absl::UTCTimeZone()))};
}

void NodeLogic::AddClientState(const std::string& volume_id, VolumeStats* stats) {
  if (options_.client_imports == nullptr) return;
  absl::StatusOr<VolumeId> id = ParseValidVolumeId(volume_id);
  if (!id.ok()) return;
  std::string unhealthy = options_.client_imports->Describe(id->fs_name);
  if (unhealthy.empty()) return;
  if (stats->abnormal) {
    absl::StrAppend(&stats->message, "; the Lustre client reports ", unhealthy);
  } else {
    stats->abnormal = true;
    stats->message = absl::StrCat("the Lustre client is not connected to every target of ",
                                  id->fs_name, ": ", unhealthy);
  }
}

absl::StatusOr<VolumeStats> NodeLogic::Stats(const std::string& volume_id,
                                             const std::string& path) {
  // Malformed (over-long, NUL): INVALID_ARGUMENT. A well-formed path no
  // publish could have made (relative, ".", ".." or "//") is not where a
  // volume is published: NOT_FOUND, without looking at it.
  if (path.size() > kMaxTargetPath || path.find('\0') != std::string::npos) {
    return ValidateTargetPath(path);
  }
  if (absl::Status s = ValidateTargetPath(path); !s.ok()) {
    return absl::NotFoundError(absl::StrCat("volume ", volume_id, " is not published at '",
                                            absl::CHexEscape(path), "': ", s.message()));
  }
  // One look at a file system that does not answer is enough: while one at
  // a target of the volume's file system has not returned, the others of
  // that file system are not looked at (no thread more per target).
  const std::string fs = FileSystemAt(volume_id, path);
  if (std::optional<Silence> silent = Silent(fs); silent.has_value() && silent->target != path) {
    VolumeStats stats;
    stats.abnormal = true;
    stats.message =
        absl::StrCat("the file system at ", path, " is not responding (", silent->why, ")");
    AddClientState(volume_id, &stats);
    return stats;
  }
  // The file system may not answer: looked at on a worker, bounded.
  MountMode* mode = mode_;
  volume::Syscalls* sys = sys_;
  volume::Isolation* isolation = isolation_;
  absl::StatusOr<VolumeStats> looked =
      stats_calls_.Call(path, [mode, sys, isolation, volume_id, path] {
        return volume::RunIn(isolation, [&] { return LookAtVolume(*mode, *sys, volume_id, path); });
      });
  if (absl::IsDeadlineExceeded(looked.status())) {
    if (!fs.empty()) {
      absl::MutexLock lock(&silent_mu_);
      silent_fs_.try_emplace(fs, path);
    }
    VolumeStats stats;
    stats.abnormal = true;
    stats.message = absl::StrCat("the file system at ", path, " is not responding (",
                                 looked.status().message(), ")");
    looked = std::move(stats);
  }
  if (looked.ok()) AddClientState(volume_id, &*looked);
  if (absl::IsUnavailable(looked.status())) {
    return absl::UnavailableError(
        absl::StrCat("volume ", volume_id, " at ", path,
                     ": too many file systems are not responding to look at another one now (",
                     looked.status().message(), ")"));
  }
  return looked;
}

}  // namespace lustre_csi::driver
