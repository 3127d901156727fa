// A gRPC server on unix sockets, as every lustre-csi role serves it.
//
// Start() checks each socket path (a stale socket is replaced, a live one is
// an error), creates the sockets owner-only (0600) with no window in which
// others could connect, and serves the given routes on every one of them,
// together with the standard gRPC health service (grpc.health.v1: Check, and
// Watch streaming every change).
//
// A process serves all its sockets from one server (the node: its CSI socket
// and the kubelet's registration socket). gRPC's poller is process-wide, so
// a second server's polling thread would pick up the first one's events and
// hand each of its calls over to the first one's thread: measured, Probe
// went from 20 to 42 µs of server CPU per call with a second server idle in
// the process.
//
// The server is asynchronous: one polling thread reads every call and runs
// the routes marked Dispatch::kInline at once; the others run on a pool of
// worker threads (routes.h). A call served inline costs no thread hand-over
// at all, which is most of the CPU of a small call on gRPC's synchronous
// server; a call that blocks never holds up the polling thread.
//
// Shutdown() reports NOT_SERVING (open health watches get it and end), stops
// admitting calls, waits for the calls in flight to finish (at most the grace
// period), then cancels those still running and closes every connection at
// once, idle ones included (a client that keeps an idle connection open
// cannot hold the shutdown up), waits for the handlers still running to
// return, and removes the socket file.
//
// The routes' handlers are borrowed and must outlive the server. Start()
// changes the process umask for the duration of the bind; call it before
// starting threads that create files. Shutdown() is safe to call from any
// thread but a handler's, once or more; a handler must not call the server's
// methods (Shutdown holds the server while it waits for the handlers). A
// handler stuck in the kernel holds Shutdown up after its call is cancelled.
#ifndef LUSTRE_CSI_PKG_SERVER_GRPC_SERVER_H_
#define LUSTRE_CSI_PKG_SERVER_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/server/routes.h"

namespace lustre_csi::server {

struct GrpcServerOptions {
  // Requests larger than this are refused with RESOURCE_EXHAUSTED.
  int max_receive_message_bytes = 4 << 20;
  // Worker threads kept waiting for calls once a burst is over (more are
  // started while every worker is busy; the extra ones exit when done).
  // Too few make a busy server start and end a thread for nearly every
  // call; an idle worker costs its stack.
  int max_waiting_threads = 16;
};

class Engine;  // grpc_server.cc

class UnixGrpcServer {
 public:
  static absl::StatusOr<std::unique_ptr<UnixGrpcServer>> Start(
      const std::vector<std::string>& socket_paths, const Routes& routes,
      const GrpcServerOptions& options = {});
  static absl::StatusOr<std::unique_ptr<UnixGrpcServer>> Start(
      const std::string& socket_path, const Routes& routes, const GrpcServerOptions& options = {}) {
    return Start(std::vector<std::string>{socket_path}, routes, options);
  }

  ~UnixGrpcServer();

  UnixGrpcServer(const UnixGrpcServer&) = delete;
  UnixGrpcServer& operator=(const UnixGrpcServer&) = delete;

  // Reports `serving` for the overall health status (service ""), through
  // the standard grpc.health.v1 service.
  void SetServing(bool serving);

  // Removes the socket file at `socket_path` (one of this server's), so that
  // no new connection comes through it (the kubelet forgets a plugin whose
  // registration socket is gone); connections made before are still served.
  void CloseSocket(const std::string& socket_path);

  void Shutdown(absl::Duration grace);

  // Calls being served now, health checks and watches included.
  int InFlight() const;

  // The first socket's path.
  const std::string& socket_path() const { return socket_paths_.front(); }

 private:
  UnixGrpcServer(std::vector<std::string> socket_paths, std::unique_ptr<Engine> engine);

  const std::vector<std::string> socket_paths_;
  const std::unique_ptr<Engine> engine_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> closed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_GRPC_SERVER_H_
