#include "pkg/csimanager/types.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::csimanager {

absl::string_view PluginTypeName(PluginType type) {
  switch (type) {
    case PluginType::kNode:
      return "node";
    case PluginType::kController:
      return "controller";
    case PluginType::kMonolith:
      return "monolith";
  }
  return "unknown";
}

absl::StatusOr<PluginType> ParsePluginType(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  for (PluginType type : {PluginType::kNode, PluginType::kController, PluginType::kMonolith}) {
    if (lower == PluginTypeName(type)) return type;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown plugin type \"", name, "\": want node, controller or monolith"));
}

bool ServesNode(PluginType type) {
  return type == PluginType::kNode || type == PluginType::kMonolith;
}

bool ServesController(PluginType type) {
  return type == PluginType::kController || type == PluginType::kMonolith;
}

bool Serves(PluginType type, PluginType wanted) {
  switch (wanted) {
    case PluginType::kNode:
      return ServesNode(type);
    case PluginType::kController:
      return ServesController(type);
    case PluginType::kMonolith:
      return type == PluginType::kMonolith;
  }
  return false;
}

absl::string_view PluginOriginName(PluginOrigin origin) {
  switch (origin) {
    case PluginOrigin::kRegistrationDir:
      return "registration-dir";
    case PluginOrigin::kStatic:
      return "static";
  }
  return "unknown";
}

absl::StatusOr<PluginOrigin> ParsePluginOrigin(absl::string_view name) {
  for (PluginOrigin origin : {PluginOrigin::kRegistrationDir, PluginOrigin::kStatic}) {
    if (name == PluginOriginName(origin)) return origin;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown plugin origin \"", name, "\""));
}

bool PluginRecord::operator==(const PluginRecord& o) const {
  return std::tie(id, name, type, endpoint, origin, restored, supported_versions, registered_at) ==
         std::tie(o.id, o.name, o.type, o.endpoint, o.origin, o.restored, o.supported_versions,
                  o.registered_at);
}

std::string StaticPluginId(PluginType type, absl::string_view name) {
  return absl::StrCat("static:", PluginTypeName(type), ":", name);
}

absl::string_view AttachmentModeName(AttachmentMode mode) {
  switch (mode) {
    case AttachmentMode::kFileSystem:
      return "file-system";
    case AttachmentMode::kBlockDevice:
      return "block-device";
    case AttachmentMode::kUnspecified:
      break;
  }
  return "";
}

namespace {

// Every access mode and its name: the one table the names, the CSI spec's
// names and the protos' values derive from.
struct AccessModeRow {
  AccessMode mode;
  const char* name;
};
constexpr AccessModeRow kAccessModes[] = {
    {AccessMode::kSingleNodeReaderOnly, "single-node-reader-only"},
    {AccessMode::kSingleNodeWriter, "single-node-writer"},
    {AccessMode::kMultiNodeReaderOnly, "multi-node-reader-only"},
    {AccessMode::kMultiNodeSingleWriter, "multi-node-single-writer"},
    {AccessMode::kMultiNodeMultiWriter, "multi-node-multi-writer"},
};

}  // namespace

absl::string_view AccessModeName(AccessMode mode) {
  for (const AccessModeRow& row : kAccessModes) {
    if (row.mode == mode) return row.name;
  }
  return "";
}

std::string AccessModeSpecName(AccessMode mode) {
  std::string name = absl::AsciiStrToUpper(AccessModeName(mode));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

absl::StatusOr<AccessMode> ParseAccessModeSpecName(absl::string_view name) {
  for (const AccessModeRow& row : kAccessModes) {
    if (name == AccessModeSpecName(row.mode)) return row.mode;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown access mode \"", name, "\""));
}

absl::StatusOr<AttachmentMode> ParseAttachmentMode(absl::string_view name) {
  for (AttachmentMode mode : {AttachmentMode::kFileSystem, AttachmentMode::kBlockDevice}) {
    if (name == AttachmentModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown attachment mode \"", name, "\": want file-system or block-device"));
}

absl::StatusOr<AccessMode> ParseAccessMode(absl::string_view name) {
  for (const AccessModeRow& row : kAccessModes) {
    if (name == row.name) return row.mode;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown access mode \"", name, "\""));
}

