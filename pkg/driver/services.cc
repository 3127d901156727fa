#include "pkg/driver/services.h"

#include <glog/logging.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pkg/server/caller_deadline.h"
#include "pkg/volume/metrics.h"

namespace lustre_csi::driver {
namespace {

std::map<std::string, std::string> ToMap(const google::protobuf::Map<std::string, std::string>& m) {
  return std::map<std::string, std::string>(m.begin(), m.end());
}

std::vector<Topology> ToTopologies(
    const google::protobuf::RepeatedPtrField<csi::v1::Topology>& topologies) {
  std::vector<Topology> out;
  for (const csi::v1::Topology& t : topologies) out.push_back(ToMap(t.segments()));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- Identity

using server::Dispatch;

IdentityService::IdentityService(IdentityOptions options, server::MetricsRegistry* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

void IdentityService::AddRoutes(server::Routes& routes) {
  const std::string& name = csi::v1::Identity::service_full_name();
  routes.Unary(name, "GetPluginInfo", this, &IdentityService::GetPluginInfo, Dispatch::kInline);
  routes.Unary(name, "GetPluginCapabilities", this, &IdentityService::GetPluginCapabilities,
               Dispatch::kInline);
  routes.Unary(name, "Probe", this, &IdentityService::Probe, Dispatch::kInline);
}

grpc::Status IdentityService::GetPluginInfo(grpc::ServerContext*,
                                            const csi::v1::GetPluginInfoRequest*,
                                            csi::v1::GetPluginInfoResponse* res) {
  return Serve(metrics_, "GetPluginInfo", [&] {
    res->set_name(options_.driver_name);
    res->set_vendor_version(options_.vendor_version);
    return absl::OkStatus();
  });
}

grpc::Status IdentityService::GetPluginCapabilities(grpc::ServerContext*,
                                                    const csi::v1::GetPluginCapabilitiesRequest*,
                                                    csi::v1::GetPluginCapabilitiesResponse* res) {
  return Serve(metrics_, "GetPluginCapabilities", [&] {
    if (options_.controller_service) {
      res->add_capabilities()->mutable_service()->set_type(
          csi::v1::PluginCapability::Service::CONTROLLER_SERVICE);
      res->add_capabilities()->mutable_volume_expansion()->set_type(
          csi::v1::PluginCapability::VolumeExpansion::ONLINE);
    }
    return absl::OkStatus();
  });
}

grpc::Status IdentityService::Probe(grpc::ServerContext*, const csi::v1::ProbeRequest*,
                                    csi::v1::ProbeResponse* res) {
  return Serve(metrics_, "Probe", [&] {
    absl::Status ready = options_.ready ? options_.ready() : absl::OkStatus();
    res->mutable_ready()->set_value(ready.ok());
    // Log transitions only: probes come every few seconds.
    if (last_ready_.exchange(ready.ok()) != ready.ok()) {
      if (ready.ok()) {
        LOG(INFO) << "probe: ready";
      } else {
        LOG(WARNING) << "probe: not ready: " << ready.message();
      }
    }
    return absl::OkStatus();
  });
}

// -------------------------------------------------------------------- Node

NodeService::NodeService(NodeLogic* logic, server::MetricsRegistry* metrics)
    : logic_(logic), metrics_(metrics) {}

void NodeService::AddRoutes(server::Routes& routes) {
  const std::string& name = csi::v1::Node::service_full_name();
  routes.Unary(name, "NodePublishVolume", this, &NodeService::NodePublishVolume, Dispatch::kWorker);
  routes.Unary(name, "NodeUnpublishVolume", this, &NodeService::NodeUnpublishVolume,
               Dispatch::kWorker);
  // statfs of a Lustre mount whose servers are gone can hang.
  routes.Unary(name, "NodeGetVolumeStats", this, &NodeService::NodeGetVolumeStats,
               Dispatch::kWorker);
  routes.Unary(name, "NodeGetCapabilities", this, &NodeService::NodeGetCapabilities,
               Dispatch::kInline);
  routes.Unary(name, "NodeGetInfo", this, &NodeService::NodeGetInfo, Dispatch::kInline);
}

grpc::Status NodeService::NodePublishVolume(grpc::ServerContext* ctx,
                                            const csi::v1::NodePublishVolumeRequest* req,
                                            csi::v1::NodePublishVolumeResponse*) {
  return Serve(metrics_, "NodePublishVolume", [&]() -> absl::Status {
    if (req->volume_id().empty()) return absl::InvalidArgumentError("volume_id missing");
    if (req->target_path().empty()) return absl::InvalidArgumentError("target_path missing");
    if (!req->has_volume_capability()) {
      return absl::InvalidArgumentError("volume_capability missing");
    }
    if (absl::Status s = CheckCapability(req->volume_capability()); !s.ok()) return s;
    PublishRequest publish;
    publish.volume_id = req->volume_id();
    publish.target_path = req->target_path();
    publish.read_only = req->readonly() || IsReadOnlyMode(req->volume_capability());
    const auto& mount = req->volume_capability().mount();
    publish.mount_flags.assign(mount.mount_flags().begin(), mount.mount_flags().end());
    if (!mount.volume_mount_group().empty()) {
      uint32_t gid = 0;
      if (!absl::SimpleAtoi(mount.volume_mount_group(), &gid)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "volume_mount_group '", mount.volume_mount_group(), "' is not a numeric group id"));
      }
      publish.volume_mount_group = gid;
    }
    publish.volume_context = ToMap(req->volume_context());
    return logic_->Publish(publish, server::CallerWait(ctx));
  });
}

grpc::Status NodeService::NodeUnpublishVolume(grpc::ServerContext* ctx,
                                              const csi::v1::NodeUnpublishVolumeRequest* req,
                                              csi::v1::NodeUnpublishVolumeResponse*) {
  return Serve(metrics_, "NodeUnpublishVolume", [&]() -> absl::Status {
    if (req->volume_id().empty()) return absl::InvalidArgumentError("volume_id missing");
    if (req->target_path().empty()) return absl::InvalidArgumentError("target_path missing");
    return logic_->Unpublish(req->volume_id(), req->target_path(), server::CallerWait(ctx));
  });
}

grpc::Status NodeService::NodeGetVolumeStats(grpc::ServerContext*,
                                             const csi::v1::NodeGetVolumeStatsRequest* req,
                                             csi::v1::NodeGetVolumeStatsResponse* res) {
  return Serve(metrics_, "NodeGetVolumeStats", [&]() -> absl::Status {
    if (req->volume_id().empty()) return absl::InvalidArgumentError("volume_id missing");
    if (req->volume_path().empty()) return absl::InvalidArgumentError("volume_path missing");
    absl::StatusOr<VolumeStats> stats = logic_->Stats(req->volume_id(), req->volume_path());
    if (!stats.ok()) return stats.status();
    if (stats->usage.has_value()) {
      const volume::VolumeMetrics& usage = *stats->usage;
      auto* bytes = res->add_usage();
      bytes->set_unit(csi::v1::VolumeUsage::BYTES);
      bytes->set_total(usage.capacity_bytes);
      bytes->set_available(usage.available_bytes);
      bytes->set_used(usage.used_bytes);
      auto* inodes = res->add_usage();
      inodes->set_unit(csi::v1::VolumeUsage::INODES);
      inodes->set_total(usage.inodes);
      inodes->set_available(usage.inodes_free);
      inodes->set_used(usage.inodes_used);
    }
    res->mutable_volume_condition()->set_abnormal(stats->abnormal);
    res->mutable_volume_condition()->set_message(stats->message);
    return absl::OkStatus();
  });
}

grpc::Status NodeService::NodeGetCapabilities(grpc::ServerContext*,
                                              const csi::v1::NodeGetCapabilitiesRequest*,
                                              csi::v1::NodeGetCapabilitiesResponse* res) {
  return Serve(metrics_, "NodeGetCapabilities", [&] {
    using Rpc = csi::v1::NodeServiceCapability::RPC;
    for (auto type : {Rpc::GET_VOLUME_STATS, Rpc::VOLUME_CONDITION, Rpc::SINGLE_NODE_MULTI_WRITER,
                      Rpc::VOLUME_MOUNT_GROUP}) {
      res->add_capabilities()->mutable_rpc()->set_type(type);
    }
    return absl::OkStatus();
  });
}

grpc::Status NodeService::NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                                      csi::v1::NodeGetInfoResponse* res) {
  return Serve(metrics_, "NodeGetInfo", [&] {
    const NodeOptions& options = logic_->options();
    res->set_node_id(options.node_id);
    res->set_max_volumes_per_node(options.max_volumes_per_node);
    if (!options.topology.empty()) {
      res->mutable_accessible_topology()->mutable_segments()->insert(options.topology.begin(),
                                                                     options.topology.end());
    }
    return absl::OkStatus();
  });
}

// -------------------------------------------------------------- Controller

ControllerService::ControllerService(ControllerLogic* logic, server::MetricsRegistry* metrics)
    : logic_(logic), metrics_(metrics) {}

void ControllerService::AddRoutes(server::Routes& routes) {
  const std::string& name = csi::v1::Controller::service_full_name();
  routes.Unary(name, "CreateVolume", this, &ControllerService::CreateVolume, Dispatch::kWorker);
  routes.Unary(name, "DeleteVolume", this, &ControllerService::DeleteVolume, Dispatch::kWorker);
  routes.Unary(name, "ValidateVolumeCapabilities", this,
               &ControllerService::ValidateVolumeCapabilities, Dispatch::kWorker);
  routes.Unary(name, "ControllerGetCapabilities", this,
               &ControllerService::ControllerGetCapabilities, Dispatch::kInline);
  routes.Unary(name, "ControllerExpandVolume", this, &ControllerService::ControllerExpandVolume,
               Dispatch::kWorker);
}

grpc::Status ControllerService::CreateVolume(grpc::ServerContext* ctx,
                                             const csi::v1::CreateVolumeRequest* req,
                                             csi::v1::CreateVolumeResponse* res) {
  return Serve(metrics_, "CreateVolume", [&]() -> absl::Status {
    if (req->name().empty()) return absl::InvalidArgumentError("name missing");
    if (req->volume_capabilities().empty()) {
      return absl::InvalidArgumentError("volume_capabilities missing");
    }
    for (const auto& cap : req->volume_capabilities()) {
      if (absl::Status s = CheckCapability(cap); !s.ok()) return s;
    }
    if (req->has_volume_content_source()) {
      return absl::InvalidArgumentError(
          "volume_content_source is not supported: no snapshots or clones of Lustre volumes");
    }
    CreateVolumeArgs args;
    args.name = req->name();
    args.parameters = ToMap(req->parameters());
    args.required_bytes = req->capacity_range().required_bytes();
    args.limit_bytes = req->capacity_range().limit_bytes();
    args.requisite = ToTopologies(req->accessibility_requirements().requisite());
    args.preferred = ToTopologies(req->accessibility_requirements().preferred());
    absl::StatusOr<CreatedVolume> created = logic_->Create(args, server::CallerWait(ctx));
    if (!created.ok()) return created.status();
    csi::v1::Volume* volume = res->mutable_volume();
    volume->set_volume_id(created->volume_id);
    volume->set_capacity_bytes(created->capacity_bytes);
    volume->mutable_volume_context()->insert(created->context.begin(), created->context.end());
    for (const Topology& t : created->accessible_topology) {
      volume->add_accessible_topology()->mutable_segments()->insert(t.begin(), t.end());
    }
    return absl::OkStatus();
  });
}

grpc::Status ControllerService::DeleteVolume(grpc::ServerContext* ctx,
                                             const csi::v1::DeleteVolumeRequest* req,
                                             csi::v1::DeleteVolumeResponse*) {
  return Serve(metrics_, "DeleteVolume",
               [&] { return logic_->Delete(req->volume_id(), server::CallerWait(ctx)); });
}

grpc::Status ControllerService::ValidateVolumeCapabilities(
    grpc::ServerContext* ctx, const csi::v1::ValidateVolumeCapabilitiesRequest* req,
    csi::v1::ValidateVolumeCapabilitiesResponse* res) {
  return Serve(metrics_, "ValidateVolumeCapabilities", [&]() -> absl::Status {
    if (req->volume_id().empty()) return absl::InvalidArgumentError("volume_id missing");
    if (req->volume_capabilities().empty()) {
      return absl::InvalidArgumentError("volume_capabilities missing");
    }
    if (absl::Status s = logic_->CheckExists(req->volume_id(), ToMap(req->volume_context()),
                                             server::CallerWait(ctx));
        !s.ok()) {
      return s;
    }
    for (const auto& cap : req->volume_capabilities()) {
      if (absl::Status s = CheckCapability(cap); !s.ok()) {
        res->set_message(std::string(s.message()));
        return absl::OkStatus();  // not confirmed
      }
    }
    auto* confirmed = res->mutable_confirmed();
    confirmed->mutable_volume_context()->insert(req->volume_context().begin(),
                                                req->volume_context().end());
    *confirmed->mutable_volume_capabilities() = req->volume_capabilities();
    confirmed->mutable_parameters()->insert(req->parameters().begin(), req->parameters().end());
    return absl::OkStatus();
  });
}

grpc::Status ControllerService::ControllerGetCapabilities(
    grpc::ServerContext*, const csi::v1::ControllerGetCapabilitiesRequest*,
    csi::v1::ControllerGetCapabilitiesResponse* res) {
  return Serve(metrics_, "ControllerGetCapabilities", [&] {
    using Rpc = csi::v1::ControllerServiceCapability::RPC;
    for (auto type :
         {Rpc::CREATE_DELETE_VOLUME, Rpc::SINGLE_NODE_MULTI_WRITER, Rpc::EXPAND_VOLUME}) {
      res->add_capabilities()->mutable_rpc()->set_type(type);
    }
    return absl::OkStatus();
  });
}

grpc::Status ControllerService::ControllerExpandVolume(
    grpc::ServerContext* ctx, const csi::v1::ControllerExpandVolumeRequest* req,
    csi::v1::ControllerExpandVolumeResponse* res) {
  return Serve(metrics_, "ControllerExpandVolume", [&]() -> absl::Status {
    if (req->volume_id().empty()) return absl::InvalidArgumentError("volume_id missing");
    if (!req->has_capacity_range()) return absl::InvalidArgumentError("capacity_range missing");
    if (req->has_volume_capability()) {
      if (absl::Status s = CheckCapability(req->volume_capability()); !s.ok()) return s;
    }
    absl::StatusOr<ExpandedVolume> expanded =
        logic_->Expand(req->volume_id(), req->capacity_range().required_bytes(),
                       req->capacity_range().limit_bytes(), server::CallerWait(ctx));
    if (!expanded.ok()) return expanded.status();
    res->set_capacity_bytes(expanded->capacity_bytes);
    res->set_node_expansion_required(false);
    return absl::OkStatus();
  });
}

}  // namespace lustre_csi::driver
