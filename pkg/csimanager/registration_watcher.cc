#include "pkg/csimanager/registration_watcher.h"

#include <dirent.h>
#include <errno.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "pkg/csimanager/path_segment.h"
#include "pkg/server/endpoint.h"
#include "proto/pluginregistration.grpc.pb.h"

namespace lustre_csi::csimanager {
namespace {

constexpr char kCsiPluginType[] = "CSIPlugin";

bool IsSocket(const std::string& path, absl::Time* mtime = nullptr) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  if (mtime != nullptr) *mtime = absl::TimeFromTimespec(st.st_mtim);
  return true;
}

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

RegistrationWatcher::RegistrationWatcher(Registry* registry, RegistrationWatcherOptions options)
    : registry_(registry), options_(std::move(options)) {}

RegistrationWatcher::~RegistrationWatcher() { Stop(); }

absl::Status RegistrationWatcher::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) return absl::FailedPreconditionError("registration watcher already started");
  struct stat st;
  if (::stat(options_.directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("plugin registration directory ", options_.directory, " does not exist"));
  }
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) {
    return absl::FailedPreconditionError(absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  if (::inotify_add_watch(inotify_fd_, options_.directory.c_str(),
                          IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                              IN_MOVE_SELF | IN_ONLYDIR) < 0) {
    int error = errno;
    ::close(inotify_fd_);
    inotify_fd_ = -1;
    return absl::FailedPreconditionError(
        absl::StrCat("watching ", options_.directory, ": ", std::strerror(error)));
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    return absl::FailedPreconditionError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  started_ = true;
  Scan();
  absl::flat_hash_set<std::string> present;
  for (const auto& [path, socket] : sockets_) present.insert(path);
  absl::Status forgotten = registry_->ForgetMissingRegistrations(present);
  if (!forgotten.ok()) LOG(ERROR) << "forgetting vanished plugin registrations: " << forgotten;
  LOG(INFO) << "watching " << options_.directory << " for plugin registrations (" << sockets_.size()
            << " sockets found)";
  LaunchDue();
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void RegistrationWatcher::Stop() {
  stop_.Cancel();
  Wake();
  if (thread_.joinable()) thread_.join();
  std::vector<Worker> workers;
  {
    absl::MutexLock lock(&mu_);
    workers.swap(workers_);
  }
  for (Worker& worker : workers) worker.thread.join();
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  inotify_fd_ = wake_fd_ = -1;
}

std::map<std::string, RegistrationWatcher::SocketState> RegistrationWatcher::Sockets() {
  absl::MutexLock lock(&mu_);
  std::map<std::string, SocketState> out;
  for (const auto& [path, socket] : sockets_) out.emplace(path, socket.state);
  return out;
}

void RegistrationWatcher::Wake() {
  if (wake_fd_ < 0) return;
  uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof(one)) < 0 && errno != EAGAIN) {
    PLOG(WARNING) << "waking the registration watcher";
  }
}

void RegistrationWatcher::Scan() {
  std::set<std::string> found;
  DIR* dir = ::opendir(options_.directory.c_str());
  if (dir == nullptr) {
    PLOG(ERROR) << "reading " << options_.directory;
    return;
  }
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (!absl::EndsWith(name, ".sock")) continue;
    std::string path = absl::StrCat(options_.directory, "/", name);
    if (IsSocket(path)) found.insert(path);
  }
  ::closedir(dir);
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
  socket.next_attempt = absl::InfinitePast();
  socket.running = false;
  VLOG(1) << "registration socket " << path << " appeared";
}

void RegistrationWatcher::Removed(const std::string& path) {
  sockets_.erase(path);
  absl::Status removed = registry_->Remove(path);
  if (!removed.ok()) LOG(ERROR) << "deregistering " << path << ": " << removed;
  VLOG(1) << "registration socket " << path << " disappeared";
}

