#include "pkg/volume/errno_status.h"

#include <string.h>

#include <cerrno>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pkg/base/annotate.h"

namespace lustre_csi::volume {

absl::StatusCode ErrnoToCode(int err) {
  switch (err) {
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EACCES:
    case EPERM:
      return absl::StatusCode::kPermissionDenied;
    case EINVAL:
    case ENAMETOOLONG:
      return absl::StatusCode::kInvalidArgument;
    case ETIMEDOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case EBUSY:
      return absl::StatusCode::kFailedPrecondition;
    case ENOTCONN:
    case ESTALE:
    case EIO:
    case EHOSTDOWN:
    case EAGAIN:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ErrnoErrorWithCode(absl::StatusCode code, int err, absl::string_view context) {
  const char* desc = strerrordesc_np(err);
  const char* name = strerrorname_np(err);
  std::string message =
      absl::StrCat(context, context.empty() ? "" : ": ", desc != nullptr ? desc : "Unknown error",
                   " (", name != nullptr ? name : absl::StrCat("errno ", err), ")");
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kInternal;
  absl::Status status(code, message);
  status.SetPayload(kErrnoPayloadUrl, absl::Cord(absl::StrCat(err)));
  return status;
}

absl::Status ErrnoError(int err, absl::string_view context) {
  return ErrnoErrorWithCode(ErrnoToCode(err), err, context);
}

std::optional<int> ErrnoOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(kErrnoPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  int err = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &err)) return std::nullopt;
  return err;
}

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return base::Annotate(status, context);
}

}  // namespace lustre_csi::volume
