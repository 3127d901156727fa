#include "pkg/driver/registration.h"

#include <glog/logging.h>

namespace lustre_csi::driver {

RegistrationService::RegistrationService(std::string driver_name, std::string endpoint)
    : driver_name_(std::move(driver_name)), endpoint_(std::move(endpoint)) {}

void RegistrationService::AddRoutes(server::Routes& routes) {
  const std::string& name = pluginregistration::Registration::service_full_name();
  routes.Unary(name, "GetInfo", this, &RegistrationService::GetInfo, server::Dispatch::kInline);
  routes.Unary(name, "NotifyRegistrationStatus", this,
               &RegistrationService::NotifyRegistrationStatus, server::Dispatch::kInline);
}

grpc::Status RegistrationService::GetInfo(grpc::ServerContext*,
                                          const pluginregistration::InfoRequest*,
                                          pluginregistration::PluginInfo* info) {
  info->set_type("CSIPlugin");
  info->set_name(driver_name_);
  info->set_endpoint(endpoint_);
  info->add_supported_versions("1.0.0");
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* status,
    pluginregistration::RegistrationStatusResponse*) {
  absl::MutexLock lock(&mu_);
  registered_ = status->plugin_registered();
  last_error_ = status->error();
  if (registered_) {
    LOG(INFO) << "kubelet registered plugin " << driver_name_;
  } else {
    LOG(ERROR) << "kubelet did not register plugin " << driver_name_ << ": " << status->error();
  }
  return grpc::Status::OK;
}

bool RegistrationService::registered() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

std::string RegistrationService::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

std::string RegistrationSocketName(const std::string& driver_name) {
  return driver_name + "-reg.sock";
}

}  // namespace lustre_csi::driver
