// ManagerService: the lustre_csi.manager.v1.PluginManager gRPC service, a
// thin layer over Manager. It converts messages (manager_proto.h), calls the
// manager, and turns absl::Status into grpc::Status in one place.
//
// WaitForPlugin waits until timeout_ms has passed or the call's own deadline,
// whichever is sooner; an unspecified type means a node plugin.
//
// Thread-safe (gRPC calls it from many threads). The manager is not owned and
// must outlive the service and the server it is registered with. Every call
// may wait for a plugin or the store, so AddRoutes routes them all to the
// server's workers.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_SERVICE_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_SERVICE_H_

#include "pkg/csimanager/manager.h"
#include "pkg/csimanager/manager_proto.h"
#include "pkg/server/routes.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::csimanager {

class ManagerService final : public ::lustre_csi::manager::v1::PluginManager::Service {
 public:
  using Context = grpc::ServerContext;

  explicit ManagerService(Manager* manager);

  void AddRoutes(server::Routes& routes);

  grpc::Status ListPlugins(Context* context, const pb::ListPluginsRequest* request,
                           pb::ListPluginsResponse* response) override;
  grpc::Status WaitForPlugin(Context* context, const pb::WaitForPluginRequest* request,
                             pb::Plugin* response) override;
  grpc::Status MountVolume(Context* context, const pb::MountVolumeRequest* request,
                           pb::MountVolumeResponse* response) override;
  grpc::Status UnmountVolume(Context* context, const pb::UnmountVolumeRequest* request,
                             pb::UnmountVolumeResponse* response) override;
  grpc::Status HasMount(Context* context, const pb::HasMountRequest* request,
                        pb::HasMountResponse* response) override;
  grpc::Status ListClaims(Context* context, const pb::ListClaimsRequest* request,
                          pb::ListClaimsResponse* response) override;
  grpc::Status GetNodeInfo(Context* context, const pb::GetNodeInfoRequest* request,
                           pb::NodeInfo* response) override;
  grpc::Status Drain(Context* context, const pb::DrainRequest* request,
                     pb::DrainResponse* response) override;

 private:
  Manager* const manager_;
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_SERVICE_H_
