// The value types of the plugin manager's API (manager.h): what its calls
// take and return. Plain structs, no behaviour; the pieces behind the API
// (internal/) use them too.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_TYPES_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_TYPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "pkg/csimanager/types.h"

namespace lustre_csi::csimanager {

// How a plugin call that fails transiently is tried again.
struct RetryPolicy {
  int max_attempts = 3;
  absl::Duration per_attempt_timeout = absl::Minutes(2);
  absl::Duration initial_backoff = absl::Seconds(1);
  double multiplier = 2.0;
  absl::Duration max_backoff = absl::Seconds(30);
};

// One allocation's use of a volume through a node plugin.
struct MountRequest {
  std::string namespace_;
  std::string volume_id;  // the orchestrator's id
  std::string remote_id;  // the plugin's volume id
  std::string alloc_id;
  VolumeUsage usage;
  std::map<std::string, std::string> publish_context;
  std::map<std::string, std::string> volume_context;
  std::map<std::string, std::string> secrets;  // passed to the plugin, never stored
  // When the caller stops waiting (real time; its gRPC deadline less a
  // margin, server::AnswerBy): no wait for the volume's earlier operations,
  // plugin call or retry goes past it.
  absl::Time answer_by = absl::InfiniteFuture();
};

struct UnmountRequest {
  std::string namespace_;
  std::string volume_id;
  std::string remote_id;  // used only when no claim is recorded
  std::string alloc_id;
  VolumeUsage usage;
  absl::Time answer_by = absl::InfiniteFuture();  // as MountRequest's
};

struct UnmountResult {
  bool unstaged = false;  // the last user left and the volume was unstaged
};

// What Drain() did.
struct DrainResult {
  int unmounted = 0;
  std::vector<std::string> errors;
};

// What Restore() found.
struct RestoreReport {
  int claims = 0;
  int mounted = 0;      // claims in state "mounted" whose target is a mount point
  int interrupted = 0;  // claims left "mounting" or "unpublished", stagings left
                        // "staging" or "unstaging" by a crash
  int stagings = 0;     // staging records of this plugin
  // Users of each staging path, rebuilt from the claims.
  std::map<std::string, int> usage_counts;
  // One line per claim that needs attention; such claims are kept.
  std::vector<std::string> problems;
};

// How each plugin instance is fingerprinted.
struct InstanceOptions {
  absl::Duration fingerprint_period = absl::Seconds(30);
  // Deadline of each call a fingerprint makes.
  absl::Duration fingerprint_timeout = absl::Seconds(10);
};

// An instance's fingerprint and health.
struct PluginStatus {
  PluginRecord record;
  bool healthy = false;
  // Why it is unhealthy; "healthy" when it is.
  std::string health_reason = "not fingerprinted yet";
  // When the last fingerprint finished (Clock time); InfinitePast before.
  absl::Time last_update = absl::InfinitePast();
  int64_t fingerprints = 0;  // finished fingerprints, good or bad
  // Whether a fingerprint has ever succeeded; the fields below are from the
  // last one that did.
  bool fingerprinted = false;
  std::string vendor_name;
  std::string vendor_version;
  std::vector<std::string> plugin_capabilities;      // e.g. "CONTROLLER_SERVICE"
  std::vector<std::string> node_capabilities;        // e.g. "STAGE_UNSTAGE_VOLUME"
  std::vector<std::string> controller_capabilities;  // e.g. "CREATE_DELETE_VOLUME"
  bool controller_service = false;
  bool stage_unstage = false;
  std::string node_id;  // NodeGetInfo's node id: the external id
  int64_t max_volumes = 0;
  std::map<std::string, std::string> topology;
};

// How the kubelet-style registration directory is watched.
struct RegistrationWatcherOptions {
  std::string directory;
  // Deadline of GetInfo and NotifyRegistrationStatus.
  absl::Duration call_timeout = absl::Seconds(10);
  // Pause before asking a socket that did not answer again.
  absl::Duration retry_interval = absl::Seconds(1);
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_TYPES_H_
