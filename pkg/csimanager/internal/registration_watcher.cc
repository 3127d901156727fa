#include "pkg/csimanager/internal/registration_watcher.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <chrono>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"
#include "pkg/csimanager/types.h"
#include "pkg/server/endpoint.h"
#include "pkg/volume/beneath.h"
#include "proto/pluginregistration.grpc.pb.h"

namespace lustre_csi::csimanager {
namespace {

constexpr char kCsiPluginType[] = "CSIPlugin";

bool SupportsV1(const google::protobuf::RepeatedPtrField<std::string>& versions) {
  for (const std::string& version : versions) {
    absl::string_view v = version;
    absl::ConsumePrefix(&v, "v");
    std::vector<absl::string_view> parts = absl::StrSplit(v, '.');
    int major = 0;
    if (!parts.empty() && absl::SimpleAtoi(parts[0], &major) && major == 1) return true;
  }
  return false;
}

std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  return context;
}

}  // namespace

RegistrationWatcher::RegistrationWatcher(Registry* registry, volume::Syscalls* sys,
                                         base::Clock* clock, RegistrationWatcherOptions options)
    : registry_(registry), sys_(sys), clock_(clock), options_(std::move(options)) {}

RegistrationWatcher::~RegistrationWatcher() { Stop(); }

absl::Status RegistrationWatcher::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) return absl::FailedPreconditionError("registration watcher already started");
  // Watching follows a symlink to the directory, as the kubelet does.
  absl::StatusOr<std::unique_ptr<volume::DirWatch>> watch = sys_->WatchDir(options_.directory);
  if (!watch.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("plugin registration directory ", options_.directory,
                     " does not exist or cannot be watched: ", watch.status().message()));
  }
  watch_ = *std::move(watch);
  started_ = true;
  Scan();
  absl::flat_hash_set<std::string> present;
  for (const auto& [path, socket] : sockets_) present.insert(path);
  absl::Status forgotten = registry_->ForgetMissingRegistrations(present);
  if (!forgotten.ok()) LOG(ERROR) << "forgetting vanished plugin registrations: " << forgotten;
  LOG(INFO) << "watching " << options_.directory << " for plugin registrations (" << sockets_.size()
            << " sockets found)";
  LaunchNew();
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void RegistrationWatcher::Stop() {
  stop_.Cancel();
  if (watch_ != nullptr) watch_->Wake();
  if (thread_.joinable()) thread_.join();
  std::vector<Worker> workers;
  {
    absl::MutexLock lock(&mu_);
    workers.swap(workers_);
  }
  for (Worker& worker : workers) worker.thread.join();
}

std::map<std::string, RegistrationWatcher::SocketState> RegistrationWatcher::Sockets() {
  absl::MutexLock lock(&mu_);
  std::map<std::string, SocketState> out;
  for (const auto& [path, socket] : sockets_) out.emplace(path, socket.state);
  return out;
}

bool RegistrationWatcher::IsSocket(const std::string& path, absl::Time* mtime) {
  absl::StatusOr<volume::FileInfo> info = sys_->Stat(path);
  if (!info.ok() || !volume::IsSocketMode(info->mode)) return false;
  if (mtime != nullptr) *mtime = info->mtime;
  return true;
}

void RegistrationWatcher::Scan() {
  std::set<std::string> found;
  absl::StatusOr<std::vector<std::string>> names = volume::ListDir(*sys_, options_.directory);
  if (!names.ok()) {
    LOG(ERROR) << "reading " << options_.directory << ": " << names.status();
    return;
  }
  for (const std::string& name : *names) {
    if (!absl::EndsWith(name, ".sock")) continue;
    std::string path = absl::StrCat(options_.directory, "/", name);
    if (IsSocket(path)) found.insert(path);
  }
  std::vector<std::string> gone;
  for (const auto& [path, socket] : sockets_) {
    if (found.count(path) == 0) gone.push_back(path);
  }
  for (const std::string& path : gone) Removed(path);
  for (const std::string& path : found) {
    if (sockets_.count(path) == 0) Added(path);
  }
}

void RegistrationWatcher::Added(const std::string& path) {
  Socket& socket = sockets_[path];
  socket.generation = next_generation_++;
  socket.state = SocketState();
  socket.running = false;
  VLOG(1) << "registration socket " << path << " appeared";
}

