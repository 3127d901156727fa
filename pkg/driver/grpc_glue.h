// What every gRPC service of the driver shares: the one conversion from
// absl::Status to grpc::Status, volume-capability checks on the protos, and
// per-call metrics (count by method and code, latency by method).
#ifndef LUSTRE_CSI_PKG_DRIVER_GRPC_GLUE_H_
#define LUSTRE_CSI_PKG_DRIVER_GRPC_GLUE_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"
#include "pkg/server/grpc_status.h"
#include "pkg/server/metrics.h"
#include "proto/csi.pb.h"

namespace lustre_csi::driver {

// Status messages are cut at this length (see pkg/server/grpc_status.h).
using server::kMaxStatusMessageBytes;

// The one absl-to-gRPC status conversion, shared with the plugin manager.
using server::ToGrpcStatus;

// INVALID_ARGUMENT unless `cap` is a mount (not block) capability with an
// access mode this driver serves.
absl::Status CheckCapability(const csi::v1::VolumeCapability& cap);

// Whether the access mode only reads.
bool IsReadOnlyMode(const csi::v1::VolumeCapability& cap);

// Counts calls and their latency, timed by `clock` (the process's one clock);
// `metrics` may be null (nothing recorded).
class CallMetrics {
 public:
  explicit CallMetrics(server::MetricsRegistry* metrics, base::Clock* clock = base::RealClock());
  absl::Time Now() { return clock_->Now(); }
  void Observe(const std::string& method, const grpc::Status& status, absl::Time start);

 private:
  base::Clock* const clock_;
  server::Counter* calls_ = nullptr;
  server::Histogram* latency_ = nullptr;
};

// Runs `body` (returning absl::Status), records the call (count by code,
// latency) and returns the gRPC status. It logs nothing: the logic behind
// it logs what failed and why.
template <typename Body>
grpc::Status Serve(CallMetrics& metrics, const char* method, Body body) {
  absl::Time start = metrics.Now();
  grpc::Status status = ToGrpcStatus(body());
  metrics.Observe(method, status, start);
  return status;
}

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_GRPC_GLUE_H_
