// The kubelet plugin-registration service (pluginregistration.v1), served by
// the node plugin itself so that no node-driver-registrar sidecar is needed.
// The kubelet finds the socket in its plugin-registration directory, calls
// GetInfo, and reports the outcome with NotifyRegistrationStatus.
//
// Thread-safe; both calls only take a lock, and run inline (AddRoutes).
#ifndef LUSTRE_CSI_PKG_DRIVER_REGISTRATION_H_
#define LUSTRE_CSI_PKG_DRIVER_REGISTRATION_H_

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "pkg/server/routes.h"
#include "proto/pluginregistration.grpc.pb.h"

namespace lustre_csi::driver {

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  // `endpoint` is the CSI socket path as the kubelet sees it.
  RegistrationService(std::string driver_name, std::string endpoint);

  void AddRoutes(server::Routes& routes);

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override;
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override;

  // Whether the kubelet said it registered us, and its last error if not.
  bool registered() const;
  std::string last_error() const;

 private:
  const std::string driver_name_;
  const std::string endpoint_;
  mutable absl::Mutex mu_;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
};

// The registration socket's file name in the kubelet's directory.
std::string RegistrationSocketName(const std::string& driver_name);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_REGISTRATION_H_
