// Conversions between the plugin manager's plain types and its API messages
// (lustre_csi.manager.v1), shared by ManagerService and the CLI.
//
// Pure functions, safe from any thread. Conversions from protos validate
// enum values and return INVALID_ARGUMENT naming the field.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_PROTO_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_PROTO_H_

#include <optional>

#include "absl/status/statusor.h"
#include "pkg/csimanager/manager.h"
#include "pkg/csimanager/manager_types.h"
#include "pkg/csimanager/types.h"
#include "proto/manager.pb.h"

namespace lustre_csi::csimanager {

namespace pb = ::lustre_csi::manager::v1;

pb::PluginType ToProto(PluginType type);
// nullopt for PLUGIN_TYPE_UNSPECIFIED; INVALID_ARGUMENT for unknown values.
absl::StatusOr<std::optional<PluginType>> FromProto(pb::PluginType type);

pb::Plugin ToProto(const PluginStatus& status);
pb::Usage ToProto(const VolumeUsage& usage);
absl::StatusOr<VolumeUsage> FromProto(const pb::Usage& usage);
pb::MountInfo ToProto(const MountInfo& mount);
MountInfo FromProto(const pb::MountInfo& mount);
pb::Claim ToProto(const Claim& claim);
pb::NodeInfo ToProto(const NodeInfo& info);

absl::StatusOr<MountRequest> FromProto(const pb::MountVolumeRequest& request);
absl::StatusOr<UnmountRequest> FromProto(const pb::UnmountVolumeRequest& request);

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_PROTO_H_
