// Errors from system calls as absl::Status values.
//
// ErrnoError turns an errno into a status whose code is chosen by what the
// errno means to a caller (retry, fix the system first, bad input, ...). The
// errno itself travels with the status as a payload, so code further up can
// still branch on the exact errno (see ErrnoOf). Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_ERRNO_STATUS_H_
#define LUSTRE_CSI_PKG_VOLUME_ERRNO_STATUS_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::volume {

// The payload type URL under which the errno is attached (decimal text).
inline constexpr char kErrnoPayloadUrl[] = "type.googleapis.com/lustre_csi.volume.Errno";

// The status code ErrnoError uses for `err`:
//   ENOENT -> NOT_FOUND, EEXIST -> ALREADY_EXISTS,
//   EACCES, EPERM -> PERMISSION_DENIED, EINVAL, ENAMETOOLONG -> INVALID_ARGUMENT,
//   ETIMEDOUT -> DEADLINE_EXCEEDED, EBUSY -> FAILED_PRECONDITION,
//   ENOTCONN, ESTALE, EIO, EHOSTDOWN, EAGAIN -> UNAVAILABLE, anything else -> INTERNAL.
absl::StatusCode ErrnoToCode(int err);

// "<context>: <strerror> (<ERRNO NAME>)" with the code from ErrnoToCode and the
// errno attached. `err` must not be 0.
absl::Status ErrnoError(int err, absl::string_view context);

// As ErrnoError, but with a code chosen by the caller, for the few places where
// an errno means something more specific (e.g. EXDEV from openat2: "escapes").
absl::Status ErrnoErrorWithCode(absl::StatusCode code, int err, absl::string_view context);

// The errno attached by ErrnoError, if any. nullopt for OK and for statuses not
// made from an errno.
std::optional<int> ErrnoOf(const absl::Status& status);

// `status` with "<context>: " put in front of its message; code and payloads
// (the errno among them) are kept. OK stays OK. (base::Annotate, here for
// the callers that speak of errnos.)
absl::Status Annotate(const absl::Status& status, absl::string_view context);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_ERRNO_STATUS_H_
