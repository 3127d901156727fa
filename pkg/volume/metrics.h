// Volume usage metrics, as NodeGetVolumeStats reports them.
//
// Providers: statfs of the volume path (cheap, whole file system); a du-style
// walk that adds up what lies beneath the path (bounded in entries and depth,
// never following symlinks or crossing into other mounts; capacity and
// available bytes still come from statfs); a caching wrapper that remembers
// successful answers for a while and never remembers errors; and a provider
// that always answers "not supported".
//
// Errors are typed: MetricsErrorKindOf tells "not supported", "no path" and
// "file system info failed" apart; the latter keeps the code and errno of
// its cause.
//
// A provider does not own the Syscalls, which must outlive it. Every provider
// here is thread-safe; the cache lets one caller refresh while the others
// wait for that answer.
#ifndef LUSTRE_CSI_PKG_VOLUME_METRICS_H_
#define LUSTRE_CSI_PKG_VOLUME_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"
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

enum class MetricsErrorKind { kNotSupported, kNoPath, kFsInfoFailed };

// The kind attached to a metrics error; nullopt for OK and other statuses.
std::optional<MetricsErrorKind> MetricsErrorKindOf(const absl::Status& status);

// A metrics error of `kind`: UNIMPLEMENTED for kNotSupported,
// INVALID_ARGUMENT for kNoPath; for kFsInfoFailed the code (and errno) of
// `cause`.
absl::Status MetricsError(MetricsErrorKind kind, const absl::Status& cause);

class MetricsProvider {
 public:
  virtual ~MetricsProvider() = default;
  virtual absl::StatusOr<VolumeMetrics> GetMetrics() = 0;
};

// Always kNotSupported.
std::unique_ptr<MetricsProvider> NewUnsupportedMetrics();

// statfs of `path`: capacity = blocks, available = blocks available to
// unprivileged users, used = blocks - blocks free (all times the block size);
// inodes = files, free = files free, used = files - files free.
std::unique_ptr<MetricsProvider> NewStatfsMetrics(Syscalls* sys, std::string path);

struct DuOptions {
  size_t max_entries = 1000000;  // more -> kFsInfoFailed with RESOURCE_EXHAUSTED
  int max_depth = 256;           // deeper -> kFsInfoFailed with RESOURCE_EXHAUSTED
};

// used_bytes = allocated bytes of everything beneath `path` on the same mount
// (hard links counted once), inodes_used = the number of those inodes;
// capacity, available, inodes and inodes free from statfs of `path`. Walks
// with WalkTree (tree.h).
std::unique_ptr<MetricsProvider> NewDuMetrics(Syscalls* sys, std::string path, DuOptions opts = {});

// Answers from `inner`, remembering a success for `ttl` (errors are not
// remembered), as `clock` tells the time.
std::unique_ptr<MetricsProvider> NewCachedMetrics(std::unique_ptr<MetricsProvider> inner,
                                                  absl::Duration ttl,
                                                  base::Clock* clock = base::RealClock());

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_METRICS_H_
