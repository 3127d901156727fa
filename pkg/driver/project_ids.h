// Project IDs for provisioned sub-dirs, claimed on the file system itself so
// that no two live volumes share one, whichever controller (or how many at
// once) hands them out. Under <root>/.lustre-csi-projects/:
//   <id>                    the claim of an ID: made with mkdir(2), which only
//                           one caller can make, with an owner marker
//                           (volume/owned_dir.h) naming the volume; it also
//                           records the limits set on the project, as entries
//                           "limit-<bytes>-<inodes>" (the largest wins), so an
//                           expansion knows a volume's size after any restart;
//   by-volume/<sha256(name)> which ID a volume holds (marker: volume, project),
//                           so a volume's ID is found in one lookup, and only
//                           through what the controller wrote (never from a
//                           directory a pod can write to).
// Nothing here is in a volume's own directory. Stateless and thread-safe;
// every path is resolved beneath the root.
#ifndef LUSTRE_CSI_PKG_DRIVER_PROJECT_IDS_H_
#define LUSTRE_CSI_PKG_DRIVER_PROJECT_IDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/base/clock.h"
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

struct ProjectClaim {
  uint32_t id = 0;
  // Whether this call made the volume's claim (only such a call may take it
  // back when what follows fails; a twin call that found it may not).
  bool made = false;
};

// The ID `volume` holds on the file system whose root is `root`, or a new
// one of `range`: tried from an ID derived from the volume's name on (so a
// retry after a crash finds the claim it made), skipping claims of others
// and claims that cannot be read; after 64 taken IDs, the free ones are
// found from one listing. RESOURCE_EXHAUSTED when every ID of the range is
// claimed. A twin call (another controller creating the same volume) ends
// with the same ID, whichever of the two records it first.
absl::StatusOr<ProjectClaim> ClaimProjectId(volume::Syscalls& sys, const std::string& root,
                                            const ProjectIdRange& range, const std::string& volume,
                                            base::Clock* clock = base::RealClock());

// The ID `volume` holds (its claim checked to name it); nullopt when none. A
// by-volume entry whose claim is gone (a release that stopped halfway) is
// removed. An entry not yet marked (its maker may be between the mkdir and
// the marker) is read again for about 1.3 s on `clock` before it is
// DATA_LOSS.
absl::StatusOr<std::optional<uint32_t>> FindProjectClaim(volume::Syscalls& sys,
                                                         const std::string& root,
                                                         const std::string& volume,
                                                         base::Clock* clock = base::RealClock());

// Gives up the ID `volume` holds (its claim with the recorded limits, then
// the by-volume entry). None: OK. Never touches another volume's claim.
absl::Status ReleaseProjectId(volume::Syscalls& sys, const std::string& root,
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
