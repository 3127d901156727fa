#include "pkg/driver/project_ids.h"

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pkg/base/clock.h"
#include "pkg/base/status_macros.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/owned_dir.h"
#include "pkg/volume/sha256.h"

namespace lustre_csi::driver {
namespace {

constexpr uint32_t kMaxProjectId = 4294967294u;
// Taken IDs tried one by one before the free ones are found from a listing.
constexpr int kProbeLimit = 64;

std::string ClaimPath(uint32_t id) { return absl::StrCat(kProjectClaimDir, "/", id); }
std::string IndexPath(const std::string& volume) {
  return absl::StrCat(kProjectClaimDir, "/by-volume/", volume::Sha256Hex(volume));
}

// Where a volume's search starts: spread over the range by its name, the
// same on every controller.
uint64_t StartOffset(const std::string& volume, uint64_t size) {
  uint64_t h = 0;
  absl::SimpleHexAtoi(volume::Sha256Hex(volume).substr(0, 15), &h);
  return h % size;
}

// Whether the claim of `id` names `volume`.
absl::StatusOr<bool> ClaimIsOf(volume::Syscalls& sys, const std::string& root, uint32_t id,
                               const std::string& volume) {
  absl::StatusOr<std::optional<volume::DirOwner>> owner =
      volume::ReadDirOwner(sys, root, ClaimPath(id));
  if (absl::IsNotFound(owner.status())) return false;
  if (!owner.ok()) return owner.status();
  return owner->has_value() && (*owner)->volume == volume;
}

// Tries to claim `id` for `volume`: OK when made now or already its own
// (`made` says which); ALREADY_EXISTS when taken by another, or unreadable.
absl::Status TryClaim(volume::Syscalls& sys, const std::string& root, uint32_t id,
                      const std::string& volume, bool* made) {
  volume::OwnedDirOptions options;
  options.mode = 0755;
  absl::Status claimed =
      volume::CreateOwnedDir(sys, root, ClaimPath(id), options, {volume, true, ""}, made);
  // A claim whose marker cannot be read (a controller stopped while writing
  // it) may be in use: taken.
  if (absl::IsDataLoss(claimed)) return absl::AlreadyExistsError(claimed.message());
  return claimed;
}

// The volume's entry as ReadDirOwner reads it. An entry is made, then
// marked: a twin call (another controller creating the same volume) may be
// between the two, so an entry without a readable marker is read again for a
// while (about 1.3 s in all) before it is taken as it is.
absl::StatusOr<std::optional<volume::DirOwner>> ReadIndexSettled(volume::Syscalls& sys,
                                                                 const std::string& root,
                                                                 const std::string& volume,
                                                                 base::Clock* clock) {
  absl::Duration pause = absl::Milliseconds(5);
  while (true) {
    absl::StatusOr<std::optional<volume::DirOwner>> index =
        volume::ReadDirOwner(sys, root, IndexPath(volume));
    const bool unsettled = (index.ok() && !index->has_value()) || absl::IsDataLoss(index.status());
    if (!unsettled || pause > absl::Milliseconds(640)) return index;
    clock->SleepFor(pause, nullptr);
    pause *= 2;
  }
}

}  // namespace

absl::StatusOr<ProjectIdRange> ParseProjectIdRange(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '-');
  ProjectIdRange range;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &range.first) ||
      !absl::SimpleAtoi(parts[1], &range.last) || parts[0][0] == '+' || parts[1][0] == '+' ||
      range.first < 1 || range.first > range.last || range.last > kMaxProjectId) {
    return absl::InvalidArgumentError(
        absl::StrCat("project ID range '", text,
                     "' must be <first>-<last> with 1 <= first <= ", "last <= ", kMaxProjectId));
  }
  return range;
}

absl::StatusOr<std::optional<uint32_t>> FindProjectClaim(volume::Syscalls& sys,
                                                         const std::string& root,
                                                         const std::string& volume,
                                                         base::Clock* clock) {
  absl::StatusOr<std::optional<volume::DirOwner>> index =
      ReadIndexSettled(sys, root, volume, clock);
  if (absl::IsNotFound(index.status())) return std::optional<uint32_t>();
  if (!index.ok()) return volume::Annotate(index.status(), "the volume's project entry");
  if (!index->has_value() || (*index)->volume != volume || !(*index)->project.has_value()) {
    return absl::DataLossError(absl::StrCat(root, "/", IndexPath(volume), " does not name volume ",
                                            volume, " and a project"));
  }
  const uint32_t id = *(*index)->project;
  ASSIGN_OR_RETURN(bool ours, ClaimIsOf(sys, root, id, volume));
  if (ours) return std::optional<uint32_t>(id);
  // The claim went and the entry stayed: the entry goes too.
  RETURN_IF_ERROR(volume::ReleaseOwnedDir(sys, root, IndexPath(volume), volume).status());
  return std::optional<uint32_t>();
}

