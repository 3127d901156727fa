#include "pkg/driver/volume_id.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace lustre_csi::driver {

bool VolumeId::operator==(const VolumeId& other) const {
  return name == other.name && fs_name == other.fs_name && mgs_address == other.mgs_address &&
         sub_dir == other.sub_dir && created_file_system == other.created_file_system &&
         resource_group == other.resource_group;
}

absl::string_view TrimSlashes(absl::string_view sub_dir) {
  while (absl::ConsumePrefix(&sub_dir, "/")) {
  }
  while (absl::ConsumeSuffix(&sub_dir, "/")) {
  }
  return sub_dir;
}

absl::StatusOr<VolumeId> ParseVolumeId(absl::string_view id) {
  std::vector<std::string> fields = absl::StrSplit(id, '#');
  if (fields.size() < 3 || fields.size() > 6) {
    return absl::InvalidArgumentError(
        absl::StrCat("volume id '", id, "' has ", fields.size(),
                     " '#'-separated fields; want "
                     "<name>#<fs-name>#<mgs-ip-address>[#<sub-dir>[#<t|f>[#<rg>]]]"));
  }
  // The Go driver ignores the fs-name field (it always mounts the default):
  // an empty one means that file system here.
  if (fields[1].empty()) fields[1] = kDefaultFsName;
  const char* kNames[] = {"name", "fs-name", "mgs-ip-address"};
  for (int i = 0; i < 3; ++i) {
    if (fields[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("volume id '", id, "' has an empty ", kNames[i], " field"));
    }
  }
  VolumeId out;
  out.name = fields[0];
  out.fs_name = fields[1];
  out.mgs_address = fields[2];
  if (fields.size() > 3) out.sub_dir = std::string(TrimSlashes(fields[3]));
  if (fields.size() > 4) {
    if (fields[4] == "t") {
      out.created_file_system = true;
    } else if (fields[4] != "f" && !fields[4].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("volume id '", id, "': 5th field must be t or f, not '", fields[4], "'"));
    }
  }
  if (fields.size() > 5) out.resource_group = fields[5];
  return out;
}

std::string FormatVolumeId(const VolumeId& id) {
  std::string out = absl::StrCat(id.name, "#", id.fs_name, "#", id.mgs_address, "#", id.sub_dir,
                                 "#", id.created_file_system ? "t" : "f");
  if (!id.resource_group.empty()) absl::StrAppend(&out, "#", id.resource_group);
  return out;
}

}  // namespace lustre_csi::driver
