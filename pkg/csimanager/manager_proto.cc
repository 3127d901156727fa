#include "pkg/csimanager/manager_proto.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace lustre_csi::csimanager {
namespace {

int64_t UnixMillis(absl::Time time) {
  return time == absl::InfinitePast() ? 0 : absl::ToUnixMillis(time);
}

absl::StatusOr<AttachmentMode> AttachmentFromProto(pb::AttachmentMode mode) {
  switch (mode) {
    case pb::ATTACHMENT_MODE_UNSPECIFIED:
      return AttachmentMode::kUnspecified;
    case pb::ATTACHMENT_MODE_FILE_SYSTEM:
      return AttachmentMode::kFileSystem;
    case pb::ATTACHMENT_MODE_BLOCK_DEVICE:
      return AttachmentMode::kBlockDevice;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("usage.attachment_mode: unknown value ", static_cast<int>(mode)));
  }
}

pb::AttachmentMode AttachmentToProto(AttachmentMode mode) {
  switch (mode) {
    case AttachmentMode::kFileSystem:
      return pb::ATTACHMENT_MODE_FILE_SYSTEM;
    case AttachmentMode::kBlockDevice:
      return pb::ATTACHMENT_MODE_BLOCK_DEVICE;
    case AttachmentMode::kUnspecified:
      break;
  }
  return pb::ATTACHMENT_MODE_UNSPECIFIED;
}

// The manager API's access modes are the CSI spec's, named ACCESS_MODE_<spec name>.
constexpr absl::string_view kAccessPrefix = "ACCESS_MODE_";

absl::StatusOr<AccessMode> AccessFromProto(pb::AccessMode mode) {
  if (mode == pb::ACCESS_MODE_UNSPECIFIED) return AccessMode::kUnspecified;
  absl::string_view name = pb::AccessMode_Name(mode);
  absl::StatusOr<AccessMode> ours = absl::ConsumePrefix(&name, kAccessPrefix)
                                        ? ParseAccessModeSpecName(name)
                                        : absl::InvalidArgumentError("");
  if (!ours.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("usage.access_mode: unknown value ", static_cast<int>(mode)));
  }
  return ours;
}

pb::AccessMode AccessToProto(AccessMode mode) {
  pb::AccessMode out = pb::ACCESS_MODE_UNSPECIFIED;
  if (mode != AccessMode::kUnspecified) {
    pb::AccessMode_Parse(absl::StrCat(kAccessPrefix, AccessModeSpecName(mode)), &out);
  }
  return out;
}

template <typename ProtoMap>
std::map<std::string, std::string> ToStdMap(const ProtoMap& in) {
  return std::map<std::string, std::string>(in.begin(), in.end());
}

}  // namespace

pb::PluginType ToProto(PluginType type) {
  switch (type) {
    case PluginType::kNode:
      return pb::PLUGIN_TYPE_NODE;
    case PluginType::kController:
      return pb::PLUGIN_TYPE_CONTROLLER;
    case PluginType::kMonolith:
      return pb::PLUGIN_TYPE_MONOLITH;
  }
  return pb::PLUGIN_TYPE_UNSPECIFIED;
}

absl::StatusOr<std::optional<PluginType>> FromProto(pb::PluginType type) {
  switch (type) {
    case pb::PLUGIN_TYPE_UNSPECIFIED:
      return std::optional<PluginType>();
    case pb::PLUGIN_TYPE_NODE:
      return std::optional<PluginType>(PluginType::kNode);
    case pb::PLUGIN_TYPE_CONTROLLER:
      return std::optional<PluginType>(PluginType::kController);
    case pb::PLUGIN_TYPE_MONOLITH:
      return std::optional<PluginType>(PluginType::kMonolith);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("type: unknown plugin type ", static_cast<int>(type)));
  }
}

pb::Plugin ToProto(const PluginStatus& status) {
  pb::Plugin out;
  const PluginRecord& record = status.record;
  out.set_name(record.name);
  out.set_type(ToProto(record.type));
  out.set_endpoint(record.endpoint);
  if (record.restored) {
    out.set_source(pb::PLUGIN_SOURCE_RESTORED);
  } else {
    out.set_source(record.origin == PluginOrigin::kStatic ? pb::PLUGIN_SOURCE_STATIC
                                                          : pb::PLUGIN_SOURCE_REGISTRATION_DIR);
  }
  out.set_healthy(status.healthy);
  out.set_health_reason(status.health_reason);
  out.set_last_fingerprint_unix_ms(UnixMillis(status.last_update));
  out.set_vendor_version(status.vendor_version);
  for (const std::string& c : status.plugin_capabilities) out.add_plugin_capabilities(c);
  for (const std::string& c : status.node_capabilities) out.add_node_capabilities(c);
  for (const std::string& c : status.controller_capabilities) out.add_controller_capabilities(c);
  out.set_node_id(status.node_id);
  out.set_max_volumes(status.max_volumes);
  for (const auto& [key, value] : status.topology) {
    (*out.mutable_accessible_topology()->mutable_segments())[key] = value;
  }
  for (const std::string& v : record.supported_versions) out.add_supported_versions(v);
  return out;
}

