#include "pkg/server/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace lustre_csi::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  auto code = static_cast<grpc::StatusCode>(status.code());
  absl::string_view message = status.message();
  if (message.size() <= kMaxStatusMessageBytes) return grpc::Status(code, std::string(message));
  return grpc::Status(code, absl::StrCat(message.substr(0, kMaxStatusMessageBytes), "... (",
                                         message.size() - kMaxStatusMessageBytes, " bytes cut)"));
}

absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view context) {
  if (status.ok()) return absl::OkStatus();
  std::string message = context.empty() ? status.error_message()
                                        : absl::StrCat(context, ": ", status.error_message());
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

std::string StatusCodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

std::string StatusCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace lustre_csi::server
