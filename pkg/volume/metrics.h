// Volume usage metrics, as NodeGetVolumeStats reports them.
//
// The provider: statfs of the volume path (cheap: what the file system
// reports for it).
//
// Errors are typed: MetricsErrorKindOf tells "no path" and "file system info
// failed" apart; the latter keeps the code and errno of its cause.
//
// A provider does not own the Syscalls, which must outlive it; it is
// thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_METRICS_H_
#define LUSTRE_CSI_PKG_VOLUME_METRICS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

struct VolumeMetrics {
  int64_t capacity_bytes = 0;
  int64_t available_bytes = 0;
  int64_t used_bytes = 0;
  int64_t inodes = 0;
  int64_t inodes_free = 0;
  int64_t inodes_used = 0;
};

enum class MetricsErrorKind { kNoPath, kFsInfoFailed };

// The kind attached to a metrics error; nullopt for OK and other statuses.
std::optional<MetricsErrorKind> MetricsErrorKindOf(const absl::Status& status);

// A metrics error of `kind`: INVALID_ARGUMENT for kNoPath; for
// kFsInfoFailed the code (and errno) of `cause`.
absl::Status MetricsError(MetricsErrorKind kind, const absl::Status& cause);

class MetricsProvider {
 public:
  virtual ~MetricsProvider() = default;
  virtual absl::StatusOr<VolumeMetrics> GetMetrics() = 0;
};

// statfs of `path`: capacity = blocks, available = blocks available to
// unprivileged users, used = blocks - blocks free (all times the block size);
// inodes = files, free = files free, used = files - files free.
std::unique_ptr<MetricsProvider> NewStatfsMetrics(Syscalls* sys, std::string path);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_METRICS_H_