absl::StatusOr<ProjectClaim> ClaimProjectId(volume::Syscalls& sys, const std::string& root,
                                            const ProjectIdRange& range, const std::string& volume,
                                            base::Clock* clock) {
  ASSIGN_OR_RETURN(std::optional<uint32_t> held, FindProjectClaim(sys, root, volume, clock));
  if (held.has_value()) return ProjectClaim{*held, false};

  const uint64_t size = uint64_t{range.last} - range.first + 1;
  const uint64_t start = StartOffset(volume, size);
  std::optional<uint32_t> id;
  bool made = false;
  auto try_id = [&](uint32_t candidate) -> absl::StatusOr<bool> {
    absl::Status claimed = TryClaim(sys, root, candidate, volume, &made);
    if (claimed.ok()) return true;
    if (absl::IsAlreadyExists(claimed)) return false;
    return volume::Annotate(claimed, absl::StrCat("claiming project ID ", candidate));
  };
  uint64_t tried = 0;
  for (; tried < size && tried < kProbeLimit && !id.has_value(); ++tried) {
    uint32_t candidate = static_cast<uint32_t>(range.first + (start + tried) % size);
    ASSIGN_OR_RETURN(bool got, try_id(candidate));
    if (got) id = candidate;
  }
  if (!id.has_value() && tried < size) {
    // Crowded: the IDs claimed now, from one listing; the others are tried.
    ASSIGN_OR_RETURN(std::vector<std::string> names,
                     volume::ListDir(sys, absl::StrCat(root, "/", kProjectClaimDir)));
    absl::flat_hash_set<uint32_t> taken;
    for (const std::string& name : names) {
      uint32_t n = 0;
      if (absl::SimpleAtoi(name, &n)) taken.insert(n);
    }
    for (; tried < size && !id.has_value(); ++tried) {
      uint32_t candidate = static_cast<uint32_t>(range.first + (start + tried) % size);
      if (taken.contains(candidate)) continue;
      ASSIGN_OR_RETURN(bool got, try_id(candidate));
      if (got) id = candidate;
    }
  }
  if (!id.has_value()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("every project ID of ", range.first, "-", range.last, " is claimed (", root,
                     "/", kProjectClaimDir, "): widen --project-id-range, or delete volumes"));
  }
  // Which ID the volume holds; a twin call may have recorded another first.
  volume::DirOwner entry{volume, true, ""};
  entry.project = *id;
  volume::OwnedDirOptions options;
  options.mode = 0755;
  bool indexed = false;
  absl::Status recorded =
      volume::CreateOwnedDir(sys, root, IndexPath(volume), options, entry, &indexed);
  // Found made (a twin's, complete or still unmarked): the entry says which
  // ID the volume holds, once its marker is there.
  if ((recorded.ok() && !indexed) || absl::IsAlreadyExists(recorded)) {
    ASSIGN_OR_RETURN(std::optional<uint32_t> other, FindProjectClaim(sys, root, volume, clock));
    if (other.has_value() && *other != *id) {
      if (made) {
        absl::Status undo = volume::ReleaseOwnedDir(sys, root, ClaimPath(*id), volume).status();
        if (!undo.ok()) return undo;
      }
      return ProjectClaim{*other, false};
    }
    if (other.has_value()) recorded = absl::OkStatus();
  }
  if (!recorded.ok()) {
    if (made) volume::ReleaseOwnedDir(sys, root, ClaimPath(*id), volume).IgnoreError();
    return volume::Annotate(recorded, absl::StrCat("recording project ID ", *id, " of ", volume));
  }
  return ProjectClaim{*id, indexed};
}

absl::Status ReleaseProjectId(volume::Syscalls& sys, const std::string& root,
                              const std::string& volume) {
  absl::StatusOr<std::optional<volume::DirOwner>> index =
      volume::ReadDirOwner(sys, root, IndexPath(volume));
  if (absl::IsNotFound(index.status())) return absl::OkStatus();
  if (!index.ok()) return index.status();
  if (index->has_value() && (*index)->volume == volume && (*index)->project.has_value()) {
    RETURN_IF_ERROR(
        volume::ReleaseOwnedDir(sys, root, ClaimPath(*(*index)->project), volume).status());
  }
  return volume::ReleaseOwnedDir(sys, root, IndexPath(volume), volume).status();
}

absl::Status RecordLimits(volume::Syscalls& sys, const std::string& root, uint32_t id,
                          const RecordedLimits& limits) {
  absl::Status made = volume::MkdirBeneath(
      sys, root, absl::StrCat(ClaimPath(id), "/limit-", limits.bytes, "-", limits.inodes), 0755);
  if (made.ok() || absl::IsAlreadyExists(made)) return absl::OkStatus();
  return volume::Annotate(made, absl::StrCat("recording the limits of project ", id));
}

absl::StatusOr<RecordedLimits> ReadRecordedLimits(volume::Syscalls& sys, const std::string& root,
                                                  uint32_t id) {
  RETURN_IF_ERROR(volume::StatBeneath(sys, root, ClaimPath(id)).status());
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   volume::ListDir(sys, absl::StrCat(root, "/", ClaimPath(id))));
  RecordedLimits best;
  for (absl::string_view name : names) {
    if (!absl::ConsumePrefix(&name, "limit-")) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(name, '-');
    RecordedLimits limits;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &limits.bytes) ||
        !absl::SimpleAtoi(parts[1], &limits.inodes)) {
      continue;
    }
    if (limits.bytes > best.bytes) best = limits;
  }
  return best;
}

}  // namespace lustre_csi::driver
