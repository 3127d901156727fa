// Lustre volume ids in the Azure Lustre CSI driver's format:
//
//   <name>#<fs-name>#<mgs-ip-address>#<sub-dir>#<t|f>#<resource-group>
//
// split on '#', with 3 to 6 fields. The 5th field says whether the file
// system itself was created by dynamic provisioning; this driver never does
// that and writes "f". Static PersistentVolumes may use any unique string as
// their handle, so at the node the volume context is authoritative; an id
// that parses in this format is still validated field by field, and its
// sub-dir is mounted when the context has none (VolumeParams in
// parameters.h). Pure functions, thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_VOLUME_ID_H_
#define LUSTRE_CSI_PKG_DRIVER_VOLUME_ID_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::driver {

// The file system a volume that names none mounts, as the Go driver always
// does.
inline constexpr char kDefaultFsName[] = "lustrefs";

// `sub_dir` without its leading and trailing '/', as the Go driver trims
// sub-dirs ("/team/a/" is "team/a").
absl::string_view TrimSlashes(absl::string_view sub_dir);

struct VolumeId {
  std::string name;
  std::string fs_name;
  std::string mgs_address;
  std::string sub_dir;  // empty: the file system root
  bool created_file_system = false;
  std::string resource_group;

  bool operator==(const VolumeId& other) const;
};

// INVALID_ARGUMENT unless the id has 3 to 6 '#'-separated fields with a
// non-empty name and MGS address and a 5th field of "t", "f" or "". As the
// Go driver reads its ids: an empty fs-name field is "lustrefs", and the
// sub-dir field loses its leading and trailing '/'.
absl::StatusOr<VolumeId> ParseVolumeId(absl::string_view id);

// Always writes 5 fields, and the 6th only when a resource group is set.
std::string FormatVolumeId(const VolumeId& id);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_VOLUME_ID_H_
