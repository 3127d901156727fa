#include "pkg/csimanager/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace lustre_csi::csimanager {

absl::Status FromGrpc(const grpc::Status& status, absl::string_view context) {
  if (status.ok()) return absl::OkStatus();
  std::string message = context.empty() ? status.error_message()
                                        : absl::StrCat(context, ": ", status.error_message());
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  absl::string_view message = status.message();
  if (message.size() <= kMaxStatusMessageBytes) {
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(message));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      absl::StrCat(message.substr(0, kMaxStatusMessageBytes), "... (",
                                   message.size() - kMaxStatusMessageBytes, " bytes cut)"));
}

}  // namespace lustre_csi::csimanager
