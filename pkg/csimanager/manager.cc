#include "pkg/csimanager/manager.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "pkg/base/cancel.h"
#include "pkg/base/status_macros.h"
#include "pkg/csimanager/internal/csi_client.h"
#include "pkg/csimanager/internal/instance_manager.h"
#include "pkg/csimanager/internal/registration_watcher.h"
#include "pkg/csimanager/internal/volume_manager.h"
#include "pkg/csimanager/types.h"
#include "pkg/server/grpc_status.h"

namespace lustre_csi::csimanager {
namespace {

// Time allowed for cancelled operations to unwind after the grace period.
constexpr absl::Duration kCancelWait = absl::Seconds(10);

bool SameInstance(const PluginRecord& a, const PluginRecord& b) {
  return a.name == b.name && a.type == b.type && a.endpoint == b.endpoint;
}

}  // namespace

// The state behind the API (the registry, the instance and volume managers,
// the watcher) and the helpers the API's methods share.
class Manager::Impl {
 public:
  Impl(ManagerOptions options, ManagerDeps deps);

  // Starts and stops instance managers to match the registry.
  void Reconcile();
  void OnFingerprint(const PluginStatus& status);
  std::shared_ptr<InstanceManager> ActiveInstance(const std::string& name, PluginType type);
  // The plugin's volume manager, created (and restored) on first use.
  absl::StatusOr<VolumeManager*> Volumes(const std::string& plugin, bool create);
  absl::Status BeginOperation();
  void EndOperation(absl::string_view operation, absl::StatusCode code, absl::Time start);

  const ManagerOptions options_;
  const ManagerDeps deps_;
  Registry registry_;
  std::unique_ptr<RegistrationWatcher> watcher_;
  base::CancelToken cancel_;  // cancels volume operations at the end of the grace period
  std::unique_ptr<server::MetricsRegistry> own_metrics_;  // when deps.metrics is null
  server::Counter* operations_;
  server::Histogram* latency_;
  server::Gauge* plugins_;
  server::Gauge* claims_;

  absl::Mutex reconcile_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;  // bumped on every registry or health change
  std::map<std::string, std::shared_ptr<InstanceManager>> instances_ ABSL_GUARDED_BY(mu_);

  absl::Mutex volumes_mu_;
  std::map<std::string, std::unique_ptr<VolumeManager>> volumes_ ABSL_GUARDED_BY(volumes_mu_);
};

Manager::Impl::Impl(ManagerOptions options, ManagerDeps deps)
    : options_(std::move(options)), deps_(std::move(deps)), registry_(deps_.store, deps_.clock) {
  server::MetricsRegistry* metrics = deps_.metrics;
  if (metrics == nullptr) {
    own_metrics_ = std::make_unique<server::MetricsRegistry>();
    metrics = own_metrics_.get();
  }
  constexpr char kPrefix[] = "lustre_csi_plugin_manager_";
  operations_ =
      metrics->AddCounter(absl::StrCat(kPrefix, "operations_total"),
                          "Volume operations by operation and result.", {"operation", "result"});
  latency_ = metrics->AddHistogram(absl::StrCat(kPrefix, "operation_duration_seconds"),
                                   "Latency of volume operations.", {"operation"},
                                   server::LatencyBuckets());
  plugins_ = metrics->AddGauge(absl::StrCat(kPrefix, "plugins"),
                               "Active plugin instances by health.", {"health"});
  claims_ =
      metrics->AddGauge(absl::StrCat(kPrefix, "claims"), "Volume claims by state.", {"state"});
  registry_.SetListener([this] { Reconcile(); });
}

// ------------------------------------------------------------ the API

Manager::Manager(ManagerOptions options, ManagerDeps deps)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(deps))) {
  server::MetricsRegistry* metrics =
      impl_->deps_.metrics != nullptr ? impl_->deps_.metrics : impl_->own_metrics_.get();
  metrics->AddCollector([this] { CollectGauges(); });
}

