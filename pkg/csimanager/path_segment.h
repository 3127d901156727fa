// Turning untrusted ids into single path segments.
//
// Namespaces, volume ids and allocation ids come from the orchestrator and
// end up inside mount paths. EscapeSegment makes any non-empty id into one
// safe segment, reversibly: bytes outside [A-Za-z0-9._-] are written as %XX,
// so no '/', NUL, ".." or control byte survives and two different ids never
// share a segment. Plugin names are validated instead of escaped, with the
// CSI driver-name rules.
//
// Pure functions, safe from any thread. A private helper of csimanager; the
// shared pkg/volume safe-path code may replace it (it escapes differently, so
// new paths would differ from those claims already record). Socket endpoints
// are parsed by pkg/server/endpoint.h.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_PATH_SEGMENT_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_PATH_SEGMENT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::csimanager {

// Longest segment, after escaping (NAME_MAX).
inline constexpr size_t kMaxSegmentLength = 255;

// `id` as one path segment. INVALID_ARGUMENT, naming `what`, when `id` is
// empty or its escaped form is longer than kMaxSegmentLength.
absl::StatusOr<std::string> EscapeSegment(absl::string_view id, absl::string_view what);

// The inverse of EscapeSegment; INVALID_ARGUMENT for a malformed escape.
absl::StatusOr<std::string> UnescapeSegment(absl::string_view segment);

// A CSI driver name: 1 to 63 characters, alphanumerics, '-', '_' and '.',
// starting and ending with an alphanumeric. INVALID_ARGUMENT otherwise.
absl::Status ValidatePluginName(absl::string_view name);

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_PATH_SEGMENT_H_
