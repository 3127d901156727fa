#include "pkg/driver/grpc_glue.h"

#include "absl/strings/str_cat.h"
#include "pkg/server/grpc_status.h"

namespace lustre_csi::driver {

absl::Status CheckCapability(const csi::v1::VolumeCapability& cap) {
  if (cap.has_block()) {
    return absl::InvalidArgumentError("block volumes are not supported; Lustre is a file system");
  }
  if (!cap.has_mount()) {
    return absl::InvalidArgumentError("volume capability needs the mount access type");
  }
  using Mode = csi::v1::VolumeCapability::AccessMode;
  switch (cap.access_mode().mode()) {
    case Mode::SINGLE_NODE_WRITER:
    case Mode::SINGLE_NODE_READER_ONLY:
    case Mode::SINGLE_NODE_SINGLE_WRITER:
    case Mode::SINGLE_NODE_MULTI_WRITER:
    case Mode::MULTI_NODE_READER_ONLY:
    case Mode::MULTI_NODE_SINGLE_WRITER:
    case Mode::MULTI_NODE_MULTI_WRITER:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "access mode ", Mode::Mode_Name(cap.access_mode().mode()), " is not supported"));
  }
  const std::string& fs_type = cap.mount().fs_type();
  if (!fs_type.empty() && fs_type != "lustre") {
    return absl::InvalidArgumentError(
        absl::StrCat("fs_type '", fs_type, "' is not supported; only lustre"));
  }
  return absl::OkStatus();
}

bool IsReadOnlyMode(const csi::v1::VolumeCapability& cap) {
  using Mode = csi::v1::VolumeCapability::AccessMode;
  return cap.access_mode().mode() == Mode::SINGLE_NODE_READER_ONLY ||
         cap.access_mode().mode() == Mode::MULTI_NODE_READER_ONLY;
}

CallMetrics::CallMetrics(server::MetricsRegistry* metrics, base::Clock* clock) : clock_(clock) {
  if (metrics == nullptr) return;
  calls_ = metrics->AddCounter("lustre_csi_calls_total", "CSI calls served, by method and code.",
                               {"method", "code"});
  latency_ = metrics->AddHistogram("lustre_csi_call_duration_seconds",
                                   "Time to serve CSI calls, by method.", {"method"},
                                   server::LatencyBuckets());
}

void CallMetrics::Observe(const std::string& method, const grpc::Status& status, absl::Time start) {
  if (calls_ == nullptr) return;
  calls_->Increment({method, server::StatusCodeName(status.error_code())});
  latency_->Observe({method}, absl::ToDoubleSeconds(clock_->Now() - start));
}

}  // namespace lustre_csi::driver
