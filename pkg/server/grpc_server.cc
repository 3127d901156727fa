#include "pkg/server/grpc_server.h"

#include <glog/logging.h>
#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "pkg/base/worker_pool.h"
#include "pkg/server/endpoint.h"
#include "pkg/server/reflection.h"
#include "proto/health.grpc.pb.h"
#include "proto/reflection.grpc.pb.h"

namespace lustre_csi::server {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using ServingStatus = HealthCheckResponse::ServingStatus;
using grpc::reflection::v1alpha::ServerReflection;
using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;

namespace engine_internal {

// What the completion queue hands back: every operation started carries one,
// and the polling thread calls Proceed with the operation's outcome.
class Tag {
 public:
  virtual ~Tag() = default;
  virtual void Proceed(bool ok) = 0;
};

// A call object: counted by the engine from its request to its end, and as
// a call in flight from its arrival to its end.
class CallObject : public Tag {
 public:
  explicit CallObject(Engine* engine);
  ~CallObject() override;

 protected:
  // The call has arrived: it is in flight until this object goes, and the
  // next call of its kind is asked for.
  template <typename Self>
  void Arrived();
  bool arrived() const { return arrived_; }

  Engine* const engine_;

 private:
  bool arrived_ = false;
};

// Unary calls asked for ahead, so that a call arriving finds one waiting.
constexpr int kPendingUnaryRequests = 8;

class UnaryCall;
class CheckCall;
class WatchCall;

}  // namespace engine_internal

using engine_internal::kPendingUnaryRequests;
using engine_internal::Tag;
using engine_internal::UnaryCall;
using engine_internal::WatchCall;

// The asynchronous server: one completion queue, polled by one thread that
// drives every call; workers for the routes that may block.
class Engine {
 public:
  Engine(const Routes& routes, const GrpcServerOptions& options)
      : workers_(std::max(1, options.max_waiting_threads), absl::Seconds(30), 1 << 20),
        reflection_index_(ServiceNames(routes)) {
    for (const Route& route : routes.routes()) routes_.emplace(route.path, route);
  }
  ~Engine();

  void Register(grpc::ServerBuilder& builder) {
    builder.RegisterAsyncGenericService(&generic_);
    builder.RegisterService(&health_);
    builder.RegisterService(&reflection_);
    cq_ = builder.AddCompletionQueue();
  }

  // Starts serving with the server built from Register's builder.
  void Run(std::unique_ptr<grpc::Server> server);

  // Stops: see UnixGrpcServer::Shutdown.
  void Shutdown(absl::Duration grace, const std::string& name);

  void SetServing(bool serving) ABSL_LOCKS_EXCLUDED(health_mu_);

  int Active() const ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    return active_;
  }

  // For the calls, on the polling thread unless said otherwise.
  grpc::ServerCompletionQueue* cq() { return cq_.get(); }
  grpc::AsyncGenericService* generic() { return &generic_; }
  Health::AsyncService* health() { return &health_; }
  ServerReflection::AsyncService* reflection() { return &reflection_; }
  const ReflectionIndex& reflection_index() const { return reflection_index_; }
  // Asks for the next call of a kind (a new call object), unless stopping.
  template <typename Call>
  void Request() {
    if (!closing_) new Call(this);
  }
  // Every call object, from its request to its end (so also the requests
  // still waiting for a call): none may start an operation once the queue
  // is shut down. Those whose call arrived are the calls in flight.
  void ObjectMade() ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    ++objects_;
  }
  void CallArrived() ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    ++active_;
  }
  void ObjectGone(bool arrived) ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    --objects_;
    if (arrived) --active_;
  }
  // The route of `path`, or null.
  const Route* FindRoute(const std::string& path) const {
    auto it = routes_.find(path);
    return it == routes_.end() ? nullptr : &it->second;
  }
  // Runs the call's route inline or hands it to a worker.
  void Serve(UnaryCall* call, const Route& route);
  // The health status now, and whether it is final (the server stops).
  std::pair<ServingStatus, bool> HealthNow() ABSL_LOCKS_EXCLUDED(health_mu_) {
    absl::MutexLock lock(&health_mu_);
    return {status_, health_final_};
  }
  void AddWatch(WatchCall* watch) { watches_.insert(watch); }
  void RemoveWatch(WatchCall* watch) { watches_.erase(watch); }
  // The health status may have changed: update every watch.
  void AlarmFired() ABSL_LOCKS_EXCLUDED(health_mu_);

 private:
  // Wakes the polling thread to send the health status to every watch;
  // any thread.
  void NotifyWatches() ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu_);
  // True once no call object is left, false at `deadline`.
  bool AwaitNoObjects(absl::Time deadline) const ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    auto none = [this]() ABSL_SHARED_LOCKS_REQUIRED(calls_mu_) { return objects_ == 0; };
    return calls_mu_.AwaitWithDeadline(absl::Condition(&none), deadline);
  }

  // The services of the routes, then health and reflection.
  static std::vector<std::string> ServiceNames(const Routes& routes) {
    std::vector<std::string> names = routes.services();
    names.push_back(Health::service_full_name());
    names.push_back(ServerReflection::service_full_name());
    return names;
  }

  // Declared before the server, which must go first.
  grpc::AsyncGenericService generic_;
  Health::AsyncService health_;
  ServerReflection::AsyncService reflection_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::thread poller_;
  base::WorkerPool workers_;
  const ReflectionIndex reflection_index_;
  absl::flat_hash_map<std::string, Route> routes_;  // fixed once built
  std::atomic<bool> closing_{false};

  mutable absl::Mutex calls_mu_;
  int active_ ABSL_GUARDED_BY(calls_mu_) = 0;
  int objects_ ABSL_GUARDED_BY(calls_mu_) = 0;

  absl::Mutex health_mu_;
  ServingStatus status_ ABSL_GUARDED_BY(health_mu_) = HealthCheckResponse::SERVING;
  bool health_final_ ABSL_GUARDED_BY(health_mu_) = false;
  bool alarm_pending_ ABSL_GUARDED_BY(health_mu_) = false;
  bool cq_open_ ABSL_GUARDED_BY(health_mu_) = false;

  absl::flat_hash_set<WatchCall*> watches_;  // polling thread only
};

