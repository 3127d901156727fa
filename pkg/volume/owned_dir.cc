#include "pkg/volume/owned_dir.h"

#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pkg/base/status_macros.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/safe_path.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::volume {
namespace {

constexpr size_t kMaxMarker = 4096;

absl::Status CheckRelative(const std::string& root, const std::string& relative) {
  std::string clean = CleanPath(relative);
  if (clean.empty() || clean == "." || clean[0] == '/' || clean == ".." ||
      clean.rfind("../", 0) == 0 || relative.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", relative, "' is not a directory strictly beneath ", root));
  }
  return absl::OkStatus();
}

std::string FormatMarker(const DirOwner& owner) {
  std::string text = absl::StrCat(
      "volume=", owner.volume, "\non-delete=", owner.delete_on_release ? "delete" : "retain", "\n");
  if (!owner.request.empty()) absl::StrAppend(&text, "request=", owner.request, "\n");
  if (owner.project.has_value()) absl::StrAppend(&text, "project=", *owner.project, "\n");
  return text;
}

absl::StatusOr<DirOwner> ParseMarker(const std::string& text) {
  DirOwner owner;
  bool have_volume = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, "volume=")) {
      owner.volume = std::string(line);
      have_volume = true;
    } else if (absl::ConsumePrefix(&line, "on-delete=")) {
      owner.delete_on_release = line == "delete";
    } else if (absl::ConsumePrefix(&line, "request=")) {
      owner.request = std::string(line);
    } else if (absl::ConsumePrefix(&line, "project=")) {
      uint32_t id = 0;
      if (!absl::SimpleAtoi(line, &id)) {
        return absl::DataLossError(absl::StrCat("owner marker has a bad project '", line, "'"));
      }
      owner.project = id;
    }
  }
  if (!have_volume) return absl::DataLossError("owner marker names no volume");
  return owner;
}

// The owned directory `relative` beneath `root` as a directory: NOT_FOUND
// when missing, INVALID_ARGUMENT when it is no directory or leaves `root`.
absl::Status CheckDir(Syscalls& sys, const std::string& root, const std::string& relative) {
  ASSIGN_OR_RETURN(FileInfo info, StatBeneath(sys, root, relative));
  if (!IsDirectoryMode(info.mode)) {
    return absl::InvalidArgumentError(absl::StrCat(root, "/", relative, " is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<DirOwner>> ReadMarker(Syscalls& sys, const std::string& root,
                                                   const std::string& dir) {
  absl::StatusOr<std::string> text =
      ReadFileBeneath(sys, root, absl::StrCat(dir, "/", kOwnerMarkerName), kMaxMarker);
  if (absl::IsNotFound(text.status())) return std::optional<DirOwner>();
  if (!text.ok()) return Annotate(text.status(), "owner marker");
  ASSIGN_OR_RETURN(DirOwner owner, ParseMarker(*text));
  return std::optional<DirOwner>(std::move(owner));
}

}  // namespace

absl::Status CreateOwnedDir(Syscalls& sys, const std::string& root, const std::string& relative,
                            const OwnedDirOptions& options, const DirOwner& owner, bool* made_now) {
  if (made_now != nullptr) *made_now = false;
  RETURN_IF_ERROR(CheckRelative(root, relative));
  // The missing parents first (MkdirAllBeneath: each level strictly beneath
  // the root, so no symlink or mount can redirect the walk). The directory
  // itself is made, given its owner and mode and marked in one call, through
  // one descriptor: nothing renamed into the path meanwhile is changed, and a
  // failure leaves no unmarked directory behind.
  const std::string clean = CleanPath(relative);
  if (size_t slash = clean.rfind('/'); slash != std::string::npos) {
    RETURN_IF_ERROR(MkdirAllBeneath(sys, root, clean.substr(0, slash), 0755));
  }
  MarkedDirSpec spec;
  spec.mode = options.mode & 07777;
  spec.uid = options.uid;
  spec.gid = options.gid;
  spec.marker_name = kOwnerMarkerName;
  spec.marker_content = FormatMarker(owner);
  spec.marker_mode = 0444;
  absl::Status made = MakeMarkedDirBeneath(sys, root, clean, spec);
  if (made.ok() && made_now != nullptr) *made_now = true;
  if (!absl::IsAlreadyExists(made)) return made;

  RETURN_IF_ERROR(CheckDir(sys, root, clean));
  ASSIGN_OR_RETURN(std::optional<DirOwner> existing, ReadMarker(sys, root, clean));
  if (existing.has_value() && existing->volume == owner.volume) {
    const std::string& recorded = existing->request;
    if (recorded.empty() || owner.request.empty() || recorded == owner.request) {
      return absl::OkStatus();
    }
    return absl::AlreadyExistsError(
        absl::StrCat("volume ", owner.volume, " already exists (", root, "/", relative,
                     ") and was created with other parameters or another capacity"));
  }
  return absl::AlreadyExistsError(absl::StrCat(
      root, "/", relative, " already exists and was not created for volume ", owner.volume,
      existing.has_value() ? absl::StrCat(" (it belongs to ", existing->volume, ")")
                           : " (no owner marker)"));
}

absl::StatusOr<std::optional<DirOwner>> ReadDirOwner(Syscalls& sys, const std::string& root,
                                                     const std::string& relative) {
  RETURN_IF_ERROR(CheckRelative(root, relative));
  const std::string clean = CleanPath(relative);
  RETURN_IF_ERROR(CheckDir(sys, root, clean));
  return ReadMarker(sys, root, clean);
}

absl::StatusOr<bool> ReleaseOwnedDir(Syscalls& sys, const std::string& root,
                                     const std::string& relative, const std::string& volume) {
  absl::StatusOr<std::optional<DirOwner>> owner = ReadDirOwner(sys, root, relative);
  if (absl::IsNotFound(owner.status())) return false;
  if (!owner.ok()) return owner.status();
  if (!owner->has_value() || (*owner)->volume != volume || !(*owner)->delete_on_release) {
    return false;
  }
  // The subdirectories first (where a removal can stop: too deep, an entry
  // that cannot go), then the directory with its files and the marker.
  const std::string clean = CleanPath(relative);
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(sys, absl::StrCat(root, "/", clean)));
  for (const std::string& name : names) {
    const std::string child = absl::StrCat(clean, "/", name);
    absl::StatusOr<FileInfo> info = StatBeneath(sys, root, child);
    if (!info.ok() || !IsDirectoryMode(info->mode)) continue;  // a file: goes with the directory
    RETURN_IF_ERROR(RemoveTreeBeneath(sys, root, child, kMaxOwnedDirDepth - 1));
  }
  RETURN_IF_ERROR(RemoveTreeBeneath(sys, root, clean, kMaxOwnedDirDepth));
  return true;
}

}  // namespace lustre_csi::volume
