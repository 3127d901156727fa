// The one conversion between absl::Status and grpc::Status, for every gRPC
// service and client of the project (driver and plugin manager), and the one
// spelling of status codes in logs and metrics.
//
// The code carries over (absl and gRPC share the canonical numbers). The
// message travels in a header, which clients refuse above 8 KiB: a longer
// one would reach them as RESOURCE_EXHAUSTED instead of its real code, so
// messages are cut at kMaxStatusMessageBytes. Stateless and thread-safe.
#ifndef LUSTRE_CSI_PKG_SERVER_GRPC_STATUS_H_
#define LUSTRE_CSI_PKG_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::server {

inline constexpr size_t kMaxStatusMessageBytes = 2048;

grpc::Status ToGrpcStatus(const absl::Status& status);

// `status` as absl, its message prefixed with "<context>: " when `context`
// is not empty.
absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view context = "");

// The canonical name of a code, as gRPC and absl print it: "OK",
// "INVALID_ARGUMENT", "DEADLINE_EXCEEDED".
std::string StatusCodeName(absl::StatusCode code);
std::string StatusCodeName(grpc::StatusCode code);

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_GRPC_STATUS_H_
