// The one place where gRPC and absl status values are converted.
//
// Codes map one to one (both follow google.rpc.Code). Pure functions, safe
// from any thread.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_GRPC_STATUS_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pkg/server/grpc_status.h"

namespace lustre_csi::csimanager {

// `status` as absl, its message prefixed with "<context>: " when `context`
// is not empty.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view context = "");

// Status messages are cut at this length (see pkg/server/grpc_status.h).
using server::kMaxStatusMessageBytes;

grpc::Status ToGrpc(const absl::Status& status);

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_GRPC_STATUS_H_
