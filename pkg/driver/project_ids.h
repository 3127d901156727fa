// Project IDs for provisioned sub-dirs, claimed on the file system itself so
// that no two live volumes share one, whichever controller (or how many at
// once) hands them out: a claim is a directory
// <root>/.lustre-csi-projects/<id> made with mkdir(2), which only one caller
// can make, carrying an owner marker (volume/owned_dir.h) that names the
// volume. A claim also records the limits set on the project, as entries
// "limit-<bytes>-<inodes>" (the largest wins), so an expansion knows the
// size a volume already has after any restart. Stateless and thread-safe;
// every path is resolved beneath the root.
#ifndef LUSTRE_CSI_PKG_DRIVER_PROJECT_IDS_H_
#define LUSTRE_CSI_PKG_DRIVER_PROJECT_IDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

inline constexpr char kProjectClaimDir[] = ".lustre-csi-projects";

// IDs first..last, inclusive. Lustre's project IDs are 1 to 4294967294 (0
// is "no project", 4294967295 invalid).
struct ProjectIdRange {
  uint32_t first = 0;
  uint32_t last = 0;
};
inline constexpr ProjectIdRange kDefaultProjectIds = {1000000, 1999999};

// "<first>-<last>"; INVALID_ARGUMENT unless 1 <= first <= last <= 4294967294.
absl::StatusOr<ProjectIdRange> ParseProjectIdRange(absl::string_view text);

// Claims an ID of `range` for `volume` on the file system whose root is
// `root`. Tries IDs from one derived from the volume's name on, so a retry
// finds the claim it already made (then OK with it). RESOURCE_EXHAUSTED when
// every ID of the range is claimed.
absl::StatusOr<uint32_t> ClaimProjectId(volume::Syscalls& sys, const std::string& root,
                                        const ProjectIdRange& range, const std::string& volume);

// Gives up `volume`'s claim on `id` (and its recorded limits). A claim of
// another volume, or none: OK, nothing changed.
absl::Status ReleaseProjectId(volume::Syscalls& sys, const std::string& root, uint32_t id,
                              const std::string& volume);

// The ID `volume` holds a claim on, by reading every claim (for the rare
// case where nothing else names it); nullopt when none.
absl::StatusOr<std::optional<uint32_t>> FindProjectClaim(volume::Syscalls& sys,
                                                         const std::string& root,
                                                         const std::string& volume);

struct RecordedLimits {
  uint64_t bytes = 0;  // 0: none recorded
  uint64_t inodes = 0;
};

// Records that `id`'s project has these limits now (after setting them).
absl::Status RecordLimits(volume::Syscalls& sys, const std::string& root, uint32_t id,
                          const RecordedLimits& limits);

// The largest limits recorded for `id`; zeros when none.
absl::StatusOr<RecordedLimits> ReadRecordedLimits(volume::Syscalls& sys, const std::string& root,
                                                  uint32_t id);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_PROJECT_IDS_H_