namespace engine_internal {

CallObject::CallObject(Engine* engine) : engine_(engine) { engine_->ObjectMade(); }
CallObject::~CallObject() { engine_->ObjectGone(arrived_); }

template <typename Self>
void CallObject::Arrived() {
  arrived_ = true;
  engine_->CallArrived();
  engine_->Request<Self>();
}

// A unary call of any method, as bytes: read the request, run the route,
// answer.
class UnaryCall final : public CallObject {
 public:
  explicit UnaryCall(Engine* engine) : CallObject(engine), stream_(&context_) {
    engine_->generic()->RequestCall(&context_, &stream_, engine_->cq(), engine_->cq(), this);
  }

  void Proceed(bool ok) override {
    switch (state_) {
      case State::kRequested:
        if (!ok) {  // the server is shutting down
          delete this;
          return;
        }
        Arrived<UnaryCall>();
        route_ = engine_->FindRoute(context_.method());
        if (route_ == nullptr) {  // answered at once, whatever the client sends
          Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                              absl::StrCat("unknown method ", context_.method())));
          return;
        }
        state_ = State::kReading;
        stream_.Read(&request_, this);
        return;
      case State::kReading:
        if (!ok) {
          Finish(grpc::Status(grpc::StatusCode::INTERNAL, "the call carried no request message"));
          return;
        }
        engine_->Serve(this, *route_);
        return;
      case State::kFinishing:
        delete this;
        return;
    }
  }

  // Runs `route` and answers; on the polling thread or a worker.
  void Answer(const Route& route) { Finish(route.handler(&context_, &request_, &response_)); }

  void Finish(const grpc::Status& status) {
    state_ = State::kFinishing;
    if (status.ok()) {
      stream_.WriteAndFinish(response_, grpc::WriteOptions(), status, this);
    } else {
      stream_.Finish(status, this);
    }
  }

 private:
  enum class State { kRequested, kReading, kFinishing };
  grpc::GenericServerContext context_;
  grpc::GenericServerAsyncReaderWriter stream_;
  grpc::ByteBuffer request_, response_;
  const Route* route_ = nullptr;
  State state_ = State::kRequested;
};

// grpc.health.v1.Health/Check: the overall status, answered inline.
class CheckCall final : public CallObject {
 public:
  explicit CheckCall(Engine* engine) : CallObject(engine), responder_(&context_) {
    engine_->health()->RequestCheck(&context_, &request_, &responder_, engine_->cq(), engine_->cq(),
                                    this);
  }

  void Proceed(bool ok) override {
    if (arrived() || !ok) {  // answered, or the server is shutting down
      delete this;
      return;
    }
    Arrived<CheckCall>();
    if (!request_.service().empty()) {
      responder_.FinishWithError(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                              "no health status for service " + request_.service()),
                                 this);
      return;
    }
    HealthCheckResponse response;
    response.set_status(engine_->HealthNow().first);
    responder_.Finish(response, grpc::Status::OK, this);
  }

 private:
  grpc::ServerContext context_;
  HealthCheckRequest request_;
  grpc::ServerAsyncResponseWriter<HealthCheckResponse> responder_;
};

