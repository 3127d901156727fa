#include "pkg/csimanager/testing/fake_plugin.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace lustre_csi::csimanager::fakes {

struct FakePlugin::State {
  absl::Mutex mu;
  FakePluginConfig config ABSL_GUARDED_BY(mu);
  FakeNode* mounts = nullptr;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::map<std::string, bool> hang ABSL_GUARDED_BY(mu);
  std::map<std::string, std::deque<grpc::Status>> failures ABSL_GUARDED_BY(mu);
  std::map<std::string, int> calls ABSL_GUARDED_BY(mu);
  std::vector<std::string> log ABSL_GUARDED_BY(mu);
  // Staging paths staged without a mount (config.stage_mounts false).
  std::set<std::string> staged ABSL_GUARDED_BY(mu);
  std::vector<csi::v1::NodeStageVolumeRequest> stages ABSL_GUARDED_BY(mu);
  std::vector<csi::v1::NodePublishVolumeRequest> publishes ABSL_GUARDED_BY(mu);
  std::vector<pluginregistration::RegistrationStatus> statuses ABSL_GUARDED_BY(mu);

  // Whether `path` is staged: mounted there, or recorded as staged without a
  // mount.
  bool IsStaged(const std::string& path) {
    {
      absl::MutexLock lock(&mu);
      if (staged.count(path) > 0) return true;
    }
    return mounts != nullptr && mounts->inspector()->IsMountPoint(path).value_or(false);
  }

  // Records the call, then hangs or fails it as the test asked.
  grpc::Status Enter(const std::string& method, grpc::ServerContext* context,
                     const std::string& detail = "") {
    absl::MutexLock lock(&mu);
    ++calls[method];
    log.push_back(detail.empty() ? method : absl::StrCat(method, " ", detail));
    while (hang[method] && !stopping) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      mu.AwaitWithTimeout(
          absl::Condition(
              +[](State* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->stopping; }, this),
          absl::Milliseconds(5));
    }
    if (stopping) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "fake plugin stopping");
    auto& queue = failures[method];
    if (!queue.empty()) {
      grpc::Status status = queue.front();
      queue.pop_front();
      return status;
    }
    return grpc::Status::OK;
  }

  FakePluginConfig Config() {
    absl::MutexLock lock(&mu);
    return config;
  }
};

namespace {

using State = FakePlugin::State;

class Identity final : public csi::v1::Identity::Service {
 public:
  explicit Identity(std::shared_ptr<State> state) : state_(std::move(state)) {}

  grpc::Status GetPluginInfo(grpc::ServerContext* context, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse* response) override {
    grpc::Status status = state_->Enter("GetPluginInfo", context);
    if (!status.ok()) return status;
    FakePluginConfig config = state_->Config();
    response->set_name(config.name);
    response->set_vendor_version(config.vendor_version);
    return grpc::Status::OK;
  }

  grpc::Status GetPluginCapabilities(grpc::ServerContext* context,
                                     const csi::v1::GetPluginCapabilitiesRequest*,
                                     csi::v1::GetPluginCapabilitiesResponse* response) override {
    grpc::Status status = state_->Enter("GetPluginCapabilities", context);
    if (!status.ok()) return status;
    FakePluginConfig config = state_->Config();
    if (config.controller_service) {
      response->add_capabilities()->mutable_service()->set_type(
          csi::v1::PluginCapability::Service::CONTROLLER_SERVICE);
    }
    if (!config.topology.empty()) {
      response->add_capabilities()->mutable_service()->set_type(
          csi::v1::PluginCapability::Service::VOLUME_ACCESSIBILITY_CONSTRAINTS);
    }
    return grpc::Status::OK;
  }

  grpc::Status Probe(grpc::ServerContext* context, const csi::v1::ProbeRequest*,
                     csi::v1::ProbeResponse* response) override {
    grpc::Status status = state_->Enter("Probe", context);
    if (!status.ok()) return status;
    FakePluginConfig config = state_->Config();
    if (config.ready.has_value()) response->mutable_ready()->set_value(*config.ready);
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<State> state_;
};

class Node final : public csi::v1::Node::Service {
 public:
  explicit Node(std::shared_ptr<State> state) : state_(std::move(state)) {}

