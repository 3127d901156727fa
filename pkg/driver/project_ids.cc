#include "pkg/driver/project_ids.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pkg/base/status_macros.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/owned_dir.h"
#include "pkg/volume/sha256.h"

namespace lustre_csi::driver {
namespace {

constexpr uint32_t kMaxProjectId = 4294967294u;

std::string ClaimPath(uint32_t id) { return absl::StrCat(kProjectClaimDir, "/", id); }

// Where a volume's search starts: spread over the range by its name, the
// same on every controller.
uint64_t StartOffset(const std::string& volume, uint64_t size) {
  uint64_t h = 0;
  absl::SimpleHexAtoi(volume::Sha256Hex(volume).substr(0, 15), &h);
  return h % size;
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

absl::StatusOr<uint32_t> ClaimProjectId(volume::Syscalls& sys, const std::string& root,
                                        const ProjectIdRange& range, const std::string& volume) {
  const uint64_t size = uint64_t{range.last} - range.first + 1;
  const uint64_t start = StartOffset(volume, size);
  volume::OwnedDirOptions options;
  options.mode = 0755;
  volume::DirOwner owner{volume, /*delete_on_release=*/true, /*request=*/""};
  for (uint64_t i = 0; i < size; ++i) {
    uint32_t id = static_cast<uint32_t>(range.first + (start + i) % size);
    absl::Status claimed = volume::CreateOwnedDir(sys, root, ClaimPath(id), options, owner);
    if (claimed.ok()) return id;  // made now, or ours already
    if (!absl::IsAlreadyExists(claimed)) {
      return volume::Annotate(claimed, absl::StrCat("claiming project ID ", id));
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("every project ID of ", range.first, "-", range.last, " is claimed (", root, "/",
                   kProjectClaimDir, "): widen --project-id-range, or delete volumes"));
}

absl::Status ReleaseProjectId(volume::Syscalls& sys, const std::string& root, uint32_t id,
                              const std::string& volume) {
  return volume::ReleaseOwnedDir(sys, root, ClaimPath(id), volume).status();
}

absl::StatusOr<std::optional<uint32_t>> FindProjectClaim(volume::Syscalls& sys,
                                                         const std::string& root,
                                                         const std::string& volume) {
  absl::StatusOr<volume::FileInfo> dir = sys.StatBeneath(root, kProjectClaimDir);
  if (absl::IsNotFound(dir.status())) return std::optional<uint32_t>();
  if (!dir.ok()) return dir.status();
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   sys.ListDir(absl::StrCat(root, "/", kProjectClaimDir)));
  for (const std::string& name : names) {
    uint32_t id = 0;
    if (!absl::SimpleAtoi(name, &id)) continue;
    absl::StatusOr<std::optional<volume::DirOwner>> owner =
        volume::ReadDirOwner(sys, root, ClaimPath(id));
    if (owner.ok() && owner->has_value() && (*owner)->volume == volume) {
      return std::optional<uint32_t>(id);
    }
  }
  return std::optional<uint32_t>();
}

absl::Status RecordLimits(volume::Syscalls& sys, const std::string& root, uint32_t id,
                          const RecordedLimits& limits) {
  absl::Status made = sys.MkdirBeneath(
      root, absl::StrCat(ClaimPath(id), "/limit-", limits.bytes, "-", limits.inodes), 0755);
  if (made.ok() || absl::IsAlreadyExists(made)) return absl::OkStatus();
  return volume::Annotate(made, absl::StrCat("recording the limits of project ", id));
}

absl::StatusOr<RecordedLimits> ReadRecordedLimits(volume::Syscalls& sys, const std::string& root,
                                                  uint32_t id) {
  RETURN_IF_ERROR(sys.StatBeneath(root, ClaimPath(id)).status());
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   sys.ListDir(absl::StrCat(root, "/", ClaimPath(id))));
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
