#include "pkg/server/grpc_server.h"

#include <glog/logging.h>
#include <grpc/grpc.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/support/server_interceptor.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "pkg/server/endpoint.h"
#include "pkg/server/health.h"

namespace lustre_csi::server {

// Counts calls from the moment gRPC hands them to a service until they are
// done, through an interceptor that every call gets.
class CallCounter {
 public:
  void Add(int delta) {
    absl::MutexLock lock(&mu_);
    active_ += delta;
  }
  int Active() const {
    absl::MutexLock lock(&mu_);
    return active_;
  }
  // True when no call is in flight before `deadline`.
  bool AwaitIdle(absl::Time deadline) const {
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return active_ == 0; };
    return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
  }

 private:
  mutable absl::Mutex mu_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
};

namespace {

class CountingInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit CountingInterceptor(std::shared_ptr<CallCounter> calls) : calls_(std::move(calls)) {
    calls_->Add(1);
  }
  ~CountingInterceptor() override { calls_->Add(-1); }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    methods->Proceed();
  }

 private:
  std::shared_ptr<CallCounter> calls_;
};

class CountingInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CountingInterceptorFactory(std::shared_ptr<CallCounter> calls)
      : calls_(std::move(calls)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo*) override {
    return new CountingInterceptor(calls_);
  }

 private:
  std::shared_ptr<CallCounter> calls_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UnixGrpcServer>> UnixGrpcServer::Start(
    const std::string& socket_path, const std::vector<grpc::Service*>& services,
    const GrpcServerOptions& options) {
  absl::Status prepared = PrepareSocketPath(socket_path);
  if (!prepared.ok()) return prepared;

  // Our own synchronous health service, not gRPC's callback-based one.
  grpc::EnableDefaultHealthCheckService(false);
  auto health = std::make_unique<HealthService>();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path), grpc::InsecureServerCredentials(),
                           &bound);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              std::max(1, options.max_waiting_threads));
  for (grpc::Service* service : services) builder.RegisterService(service);
  builder.RegisterService(health.get());
  auto calls = std::make_shared<CallCounter>();
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> counting;
  counting.push_back(std::make_unique<CountingInterceptorFactory>(calls));
  builder.experimental().SetInterceptorCreators(std::move(counting));

  // The socket is created by bind(); with this umask it is born 0600.
  mode_t old_umask = umask(0177);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  umask(old_umask);
  if (server == nullptr || bound == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on unix socket ", socket_path));
  }
  // Belt and braces: the mode is what the contract says, whatever bind did.
  if (chmod(socket_path.c_str(), 0600) != 0) {
    PLOG(WARNING) << "chmod 0600 " << socket_path;
  }
  LOG(INFO) << "serving gRPC on unix://" << socket_path;
  return std::unique_ptr<UnixGrpcServer>(
      new UnixGrpcServer(socket_path, std::move(calls), std::move(health), std::move(server)));
}

UnixGrpcServer::UnixGrpcServer(std::string socket_path, std::shared_ptr<CallCounter> calls,
                               std::unique_ptr<HealthService> health,
                               std::unique_ptr<grpc::Server> server)
    : socket_path_(std::move(socket_path)),
      calls_(std::move(calls)),
      health_(std::move(health)),
      server_(std::move(server)) {}

int UnixGrpcServer::InFlight() const { return calls_->Active(); }

UnixGrpcServer::~UnixGrpcServer() { Shutdown(absl::ZeroDuration()); }

void UnixGrpcServer::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (server_ == nullptr || shut_down_) return;
  health_->SetServing(serving);
}

void UnixGrpcServer::Shutdown(absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  shut_down_ = true;
  health_->Shutdown();
  // gRPC's Shutdown(deadline) would wait up to the deadline not only for the
  // calls in flight but also for every connection to finish a graceful
  // close, which a client that is not reading never finishes. So: stop
  // admitting calls (the core's shutdown, which may be started more than
  // once and notifies every caller), wait for the calls in flight only, cut
  // every connection once none is left, and let gRPC finish its shutdown.
  // Calls still running at the deadline are cancelled.
  absl::Time deadline = absl::Now() + grace;
  // An unregistered pluck queue, as grpc::Server's own Shutdown uses for the
  // same call.
  grpc_completion_queue* cq = grpc_completion_queue_create_for_pluck(nullptr);
  int tag = 0;
  grpc_server_shutdown_and_notify(server_->c_server(), cq, &tag);
  // A call gRPC admitted just before the shutdown may not have reached a
  // handler (and the count) yet: idle must hold for a moment.
  bool idle = false;
  while (!idle && calls_->AwaitIdle(deadline)) {
    absl::SleepFor(std::min(absl::Milliseconds(50), deadline - absl::Now()));
    idle = calls_->Active() == 0;
  }
  if (!idle) {
    LOG(WARNING) << calls_->Active() << " call(s) on unix://" << socket_path_
                 << " still running after the grace period of " << absl::FormatDuration(grace)
                 << "; cancelling them";
  }
  grpc_server_cancel_all_calls(server_->c_server());
  server_->Shutdown(absl::ToChronoTime(absl::Now()));
  grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr);
  grpc_completion_queue_shutdown(cq);
  while (
      grpc_completion_queue_pluck(cq, nullptr, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr).type !=
      GRPC_QUEUE_SHUTDOWN) {
  }
  grpc_completion_queue_destroy(cq);
  server_->Wait();
  if (unlink(socket_path_.c_str()) != 0 && errno != ENOENT) {
    PLOG(WARNING) << "cannot remove socket " << socket_path_;
  }
  LOG(INFO) << "stopped serving on unix://" << socket_path_;
}

}  // namespace lustre_csi::server
