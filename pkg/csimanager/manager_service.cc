#include "pkg/csimanager/manager_service.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "pkg/csimanager/manager_proto.h"
#include "pkg/server/caller_deadline.h"
#include "pkg/server/grpc_status.h"

namespace lustre_csi::csimanager {
namespace {

grpc::Status RequireNonEmpty(const std::string& value, const char* field) {
  if (!value.empty()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + " is empty");
}

// The service: each method converts the request, calls the manager and turns
// its status into the gRPC status.
class ManagerService final : public ::lustre_csi::manager::v1::PluginManager::Service {
 public:
  using Context = grpc::ServerContext;

  explicit ManagerService(Manager* manager) : manager_(manager) {}

  void AddRoutes(server::Routes& routes) {
    const std::string& name = ::lustre_csi::manager::v1::PluginManager::service_full_name();
    constexpr server::Dispatch kWorker = server::Dispatch::kWorker;
    routes.Unary(name, "ListPlugins", this, &ManagerService::ListPlugins, kWorker);
    routes.Unary(name, "WaitForPlugin", this, &ManagerService::WaitForPlugin, kWorker);
    routes.Unary(name, "MountVolume", this, &ManagerService::MountVolume, kWorker);
    routes.Unary(name, "UnmountVolume", this, &ManagerService::UnmountVolume, kWorker);
    routes.Unary(name, "HasMount", this, &ManagerService::HasMount, kWorker);
    routes.Unary(name, "ListClaims", this, &ManagerService::ListClaims, kWorker);
    routes.Unary(name, "GetNodeInfo", this, &ManagerService::GetNodeInfo, kWorker);
    routes.Unary(name, "Drain", this, &ManagerService::Drain, kWorker);
  }

  grpc::Status ListPlugins(Context*, const pb::ListPluginsRequest* request,
                           pb::ListPluginsResponse* response) {
    absl::StatusOr<std::optional<PluginType>> type = FromProto(request->type());
    if (!type.ok()) return server::ToGrpcStatus(type.status());
    for (const PluginStatus& status : manager_->ListPlugins(*type)) {
      *response->add_plugins() = ToProto(status);
    }
    return grpc::Status::OK;
  }

  grpc::Status WaitForPlugin(Context* context, const pb::WaitForPluginRequest* request,
                             pb::Plugin* response) {
    if (grpc::Status s = RequireNonEmpty(request->name(), "name"); !s.ok()) return s;
    absl::StatusOr<std::optional<PluginType>> type = FromProto(request->type());
    if (!type.ok()) return server::ToGrpcStatus(type.status());
    absl::Time deadline =
        absl::Now() + absl::Milliseconds(std::max<int64_t>(0, request->timeout_ms()));
    deadline = std::min(deadline, server::AnswerBy(context));
    absl::StatusOr<PluginStatus> status =
        manager_->WaitForPlugin(type->value_or(PluginType::kNode), request->name(), deadline);
    if (!status.ok()) return server::ToGrpcStatus(status.status());
    *response = ToProto(*status);
    return grpc::Status::OK;
  }

  grpc::Status MountVolume(Context* context, const pb::MountVolumeRequest* request,
                           pb::MountVolumeResponse* response) {
    if (grpc::Status s = RequireNonEmpty(request->plugin(), "plugin"); !s.ok()) return s;
    absl::StatusOr<MountRequest> mount = FromProto(*request);
    if (!mount.ok()) return server::ToGrpcStatus(mount.status());
    mount->answer_by = server::AnswerBy(context);
    absl::StatusOr<MountInfo> info = manager_->MountVolume(request->plugin(), *mount);
    if (!info.ok()) return server::ToGrpcStatus(info.status());
    *response->mutable_mount() = ToProto(*info);
    return grpc::Status::OK;
  }

  grpc::Status UnmountVolume(Context* context, const pb::UnmountVolumeRequest* request,
                             pb::UnmountVolumeResponse* response) {
    if (grpc::Status s = RequireNonEmpty(request->plugin(), "plugin"); !s.ok()) return s;
    absl::StatusOr<UnmountRequest> unmount = FromProto(*request);
    if (!unmount.ok()) return server::ToGrpcStatus(unmount.status());
    unmount->answer_by = server::AnswerBy(context);
    absl::StatusOr<UnmountResult> result = manager_->UnmountVolume(request->plugin(), *unmount);
    if (!result.ok()) return server::ToGrpcStatus(result.status());
    response->set_unstaged(result->unstaged);
    return grpc::Status::OK;
  }

  grpc::Status HasMount(Context*, const pb::HasMountRequest* request,
                        pb::HasMountResponse* response) {
    absl::StatusOr<bool> mounted =
        manager_->HasMount(request->plugin(), FromProto(request->mount()));
    if (!mounted.ok()) return server::ToGrpcStatus(mounted.status());
    response->set_mounted(*mounted);
    return grpc::Status::OK;
  }

  grpc::Status ListClaims(Context*, const pb::ListClaimsRequest* request,
                          pb::ListClaimsResponse* response) {
    for (const Claim& claim : manager_->ListClaims(request->plugin())) {
      *response->add_claims() = ToProto(claim);
    }
    return grpc::Status::OK;
  }

  grpc::Status GetNodeInfo(Context*, const pb::GetNodeInfoRequest*, pb::NodeInfo* response) {
    *response = ToProto(manager_->GetNodeInfo());
    return grpc::Status::OK;
  }

  grpc::Status Drain(Context*, const pb::DrainRequest*, pb::DrainResponse* response) {
    absl::StatusOr<DrainResult> result = manager_->Drain();
    if (!result.ok()) return server::ToGrpcStatus(result.status());
    response->set_unmounted(result->unmounted);
    for (const std::string& error : result->errors) response->add_errors(error);
    return grpc::Status::OK;
  }

 private:
  Manager* const manager_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewManagerService(Manager* manager, server::Routes& routes) {
  auto service = std::make_unique<ManagerService>(manager);
  service->AddRoutes(routes);
  return service;
}

}  // namespace lustre_csi::csimanager
