// Safe handling of untrusted names before they become paths.
//
// Volume ids, sub-directories and other names that come from users or from
// the orchestrator pass through here before they are joined into a path:
// ValidatePathSegment rejects what cannot be a single path segment,
// EscapePathSegment turns any string into one, JoinBeneath joins lexically
// and refuses to leave the root. (ResolveBeneath in beneath.h asks the kernel,
// so that symlinks cannot lead out of a root either.) All functions are
// stateless, purely lexical and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_SAFE_PATH_H_
#define LUSTRE_CSI_PKG_VOLUME_SAFE_PATH_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::volume {

// The longest file name Linux file systems accept (NAME_MAX).
inline constexpr size_t kMaxPathSegment = 255;

// OK when `id` can be used as one path segment: not empty, at most `max_len`
// bytes, not "." or "..", no '/' and no NUL. INVALID_ARGUMENT naming the
// problem otherwise.
absl::Status ValidatePathSegment(absl::string_view id, size_t max_len = kMaxPathSegment);

// Whether `c` is in the POSIX portable filename character set:
// A-Z a-z 0-9 . _ -
bool IsPortableFilenameByte(unsigned char c);

// Which bytes EscapePathSegment keeps as they are; every other byte becomes
// %XX.
enum class SegmentAlphabet {
  // Printable ASCII except '/', '%', '\\' and '~'.
  kPrintable,
  // The POSIX portable filename character set, A-Z a-z 0-9 . _ -: for paths
  // handed to other programs (another vendor's CSI plugin may build shell
  // commands or mount options from them).
  kPortable,
};

// `id` as a single path segment that always passes ValidatePathSegment.
// Bytes outside `alphabet` become %XX; "." and ".." have their dots escaped;
// the empty string becomes "%". The result is reversible
// (UnescapePathSegment with the same alphabet) and distinct inputs give
// distinct results as long as the escaped form fits in kMaxPathSegment bytes
// (always true for inputs of up to 85 bytes, and for ids of up to 255 bytes
// made of the alphabet). Longer results are shortened to an escaped prefix,
// '~' and the SHA-256 of `id` in hex: still a valid segment and distinct in
// practice, but no longer reversible.
std::string EscapePathSegment(absl::string_view id,
                              SegmentAlphabet alphabet = SegmentAlphabet::kPrintable);

// The inverse of EscapePathSegment with `alphabet`. INVALID_ARGUMENT for
// anything it cannot have produced, including the shortened (hashed) form.
absl::StatusOr<std::string> UnescapePathSegment(
    absl::string_view segment, SegmentAlphabet alphabet = SegmentAlphabet::kPrintable);

// Lexical clean-up of a path, like Go's path.Clean: repeated slashes,
// "." components and trailing slashes go, ".." eats the component before it
// (and stops at "/"). "" becomes ".".
std::string CleanPath(absl::string_view path);

// The parent of a cleaned absolute path ("/" for "/" and for "/a").
std::string ParentPath(absl::string_view path);

// True when the cleaned `path` is `root` or lies beneath it (lexically).
bool IsPathBeneath(absl::string_view root, absl::string_view path);

// `root` joined with `relative`, cleaned. INVALID_ARGUMENT when `root` is
// empty, `relative` is absolute, either contains NUL, or a ".." in
// `relative` would climb above `root`. Purely lexical: symlinks are not
// looked at (use ResolveBeneath in beneath.h for that).
absl::StatusOr<std::string> JoinBeneath(absl::string_view root, absl::string_view relative);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_SAFE_PATH_H_
