#include "pkg/volume/kernel.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lustre_csi::volume {

std::vector<KernelInterfaces::Entry> KernelInterfaces::Entries() const {
  return {
      {"openat2", "5.6", openat2},
      {"mount_api", "5.12", mount_api},
      {"pidfd_open", "5.3", pidfd_open},
      {"statx_mount_id", "5.8", statx_mount_id},
  };
}

std::string KernelInterfaces::Missing() const {
  std::vector<std::string> missing;
  for (const Entry& e : Entries()) {
    if (!e.present) missing.push_back(e.name);
  }
  return absl::StrJoin(missing, ", ");
}

std::string KernelInterfaces::Describe() const {
  std::vector<std::string> have;
  for (const Entry& e : Entries()) {
    if (e.present) have.push_back(e.name);
  }
  std::string missing = Missing();
  return absl::StrCat(
      "kernel interfaces: ", have.empty() ? "none of the newer ones" : "",
      absl::StrJoin(have, ", "),
      missing.empty() ? "; no fallback in use" : absl::StrCat("; fallbacks in use for ", missing));
}

}  // namespace lustre_csi::volume
