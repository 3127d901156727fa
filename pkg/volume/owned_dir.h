// Directories created for a volume and released with it: a provisioned
// sub-dir of a shared file system. A marker file inside the directory
// records the volume that owns it and what to do on release, so a later
// release (after any restart) deletes only what was created for that volume,
// and never a directory without the marker.
//
// Works through the Syscalls' *Beneath calls: every path is resolved
// strictly beneath `root` (no "..", no symlink, no other mount). Stateless
// and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_OWNED_DIR_H_
#define LUSTRE_CSI_PKG_VOLUME_OWNED_DIR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

inline constexpr char kOwnerMarkerName[] = ".lustre-csi-volume";

// Deeper owned trees are not removed (RESOURCE_EXHAUSTED).
inline constexpr int kMaxOwnedDirDepth = 256;

struct DirOwner {
  std::string volume;
  bool delete_on_release = false;
  // What was asked when the directory was created (an opaque fingerprint;
  // empty: not recorded). A later create for the same volume with another
  // request is refused.
  std::string request;
  // The project ID given to the directory (a Lustre project quota), if any.
  std::optional<uint32_t> project;
};

struct OwnedDirOptions {
  uint32_t mode = 0775;  // applied exactly (no umask), setgid and sticky bits included
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

// Creates `relative` (and missing parents, 0755) beneath `root` with the
// marker, made, owned and marked through one descriptor
// (MakeMarkedDirBeneath, beneath.h): when the owner, mode or marker cannot be
// set, the directory is removed again (missing parents it made stay). Already created for the same
// volume with the same request (or where either request is not recorded): OK. Exists otherwise (no
// marker, another volume's, or the same volume's with another request): ALREADY_EXISTS, nothing
// changed. `made` (may be null) says whether this call made the directory: only such a call may
// take it back, not one that found it made for the same volume by another.
absl::Status CreateOwnedDir(Syscalls& sys, const std::string& root, const std::string& relative,
                            const OwnedDirOptions& options, const DirOwner& owner,
                            bool* made = nullptr);

// The owner recorded in `relative`, nullopt when there is no marker;
// NOT_FOUND when the directory does not exist.
absl::StatusOr<std::optional<DirOwner>> ReadDirOwner(Syscalls& sys, const std::string& root,
                                                     const std::string& relative);

// Releases `relative` for `volume`: removes the whole directory when its
// marker names `volume` and says delete; keeps it otherwise (retain, no
// marker, another owner). A missing directory is OK. Returns whether it was
// removed. The marker goes last, so a removal that stops halfway (a tree
// too deep, an entry that cannot go) leaves a directory a retry still
// knows as the volume's.
absl::StatusOr<bool> ReleaseOwnedDir(Syscalls& sys, const std::string& root,
                                     const std::string& relative, const std::string& volume);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_OWNED_DIR_H_
