#include "pkg/driver/host_tool.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::driver {

const std::vector<std::string>& HostToolEnvironment() {
  static const auto* env =
      new std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  return *env;
}

std::string HostToolOutput(absl::string_view output) {
  constexpr size_t kMax = 1024;
  output = absl::StripAsciiWhitespace(output);
  if (output.size() <= kMax) return std::string(output);
  return absl::StrCat(output.substr(0, kMax), "...");
}

absl::StatusCode CodeForErrno(int err) {
  switch (err) {
    case ENODEV:  // no lustre file system type: the module is not loaded
    case EPERM:
    case EOPNOTSUPP:  // a feature the file system does not have (project quotas)
      return absl::StatusCode::kFailedPrecondition;
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EINVAL:
    case E2BIG:
    case ERANGE:
      return absl::StatusCode::kInvalidArgument;
    case EACCES:
      return absl::StatusCode::kPermissionDenied;
    case EDQUOT:
    case ENOSPC:
      return absl::StatusCode::kResourceExhausted;
    case EIO:
    case EAGAIN:
    case EBUSY:
    case EINTR:
    case ENOMEM:
    case ETIMEDOUT:
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTDOWN:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
    case ENOTCONN:
    case ESHUTDOWN:
    case EALREADY:
    case EINPROGRESS:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ToolFailure(const std::string& what, const volume::ProcessResult& result, int err) {
  std::string output = HostToolOutput(result.output);
  if (result.signaled) {
    return absl::UnavailableError(absl::StrCat(what, ": ", result.Describe(), ": ", output));
  }
  if (result.exit_code == 126 || result.exit_code == 127) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": ", result.Describe(), " (the program could not run): ", output));
  }
  const char* name = err > 0 ? strerrorname_np(err) : nullptr;
  if (name == nullptr) {
    return absl::InternalError(absl::StrCat(what, ": ", result.Describe(), ": ", output));
  }
  absl::Status status(CodeForErrno(err), absl::StrCat(what, ": ", result.Describe(), " (", name,
                                                      ": ", strerror(err), "): ", output));
  status.SetPayload(volume::kErrnoPayloadUrl, absl::Cord(absl::StrCat(err)));
  return status;
}

absl::Status HelperFailure(const std::string& what, const volume::ProcessResult& result) {
  return ToolFailure(what, result, result.exit_code);
}

std::string DescribeRun(volume::MountNamespace& ns, const std::vector<std::string>& argv) {
  return absl::StrCat(absl::StrJoin(argv, " "), " in ", ns.Describe());
}

absl::StatusOr<volume::ProcessResult> RunHostTool(volume::MountNamespace& ns,
                                                  const std::vector<std::string>& argv,
                                                  absl::Duration timeout,
                                                  const ErrnoOfFailure& errno_of) {
  absl::StatusOr<volume::ProcessResult> result = ns.Run(argv, HostToolEnvironment(), timeout);
  if (!result.ok()) return result.status();
  if (!result->Succeeded()) {
    int err = errno_of ? errno_of(*result) : result->exit_code;
    return ToolFailure(DescribeRun(ns, argv), *result, err);
  }
  return result;
}

}  // namespace lustre_csi::driver
