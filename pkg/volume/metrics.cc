#include "pkg/volume/metrics.h"

#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {
namespace {

constexpr char kKindPayloadUrl[] = "type.googleapis.com/lustre_csi.volume.MetricsErrorKind";

const char* KindName(MetricsErrorKind kind) {
  switch (kind) {
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

}  // namespace

std::optional<MetricsErrorKind> MetricsErrorKindOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(kKindPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  for (MetricsErrorKind kind : {MetricsErrorKind::kNoPath, MetricsErrorKind::kFsInfoFailed}) {
    if (*payload == KindName(kind)) return kind;
  }
  return std::nullopt;
}

absl::Status MetricsError(MetricsErrorKind kind, const absl::Status& cause) {
  absl::Status out;
  switch (kind) {
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

std::unique_ptr<MetricsProvider> NewStatfsMetrics(Syscalls* sys, std::string path) {
  return std::make_unique<StatfsMetrics>(sys, std::move(path));
}

}  // namespace lustre_csi::volume
