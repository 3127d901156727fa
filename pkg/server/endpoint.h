// Unix-socket endpoints: parsing CSI-style endpoint strings and making a
// socket path ready to listen on.
//
// Stateless functions, safe to call from any thread.
#ifndef LUSTRE_CSI_PKG_SERVER_ENDPOINT_H_
#define LUSTRE_CSI_PKG_SERVER_ENDPOINT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::server {

// The longest path a unix socket address can hold (sun_path less its NUL).
inline constexpr size_t kMaxSocketPathLength = 107;

// Returns the socket path of `endpoint`: "unix:///abs/path" and "unix:/abs"
// give "/abs/path"; "unix://relative" gives "relative" (relative to the
// working directory, as the Go CSI drivers do); a bare "/abs/path" is taken
// as is. Any other scheme, an empty path, a NUL byte or a path too long for
// a socket address is INVALID_ARGUMENT.
absl::StatusOr<std::string> ParseUnixEndpoint(absl::string_view endpoint);

// ParseUnixEndpoint for an endpoint another process names (a plugin's
// registration, a static plugin): relative paths are INVALID_ARGUMENT too,
// since they would be read against this process's working directory.
absl::StatusOr<std::string> ParseAbsoluteUnixEndpoint(absl::string_view endpoint);

// Makes `path` free to bind: nothing there is fine; a socket that nobody
// accepts on (a leftover of a crashed process) is removed; a socket with a
// live listener is FAILED_PRECONDITION (another instance is running), and so
// is anything that is not a socket (never removed). The parent directory must
// exist.
absl::Status PrepareSocketPath(const std::string& path);

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_ENDPOINT_H_