// grpc.health.v1.Health/Watch: the overall status, then every change, until
// the caller goes or the server stops; SERVICE_UNKNOWN (once, the call kept
// open) for any other name.
// Lives until both its last operation and the call's end have come back.
class WatchCall final : public CallObject {
 public:
  explicit WatchCall(Engine* engine) : CallObject(engine), writer_(&context_), done_(this) {
    context_.AsyncNotifyWhenDone(&done_);
    engine_->health()->RequestWatch(&context_, &request_, &writer_, engine_->cq(), engine_->cq(),
                                    this);
  }

  void Proceed(bool ok) override {
    if (!arrived()) {
      if (!ok) {  // never started: the end of the call is not reported either
        delete this;
        return;
      }
      Arrived<WatchCall>();
      engine_->AddWatch(this);
    } else if (finishing_) {
      finished_ = true;
      MaybeDelete();
      return;
    } else {
      writing_ = false;
      if (!ok) broken_ = true;
    }
    Update();
  }

  // Sends what the caller has not seen yet, or ends the call.
  void Update() {
    if (writing_ || finishing_) return;
    if (ended_ || broken_) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the watch ended"));
      return;
    }
    auto [status, last] = engine_->HealthNow();
    // An unknown service is told so once; the call stays open (the health
    // protocol), until the caller goes or the server stops.
    if (!request_.service().empty()) status = HealthCheckResponse::SERVICE_UNKNOWN;
    if (status != sent_) {
      sent_ = status;
      HealthCheckResponse response;
      response.set_status(status);
      writing_ = true;
      writer_.Write(response, this);
      return;
    }
    if (last) Finish(grpc::Status::OK);
  }

 private:
  class Done final : public Tag {
   public:
    explicit Done(WatchCall* watch) : watch_(watch) {}
    void Proceed(bool) override {
      watch_->ended_ = true;
      watch_->Update();
      watch_->MaybeDelete();
    }

   private:
    WatchCall* const watch_;
  };

  void Finish(const grpc::Status& status) {
    finishing_ = true;
    writer_.Finish(status, this);
  }

  void MaybeDelete() {
    if (!finished_ || !ended_) return;
    engine_->RemoveWatch(this);
    delete this;
  }

  grpc::ServerContext context_;
  HealthCheckRequest request_;
  grpc::ServerAsyncWriter<HealthCheckResponse> writer_;
  Done done_;
  int sent_ = -1;  // no status sent yet
  bool writing_ = false, broken_ = false;
  bool finishing_ = false, finished_ = false, ended_ = false;
};

// grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo: answers each
// request on the polling thread (from the compiled-in descriptors) until the
// caller is done.
class ReflectionCall final : public CallObject {
 public:
  explicit ReflectionCall(Engine* engine) : CallObject(engine), stream_(&context_) {
    engine_->reflection()->RequestServerReflectionInfo(&context_, &stream_, engine_->cq(),
                                                       engine_->cq(), this);
  }

  void Proceed(bool ok) override {
    switch (state_) {
      case State::kRequested:
        if (!ok) {
          delete this;
          return;
        }
        Arrived<ReflectionCall>();
        Read();
        return;
      case State::kReading:
        if (!ok) {  // the caller has sent everything (or gone)
          Finish(grpc::Status::OK);
          return;
        }
        response_ = engine_->reflection_index().Answer(request_);
        state_ = State::kWriting;
        stream_.Write(response_, this);
        return;
      case State::kWriting:
        if (!ok) {
          Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the caller went away"));
          return;
        }
        Read();
        return;
      case State::kFinishing:
        delete this;
        return;
    }
  }

 private:
  enum class State { kRequested, kReading, kWriting, kFinishing };
  void Read() {
    state_ = State::kReading;
    stream_.Read(&request_, this);
  }
  void Finish(const grpc::Status& status) {
    state_ = State::kFinishing;
    stream_.Finish(status, this);
  }

  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<ServerReflectionResponse, ServerReflectionRequest> stream_;
  ServerReflectionRequest request_;
  ServerReflectionResponse response_;
  State state_ = State::kRequested;
};

