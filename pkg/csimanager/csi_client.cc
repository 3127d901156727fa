#include "pkg/csimanager/csi_client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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

}  // namespace

absl::StatusOr<std::unique_ptr<CsiClient>> CsiClient::Dial(absl::string_view endpoint) {
  absl::StatusOr<std::string> path = server::ParseAbsoluteUnixEndpoint(endpoint);
  if (!path.ok()) return path.status();
  grpc::ChannelArguments args;
  // A plugin that restarts should be reachable again within a second, not
  // after gRPC's default backoff of up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
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

absl::StatusOr<csi::v1::GetPluginInfoResponse> CsiClient::GetPluginInfo(
    const CallOptions& options) {
  return Call(stubs_.identity.get(), &csi::v1::Identity::StubInterface::GetPluginInfo,
              csi::v1::GetPluginInfoRequest(), "GetPluginInfo", options);
}

absl::StatusOr<csi::v1::GetPluginCapabilitiesResponse> CsiClient::GetPluginCapabilities(
    const CallOptions& options) {
  return Call(stubs_.identity.get(), &csi::v1::Identity::StubInterface::GetPluginCapabilities,
              csi::v1::GetPluginCapabilitiesRequest(), "GetPluginCapabilities", options);
}

absl::StatusOr<csi::v1::ProbeResponse> CsiClient::Probe(const CallOptions& options) {
  return Call(stubs_.identity.get(), &csi::v1::Identity::StubInterface::Probe,
              csi::v1::ProbeRequest(), "Probe", options);
}

absl::StatusOr<csi::v1::NodeGetInfoResponse> CsiClient::NodeGetInfo(const CallOptions& options) {
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeGetInfo,
              csi::v1::NodeGetInfoRequest(), "NodeGetInfo", options);
}

absl::StatusOr<csi::v1::NodeGetCapabilitiesResponse> CsiClient::NodeGetCapabilities(
    const CallOptions& options) {
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeGetCapabilities,
              csi::v1::NodeGetCapabilitiesRequest(), "NodeGetCapabilities", options);
}

absl::Status CsiClient::NodeStageVolume(const csi::v1::NodeStageVolumeRequest& request,
                                        const CallOptions& options) {
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeStageVolume, request,
              "NodeStageVolume", options)
      .status();
}

absl::Status CsiClient::NodeUnstageVolume(const csi::v1::NodeUnstageVolumeRequest& request,
                                          const CallOptions& options) {
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeUnstageVolume, request,
              "NodeUnstageVolume", options)
      .status();
}

absl::Status CsiClient::NodePublishVolume(const csi::v1::NodePublishVolumeRequest& request,
                                          const CallOptions& options) {
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodePublishVolume, request,
              "NodePublishVolume", options)
      .status();
}

absl::Status CsiClient::NodeUnpublishVolume(const csi::v1::NodeUnpublishVolumeRequest& request,
                                            const CallOptions& options) {
  return Call(stubs_.node.get(), &csi::v1::Node::StubInterface::NodeUnpublishVolume, request,
              "NodeUnpublishVolume", options)
      .status();
}

absl::StatusOr<csi::v1::ControllerGetCapabilitiesResponse> CsiClient::ControllerGetCapabilities(
    const CallOptions& options) {
  return Call(stubs_.controller.get(),
              &csi::v1::Controller::StubInterface::ControllerGetCapabilities,
              csi::v1::ControllerGetCapabilitiesRequest(), "ControllerGetCapabilities", options);
}

CsiClientFactory DialingClientFactory() {
  return [](const std::string& endpoint) { return CsiClient::Dial(endpoint); };
}

}  // namespace lustre_csi::csimanager
