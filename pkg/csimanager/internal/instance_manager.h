// InstanceManager: one per active plugin instance. It owns the instance's
// CsiClient (dialled lazily, on first use), fingerprints the plugin at start
// and then every fingerprint_period, and keeps the result: health (healthy,
// reason, last update), capabilities, the external node id, max volumes and
// topology.
//
// A fingerprint calls GetPluginInfo, GetPluginCapabilities and Probe; for
// the node role NodeGetInfo and NodeGetCapabilities; for the controller role
// ControllerGetCapabilities. The instance is healthy when every call
// succeeds, the plugin reports the name it was registered under, Probe does
// not say "not ready", a node plugin reports a node id, and a controller
// advertises CONTROLLER_SERVICE. A failed fingerprint keeps the capabilities
// of the last good one and only changes health. Health transitions are
// logged; steady state is not.
//
// Each instance fingerprints on its own thread with a per-call deadline, so
// a plugin that hangs or vanishes makes only its own instance unhealthy.
//
// Thread-safe. Stop() (also run by the destructor) ends the loop and cancels
// its calls in flight; calls other components make through client() are not
// cancelled. `clock` is not owned and must outlive the instance.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_INSTANCE_MANAGER_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_INSTANCE_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/cancel.h"
#include "pkg/base/clock.h"
#include "pkg/csimanager/internal/csi_client.h"
#include "pkg/csimanager/manager_types.h"
#include "pkg/csimanager/types.h"

namespace lustre_csi::csimanager {

class InstanceManager {
 public:
  // Runs after every fingerprint, on the fingerprinting thread, with no
  // instance lock held.
  using Listener = std::function<void(const PluginStatus& status)>;

  InstanceManager(PluginRecord record, CsiClientFactory client_factory, base::Clock* clock,
                  InstanceOptions options, Listener listener = nullptr);
  ~InstanceManager();
  InstanceManager(const InstanceManager&) = delete;
  InstanceManager& operator=(const InstanceManager&) = delete;

  // Starts the fingerprint loop: one now, then one every period.
  void Start();
  // Ends the loop and waits for it. Idempotent.
  void Stop();

  // Fingerprints now, on this thread (serialised with the loop). Returns OK
  // when healthy, else UNAVAILABLE with the reason.
  absl::Status Fingerprint();

  PluginStatus Status() const;
  const PluginRecord& record() const { return record_; }

  // The instance's client, dialled on first use. Owned by the instance.
  absl::StatusOr<CsiClient*> Client();

  // Waits (real time) until `n` fingerprints have finished, or `deadline`.
  bool AwaitFingerprints(int64_t n, absl::Time deadline);
  // Waits (real time) until healthy: OK, or DEADLINE_EXCEEDED with the
  // reason, or CANCELLED once stopped.
  absl::Status WaitForHealthy(absl::Time deadline);

 private:
  void Run();
  // Fills `next` from the plugin; returns the reason it is unhealthy.
  absl::Status Probe(PluginStatus& next);

  const PluginRecord record_;
  const CsiClientFactory client_factory_;
  base::Clock* const clock_;
  const InstanceOptions options_;
  const Listener listener_;

  base::CancelToken stop_;
  absl::Mutex run_mu_;
  bool started_ ABSL_GUARDED_BY(run_mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(run_mu_);

  absl::Mutex client_mu_;
  std::unique_ptr<CsiClient> client_ ABSL_GUARDED_BY(client_mu_);

  absl::Mutex fingerprint_mu_;  // one fingerprint at a time
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(fingerprint_mu_);
  PluginStatus status_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_INSTANCE_MANAGER_H_
