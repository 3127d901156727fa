// SHA-256 (FIPS 180-4) of a byte string, for stable short names. Stateless and
// thread-safe; not meant for large inputs or for secrets.
#ifndef LUSTRE_CSI_PKG_VOLUME_SHA256_H_
#define LUSTRE_CSI_PKG_VOLUME_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace lustre_csi::volume {

// The digest as 64 lower-case hex digits.
std::string Sha256Hex(absl::string_view data);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_SHA256_H_