Manager::~Manager() {
  impl_->registry_.SetListener(nullptr);
  Shutdown(impl_->options_.shutdown_grace);
}

absl::StatusOr<StartReport> Manager::Start() {
  {
    absl::MutexLock lock(&impl_->mu_);
    if (impl_->started_ || impl_->shutting_down_) {
      return absl::FailedPreconditionError("plugin manager already started");
    }
  }
  if (!impl_->options_.registration_dir.empty() && impl_->deps_.sys == nullptr) {
    return absl::InvalidArgumentError("a registration directory needs the node's Syscalls");
  }
  StartReport report;
  absl::Status restored = impl_->registry_.Restore();
  if (!restored.ok()) return restored;
  report.plugins_restored = static_cast<int>(impl_->registry_.List().size());

  absl::StatusOr<std::vector<Claim>> claims = impl_->deps_.store->ListClaims();
  if (!claims.ok()) return claims.status();
  std::set<std::string> plugins;
  for (const Claim& claim : *claims) plugins.insert(claim.plugin);
  for (const std::string& plugin : plugins) {
    absl::StatusOr<VolumeManager*> volumes = impl_->Volumes(plugin, /*create=*/true);
    if (!volumes.ok()) return volumes.status();
  }
  {
    absl::MutexLock lock(&impl_->volumes_mu_);
    for (const auto& [name, volumes] : impl_->volumes_)
      report.volumes[name] = volumes->last_restore();
  }
  {
    absl::MutexLock lock(&impl_->mu_);
    impl_->started_ = true;
  }
  impl_->Reconcile();
  if (!impl_->options_.registration_dir.empty()) {
    RegistrationWatcherOptions watch = impl_->options_.registration;
    watch.directory = impl_->options_.registration_dir;
    impl_->watcher_ = std::make_unique<RegistrationWatcher>(&impl_->registry_, impl_->deps_.sys,
                                                            impl_->deps_.clock, watch);
    RETURN_IF_ERROR(impl_->watcher_->Start());
  }
  LOG(INFO) << "plugin manager started: " << report.plugins_restored << " plugins and "
            << claims->size() << " claims restored";
  return report;
}

absl::Status Manager::SetStaticPlugins(std::vector<PluginRecord> records) {
  return impl_->registry_.ReplaceStatic(std::move(records));
}

void Manager::Impl::Reconcile() {
  absl::MutexLock serial(&reconcile_mu_);
  std::vector<PluginRecord> active = registry_.ActiveSet();
  std::vector<std::shared_ptr<InstanceManager>> to_stop;
  std::vector<std::shared_ptr<InstanceManager>> to_start;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || shutting_down_) return;
    std::map<std::string, const PluginRecord*> wanted;
    for (const PluginRecord& record : active) wanted[record.id] = &record;
    for (auto it = instances_.begin(); it != instances_.end();) {
      auto want = wanted.find(it->first);
      if (want == wanted.end() || !SameInstance(*want->second, it->second->record())) {
        to_stop.push_back(it->second);
        it = instances_.erase(it);
      } else {
        ++it;
      }
    }
    for (const PluginRecord& record : active) {
      if (instances_.count(record.id)) continue;
      auto instance = std::make_shared<InstanceManager>(
          record, DialingClientFactory(), deps_.clock, options_.instance,
          [this](const PluginStatus& status) { OnFingerprint(status); });
      instances_[record.id] = instance;
      to_start.push_back(instance);
    }
    ++version_;
  }
  for (auto& instance : to_stop) {
    LOG(INFO) << "plugin " << instance->record().name << " (" << instance->record().id
              << ") is no longer active";
    instance->Stop();
  }
  for (auto& instance : to_start) {
    LOG(INFO) << "plugin " << instance->record().name << " (" << instance->record().id << ", "
              << PluginTypeName(instance->record().type) << ", " << instance->record().endpoint
              << ") is active";
    instance->Start();
  }
}

void Manager::Impl::OnFingerprint(const PluginStatus&) {
  absl::MutexLock lock(&mu_);
  ++version_;
}