void RegistrationWatcher::Removed(const std::string& path) {
  sockets_.erase(path);
  absl::Status removed = registry_->Remove(path);
  if (!removed.ok()) LOG(ERROR) << "deregistering " << path << ": " << removed;
  VLOG(1) << "registration socket " << path << " disappeared";
}

void RegistrationWatcher::Handle(const std::vector<volume::DirEvent>& events) {
  using Kind = volume::DirEvent::Kind;
  for (const volume::DirEvent& event : events) {
    switch (event.kind) {
      case Kind::kOverflow:
        LOG(WARNING) << "directory events were lost; rescanning " << options_.directory;
        Scan();
        break;
      case Kind::kDirectoryGone: {
        LOG(ERROR) << "plugin registration directory " << options_.directory
                   << " was removed or moved; no more plugins are discovered until restart";
        std::vector<std::string> all;
        for (const auto& [path, socket] : sockets_) all.push_back(path);
        for (const std::string& path : all) Removed(path);
        break;
      }
      case Kind::kAdded:
      case Kind::kRemoved: {
        if (!absl::EndsWith(event.name, ".sock")) break;
        std::string path = absl::StrCat(options_.directory, "/", event.name);
        if (event.kind == Kind::kRemoved) {
          Removed(path);
        } else if (IsSocket(path)) {
          Added(path);
        }
        break;
      }
    }
  }
}

void RegistrationWatcher::LaunchNew() {
  for (auto& [path, socket] : sockets_) {
    if (socket.running || socket.state.phase != SocketState::Phase::kPending || stop_.cancelled()) {
      continue;
    }
    socket.running = true;
    Worker worker;
    worker.done = std::make_shared<std::atomic<bool>>(false);
    worker.thread =
        std::thread([this, path = path, generation = socket.generation, done = worker.done] {
          Register(path, generation);
          done->store(true);
          if (watch_ != nullptr) watch_->Wake();
        });
    workers_.push_back(std::move(worker));
  }
}

void RegistrationWatcher::Reap() {
  std::vector<Worker> finished;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done->load()) {
        finished.push_back(std::move(*it));
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Worker& worker : finished) worker.thread.join();
}

void RegistrationWatcher::Run() {
  while (!stop_.cancelled()) {
    absl::StatusOr<std::vector<volume::DirEvent>> events = watch_->Wait();
    if (stop_.cancelled()) break;
    if (!events.ok()) {
      LOG(ERROR) << "watching " << options_.directory << " failed (" << events.status()
                 << "); no more plugins are discovered until restart";
      break;
    }
    Reap();
    absl::MutexLock lock(&mu_);
    Handle(*events);
    LaunchNew();
  }
}

void RegistrationWatcher::Register(const std::string& path, uint64_t generation) {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto it = sockets_.find(path);
      if (it == sockets_.end() || it->second.generation != generation) return;
      it->second.state.phase = SocketState::Phase::kRegistering;
      ++it->second.state.attempts;
    }
    std::string plugin;
    std::string error;
    Outcome outcome = Attempt(path, generation, &plugin, &error);
    if (!Finish(path, generation, outcome, plugin, error) || outcome != Outcome::kRetry) return;
    VLOG(1) << "registration of " << path << " failed, will retry: " << error;
    if (!clock_->SleepFor(options_.retry_interval, &stop_)) return;
  }
}