void RegistrationWatcher::ReadEvents() {
  alignas(struct inotify_event) char buffer[8192];
  while (true) {
    ssize_t n = ::read(inotify_fd_, buffer, sizeof(buffer));
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN && errno != EINTR) PLOG(ERROR) << "reading inotify events";
      return;
    }
    absl::MutexLock lock(&mu_);
    for (char* p = buffer; p < buffer + n;) {
      const struct inotify_event* event = reinterpret_cast<const struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + event->len;
      if (event->mask & IN_Q_OVERFLOW) {
        LOG(WARNING) << "inotify queue overflowed; rescanning " << options_.directory;
        Scan();
        continue;
      }
      if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        LOG(ERROR) << "plugin registration directory " << options_.directory
                   << " was removed or moved; no more plugins are discovered until restart";
        std::vector<std::string> all;
        for (const auto& [path, socket] : sockets_) all.push_back(path);
        for (const std::string& path : all) Removed(path);
        continue;
      }
      if (event->len == 0) continue;
      std::string name = event->name;
      if (!absl::EndsWith(name, ".sock")) continue;
      std::string path = absl::StrCat(options_.directory, "/", name);
      if (event->mask & (IN_CREATE | IN_MOVED_TO)) {
        if (IsSocket(path)) Added(path);
      } else if (event->mask & (IN_DELETE | IN_MOVED_FROM)) {
        Removed(path);
      }
    }
  }
}

void RegistrationWatcher::LaunchDue() {
  absl::Time now = absl::Now();
  for (auto& [path, socket] : sockets_) {
    if (socket.running || socket.state.phase != SocketState::Phase::kPending ||
        socket.next_attempt > now || stop_.cancelled()) {
      continue;
    }
    socket.running = true;
    socket.state.phase = SocketState::Phase::kRegistering;
    ++socket.state.attempts;
    Worker worker;
    worker.done = std::make_shared<std::atomic<bool>>(false);
    worker.thread =
        std::thread([this, path = path, generation = socket.generation, done = worker.done] {
          Register(path, generation);
          done->store(true);
          Wake();
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
    int timeout_ms = -1;
    {
      absl::MutexLock lock(&mu_);
      absl::Time now = absl::Now();
      for (const auto& [path, socket] : sockets_) {
        if (socket.running || socket.state.phase != SocketState::Phase::kPending) continue;
        int64_t wait = std::max<int64_t>(0, absl::ToInt64Milliseconds(socket.next_attempt - now));
        if (timeout_ms < 0 || wait < timeout_ms) timeout_ms = static_cast<int>(wait);
      }
    }
    struct pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int ready = ::poll(fds, 2, timeout_ms);
    if (ready < 0 && errno != EINTR) PLOG(ERROR) << "poll";
    if (stop_.cancelled()) break;
    if (ready > 0 && (fds[1].revents & POLLIN)) {
      uint64_t count;
      while (::read(wake_fd_, &count, sizeof(count)) > 0) {
      }
    }
    if (ready > 0 && (fds[0].revents & POLLIN)) ReadEvents();
    Reap();
    absl::MutexLock lock(&mu_);
    LaunchDue();
  }
}

void RegistrationWatcher::Register(const std::string& path, uint64_t generation) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(absl::StrCat("unix:", path), grpc::InsecureChannelCredentials());
  std::unique_ptr<pluginregistration::Registration::Stub> stub =
      pluginregistration::Registration::NewStub(channel);

  pluginregistration::PluginInfo info;
  {
    std::unique_ptr<grpc::ClientContext> context = Context(options_.call_timeout);
    base::ScopedCancelCallback cancel(&stop_, [&context] { context->TryCancel(); });
    grpc::Status status = stub->GetInfo(context.get(), pluginregistration::InfoRequest(), &info);
    if (!status.ok()) {
      Finish(path, generation, Outcome::kRetry, "",
             absl::StrCat("GetInfo: ", status.error_message()));
      return;
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
  if (!IsSocket(path, &record.registered_at)) record.registered_at = absl::Now();

  bool registered = false;
  if (reason.empty()) {
    absl::MutexLock lock(&mu_);
    auto it = sockets_.find(path);
    if (it == sockets_.end() || it->second.generation != generation) return;  // gone meanwhile
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
  Finish(path, generation, registered ? Outcome::kRegistered : Outcome::kRejected, record.name,
         reason);
}

void RegistrationWatcher::Finish(const std::string& path, uint64_t generation, Outcome outcome,
                                 const std::string& plugin, const std::string& error) {
  absl::MutexLock lock(&mu_);
  auto it = sockets_.find(path);
  if (it == sockets_.end() || it->second.generation != generation) return;
  Socket& socket = it->second;
  socket.running = false;
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
      socket.next_attempt = absl::Now() + options_.retry_interval;
      VLOG(1) << "registration of " << path << " failed, will retry: " << error;
      break;
  }
}

}  // namespace lustre_csi::csimanager
