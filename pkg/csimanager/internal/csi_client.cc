#include "pkg/csimanager/internal/csi_client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "pkg/base/status_macros.h"
#include "pkg/server/endpoint.h"
#include "pkg/server/grpc_status.h"

namespace lustre_csi::csimanager {
namespace {

template <typename Stub, typename Request, typename Response>
absl::StatusOr<Response> Call(
    Stub* stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
    const Request& request, absl::string_view name, const CallOptions& options) {
  if (stub == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(name, ": the client has no stub for it"));
  }
  if (options.cancel != nullptr && options.cancel->cancelled()) {
    return absl::CancelledError(absl::StrCat(name, ": cancelled before the call"));
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoNanoseconds(options.timeout));
  context.set_wait_for_ready(false);
  base::ScopedCancelCallback on_cancel(options.cancel, [&context] { context.TryCancel(); });
  Response response;
  grpc::Status status = (stub->*method)(&context, request, &response);
  if (!status.ok()) return server::FromGrpcStatus(status, name);
  return response;
}

csi::v1::VolumeCapability ToCapability(const VolumeUsage& usage) {
  csi::v1::VolumeCapability capability;
  if (usage.attachment_mode == AttachmentMode::kBlockDevice) {
    capability.mutable_block();
  } else {
    csi::v1::VolumeCapability::MountVolume* mount = capability.mutable_mount();
    mount->set_fs_type(usage.fs_type);
    for (const std::string& flag : usage.mount_flags) mount->add_mount_flags(flag);
  }
  using Mode = csi::v1::VolumeCapability::AccessMode;
  Mode::Mode mode = Mode::UNKNOWN;
  if (usage.access_mode != AccessMode::kUnspecified) {
    Mode::Mode_Parse(AccessModeSpecName(usage.access_mode), &mode);
  }
  capability.mutable_access_mode()->set_mode(mode);
  return capability;
}

google::protobuf::Map<std::string, std::string> ToProtoMap(const StringMap& in) {
  google::protobuf::Map<std::string, std::string> out;
  for (const auto& [k, v] : in) out[k] = v;
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CsiClient>> CsiClient::Dial(absl::string_view endpoint) {
  absl::StatusOr<std::string> path = server::ParseAbsoluteUnixEndpoint(endpoint);
  if (!path.ok()) return path.status();
  grpc::ChannelArguments args;
  // A plugin that restarts should be reachable again within a second, not
  // after gRPC's default backoff of up to two minutes. Not
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also takes it as the least time
  // a connection attempt gets to finish its handshake (20 s by default), and
  // at 100 ms a plugin on a loaded node that answers a little late fails the
  // attempt ("timed out before receiving SETTINGS frame").
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      absl::StrCat("unix:", *path), grpc::InsecureChannelCredentials(), args);
  Stubs stubs;
  stubs.identity = csi::v1::Identity::NewStub(channel);
  stubs.node = csi::v1::Node::NewStub(channel);
  stubs.controller = csi::v1::Controller::NewStub(channel);
  return std::make_unique<CsiClient>(std::move(stubs));
}

CsiClient::CsiClient(Stubs stubs) : stubs_(std::move(stubs)) {}

absl::StatusOr<PluginInfo> CsiClient::GetPluginInfo(const CallOptions& options) {
  ASSIGN_OR_RETURN(csi::v1::GetPluginInfoResponse response,
                   Call(stubs_.identity.get(), &csi::v1::Identity::StubInterface::GetPluginInfo,
                        csi::v1::GetPluginInfoRequest(), "GetPluginInfo", options));
  return PluginInfo{response.name(), response.vendor_version()};
}

absl::StatusOr<PluginCapabilities> CsiClient::GetPluginCapabilities(const CallOptions& options) {
  ASSIGN_OR_RETURN(
      csi::v1::GetPluginCapabilitiesResponse response,
      Call(stubs_.identity.get(), &csi::v1::Identity::StubInterface::GetPluginCapabilities,
           csi::v1::GetPluginCapabilitiesRequest(), "GetPluginCapabilities", options));
  PluginCapabilities out;
  for (const csi::v1::PluginCapability& cap : response.capabilities()) {
    if (cap.has_service()) {
      out.names.push_back(csi::v1::PluginCapability::Service::Type_Name(cap.service().type()));
      if (cap.service().type() == csi::v1::PluginCapability::Service::CONTROLLER_SERVICE) {
        out.controller_service = true;
      }
    } else if (cap.has_volume_expansion()) {
      out.names.push_back(absl::StrCat(
          "VOLUME_EXPANSION_",
          csi::v1::PluginCapability::VolumeExpansion::Type_Name(cap.volume_expansion().type())));
    }
  }
  return out;
}

absl::Status CsiClient::Probe(const CallOptions& options) {
  ASSIGN_OR_RETURN(csi::v1::ProbeResponse response,
                   Call(stubs_.identity.get(), &csi::v1::Identity::StubInterface::Probe,
                        csi::v1::ProbeRequest(), "Probe", options));
  if (response.has_ready() && !response.ready().value()) {
    return absl::UnavailableError("Probe: plugin reports it is not ready");
  }
  return absl::OkStatus();
}

absl::StatusOr<PluginNodeInfo> CsiClient::NodeGetInfo(const CallOptions& options) {
  ASSIGN_OR_RETURN(csi::v1::NodeGetInfoResponse response,
                   Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeGetInfo,
                        csi::v1::NodeGetInfoRequest(), "NodeGetInfo", options));
  PluginNodeInfo out;
  out.node_id = response.node_id();
  out.max_volumes = response.max_volumes_per_node();
  for (const auto& [key, value] : response.accessible_topology().segments()) {
    out.topology[key] = value;
  }
  return out;
}

