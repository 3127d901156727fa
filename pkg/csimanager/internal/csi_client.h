// CsiClient: a thin, synchronous wrapper over one plugin's csi.v1 Identity,
// Node and Controller stubs, in plain structs: the csi.v1 messages are built
// and read here and nowhere else in the manager's logic.
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
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_CSI_CLIENT_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_CSI_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pkg/base/cancel.h"
#include "pkg/csimanager/types.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::csimanager {

struct CallOptions {
  absl::Duration timeout = absl::Minutes(2);
  base::CancelToken* cancel = nullptr;  // not owned; may be null
};

using StringMap = std::map<std::string, std::string>;

// GetPluginInfo's answer.
struct PluginInfo {
  std::string name;
  std::string vendor_version;
};

// Capabilities by their spec names ("CONTROLLER_SERVICE",
// "VOLUME_EXPANSION_ONLINE", "STAGE_UNSTAGE_VOLUME", ...), with the ones the
// manager acts on picked out.
struct PluginCapabilities {
  std::vector<std::string> names;
  bool controller_service = false;
};
struct NodeCapabilities {
  std::vector<std::string> names;
  bool stage_unstage = false;
};
struct ControllerCapabilities {
  std::vector<std::string> names;
};

// NodeGetInfo's answer.
struct PluginNodeInfo {
  std::string node_id;
  int64_t max_volumes = 0;
  StringMap topology;
};

struct StageRequest {
  std::string volume_id;  // the plugin's own id of the volume
  std::string staging_path;
  VolumeUsage usage;  // the capability: block or mount (fs type, flags), access mode
  StringMap publish_context;
  StringMap volume_context;
  StringMap secrets;
};

struct PublishRequest {
  std::string volume_id;
  std::string staging_path;  // empty when the volume is not staged
  std::string target_path;
  VolumeUsage usage;  // the capability, and read-only
  StringMap publish_context;
  StringMap volume_context;
  StringMap secrets;
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

  absl::StatusOr<PluginInfo> GetPluginInfo(const CallOptions& options);
  absl::StatusOr<PluginCapabilities> GetPluginCapabilities(const CallOptions& options);
  // OK when the plugin is ready or does not say; UNAVAILABLE when it says it
  // is not ready.
  absl::Status Probe(const CallOptions& options);

  absl::StatusOr<PluginNodeInfo> NodeGetInfo(const CallOptions& options);
  absl::StatusOr<NodeCapabilities> NodeGetCapabilities(const CallOptions& options);
  absl::Status NodeStageVolume(const StageRequest& request, const CallOptions& options);
  absl::Status NodeUnstageVolume(const std::string& volume_id, const std::string& staging_path,
                                 const CallOptions& options);
  absl::Status NodePublishVolume(const PublishRequest& request, const CallOptions& options);
  absl::Status NodeUnpublishVolume(const std::string& volume_id, const std::string& target_path,
                                   const CallOptions& options);

  absl::StatusOr<ControllerCapabilities> ControllerGetCapabilities(const CallOptions& options);

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

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_CSI_CLIENT_H_