pb::Usage ToProto(const VolumeUsage& usage) {
  pb::Usage out;
  out.set_read_only(usage.read_only);
  out.set_attachment_mode(AttachmentToProto(usage.attachment_mode));
  out.set_access_mode(AccessToProto(usage.access_mode));
  out.set_fs_type(usage.fs_type);
  for (const std::string& flag : usage.mount_flags) out.add_mount_flags(flag);
  return out;
}

absl::StatusOr<VolumeUsage> FromProto(const pb::Usage& usage) {
  VolumeUsage out;
  out.read_only = usage.read_only();
  absl::StatusOr<AttachmentMode> attachment = AttachmentFromProto(usage.attachment_mode());
  if (!attachment.ok()) return attachment.status();
  out.attachment_mode = *attachment;
  absl::StatusOr<AccessMode> access = AccessFromProto(usage.access_mode());
  if (!access.ok()) return access.status();
  out.access_mode = *access;
  out.fs_type = usage.fs_type();
  out.mount_flags.assign(usage.mount_flags().begin(), usage.mount_flags().end());
  return out;
}

pb::MountInfo ToProto(const MountInfo& mount) {
  pb::MountInfo out;
  out.set_source(mount.source);
  out.set_target(mount.target);
  out.set_staged(mount.staged);
  return out;
}

MountInfo FromProto(const pb::MountInfo& mount) {
  MountInfo out;
  out.source = mount.source();
  out.target = mount.target();
  out.staged = mount.staged();
  return out;
}

pb::Claim ToProto(const Claim& claim) {
  pb::Claim out;
  out.set_plugin(claim.plugin);
  out.set_namespace_(claim.namespace_);
  out.set_volume_id(claim.volume_id);
  out.set_remote_id(claim.remote_id);
  out.set_alloc_id(claim.alloc_id);
  *out.mutable_usage() = ToProto(claim.usage);
  *out.mutable_mount() = ToProto(claim.mount);
  out.set_created_unix_ms(UnixMillis(claim.created_at));
  out.set_state(std::string(ClaimStateName(claim.state)));
  return out;
}

pb::NodeInfo ToProto(const NodeInfo& info) {
  pb::NodeInfo out;
  out.set_node_name(info.node_name);
  for (const NodeInfo::Driver& driver : info.drivers) {
    pb::NodeInfo::Driver* d = out.add_drivers();
    d->set_name(driver.name);
    d->set_node_id(driver.node_id);
    for (const std::string& key : driver.topology_keys) d->add_topology_keys(key);
    d->set_allocatable_count(driver.allocatable_count);
    d->set_available(driver.available);
    d->set_status(driver.status);
  }
  return out;
}

namespace {

// What a mount and an unmount request both name: the volume, the allocation
// and the usage.
template <typename Out, typename Request>
absl::Status FillClaimFields(const Request& request, Out& out) {
  out.namespace_ = request.namespace_();
  out.volume_id = request.volume_id();
  out.remote_id = request.remote_id();
  out.alloc_id = request.alloc_id();
  absl::StatusOr<VolumeUsage> usage = FromProto(request.usage());
  if (!usage.ok()) return usage.status();
  out.usage = *std::move(usage);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MountRequest> FromProto(const pb::MountVolumeRequest& request) {
  MountRequest out;
  if (absl::Status s = FillClaimFields(request, out); !s.ok()) return s;
  out.publish_context = ToStdMap(request.publish_context());
  out.volume_context = ToStdMap(request.volume_context());
  out.secrets = ToStdMap(request.secrets());
  return out;
}

absl::StatusOr<UnmountRequest> FromProto(const pb::UnmountVolumeRequest& request) {
  UnmountRequest out;
  if (absl::Status s = FillClaimFields(request, out); !s.ok()) return s;
  return out;
}

}  // namespace lustre_csi::csimanager