absl::StatusOr<NodeCapabilities> CsiClient::NodeGetCapabilities(const CallOptions& options) {
  ASSIGN_OR_RETURN(csi::v1::NodeGetCapabilitiesResponse response,
                   Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeGetCapabilities,
                        csi::v1::NodeGetCapabilitiesRequest(), "NodeGetCapabilities", options));
  NodeCapabilities out;
  for (const csi::v1::NodeServiceCapability& cap : response.capabilities()) {
    if (!cap.has_rpc()) continue;
    out.names.push_back(csi::v1::NodeServiceCapability::RPC::Type_Name(cap.rpc().type()));
    if (cap.rpc().type() == csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME) {
      out.stage_unstage = true;
    }
  }
  return out;
}

absl::Status CsiClient::NodeStageVolume(const StageRequest& request, const CallOptions& options) {
  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id(request.volume_id);
  *stage.mutable_publish_context() = ToProtoMap(request.publish_context);
  stage.set_staging_target_path(request.staging_path);
  *stage.mutable_volume_capability() = ToCapability(request.usage);
  *stage.mutable_secrets() = ToProtoMap(request.secrets);
  *stage.mutable_volume_context() = ToProtoMap(request.volume_context);
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeStageVolume, stage,
              "NodeStageVolume", options)
      .status();
}

absl::Status CsiClient::NodeUnstageVolume(const std::string& volume_id,
                                          const std::string& staging_path,
                                          const CallOptions& options) {
  csi::v1::NodeUnstageVolumeRequest unstage;
  unstage.set_volume_id(volume_id);
  unstage.set_staging_target_path(staging_path);
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeUnstageVolume, unstage,
              "NodeUnstageVolume", options)
      .status();
}

absl::Status CsiClient::NodePublishVolume(const PublishRequest& request,
                                          const CallOptions& options) {
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(request.volume_id);
  *publish.mutable_publish_context() = ToProtoMap(request.publish_context);
  if (!request.staging_path.empty()) publish.set_staging_target_path(request.staging_path);
  publish.set_target_path(request.target_path);
  *publish.mutable_volume_capability() = ToCapability(request.usage);
  publish.set_readonly(request.usage.read_only);
  *publish.mutable_secrets() = ToProtoMap(request.secrets);
  *publish.mutable_volume_context() = ToProtoMap(request.volume_context);
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodePublishVolume, publish,
              "NodePublishVolume", options)
      .status();
}

absl::Status CsiClient::NodeUnpublishVolume(const std::string& volume_id,
                                            const std::string& target_path,
                                            const CallOptions& options) {
  csi::v1::NodeUnpublishVolumeRequest unpublish;
  unpublish.set_volume_id(volume_id);
  unpublish.set_target_path(target_path);
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeUnpublishVolume, unpublish,
              "NodeUnpublishVolume", options)
      .status();
}

absl::StatusOr<ControllerCapabilities> CsiClient::ControllerGetCapabilities(
    const CallOptions& options) {
  ASSIGN_OR_RETURN(
      csi::v1::ControllerGetCapabilitiesResponse response,
      Call(stubs_.controller.get(), &csi::v1::Controller::StubInterface::ControllerGetCapabilities,
           csi::v1::ControllerGetCapabilitiesRequest(), "ControllerGetCapabilities", options));
  ControllerCapabilities out;
  for (const csi::v1::ControllerServiceCapability& cap : response.capabilities()) {
    if (!cap.has_rpc()) continue;
    out.names.push_back(csi::v1::ControllerServiceCapability::RPC::Type_Name(cap.rpc().type()));
  }
  return out;
}

CsiClientFactory DialingClientFactory() {
  return [](const std::string& endpoint) { return CsiClient::Dial(endpoint); };
}

}  // namespace lustre_csi::csimanager
