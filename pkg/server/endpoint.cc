#include "pkg/server/endpoint.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace lustre_csi::server {

absl::StatusOr<std::string> ParseUnixEndpoint(absl::string_view endpoint) {
  absl::string_view path = endpoint;
  if (absl::ConsumePrefix(&path, "unix://")) {
    // "unix:///abs" leaves "/abs"; "unix://rel" leaves "rel".
  } else if (absl::ConsumePrefix(&path, "unix:")) {
    if (!absl::StartsWith(path, "/")) {
      return absl::InvalidArgumentError(
          absl::StrCat("endpoint '", endpoint, "': unix: needs an absolute path"));
    }
  } else if (!absl::StartsWith(path, "/")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "endpoint '", endpoint, "': only unix sockets are supported (unix:///path/to.sock)"));
  }
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("endpoint '", endpoint, "' has no path"));
  }
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("endpoint contains a NUL byte");
  }
  if (path.size() > kMaxSocketPathLength) {
    return absl::InvalidArgumentError(absl::StrCat("socket path is ", path.size(),
                                                   " bytes; a unix socket path holds at most ",
                                                   kMaxSocketPathLength));
  }
  return std::string(path);
}

absl::StatusOr<std::string> ParseAbsoluteUnixEndpoint(absl::string_view endpoint) {
  absl::StatusOr<std::string> path = ParseUnixEndpoint(endpoint);
  if (path.ok() && !absl::StartsWith(*path, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint '", endpoint, "' is not an absolute unix socket path"));
  }
  return path;
}

absl::Status PrepareSocketPath(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot inspect socket path ", path, ": ", strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; refusing to replace it"));
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(): ", strerror(errno)));
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof(addr.sun_path) - 1));
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  close(fd);
  if (rc == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("another process is serving on ", path, "; refusing to take it over"));
  }
  if (err != ECONNREFUSED) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot tell whether ", path, " is in use: ", strerror(err)));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot remove stale socket ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::server