bool VolumeUsage::operator==(const VolumeUsage& o) const {
  return std::tie(read_only, attachment_mode, access_mode, fs_type, mount_flags) ==
         std::tie(o.read_only, o.attachment_mode, o.access_mode, o.fs_type, o.mount_flags);
}

absl::StatusOr<std::string> UsageName(const VolumeUsage& usage) {
  if (usage.attachment_mode == AttachmentMode::kUnspecified) {
    return absl::InvalidArgumentError("usage has no attachment mode");
  }
  if (usage.access_mode == AccessMode::kUnspecified) {
    return absl::InvalidArgumentError("usage has no access mode");
  }
  return absl::StrCat(usage.read_only ? "ro-" : "rw-", AttachmentModeName(usage.attachment_mode),
                      "-", AccessModeName(usage.access_mode));
}

bool MountInfo::operator==(const MountInfo& o) const {
  return std::tie(source, target, staged) == std::tie(o.source, o.target, o.staged);
}

absl::string_view ClaimStateName(ClaimState state) {
  switch (state) {
    case ClaimState::kMounting:
      return "mounting";
    case ClaimState::kMounted:
      return "mounted";
    case ClaimState::kUnpublished:
      return "unpublished";
  }
  return "unknown";
}

absl::StatusOr<ClaimState> ParseClaimState(absl::string_view name) {
  for (ClaimState state : {ClaimState::kMounting, ClaimState::kMounted, ClaimState::kUnpublished}) {
    if (name == ClaimStateName(state)) return state;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown claim state \"", name, "\""));
}

absl::string_view StagingStateName(StagingState state) {
  switch (state) {
    case StagingState::kStaging:
      return "staging";
    case StagingState::kStaged:
      return "staged";
    case StagingState::kUnstaging:
      return "unstaging";
  }
  return "unknown";
}

absl::StatusOr<StagingState> ParseStagingState(absl::string_view name) {
  for (StagingState state :
       {StagingState::kStaging, StagingState::kStaged, StagingState::kUnstaging}) {
    if (name == StagingStateName(state)) return state;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown staging state \"", name, "\""));
}

bool StagingRecord::operator==(const StagingRecord& o) const {
  return std::tie(plugin, path, namespace_, volume_id, remote_id, usage, state) ==
         std::tie(o.plugin, o.path, o.namespace_, o.volume_id, o.remote_id, o.usage, o.state);
}

bool Claim::operator==(const Claim& o) const {
  return std::tie(plugin, namespace_, volume_id, remote_id, alloc_id, usage, mount, state,
                  created_at) == std::tie(o.plugin, o.namespace_, o.volume_id, o.remote_id,
                                          o.alloc_id, o.usage, o.mount, o.state, o.created_at);
}

bool ClaimKey::operator==(const ClaimKey& o) const {
  return std::tie(plugin, namespace_, volume_id, alloc_id, usage) ==
         std::tie(o.plugin, o.namespace_, o.volume_id, o.alloc_id, o.usage);
}

bool ClaimKey::operator<(const ClaimKey& o) const {
  return std::tie(plugin, namespace_, volume_id, alloc_id, usage) <
         std::tie(o.plugin, o.namespace_, o.volume_id, o.alloc_id, o.usage);
}

std::string DescribeClaim(const ClaimKey& key) {
  return absl::StrCat("volume ", key.namespace_, "/", key.volume_id, " of alloc ", key.alloc_id,
                      " (", key.usage, ")");
}

absl::StatusOr<ClaimKey> KeyOf(const Claim& claim) {
  absl::StatusOr<std::string> usage = UsageName(claim.usage);
  if (!usage.ok()) return usage.status();
  return ClaimKey{claim.plugin, claim.namespace_, claim.volume_id, claim.alloc_id, *usage};
}

absl::Status ValidatePluginName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid plugin name \"", absl::CHexEscape(name), "\": ", why));
  };
  if (name.empty()) return bad("empty");
  if (name.size() > 63) return bad("longer than 63 characters");
  for (unsigned char c : name) {
    if (!volume::IsPortableFilenameByte(c))
      return bad("only letters, digits, '-', '_' and '.' are allowed");
  }
  if (!absl::ascii_isalnum(name.front()) || !absl::ascii_isalnum(name.back())) {
    return bad("must start and end with a letter or digit");
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::csimanager
