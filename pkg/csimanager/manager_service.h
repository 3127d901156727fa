// The lustre_csi.manager.v1.PluginManager gRPC service, a thin layer over
// Manager. It converts messages (manager_proto.h), calls the
// manager, and turns absl::Status into grpc::Status in one place.
//
// WaitForPlugin waits until timeout_ms has passed or the call's own deadline,
// whichever is sooner; an unspecified type means a node plugin. Every call
// with a deadline answers shortly before it (server::AnswerBy): WaitForPlugin
// and MountVolume/UnmountVolume, whose waits for the volume's earlier
// operations, plugin calls and retries stop there.
//
// Thread-safe (gRPC calls it from many threads). The manager is not owned and
// must outlive the service and the server it is registered with. Every call
// may wait for a plugin or the store, so every method is routed to the
// server's workers.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_SERVICE_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_SERVICE_H_

#include <memory>

#include "pkg/csimanager/manager.h"
#include "pkg/server/routes.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::csimanager {

// Adds the lustre_csi.manager.v1.PluginManager API, served by `manager`, to
// `routes`. The returned service is what the routes call: keep it until the
// server serving them has stopped.
std::unique_ptr<grpc::Service> NewManagerService(Manager* manager, server::Routes& routes);

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_SERVICE_H_
