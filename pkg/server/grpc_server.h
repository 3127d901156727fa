// A gRPC server on a unix socket, as every lustre-csi role serves it.
//
// Start() checks the socket path (a stale socket is replaced, a live one is an
// error), creates the socket owner-only (0600) with no window in which others
// could connect, and serves the given services together with the standard
// gRPC health service and server reflection. Shutdown() reports NOT_SERVING,
// waits for the calls in flight to finish (at most the grace period), then
// stops the server: calls still running are cancelled and every connection
// is closed at once, idle ones included (a client that keeps an idle
// connection open cannot hold the shutdown up), and the socket file is
// removed.
//
// The services are borrowed and must outlive the server. Start() changes the
// process umask for the duration of the bind; call it before starting threads
// that create files. Shutdown() is safe to call from any thread, once or more.
#ifndef LUSTRE_CSI_PKG_SERVER_GRPC_SERVER_H_
#define LUSTRE_CSI_PKG_SERVER_GRPC_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lustre_csi::server {

struct GrpcServerOptions {
  // Requests larger than this are refused with RESOURCE_EXHAUSTED.
  int max_receive_message_bytes = 4 << 20;
  // Threads kept waiting for calls once a burst is over. gRPC's synchronous
  // server starts a thread when every thread is busy and ends a thread that
  // finishes a call while this many already wait; too low a number makes a
  // busy server start and end a thread for nearly every call (16 concurrent
  // clients: 2.5 times the CPU per call with gRPC's default of 2). Threads
  // are only started under load; an idle one costs its stack.
  int max_waiting_threads = 16;
};

class CallCounter;  // grpc_server.cc
class HealthService;

class UnixGrpcServer {
 public:
  static absl::StatusOr<std::unique_ptr<UnixGrpcServer>> Start(
      const std::string& socket_path, const std::vector<grpc::Service*>& services,
      const GrpcServerOptions& options = {});

  ~UnixGrpcServer();

  UnixGrpcServer(const UnixGrpcServer&) = delete;
  UnixGrpcServer& operator=(const UnixGrpcServer&) = delete;

  // Reports `serving` for the overall health status ("") and for `service`
  // names, through the standard grpc.health.v1 service.
  void SetServing(bool serving);

  void Shutdown(absl::Duration grace);

  // Calls being served now, of every service (health and reflection too).
  int InFlight() const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  UnixGrpcServer(std::string socket_path, std::shared_ptr<CallCounter> calls,
                 std::unique_ptr<HealthService> health, std::unique_ptr<grpc::Server> server);

  const std::string socket_path_;
  const std::shared_ptr<CallCounter> calls_;
  const std::unique_ptr<HealthService> health_;
  absl::Mutex mu_;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_GRPC_SERVER_H_
