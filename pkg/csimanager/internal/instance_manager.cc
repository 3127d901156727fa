#include "pkg/csimanager/internal/instance_manager.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "pkg/base/status_macros.h"

namespace lustre_csi::csimanager {

InstanceManager::InstanceManager(PluginRecord record, CsiClientFactory client_factory,
                                 base::Clock* clock, InstanceOptions options, Listener listener)
    : record_(std::move(record)),
      client_factory_(std::move(client_factory)),
      clock_(clock),
      options_(options),
      listener_(std::move(listener)) {
  status_.record = record_;
}

InstanceManager::~InstanceManager() { Stop(); }

void InstanceManager::Start() {
  absl::MutexLock lock(&run_mu_);
  if (started_ || stop_.cancelled()) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void InstanceManager::Stop() {
  stop_.Cancel();
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  std::thread thread;
  {
    absl::MutexLock lock(&run_mu_);
    thread.swap(thread_);
  }
  if (thread.joinable()) thread.join();
}

void InstanceManager::Run() {
  do {
    Fingerprint().IgnoreError();
  } while (clock_->SleepFor(options_.fingerprint_period, &stop_));
}

absl::StatusOr<CsiClient*> InstanceManager::Client() {
  absl::MutexLock lock(&client_mu_);
  if (client_ == nullptr) {
    absl::StatusOr<std::unique_ptr<CsiClient>> client = client_factory_(record_.endpoint);
    if (!client.ok()) return client.status();
    client_ = *std::move(client);
  }
  return client_.get();
}

absl::Status InstanceManager::Probe(PluginStatus& next) {
  ASSIGN_OR_RETURN(CsiClient * client, Client());
  CallOptions call;
  call.timeout = options_.fingerprint_timeout;
  call.cancel = &stop_;

  ASSIGN_OR_RETURN(PluginInfo info, client->GetPluginInfo(call));
  if (info.name != record_.name) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plugin reports name \"", info.name, "\" but is registered as \"", record_.name, "\""));
  }
  next.vendor_name = info.name;
  next.vendor_version = info.vendor_version;

  ASSIGN_OR_RETURN(PluginCapabilities caps, client->GetPluginCapabilities(call));
  next.plugin_capabilities = caps.names;
  next.controller_service = caps.controller_service;

  RETURN_IF_ERROR(client->Probe(call));

  next.node_capabilities.clear();
  next.stage_unstage = false;
  if (ServesNode(record_.type)) {
    ASSIGN_OR_RETURN(PluginNodeInfo node, client->NodeGetInfo(call));
    if (node.node_id.empty()) {
      return absl::FailedPreconditionError("NodeGetInfo: plugin reports no node id");
    }
    next.node_id = node.node_id;
    next.max_volumes = node.max_volumes;
    next.topology = node.topology;
    ASSIGN_OR_RETURN(NodeCapabilities node_caps, client->NodeGetCapabilities(call));
    next.node_capabilities = node_caps.names;
    next.stage_unstage = node_caps.stage_unstage;
  }

  next.controller_capabilities.clear();
  if (ServesController(record_.type)) {
    if (!next.controller_service) {
      return absl::FailedPreconditionError(
          "plugin is registered as a controller but does not advertise CONTROLLER_SERVICE");
    }
    ASSIGN_OR_RETURN(ControllerCapabilities controller_caps,
                     client->ControllerGetCapabilities(call));
    next.controller_capabilities = controller_caps.names;
  }
  return absl::OkStatus();
}

absl::Status InstanceManager::Fingerprint() {
  absl::MutexLock serial(&fingerprint_mu_);
  PluginStatus next = Status();
  absl::Status health = Probe(next);
  PluginStatus published;
  bool was_healthy;
  bool first;
  {
    absl::MutexLock lock(&mu_);
    was_healthy = status_.healthy;
    first = status_.fingerprints == 0;
    if (health.ok()) {
      status_ = next;
      status_.fingerprinted = true;
      status_.healthy = true;
      status_.health_reason = "healthy";
    } else {
      status_.healthy = false;
      status_.health_reason = std::string(health.message());
    }
    status_.last_update = clock_->Now();
    ++status_.fingerprints;
    published = status_;
  }
  if (first || was_healthy != published.healthy) {
    if (published.healthy) {
      LOG(INFO) << "plugin " << record_.name << " (" << record_.id << ") is healthy";
    } else {
      LOG(WARNING) << "plugin " << record_.name << " (" << record_.id
                   << ") is unhealthy: " << published.health_reason;
    }
  }
  if (listener_) listener_(published);
  if (health.ok()) return health;
  return absl::UnavailableError(
      absl::StrCat("plugin ", record_.name, " is unhealthy: ", published.health_reason));
}

PluginStatus InstanceManager::Status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

bool InstanceManager::AwaitFingerprints(int64_t n, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return status_.fingerprints >= n; };
  return mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
}

absl::Status InstanceManager::WaitForHealthy(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return status_.healthy || stopped_; };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  if (status_.healthy) return absl::OkStatus();
  if (stopped_) return absl::CancelledError(absl::StrCat("plugin ", record_.name, " stopped"));
  return absl::DeadlineExceededError(
      absl::StrCat("plugin ", record_.name, " is not healthy: ", status_.health_reason));
}

}  // namespace lustre_csi::csimanager