std::shared_ptr<InstanceManager> Manager::Impl::ActiveInstance(const std::string& name,
                                                               PluginType type) {
  std::optional<PluginRecord> record = registry_.Active(name, type);
  if (!record.has_value()) return nullptr;
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(record->id);
  return it == instances_.end() ? nullptr : it->second;
}

absl::StatusOr<VolumeManager*> Manager::Impl::Volumes(const std::string& plugin, bool create) {
  absl::MutexLock lock(&volumes_mu_);
  auto it = volumes_.find(plugin);
  if (it != volumes_.end()) return it->second.get();
  if (!create) return absl::NotFoundError(absl::StrCat("no node plugin named ", plugin));
  RETURN_IF_ERROR(ValidatePluginName(plugin));
  VolumeManagerOptions options;
  options.root = absl::StrCat(options_.mount_root, "/", plugin);
  options.retry = options_.retry;
  auto volumes = std::make_unique<VolumeManager>(
      plugin, options, [this, plugin] { return ActiveInstance(plugin, PluginType::kNode); },
      deps_.store, deps_.mounts, deps_.clock, &cancel_);
  RETURN_IF_ERROR(volumes->Restore().status());
  VolumeManager* raw = volumes.get();
  volumes_[plugin] = std::move(volumes);
  return raw;
}

absl::Status Manager::Impl::BeginOperation() {
  absl::MutexLock lock(&mu_);
  if (!started_) return absl::UnavailableError("plugin manager is not started");
  if (shutting_down_) return absl::UnavailableError("plugin manager is shutting down");
  ++in_flight_;
  return absl::OkStatus();
}

void Manager::Impl::EndOperation(absl::string_view operation, absl::StatusCode code,
                                 absl::Time start) {
  operations_->Increment({std::string(operation), server::StatusCodeName(code)});
  latency_->Observe({std::string(operation)}, absl::ToDoubleSeconds(deps_.clock->Now() - start));
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

std::vector<PluginStatus> Manager::ListPlugins(std::optional<PluginType> type) {
  std::vector<PluginRecord> records = impl_->registry_.List();
  std::set<std::string> active;
  for (const PluginRecord& record : impl_->registry_.ActiveSet()) active.insert(record.id);
  std::vector<PluginStatus> out;
  for (const PluginRecord& record : records) {
    if (type.has_value() && !Serves(record.type, *type)) continue;
    std::shared_ptr<InstanceManager> instance;
    {
      absl::MutexLock lock(&impl_->mu_);
      auto it = impl_->instances_.find(record.id);
      if (it != impl_->instances_.end()) instance = it->second;
    }
    PluginStatus status;
    if (instance != nullptr) {
      status = instance->Status();
    } else {
      status.healthy = false;
      status.health_reason = active.count(record.id) ? "not started"
                                                     : absl::StrCat("standby: another instance of ",
                                                                    record.name, " is preferred");
    }
    status.record = record;
    out.push_back(std::move(status));
  }
  return out;
}

absl::StatusOr<PluginStatus> Manager::WaitForPlugin(PluginType type, const std::string& name,
                                                    absl::Time deadline) {
  while (true) {
    uint64_t seen;
    {
      absl::MutexLock lock(&impl_->mu_);
      if (impl_->shutting_down_) return absl::UnavailableError("plugin manager is shutting down");
      seen = impl_->version_;
    }
    std::string waiting_for;
    std::optional<PluginRecord> record = impl_->registry_.Active(name, type);
    if (!record.has_value()) {
      waiting_for = "is not registered";
    } else {
      std::shared_ptr<InstanceManager> instance = impl_->ActiveInstance(name, type);
      if (instance == nullptr) {
        waiting_for = "is not started";
      } else {
        PluginStatus status = instance->Status();
        if (status.healthy) return status;
        waiting_for = absl::StrCat("is not healthy: ", status.health_reason);
      }
    }
    absl::MutexLock lock(&impl_->mu_);
    auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu_) {
      return impl_->version_ != seen || impl_->shutting_down_;
    };
    if (!impl_->mu_.AwaitWithDeadline(absl::Condition(&changed), deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat(PluginTypeName(type), " plugin ", name, " ", waiting_for));
    }
  }
}