// Fires at once on the completion queue, to update the health watches on
// the polling thread.
class AlarmTag final : public Tag {
 public:
  explicit AlarmTag(Engine* engine) : engine_(engine) {
    alarm_.Set(engine->cq(), gpr_now(GPR_CLOCK_MONOTONIC), this);
  }
  void Proceed(bool) override {
    engine_->AlarmFired();
    delete this;
  }

 private:
  Engine* const engine_;
  grpc::Alarm alarm_;
};

}  // namespace engine_internal

Engine::~Engine() {
  if (poller_.joinable()) poller_.join();
  if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now()));
  if (cq_ != nullptr && server_ == nullptr) {
    cq_->Shutdown();
    void* tag;
    bool ok;
    while (cq_->Next(&tag, &ok)) {
    }
  }
}

void Engine::Run(std::unique_ptr<grpc::Server> server) {
  server_ = std::move(server);
  {
    absl::MutexLock lock(&health_mu_);
    cq_open_ = true;
  }
  for (int i = 0; i < kPendingUnaryRequests; ++i) Request<UnaryCall>();
  Request<engine_internal::CheckCall>();
  Request<WatchCall>();
  Request<engine_internal::ReflectionCall>();
  poller_ = std::thread([this] {
    void* tag;
    bool ok;
    while (cq_->Next(&tag, &ok)) static_cast<Tag*>(tag)->Proceed(ok);
  });
}

void Engine::Serve(UnaryCall* call, const Route& route) {
  if (route.dispatch == Dispatch::kInline) {
    call->Answer(route);
    return;
  }
  absl::Status started = workers_.Run([call, &route] { call->Answer(route); });
  if (!started.ok()) {
    call->Finish(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, std::string(started.message())));
  }
}

void Engine::SetServing(bool serving) {
  absl::MutexLock lock(&health_mu_);
  if (health_final_) return;
  status_ = serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  NotifyWatches();
}

void Engine::NotifyWatches() {
  if (alarm_pending_ || !cq_open_) return;
  alarm_pending_ = true;
  new engine_internal::AlarmTag(this);
}

void Engine::AlarmFired() {
  {
    absl::MutexLock lock(&health_mu_);
    alarm_pending_ = false;
  }
  // Update never removes a watch: that happens when an operation comes back.
  for (WatchCall* watch : watches_) watch->Update();
}

void Engine::Shutdown(absl::Duration grace, const std::string& name) {
  closing_ = true;
  {
    absl::MutexLock lock(&health_mu_);
    status_ = HealthCheckResponse::NOT_SERVING;
    health_final_ = true;
    NotifyWatches();
  }
  // gRPC's Shutdown(deadline) would wait up to the deadline not only for the
  // calls in flight but also for every connection to finish a graceful
  // close, which a client that is not reading never finishes. So: stop
  // admitting calls (the core's shutdown, which may be started more than
  // once and notifies every caller), wait for the calls in flight only, cut
  // every connection once none is left, and let gRPC finish its shutdown.
  // Calls still running at the deadline are cancelled.
  absl::Time deadline = absl::Now() + grace;
  grpc_completion_queue* notify_cq = grpc_completion_queue_create_for_pluck(nullptr);
  int tag = 0;
  grpc_server_shutdown_and_notify(server_->c_server(), notify_cq, &tag);
  // The requests still waiting for a call come back refused, none is asked
  // for again, and every call admitted before ends (or the grace period
  // does): then no call object is left.
  bool idle = AwaitNoObjects(deadline);
  bool drained = false;
  if (idle) {
    // Every call has answered, but an answer may still be on its way out:
    // cancelling now would turn it into CANCELLED at the client (a publish
    // that mounted, reported as failed). The core says when its calls are
    // gone; a client that does not read may hold that up, so not for long.
    absl::Time until = std::min(deadline, absl::Now() + absl::Seconds(2));
    gpr_timespec wait = gpr_time_add(
        gpr_now(GPR_CLOCK_MONOTONIC),
        gpr_time_from_millis(std::max<int64_t>(0, absl::ToInt64Milliseconds(until - absl::Now())),
                             GPR_TIMESPAN));
    drained = grpc_completion_queue_pluck(notify_cq, &tag, wait, nullptr).type == GRPC_OP_COMPLETE;
  } else {
    LOG(WARNING) << Active() << " call(s) on unix://" << name
                 << " still running after the grace period of " << absl::FormatDuration(grace)
                 << "; cancelling them and waiting for their handlers to return";
  }
  if (!drained) grpc_server_cancel_all_calls(server_->c_server());
  server_->Shutdown(absl::ToChronoTime(absl::Now()));
  if (!drained) {
    grpc_completion_queue_pluck(notify_cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr);
  }
  grpc_completion_queue_shutdown(notify_cq);
  while (
      grpc_completion_queue_pluck(notify_cq, nullptr, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr)
          .type != GRPC_QUEUE_SHUTDOWN) {
  }
  grpc_completion_queue_destroy(notify_cq);
  // The handlers still running on workers answer (a cancelled call) and the
  // polling thread lets their calls go. Only then may the queue shut down.
  if (!AwaitNoObjects(absl::Now() + absl::Seconds(5))) {
    LOG(WARNING) << "unix://" << name << ": waiting for " << Active()
                 << " handler(s) still running to return";
    AwaitNoObjects(absl::InfiniteFuture());
  }
  {
    absl::MutexLock lock(&health_mu_);
    cq_open_ = false;
  }
  cq_->Shutdown();
  poller_.join();
  server_->Wait();
}

