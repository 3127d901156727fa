// Manager: the plugin manager as one object - what the daemon constructs,
// starts, serves over gRPC (ManagerService) and shuts down.
//
// It owns the registry (restored from the store at Start), the registration
// directory watcher (optional), one InstanceManager per active plugin
// instance (created and stopped as the registry changes) and one
// VolumeManager per node plugin name (created at Start for every plugin with
// claims, so usage counts are rebuilt before any operation, and on first use
// otherwise). Each plugin's mounts live below <mount_root>/<plugin name>.
//
// Lifecycle: construct; Start(); optionally SetStaticPlugins(); serve;
// Shutdown(). Shutdown stops discovery and fingerprinting, refuses new
// operations with UNAVAILABLE, lets operations in flight finish within the
// grace period and then cancels them. Mounts are kept unless asked to
// unmount everything (the `drain` verb, --unmount-on-shutdown).
//
// Thread-safe. The store and mount inspector (and clock) are not owned and
// must outlive the manager. The API's value types are in manager_types.h;
// nothing of internal/ (or of gRPC) shows here.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"
#include "pkg/csimanager/manager_types.h"
#include "pkg/csimanager/mount_inspector.h"
#include "pkg/csimanager/registry.h"
#include "pkg/csimanager/store.h"
#include "pkg/csimanager/types.h"
#include "pkg/server/metrics.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::csimanager {

struct ManagerOptions {
  // Absolute; plugin <name> mounts below <mount_root>/<name>.
  std::string mount_root;
  // Kubelet-style registration directory to watch; empty: none.
  std::string registration_dir;
  RegistrationWatcherOptions registration;  // `directory` is set from registration_dir
  // Reported in GetNodeInfo.
  std::string node_name;
  InstanceOptions instance;
  RetryPolicy retry;
  // How long Shutdown() and the destructor wait for operations in flight
  // before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(30);
};

struct ManagerDeps {
  Store* store = nullptr;            // required
  MountInspector* mounts = nullptr;  // required
  // The node's file system, for the registration directory: required when
  // ManagerOptions::registration_dir is set.
  volume::Syscalls* sys = nullptr;
  base::Clock* clock = base::RealClock();
  // Where the manager's metrics go (lustre_csi_plugin_manager_*); a private
  // registry when null. It must not be rendered once the manager is gone.
  server::MetricsRegistry* metrics = nullptr;
};

// What Start() found in the store.
struct StartReport {
  int plugins_restored = 0;
  std::map<std::string, RestoreReport> volumes;  // by plugin name
};

// The node's view, in the shape of a Kubernetes CSINode object.
struct NodeInfo {
  struct Driver {
    std::string name;
    std::string node_id;
    std::vector<std::string> topology_keys;
    int64_t allocatable_count = 0;
    bool available = false;
    std::string status;  // "available" or why not
  };
  std::string node_name;
  std::vector<Driver> drivers;
};

class Manager {
 public:
  Manager(ManagerOptions options, ManagerDeps deps);
  // Shuts down (keeping mounts) if Shutdown() was not called.
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Restores the registry and every plugin's claims (checking mounts and
  // rebuilding usage counts), starts fingerprinting, and starts watching
  // the registration directory. Call once.
  absl::StatusOr<StartReport> Start();
  // Replaces the static plugins (from flags or a config file). Call after
  // Start().
  absl::Status SetStaticPlugins(std::vector<PluginRecord> records);

  // Every registered plugin instance; `type` filters by role as in
  // Registry::Active. Instances shadowed by a preferred one are listed as
  // unhealthy with the reason.
  std::vector<PluginStatus> ListPlugins(std::optional<PluginType> type = std::nullopt);
  // Waits (real time) until the active `name` plugin serving `type` is
  // healthy: its status, or DEADLINE_EXCEEDED saying what it is waiting for.
  absl::StatusOr<PluginStatus> WaitForPlugin(PluginType type, const std::string& name,
                                             absl::Time deadline);

  absl::StatusOr<MountInfo> MountVolume(const std::string& plugin, const MountRequest& request);
  absl::StatusOr<UnmountResult> UnmountVolume(const std::string& plugin,
                                              const UnmountRequest& request);
  absl::StatusOr<bool> HasMount(const std::string& plugin, const MountInfo& mount);
  // Claims of `plugin`, or of every plugin when empty.
  std::vector<Claim> ListClaims(const std::string& plugin = "");
  NodeInfo GetNodeInfo();
  // Unmounts everything the manager mounted.
  absl::StatusOr<DrainResult> Drain();

  // See the class comment. Idempotent; later calls return at once.
  void Shutdown(absl::Duration grace, bool unmount_all = false);

  // OK while started and not shutting down (for /healthz).
  absl::Status Health();

 private:
  // Sets the gauges (plugins by health, claims by state) before a render.
  void CollectGauges();

  class Impl;  // manager.cc: the state behind the API and the helpers it shares
  std::unique_ptr<Impl> impl_;
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_MANAGER_H_
