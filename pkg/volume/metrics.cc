#include "pkg/volume/metrics.h"

#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::volume {
namespace {

constexpr char kKindPayloadUrl[] = "type.googleapis.com/lustre_csi.volume.MetricsErrorKind";

const char* KindName(MetricsErrorKind kind) {
  switch (kind) {
    case MetricsErrorKind::kNotSupported:
      return "not_supported";
    case MetricsErrorKind::kNoPath:
      return "no_path";
    case MetricsErrorKind::kFsInfoFailed:
      return "fs_info_failed";
  }
  return "?";
}

int64_t Clamp(uint64_t v) { return v > INT64_MAX ? INT64_MAX : static_cast<int64_t>(v); }

// statfs figures of `path` into `m` (all but used_bytes and inodes_used when
// `usage` is false).
absl::Status FillFromStatfs(Syscalls* sys, const std::string& path, bool usage, VolumeMetrics& m) {
  absl::StatusOr<FsStats> st = sys->Statfs(path);
  if (!st.ok()) return MetricsError(MetricsErrorKind::kFsInfoFailed, st.status());
  m.capacity_bytes = Clamp(st->blocks * st->block_size);
  m.available_bytes = Clamp(st->blocks_available * st->block_size);
  m.inodes = Clamp(st->files);
  m.inodes_free = Clamp(st->files_free);
  if (usage) {
    uint64_t used_blocks = st->blocks > st->blocks_free ? st->blocks - st->blocks_free : 0;
    m.used_bytes = Clamp(used_blocks * st->block_size);
    m.inodes_used = Clamp(st->files > st->files_free ? st->files - st->files_free : 0);
  }
  return absl::OkStatus();
}

class UnsupportedMetrics : public MetricsProvider {
 public:
  absl::StatusOr<VolumeMetrics> GetMetrics() override {
    return MetricsError(MetricsErrorKind::kNotSupported, absl::OkStatus());
  }
};

class StatfsMetrics : public MetricsProvider {
 public:
  StatfsMetrics(Syscalls* sys, std::string path) : sys_(sys), path_(std::move(path)) {}

  absl::StatusOr<VolumeMetrics> GetMetrics() override {
    if (path_.empty()) return MetricsError(MetricsErrorKind::kNoPath, absl::OkStatus());
    VolumeMetrics m;
    if (absl::Status s = FillFromStatfs(sys_, path_, true, m); !s.ok()) return s;
    return m;
  }

 private:
  Syscalls* const sys_;
  const std::string path_;
};

class DuMetrics : public MetricsProvider {
 public:
  DuMetrics(Syscalls* sys, std::string path, DuOptions opts)
      : sys_(sys), path_(std::move(path)), opts_(opts) {}

  absl::StatusOr<VolumeMetrics> GetMetrics() override {
    if (path_.empty()) return MetricsError(MetricsErrorKind::kNoPath, absl::OkStatus());
    VolumeMetrics m;
    if (absl::Status s = FillFromStatfs(sys_, path_, false, m); !s.ok()) return s;
    std::set<std::pair<uint64_t, uint64_t>> linked;  // (dev, ino) of multiply linked files
    uint64_t blocks = 0;
    int64_t inodes = 0;
    TreeLimits limits;
    limits.max_entries = opts_.max_entries;
    limits.max_depth = opts_.max_depth;
    absl::Status s =
        WalkTree(*sys_, path_, limits, [&](const TreeEntry& e) -> absl::StatusOr<EntryChange> {
          if (IsDirectoryMode(e.mode) || e.nlink <= 1 || linked.insert({e.dev, e.ino}).second) {
            blocks += e.blocks;
            ++inodes;
          }
          return EntryChange{};
        });
    if (!s.ok()) return MetricsError(MetricsErrorKind::kFsInfoFailed, s);
    m.used_bytes = Clamp(blocks * 512);
    m.inodes_used = inodes;
    return m;
  }

 private:
  Syscalls* const sys_;
  const std::string path_;
  const DuOptions opts_;
};

class CachedMetrics : public MetricsProvider {
 public:
  CachedMetrics(std::unique_ptr<MetricsProvider> inner, absl::Duration ttl, base::Clock* clock)
      : inner_(std::move(inner)), ttl_(ttl), clock_(clock) {}

  absl::StatusOr<VolumeMetrics> GetMetrics() override {
    // One refresh at a time; callers arriving meanwhile get its answer.
    absl::MutexLock lock(&mu_);
    absl::Time now = clock_->Now();
    if (cached_.has_value() && now < fetched_ + ttl_ && now >= fetched_) return *cached_;
    absl::StatusOr<VolumeMetrics> fresh = inner_->GetMetrics();
    if (fresh.ok()) {
      cached_ = *fresh;
      fetched_ = now;
    }
    return fresh;
  }

 private:
  absl::Mutex mu_;
  const std::unique_ptr<MetricsProvider> inner_ ABSL_PT_GUARDED_BY(mu_);
  const absl::Duration ttl_;
  base::Clock* const clock_;
  std::optional<VolumeMetrics> cached_ ABSL_GUARDED_BY(mu_);
  absl::Time fetched_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::optional<MetricsErrorKind> MetricsErrorKindOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(kKindPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  for (MetricsErrorKind kind : {MetricsErrorKind::kNotSupported, MetricsErrorKind::kNoPath,
                                MetricsErrorKind::kFsInfoFailed}) {
    if (*payload == KindName(kind)) return kind;
  }
  return std::nullopt;
}

absl::Status MetricsError(MetricsErrorKind kind, const absl::Status& cause) {
  absl::Status out;
  switch (kind) {
    case MetricsErrorKind::kNotSupported:
      out = absl::UnimplementedError("metrics are not supported for this volume");
      break;
    case MetricsErrorKind::kNoPath:
      out = absl::InvalidArgumentError("no path defined for volume metrics");
      break;
    case MetricsErrorKind::kFsInfoFailed:
      out = cause.ok() ? absl::InternalError("failed to get file system info")
                       : Annotate(cause, "failed to get file system info");
      break;
  }
  out.SetPayload(kKindPayloadUrl, absl::Cord(KindName(kind)));
  return out;
}

std::unique_ptr<MetricsProvider> NewUnsupportedMetrics() {
  return std::make_unique<UnsupportedMetrics>();
}

std::unique_ptr<MetricsProvider> NewStatfsMetrics(Syscalls* sys, std::string path) {
  return std::make_unique<StatfsMetrics>(sys, std::move(path));
}

std::unique_ptr<MetricsProvider> NewDuMetrics(Syscalls* sys, std::string path, DuOptions opts) {
  return std::make_unique<DuMetrics>(sys, std::move(path), opts);
}

std::unique_ptr<MetricsProvider> NewCachedMetrics(std::unique_ptr<MetricsProvider> inner,
                                                  absl::Duration ttl, base::Clock* clock) {
  return std::make_unique<CachedMetrics>(std::move(inner), ttl, clock);
}

}  // namespace lustre_csi::volume