absl::StatusOr<MountInfo> Manager::MountVolume(const std::string& plugin,
                                               const MountRequest& request) {
  RETURN_IF_ERROR(impl_->BeginOperation());
  absl::Time start = impl_->deps_.clock->Now();
  absl::StatusOr<MountInfo> result = [&]() -> absl::StatusOr<MountInfo> {
    absl::StatusOr<VolumeManager*> volumes = impl_->Volumes(plugin, /*create=*/false);
    if (!volumes.ok()) {
      if (!impl_->registry_.Active(plugin, PluginType::kNode).has_value()) {
        return absl::NotFoundError(absl::StrCat("no node plugin named ", plugin, " is registered"));
      }
      volumes = impl_->Volumes(plugin, /*create=*/true);
      if (!volumes.ok()) return volumes.status();
    }
    return (*volumes)->MountVolume(request);
  }();
  impl_->EndOperation("mount", result.status().code(), start);
  return result;
}

absl::StatusOr<UnmountResult> Manager::UnmountVolume(const std::string& plugin,
                                                     const UnmountRequest& request) {
  RETURN_IF_ERROR(impl_->BeginOperation());
  absl::Time start = impl_->deps_.clock->Now();
  absl::StatusOr<UnmountResult> result = [&]() -> absl::StatusOr<UnmountResult> {
    bool known = impl_->registry_.Active(plugin, PluginType::kNode).has_value();
    absl::StatusOr<VolumeManager*> volumes = impl_->Volumes(plugin, /*create=*/known);
    if (!volumes.ok()) {
      return absl::NotFoundError(
          absl::StrCat("no node plugin named ", plugin, " is registered or has claims"));
    }
    return (*volumes)->UnmountVolume(request);
  }();
  impl_->EndOperation("unmount", result.status().code(), start);
  return result;
}

absl::StatusOr<bool> Manager::HasMount(const std::string& plugin, const MountInfo& mount) {
  absl::StatusOr<VolumeManager*> volumes = impl_->Volumes(plugin, /*create=*/false);
  if (volumes.ok()) return (*volumes)->HasMount(mount);
  if (mount.target.empty()) return absl::InvalidArgumentError("mount has no target path");
  return impl_->deps_.mounts->IsMountPoint(mount.target);
}

std::vector<Claim> Manager::ListClaims(const std::string& plugin) {
  std::vector<VolumeManager*> all;
  {
    absl::MutexLock lock(&impl_->volumes_mu_);
    for (const auto& [name, volumes] : impl_->volumes_) {
      if (plugin.empty() || name == plugin) all.push_back(volumes.get());
    }
  }
  std::vector<Claim> out;
  for (VolumeManager* volumes : all) {
    for (Claim& claim : volumes->Claims()) out.push_back(std::move(claim));
  }
  return out;
}

NodeInfo Manager::GetNodeInfo() {
  NodeInfo info;
  info.node_name = impl_->options_.node_name;
  std::set<std::string> names;
  for (const PluginRecord& record : impl_->registry_.ActiveSet()) {
    if (ServesNode(record.type)) names.insert(record.name);
  }
  for (const std::string& name : names) {
    NodeInfo::Driver driver;
    driver.name = name;
    std::shared_ptr<InstanceManager> instance = impl_->ActiveInstance(name, PluginType::kNode);
    PluginStatus status = instance != nullptr ? instance->Status() : PluginStatus();
    driver.node_id = status.node_id;
    for (const auto& [key, value] : status.topology) driver.topology_keys.push_back(key);
    driver.allocatable_count = status.max_volumes;
    driver.available = status.healthy;
    driver.status = status.healthy ? "available" : status.health_reason;
    info.drivers.push_back(std::move(driver));
  }
  return info;
}

