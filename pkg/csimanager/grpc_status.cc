#include "pkg/csimanager/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "pkg/server/grpc_status.h"

namespace lustre_csi::csimanager {

absl::Status FromGrpc(const grpc::Status& status, absl::string_view context) {
  if (status.ok()) return absl::OkStatus();
  std::string message = context.empty() ? status.error_message()
                                        : absl::StrCat(context, ": ", status.error_message());
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

grpc::Status ToGrpc(const absl::Status& status) { return server::ToGrpcStatus(status); }

}  // namespace lustre_csi::csimanager
