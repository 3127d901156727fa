// Plain value types shared by the plugin manager's components: plugin kinds
// and registry records, how an allocation uses a volume (the "usage"), and
// the claims the volume manager records.
//
// Everything here is a copyable value with no behaviour beyond naming and
// parsing; none of it knows about gRPC. Safe to use from any thread.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_TYPES_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_TYPES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace lustre_csi::csimanager {

// What a plugin serves. A monolith serves both the node and the controller
// role.
enum class PluginType { kNode, kController, kMonolith };

// "node", "controller" or "monolith".
absl::string_view PluginTypeName(PluginType type);
// Parses the names above (case-insensitive); INVALID_ARGUMENT otherwise.
absl::StatusOr<PluginType> ParsePluginType(absl::string_view name);
// Whether a plugin of `type` serves the node role (node, monolith).
bool ServesNode(PluginType type);
// Whether a plugin of `type` serves the controller role (controller, monolith).
bool ServesController(PluginType type);
// Whether a plugin of type `type` answers a request for `wanted`: kNode and
// kController match monoliths too; kMonolith matches only monoliths.
bool Serves(PluginType type, PluginType wanted);

// Where a registry record came from.
enum class PluginOrigin { kRegistrationDir, kStatic };

absl::string_view PluginOriginName(PluginOrigin origin);  // "registration-dir", "static"
absl::StatusOr<PluginOrigin> ParsePluginOrigin(absl::string_view name);

// One registered instance of a plugin. Several records may share a name (an
// upgrade overlap); the registry decides which one is active.
struct PluginRecord {
  // Unique per instance. For the registration directory: the registration
  // socket's path. For static entries: "static:<type>:<name>".
  std::string id;
  std::string name;
  PluginType type = PluginType::kNode;
  // Unix socket path of the plugin's CSI services.
  std::string endpoint;
  PluginOrigin origin = PluginOrigin::kStatic;
  // Set for records read back from the state store that have not been seen
  // again (re-registered or re-declared) since start.
  bool restored = false;
  // Versions the plugin announced at registration (CSI spec versions).
  std::vector<std::string> supported_versions;
  // When this instance appeared: the registration socket's modification
  // time, or the time a static entry was declared.
  absl::Time registered_at = absl::UnixEpoch();

  bool operator==(const PluginRecord& other) const;
  bool operator!=(const PluginRecord& other) const { return !(*this == other); }
};

// The id static entries get.
std::string StaticPluginId(PluginType type, absl::string_view name);

// How an allocation attaches a volume.
enum class AttachmentMode { kUnspecified, kFileSystem, kBlockDevice };
// How many nodes and writers may use it; values follow CSI's access modes.
enum class AccessMode {
  kUnspecified,
  kSingleNodeReaderOnly,
  kSingleNodeWriter,
  kMultiNodeReaderOnly,
  kMultiNodeSingleWriter,
  kMultiNodeMultiWriter,
};

absl::string_view AttachmentModeName(AttachmentMode mode);  // "file-system", "block-device"
absl::string_view AccessModeName(AccessMode mode);          // e.g. "multi-node-multi-writer"
absl::StatusOr<AttachmentMode> ParseAttachmentMode(absl::string_view name);
absl::StatusOr<AccessMode> ParseAccessMode(absl::string_view name);
// The CSI spec's name of an access mode, e.g. "MULTI_NODE_MULTI_WRITER": the
// value's name in csi.v1 VolumeCapability.AccessMode.Mode and, after
// "ACCESS_MODE_", in the manager API. "" for kUnspecified; parsing "" or an
// unknown name is INVALID_ARGUMENT.
std::string AccessModeSpecName(AccessMode mode);
absl::StatusOr<AccessMode> ParseAccessModeSpecName(absl::string_view name);