RegistrationWatcher::Outcome RegistrationWatcher::Attempt(const std::string& path,
                                                          uint64_t generation, std::string* plugin,
                                                          std::string* error) {
  // A registrar's socket appears when it binds, a moment before it listens:
  // GetInfo waits for the connection (within its deadline), retrying the
  // connect every 100 ms, rather than fail and wait a whole retry interval.
  // (Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also takes it as the least
  // time a connection attempt gets to finish its handshake, and at 100 ms a
  // registrar on a loaded node that answers a little late fails the attempt,
  // "timed out before receiving SETTINGS frame".)
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      absl::StrCat("unix:", path), grpc::InsecureChannelCredentials(), args);
  std::unique_ptr<pluginregistration::Registration::Stub> stub =
      pluginregistration::Registration::NewStub(channel);

  pluginregistration::PluginInfo info;
  {
    std::unique_ptr<grpc::ClientContext> context = Context(options_.call_timeout);
    context->set_wait_for_ready(true);
    base::ScopedCancelCallback cancel(&stop_, [&context] { context->TryCancel(); });
    grpc::Status status = stub->GetInfo(context.get(), pluginregistration::InfoRequest(), &info);
    if (!status.ok()) {
      *error = absl::StrCat("GetInfo: ", status.error_message());
      return Outcome::kRetry;
    }
  }
  std::string reason;
  PluginRecord record;
  record.id = path;
  record.name = info.name();
  record.type = PluginType::kNode;
  record.origin = PluginOrigin::kRegistrationDir;
  record.supported_versions.assign(info.supported_versions().begin(),
                                   info.supported_versions().end());
  if (info.type() != kCsiPluginType) {
    reason =
        absl::StrCat("unsupported plugin type \"", info.type(), "\" (want ", kCsiPluginType, ")");
  } else if (absl::Status name = ValidatePluginName(info.name()); !name.ok()) {
    reason = std::string(name.message());
  } else if (!SupportsV1(info.supported_versions())) {
    reason = absl::StrCat("none of the supported versions [",
                          absl::StrJoin(info.supported_versions(), ", "), "] is a CSI 1.x version");
  } else {
    absl::StatusOr<std::string> endpoint = info.endpoint().empty()
                                               ? absl::StatusOr<std::string>(path)
                                               : server::ParseAbsoluteUnixEndpoint(info.endpoint());
    if (!endpoint.ok()) {
      reason = std::string(endpoint.status().message());
    } else {
      record.endpoint = *endpoint;
    }
  }
  if (!IsSocket(path, &record.registered_at)) record.registered_at = clock_->Now();

  bool registered = false;
  if (reason.empty()) {
    absl::MutexLock lock(&mu_);
    auto it = sockets_.find(path);
    if (it == sockets_.end() || it->second.generation != generation) {
      *error = "the socket is gone";  // Finish() drops it
      return Outcome::kRejected;
    }
    absl::Status upserted = registry_->Upsert(record);
    if (upserted.ok()) {
      registered = true;
    } else {
      reason = std::string(upserted.message());
    }
  }

  {
    std::unique_ptr<grpc::ClientContext> context = Context(options_.call_timeout);
    base::ScopedCancelCallback cancel(&stop_, [&context] { context->TryCancel(); });
    pluginregistration::RegistrationStatus notice;
    notice.set_plugin_registered(registered);
    notice.set_error(reason);
    pluginregistration::RegistrationStatusResponse ack;
    grpc::Status status = stub->NotifyRegistrationStatus(context.get(), notice, &ack);
    if (!status.ok()) {
      LOG(WARNING) << "telling " << path << " its registration status: " << status.error_message();
    }
  }
  if (registered) {
    LOG(INFO) << "registered plugin " << record.name << " from " << path << " (endpoint "
              << record.endpoint << ", versions " << absl::StrJoin(record.supported_versions, ",")
              << ")";
  } else {
    LOG(WARNING) << "rejected plugin registration from " << path << ": " << reason;
  }
  *plugin = record.name;
  *error = reason;
  return registered ? Outcome::kRegistered : Outcome::kRejected;
}

bool RegistrationWatcher::Finish(const std::string& path, uint64_t generation, Outcome outcome,
                                 const std::string& plugin, const std::string& error) {
  absl::MutexLock lock(&mu_);
  auto it = sockets_.find(path);
  if (it == sockets_.end() || it->second.generation != generation) return false;
  Socket& socket = it->second;
  socket.running = outcome == Outcome::kRetry;  // the same worker asks again
  socket.state.error = error;
  if (!plugin.empty()) socket.state.plugin = plugin;
  switch (outcome) {
    case Outcome::kRegistered:
      socket.state.phase = SocketState::Phase::kRegistered;
      break;
    case Outcome::kRejected:
      socket.state.phase = SocketState::Phase::kRejected;
      break;
    case Outcome::kRetry:
      socket.state.phase = SocketState::Phase::kPending;
      break;
  }
  return true;
}

}  // namespace lustre_csi::csimanager
