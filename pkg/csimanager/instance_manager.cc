#include "pkg/csimanager/instance_manager.h"

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

  ASSIGN_OR_RETURN(csi::v1::GetPluginInfoResponse info, client->GetPluginInfo(call));
  if (info.name() != record_.name) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plugin reports name \"", info.name(), "\" but is registered as \"", record_.name, "\""));
  }
  next.vendor_name = info.name();
  next.vendor_version = info.vendor_version();

  absl::StatusOr<csi::v1::GetPluginCapabilitiesResponse> caps = client->GetPluginCapabilities(call);
  if (!caps.ok()) return caps.status();
  next.plugin_capabilities.clear();
  next.controller_service = false;
  for (const csi::v1::PluginCapability& cap : caps->capabilities()) {
    if (cap.has_service()) {
      next.plugin_capabilities.push_back(
          csi::v1::PluginCapability::Service::Type_Name(cap.service().type()));
      if (cap.service().type() == csi::v1::PluginCapability::Service::CONTROLLER_SERVICE) {
        next.controller_service = true;
      }
    } else if (cap.has_volume_expansion()) {
      next.plugin_capabilities.push_back(absl::StrCat(
          "VOLUME_EXPANSION_",
          csi::v1::PluginCapability::VolumeExpansion::Type_Name(cap.volume_expansion().type())));
    }
  }

  ASSIGN_OR_RETURN(csi::v1::ProbeResponse probe, client->Probe(call));
  if (probe.has_ready() && !probe.ready().value()) {
    return absl::UnavailableError("Probe: plugin reports it is not ready");
  }

  next.node_capabilities.clear();
  next.stage_unstage = false;
  if (ServesNode(record_.type)) {
    absl::StatusOr<csi::v1::NodeGetInfoResponse> node = client->NodeGetInfo(call);
    if (!node.ok()) return node.status();
    if (node->node_id().empty()) {
      return absl::FailedPreconditionError("NodeGetInfo: plugin reports no node id");
    }
    next.node_id = node->node_id();
    next.max_volumes = node->max_volumes_per_node();
    next.topology.clear();
    for (const auto& [key, value] : node->accessible_topology().segments()) {
      next.topology[key] = value;
    }
    absl::StatusOr<csi::v1::NodeGetCapabilitiesResponse> node_caps =
        client->NodeGetCapabilities(call);
    if (!node_caps.ok()) return node_caps.status();
    for (const csi::v1::NodeServiceCapability& cap : node_caps->capabilities()) {
      if (!cap.has_rpc()) continue;
      next.node_capabilities.push_back(
          csi::v1::NodeServiceCapability::RPC::Type_Name(cap.rpc().type()));
      if (cap.rpc().type() == csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME) {
        next.stage_unstage = true;
      }
    }
  }

  next.controller_capabilities.clear();
  if (ServesController(record_.type)) {
    if (!next.controller_service) {
      return absl::FailedPreconditionError(
          "plugin is registered as a controller but does not advertise CONTROLLER_SERVICE");
    }
    absl::StatusOr<csi::v1::ControllerGetCapabilitiesResponse> controller_caps =
        client->ControllerGetCapabilities(call);
    if (!controller_caps.ok()) return controller_caps.status();
    for (const csi::v1::ControllerServiceCapability& cap : controller_caps->capabilities()) {
      if (!cap.has_rpc()) continue;
      next.controller_capabilities.push_back(
          csi::v1::ControllerServiceCapability::RPC::Type_Name(cap.rpc().type()));
    }
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