// How an allocation uses a volume. Part of the mount paths, so two
// allocations using one volume the same way share a staging mount.
struct VolumeUsage {
  bool read_only = false;
  AttachmentMode attachment_mode = AttachmentMode::kUnspecified;
  AccessMode access_mode = AccessMode::kUnspecified;
  std::string fs_type;
  std::vector<std::string> mount_flags;

  bool operator==(const VolumeUsage& other) const;
};

// `ro-`|`rw-` + attachment mode + `-` + access mode, e.g.
// "rw-file-system-multi-node-multi-writer". INVALID_ARGUMENT when either mode
// is unspecified.
absl::StatusOr<std::string> UsageName(const VolumeUsage& usage);

// Where a claim's volume is mounted.
struct MountInfo {
  std::string source;  // the staging path; empty when the volume is not staged
  std::string target;  // the allocation's path
  bool staged = false;

  bool operator==(const MountInfo& other) const;
};

// Progress of a claim. A claim is recorded before the plugin is called, so a
// crash at any point leaves a record of what may be mounted.
enum class ClaimState {
  kMounting,     // stage/publish started and not yet known to have finished
  kMounted,      // published; the allocation uses the volume
  kUnpublished,  // unpublished; still holds the staging mount until unstaged
};

absl::string_view ClaimStateName(ClaimState state);  // "mounting", "mounted", "unpublished"
absl::StatusOr<ClaimState> ParseClaimState(absl::string_view name);

// A volume staged on this node through one plugin (NodeStageVolume), as the
// plugin manager recorded it: the truth about staging, whatever the plugin
// leaves at the staging path (a plugin may stage without mounting there).
enum class StagingState {
  kStaging,    // NodeStageVolume called, success not yet recorded: may be held
  kStaged,     // NodeStageVolume succeeded
  kUnstaging,  // NodeUnstageVolume called and not yet known to have finished: may be held
};

absl::string_view StagingStateName(StagingState state);  // "staging", "staged", "unstaging"
absl::StatusOr<StagingState> ParseStagingState(absl::string_view name);

struct StagingRecord {
  std::string plugin;
  std::string path;  // the staging path; unique per plugin
  std::string namespace_;
  std::string volume_id;
  std::string remote_id;
  std::string usage;  // UsageName()
  StagingState state = StagingState::kStaging;

  bool operator==(const StagingRecord& other) const;
};

// One allocation's use of one volume through one node plugin.
struct Claim {
  std::string plugin;
  std::string namespace_;
  std::string volume_id;  // the orchestrator's id
  std::string remote_id;  // the plugin's (CSI) volume id
  std::string alloc_id;
  VolumeUsage usage;
  MountInfo mount;
  ClaimState state = ClaimState::kMounting;
  absl::Time created_at = absl::UnixEpoch();

  bool operator==(const Claim& other) const;
};

// Identity of a claim: plugin, namespace, volume, allocation and usage name.
struct ClaimKey {
  std::string plugin;
  std::string namespace_;
  std::string volume_id;
  std::string alloc_id;
  std::string usage;  // UsageName()

  bool operator==(const ClaimKey& other) const;
  bool operator<(const ClaimKey& other) const;
  template <typename H>
  friend H AbslHashValue(H h, const ClaimKey& k) {
    return H::combine(std::move(h), k.plugin, k.namespace_, k.volume_id, k.alloc_id, k.usage);
  }
};

// "volume <namespace>/<id> of alloc <alloc> (<usage>)", for messages.
std::string DescribeClaim(const ClaimKey& key);

// The key of `claim`; INVALID_ARGUMENT when its usage has no name.
absl::StatusOr<ClaimKey> KeyOf(const Claim& claim);

// A CSI driver name: 1 to 63 characters, alphanumerics, '-', '_' and '.',
// starting and ending with an alphanumeric. INVALID_ARGUMENT otherwise.
// Plugin names are validated, never escaped, before they become paths.
absl::Status ValidatePluginName(absl::string_view name);

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_TYPES_H_
