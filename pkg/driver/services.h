// The driver's CSI gRPC services: thin glue that checks protocol-level
// fields, converts protos to the plain structs of node.h and controller.h,
// and answers with ToGrpcStatus. All three are thread-safe and borrow their
// logic objects, which must outlive them. Each adds its methods to a server's
// routes with AddRoutes: the calls that only read fixed answers run inline on
// the server's polling thread, everything that touches a file system (which
// may hang) on its workers. Methods left out are answered UNIMPLEMENTED.
#ifndef LUSTRE_CSI_PKG_DRIVER_SERVICES_H_
#define LUSTRE_CSI_PKG_DRIVER_SERVICES_H_

#include <atomic>
#include <functional>
#include <string>

#include "pkg/driver/controller.h"
#include "pkg/driver/grpc_glue.h"
#include "pkg/driver/node.h"
#include "pkg/server/routes.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::driver {

struct IdentityOptions {
  std::string driver_name;
  std::string vendor_version;
  bool controller_service = false;
  // Probe is ready exactly when this returns OK (its message is logged).
  std::function<absl::Status()> ready;
};

// Identity's calls never block (`ready` must not either): all inline.
class IdentityService final : public csi::v1::Identity::Service {
 public:
  IdentityService(IdentityOptions options, server::MetricsRegistry* metrics);

  void AddRoutes(server::Routes& routes);

  grpc::Status GetPluginInfo(grpc::ServerContext*, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse*) override;
  grpc::Status GetPluginCapabilities(grpc::ServerContext*,
                                     const csi::v1::GetPluginCapabilitiesRequest*,
                                     csi::v1::GetPluginCapabilitiesResponse*) override;
  grpc::Status Probe(grpc::ServerContext*, const csi::v1::ProbeRequest*,
                     csi::v1::ProbeResponse*) override;

 private:
  const IdentityOptions options_;
  CallMetrics metrics_;
  std::atomic<bool> last_ready_{true};
};

class NodeService final : public csi::v1::Node::Service {
 public:
  NodeService(NodeLogic* logic, server::MetricsRegistry* metrics);

  void AddRoutes(server::Routes& routes);

  grpc::Status NodePublishVolume(grpc::ServerContext*, const csi::v1::NodePublishVolumeRequest*,
                                 csi::v1::NodePublishVolumeResponse*) override;
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*, const csi::v1::NodeUnpublishVolumeRequest*,
                                   csi::v1::NodeUnpublishVolumeResponse*) override;
  grpc::Status NodeGetVolumeStats(grpc::ServerContext*, const csi::v1::NodeGetVolumeStatsRequest*,
                                  csi::v1::NodeGetVolumeStatsResponse*) override;
  grpc::Status NodeGetCapabilities(grpc::ServerContext*, const csi::v1::NodeGetCapabilitiesRequest*,
                                   csi::v1::NodeGetCapabilitiesResponse*) override;
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse*) override;
  // NodeStage/NodeUnstage stay UNIMPLEMENTED: every Lustre client mount of one
  // file system shares a device number and root, which defeats kubelet's
  // unstage reference check; per-pod mounts avoid it.

 private:
  NodeLogic* const logic_;
  CallMetrics metrics_;
};

class ControllerService final : public csi::v1::Controller::Service {
 public:
  ControllerService(ControllerLogic* logic, server::MetricsRegistry* metrics);

  void AddRoutes(server::Routes& routes);

  grpc::Status CreateVolume(grpc::ServerContext*, const csi::v1::CreateVolumeRequest*,
                            csi::v1::CreateVolumeResponse*) override;
  grpc::Status DeleteVolume(grpc::ServerContext*, const csi::v1::DeleteVolumeRequest*,
                            csi::v1::DeleteVolumeResponse*) override;
  grpc::Status ValidateVolumeCapabilities(grpc::ServerContext*,
                                          const csi::v1::ValidateVolumeCapabilitiesRequest*,
                                          csi::v1::ValidateVolumeCapabilitiesResponse*) override;
  grpc::Status ControllerGetCapabilities(grpc::ServerContext*,
                                         const csi::v1::ControllerGetCapabilitiesRequest*,
                                         csi::v1::ControllerGetCapabilitiesResponse*) override;
  // Online: the limit of a project quota changes under a mounted volume; the
  // node has nothing to do (node_expansion_required is false).
  grpc::Status ControllerExpandVolume(grpc::ServerContext*,
                                      const csi::v1::ControllerExpandVolumeRequest*,
                                      csi::v1::ControllerExpandVolumeResponse*) override;

 private:
  ControllerLogic* const logic_;
  CallMetrics metrics_;
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_SERVICES_H_
