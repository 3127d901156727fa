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

}  // namespace lustre_csi::server
