// The one conversion from absl::Status to grpc::Status, for every gRPC
// service of the project (driver and plugin manager).
//
// The code carries over (absl and gRPC share the canonical numbers). The
// message travels in a header, which clients refuse above 8 KiB: a longer
// one would reach them as RESOURCE_EXHAUSTED instead of its real code, so
// messages are cut at kMaxStatusMessageBytes. Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_SERVER_GRPC_STATUS_H_
#define LUSTRE_CSI_PKG_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstddef>

#include "absl/status/status.h"

namespace lustre_csi::server {

inline constexpr size_t kMaxStatusMessageBytes = 2048;

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_GRPC_STATUS_H_