absl::StatusOr<DrainResult> Manager::Drain() {
  RETURN_IF_ERROR(impl_->BeginOperation());
  absl::Time start = impl_->deps_.clock->Now();
  std::vector<VolumeManager*> all;
  {
    absl::MutexLock lock(&impl_->volumes_mu_);
    for (const auto& [name, volumes] : impl_->volumes_) all.push_back(volumes.get());
  }
  DrainResult total;
  for (VolumeManager* volumes : all) {
    DrainResult result = volumes->Drain();
    total.unmounted += result.unmounted;
    for (std::string& error : result.errors) {
      total.errors.push_back(absl::StrCat(volumes->plugin(), ": ", error));
    }
  }
  LOG(INFO) << "drain: unmounted " << total.unmounted << " claims, " << total.errors.size()
            << " errors";
  impl_->EndOperation(
      "drain", total.errors.empty() ? absl::StatusCode::kOk : absl::StatusCode::kInternal, start);
  return total;
}

void Manager::Shutdown(absl::Duration grace, bool unmount_all) {
  {
    absl::MutexLock lock(&impl_->mu_);
    if (impl_->shutting_down_) return;
  }
  if (unmount_all) {
    absl::StatusOr<DrainResult> drained = Drain();
    if (!drained.ok()) {
      LOG(ERROR) << "unmounting everything at shutdown: " << drained.status();
    } else {
      for (const std::string& error : drained->errors) LOG(ERROR) << "drain: " << error;
    }
  }
  std::vector<std::shared_ptr<InstanceManager>> instances;
  {
    absl::MutexLock lock(&impl_->mu_);
    if (impl_->shutting_down_) return;
    impl_->shutting_down_ = true;
    ++impl_->version_;
    for (const auto& [id, instance] : impl_->instances_) instances.push_back(instance);
  }
  if (impl_->watcher_ != nullptr) impl_->watcher_->Stop();
  for (auto& instance : instances) instance->Stop();
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu_) { return impl_->in_flight_ == 0; };
  bool finished;
  {
    absl::MutexLock lock(&impl_->mu_);
    finished = impl_->mu_.AwaitWithTimeout(absl::Condition(&idle), grace);
    if (!finished) {
      LOG(WARNING) << "cancelling " << impl_->in_flight_ << " operations still running after "
                   << grace;
    }
  }
  if (!finished) {
    impl_->cancel_.Cancel();
    absl::MutexLock lock(&impl_->mu_);
    if (!impl_->mu_.AwaitWithTimeout(absl::Condition(&idle), kCancelWait)) {
      LOG(ERROR) << impl_->in_flight_ << " operations did not end after being cancelled";
    }
  }
  LOG(INFO) << "plugin manager stopped" << (unmount_all ? "" : "; mounts are kept");
}

absl::Status Manager::Health() {
  absl::MutexLock lock(&impl_->mu_);
  if (!impl_->started_) return absl::UnavailableError("plugin manager is not started");
  if (impl_->shutting_down_) return absl::UnavailableError("plugin manager is shutting down");
  return absl::OkStatus();
}

void Manager::CollectGauges() {
  std::vector<std::shared_ptr<InstanceManager>> instances;
  {
    absl::MutexLock lock(&impl_->mu_);
    for (const auto& [id, instance] : impl_->instances_) instances.push_back(instance);
  }
  double healthy = 0, unhealthy = 0;
  for (const auto& instance : instances) {
    if (instance->Status().healthy) {
      ++healthy;
    } else {
      ++unhealthy;
    }
  }
  impl_->plugins_->Reset({{{"healthy"}, healthy}, {{"unhealthy"}, unhealthy}});
  std::map<server::LabelValues, double> claims;
  for (const Claim& claim : ListClaims()) ++claims[{std::string(ClaimStateName(claim.state))}];
  impl_->claims_->Reset(std::move(claims));
}

}  // namespace lustre_csi::csimanager
