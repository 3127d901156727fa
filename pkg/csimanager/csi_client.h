// CsiClient: a thin, synchronous wrapper over one plugin's csi.v1 Identity,
// Node and Controller stubs.
//
// Every call carries its own real-time deadline and can be cut short through
// a CancelToken; calls fail fast with UNAVAILABLE when nothing listens on the
// socket (no wait-for-ready), so a vanished plugin is noticed at once and a
// hung one only costs its own deadline. Errors keep the plugin's gRPC code;
// the message is prefixed with the method name.
//
// Dial() builds a real client for a unix socket; the channel connects on the
// first call and reconnects quickly after the plugin restarts. Tests build
// one from the generated gMock stubs (//proto:csi_mock).
//
// Thread-safe: any number of calls may run at once.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_CSI_CLIENT_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_CSI_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pkg/base/cancel.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::csimanager {

struct CallOptions {
  absl::Duration timeout = absl::Minutes(2);
  base::CancelToken* cancel = nullptr;  // not owned; may be null
};

class CsiClient {
 public:
  // Any stub may be null; calling a service without a stub gives
  // FAILED_PRECONDITION.
  struct Stubs {
    std::unique_ptr<csi::v1::Identity::StubInterface> identity;
    std::unique_ptr<csi::v1::Node::StubInterface> node;
    std::unique_ptr<csi::v1::Controller::StubInterface> controller;
  };

  // A client for the plugin listening on `endpoint` (see UnixSocketPath).
  static absl::StatusOr<std::unique_ptr<CsiClient>> Dial(absl::string_view endpoint);

  explicit CsiClient(Stubs stubs);
  CsiClient(const CsiClient&) = delete;
  CsiClient& operator=(const CsiClient&) = delete;

  absl::StatusOr<csi::v1::GetPluginInfoResponse> GetPluginInfo(const CallOptions& options);
  absl::StatusOr<csi::v1::GetPluginCapabilitiesResponse> GetPluginCapabilities(
      const CallOptions& options);
  absl::StatusOr<csi::v1::ProbeResponse> Probe(const CallOptions& options);

  absl::StatusOr<csi::v1::NodeGetInfoResponse> NodeGetInfo(const CallOptions& options);
  absl::StatusOr<csi::v1::NodeGetCapabilitiesResponse> NodeGetCapabilities(
      const CallOptions& options);
  absl::Status NodeStageVolume(const csi::v1::NodeStageVolumeRequest& request,
                               const CallOptions& options);
  absl::Status NodeUnstageVolume(const csi::v1::NodeUnstageVolumeRequest& request,
                                 const CallOptions& options);
  absl::Status NodePublishVolume(const csi::v1::NodePublishVolumeRequest& request,
                                 const CallOptions& options);
  absl::Status NodeUnpublishVolume(const csi::v1::NodeUnpublishVolumeRequest& request,
                                   const CallOptions& options);

  absl::StatusOr<csi::v1::ControllerGetCapabilitiesResponse> ControllerGetCapabilities(
      const CallOptions& options);

 private:
  Stubs stubs_;
};

// Makes a client for an endpoint; injected where clients are created so
// tests can hand out clients over mock stubs or fake plugins.
using CsiClientFactory =
    std::function<absl::StatusOr<std::unique_ptr<CsiClient>>(const std::string& endpoint)>;

// The factory behind CsiClient::Dial.
CsiClientFactory DialingClientFactory();

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_CSI_CLIENT_H_