  grpc::Status NodeGetInfo(grpc::ServerContext* context, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse* response) override {
    grpc::Status status = state_->Enter("NodeGetInfo", context);
    if (!status.ok()) return status;
    FakePluginConfig config = state_->Config();
    response->set_node_id(config.node_id);
    response->set_max_volumes_per_node(config.max_volumes);
    for (const auto& [k, v] : config.topology) {
      (*response->mutable_accessible_topology()->mutable_segments())[k] = v;
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeGetCapabilities(grpc::ServerContext* context,
                                   const csi::v1::NodeGetCapabilitiesRequest*,
                                   csi::v1::NodeGetCapabilitiesResponse* response) override {
    grpc::Status status = state_->Enter("NodeGetCapabilities", context);
    if (!status.ok()) return status;
    if (state_->Config().stage_unstage) {
      response->add_capabilities()->mutable_rpc()->set_type(
          csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
    }
    response->add_capabilities()->mutable_rpc()->set_type(
        csi::v1::NodeServiceCapability::RPC::GET_VOLUME_STATS);
    return grpc::Status::OK;
  }

  grpc::Status NodeStageVolume(grpc::ServerContext* context,
                               const csi::v1::NodeStageVolumeRequest* request,
                               csi::v1::NodeStageVolumeResponse*) override {
    grpc::Status status = state_->Enter("NodeStageVolume", context, request->staging_target_path());
    if (!status.ok()) return status;
    if (request->volume_id().empty() || request->staging_target_path().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "missing volume id or path");
    }
    bool mount;
    {
      absl::MutexLock lock(&state_->mu);
      state_->stages.push_back(*request);
      mount = state_->config.stage_mounts;
      if (!mount) state_->staged.insert(request->staging_target_path());
    }
    if (mount && state_->mounts != nullptr) {
      state_->mounts->SetMounted(request->staging_target_path(), true);
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnstageVolume(grpc::ServerContext* context,
                                 const csi::v1::NodeUnstageVolumeRequest* request,
                                 csi::v1::NodeUnstageVolumeResponse*) override {
    grpc::Status status =
        state_->Enter("NodeUnstageVolume", context, request->staging_target_path());
    if (!status.ok()) return status;
    {
      absl::MutexLock lock(&state_->mu);
      state_->staged.erase(request->staging_target_path());
    }
    if (state_->mounts != nullptr) {
      state_->mounts->SetMounted(request->staging_target_path(), false);
    }
    return grpc::Status::OK;
  }

  grpc::Status NodePublishVolume(grpc::ServerContext* context,
                                 const csi::v1::NodePublishVolumeRequest* request,
                                 csi::v1::NodePublishVolumeResponse*) override {
    grpc::Status status = state_->Enter("NodePublishVolume", context, request->target_path());
    if (!status.ok()) return status;
    if (request->volume_id().empty() || request->target_path().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "missing volume id or path");
    }
    if (state_->Config().stage_unstage && !state_->IsStaged(request->staging_target_path())) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "volume is not staged");
    }
    {
      absl::MutexLock lock(&state_->mu);
      state_->publishes.push_back(*request);
    }
    if (state_->mounts != nullptr) state_->mounts->SetMounted(request->target_path(), true);
    return grpc::Status::OK;
  }

  grpc::Status NodeUnpublishVolume(grpc::ServerContext* context,
                                   const csi::v1::NodeUnpublishVolumeRequest* request,
                                   csi::v1::NodeUnpublishVolumeResponse*) override {
    grpc::Status status = state_->Enter("NodeUnpublishVolume", context, request->target_path());
    if (!status.ok()) return status;
    if (state_->mounts != nullptr) state_->mounts->SetMounted(request->target_path(), false);
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<State> state_;
};

class Controller final : public csi::v1::Controller::Service {
 public:
  explicit Controller(std::shared_ptr<State> state) : state_(std::move(state)) {}

  grpc::Status ControllerGetCapabilities(
      grpc::ServerContext* context, const csi::v1::ControllerGetCapabilitiesRequest*,
      csi::v1::ControllerGetCapabilitiesResponse* response) override {
    grpc::Status status = state_->Enter("ControllerGetCapabilities", context);
    if (!status.ok()) return status;
    response->add_capabilities()->mutable_rpc()->set_type(
        csi::v1::ControllerServiceCapability::RPC::CREATE_DELETE_VOLUME);
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<State> state_;
};

class Registration final : public pluginregistration::Registration::Service {
 public:
  explicit Registration(std::shared_ptr<State> state) : state_(std::move(state)) {}

  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* response) override {
    grpc::Status status = state_->Enter("GetInfo", context);
    if (!status.ok()) return status;
    FakePluginConfig config = state_->Config();
    response->set_type(config.registration_type);
    response->set_name(config.registration_name.empty() ? config.name : config.registration_name);
    response->set_endpoint(config.registration_endpoint);
    for (const std::string& v : config.supported_versions) response->add_supported_versions(v);
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext* context,
                                        const pluginregistration::RegistrationStatus* request,
                                        pluginregistration::RegistrationStatusResponse*) override {
    grpc::Status status = state_->Enter("NotifyRegistrationStatus", context);
    if (!status.ok()) return status;
    absl::MutexLock lock(&state_->mu);
    state_->statuses.push_back(*request);
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace

std::unique_ptr<FakePlugin> FakePlugin::Start(const std::vector<std::string>& sockets,
                                              FakePluginConfig config, FakeNode* mounts) {
  std::unique_ptr<FakePlugin> plugin(new FakePlugin());
  plugin->state_ = std::make_shared<State>();
  {
    absl::MutexLock lock(&plugin->state_->mu);
    plugin->state_->config = std::move(config);
  }
  plugin->state_->mounts = mounts;
  plugin->sockets_ = sockets;
  plugin->services_.push_back(std::make_unique<Identity>(plugin->state_));
  plugin->services_.push_back(std::make_unique<Node>(plugin->state_));
  plugin->services_.push_back(std::make_unique<Controller>(plugin->state_));
  plugin->services_.push_back(std::make_unique<Registration>(plugin->state_));
  grpc::ServerBuilder builder;
  for (const std::string& socket : sockets) {
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  }
  for (auto& service : plugin->services_) builder.RegisterService(service.get());
  plugin->server_ = builder.BuildAndStart();
  CHECK(plugin->server_ != nullptr) << "fake plugin could not listen";
  return plugin;
}

FakePlugin::~FakePlugin() { Stop(); }

void FakePlugin::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopping = true;
  }
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server_->Wait();
  for (const std::string& socket : sockets_) ::unlink(socket.c_str());
}

void FakePlugin::Update(const std::function<void(FakePluginConfig&)>& change) {
  absl::MutexLock lock(&state_->mu);
  change(state_->config);
}

void FakePlugin::FailNext(const std::string& method, grpc::Status status, int times) {
  absl::MutexLock lock(&state_->mu);
  for (int i = 0; i < times; ++i) state_->failures[method].push_back(status);
}

void FakePlugin::SetHang(const std::string& method, bool hang) {
  absl::MutexLock lock(&state_->mu);
  state_->hang[method] = hang;
}

int FakePlugin::Calls(const std::string& method) {
  absl::MutexLock lock(&state_->mu);
  return state_->calls[method];
}

bool FakePlugin::AwaitCalls(const std::string& method, int n, absl::Duration timeout) {
  absl::MutexLock lock(&state_->mu);
  auto enough = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return state_->calls[method] >= n; };
  return state_->mu.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

std::vector<std::string> FakePlugin::Log() {
  absl::MutexLock lock(&state_->mu);
  return state_->log;
}

void FakePlugin::MarkStaged(const std::string& staging_path) {
  absl::MutexLock lock(&state_->mu);
  state_->staged.insert(staging_path);
}

std::vector<csi::v1::NodeStageVolumeRequest> FakePlugin::StageRequests() {
  absl::MutexLock lock(&state_->mu);
  return state_->stages;
}

std::vector<csi::v1::NodePublishVolumeRequest> FakePlugin::PublishRequests() {
  absl::MutexLock lock(&state_->mu);
  return state_->publishes;
}

std::vector<pluginregistration::RegistrationStatus> FakePlugin::RegistrationStatuses() {
  absl::MutexLock lock(&state_->mu);
  return state_->statuses;
}

bool FakePlugin::AwaitRegistrationStatuses(int n, absl::Duration timeout) {
  absl::MutexLock lock(&state_->mu);
  auto enough = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return static_cast<int>(state_->statuses.size()) >= n;
  };
  return state_->mu.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

}  // namespace lustre_csi::csimanager::fakes