absl::StatusOr<std::unique_ptr<UnixGrpcServer>> UnixGrpcServer::Start(
    const std::vector<std::string>& socket_paths, const Routes& routes,
    const GrpcServerOptions& options) {
  if (socket_paths.empty()) return absl::InvalidArgumentError("no socket to serve on");
  if (!routes.status().ok()) return routes.status();
  for (const std::string& path : socket_paths) {
    absl::Status prepared = PrepareSocketPath(path);
    if (!prepared.ok()) return prepared;
  }

  // Our own health service, not gRPC's callback-based one: the callback
  // API's polling threads sleep 100 ms after each idle second and then
  // stall other calls now and then.
  grpc::EnableDefaultHealthCheckService(false);
  auto engine = std::make_unique<Engine>(routes, options);
  grpc::ServerBuilder builder;
  std::vector<int> bound(socket_paths.size(), 0);
  for (size_t i = 0; i < socket_paths.size(); ++i) {
    builder.AddListeningPort(absl::StrCat("unix:", socket_paths[i]),
                             grpc::InsecureServerCredentials(), &bound[i]);
  }
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  engine->Register(builder);

  // The sockets are created by bind(); with this umask they are born 0600.
  mode_t old_umask = umask(0177);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  umask(old_umask);
  std::string unbound;
  for (size_t i = 0; i < socket_paths.size(); ++i) {
    if (server == nullptr || bound[i] == 0) unbound = socket_paths[i];
  }
  if (!unbound.empty()) {
    if (server != nullptr) {
      server->Shutdown();
      for (const std::string& path : socket_paths) unlink(path.c_str());
    }
    return absl::UnavailableError(absl::StrCat("cannot listen on unix socket ", unbound));
  }
  for (const std::string& path : socket_paths) {
    // Belt and braces: the mode is what the contract says, whatever bind did.
    if (chmod(path.c_str(), 0600) != 0) PLOG(WARNING) << "chmod 0600 " << path;
  }
  engine->Run(std::move(server));
  for (const std::string& path : socket_paths) LOG(INFO) << "serving gRPC on unix://" << path;
  return std::unique_ptr<UnixGrpcServer>(new UnixGrpcServer(socket_paths, std::move(engine)));
}

UnixGrpcServer::UnixGrpcServer(std::vector<std::string> socket_paths,
                               std::unique_ptr<Engine> engine)
    : socket_paths_(std::move(socket_paths)), engine_(std::move(engine)) {}

int UnixGrpcServer::InFlight() const { return engine_->Active(); }

UnixGrpcServer::~UnixGrpcServer() { Shutdown(absl::ZeroDuration()); }

void UnixGrpcServer::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  engine_->SetServing(serving);
}

void UnixGrpcServer::CloseSocket(const std::string& socket_path) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  if (std::find(socket_paths_.begin(), socket_paths_.end(), socket_path) == socket_paths_.end() ||
      std::find(closed_.begin(), closed_.end(), socket_path) != closed_.end()) {
    return;
  }
  closed_.push_back(socket_path);
  if (unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    PLOG(WARNING) << "cannot remove socket " << socket_path;
  }
  LOG(INFO) << "closed unix://" << socket_path << " to new connections";
}

void UnixGrpcServer::Shutdown(absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  shut_down_ = true;
  std::string names = absl::StrJoin(socket_paths_, ", unix://");
  engine_->Shutdown(grace, names);
  for (const std::string& path : socket_paths_) {
    if (std::find(closed_.begin(), closed_.end(), path) != closed_.end()) continue;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      PLOG(WARNING) << "cannot remove socket " << path;
    }
  }
  LOG(INFO) << "stopped serving on unix://" << names;
}

}  // namespace lustre_csi::server
