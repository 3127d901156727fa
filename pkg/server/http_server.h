// The HTTP side of a lustre-csi role: Prometheus metrics and health probes.
//
//   GET /metrics  the registry in Prometheus text format
//   GET /healthz  200 "ok" while the process serves (liveness)
//   GET /readyz   200 "ready", or 503 with the reason from `ready` (readiness)
//
// A deliberately small HTTP/1.x server: one thread accepts and answers one
// connection at a time (scrapes and probes are rare and cheap), reads at most
// 8 KiB of request head with a 2 s timeout, and always closes the connection.
// Only GET and HEAD are served. The registry and the readiness callback are
// borrowed and must outlive the server. Stop() is idempotent and
// thread-safe; the destructor stops.
#ifndef LUSTRE_CSI_PKG_SERVER_HTTP_SERVER_H_
#define LUSTRE_CSI_PKG_SERVER_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/server/metrics.h"

namespace lustre_csi::server {

// Status line, headers and body of the answer to one request head.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Answers `request_head` ("GET /path HTTP/1.1\r\n...") with the three
// endpoints; exposed for tests.
HttpResponse HandleHttpRequest(absl::string_view request_head, const MetricsRegistry* metrics,
                               const std::function<absl::Status()>& ready);

// Splits "host:port" (":port" means all addresses) into its parts.
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(absl::string_view address);

class HttpServer {
 public:
  // Listens on `address` ("127.0.0.1:0" picks a free port).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(absl::string_view address,
                                                           const MetricsRegistry* metrics,
                                                           std::function<absl::Status()> ready);
  ~HttpServer();

  void Stop();
  int port() const { return port_; }

 private:
  HttpServer() = default;
  void Serve();

  const MetricsRegistry* metrics_ = nullptr;
  std::function<absl::Status()> ready_;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};  // a pipe that tells Serve() to return
  std::atomic<bool> stopped_{false};
  std::thread thread_;
  int port_ = 0;
};

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_HTTP_SERVER_H_
