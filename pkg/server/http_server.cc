#include "pkg/server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <glog/logging.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lustre_csi::server {
namespace {

constexpr size_t kMaxRequestHead = 8192;
constexpr int kReadTimeoutMs = 2000;

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Reads until the end of the request head, the size limit or the timeout.
std::string ReadHead(int fd) {
  std::string head;
  char buf[1024];
  while (head.size() < kMaxRequestHead && head.find("\r\n\r\n") == std::string::npos &&
         head.find("\n\n") == std::string::npos) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, kReadTimeoutMs) <= 0) break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    head.append(buf, static_cast<size_t>(n));
  }
  return head;
}

}  // namespace

HttpResponse HandleHttpRequest(absl::string_view request_head, const MetricsRegistry* metrics,
                               const std::function<absl::Status()>& ready) {
  HttpResponse res;
  absl::string_view line = request_head.substr(0, request_head.find_first_of("\r\n"));
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/1.")) {
    res.status = 400;
    res.body = "bad request\n";
    return res;
  }
  if (parts[0] != "GET" && parts[0] != "HEAD") {
    res.status = 405;
    res.body = "only GET and HEAD\n";
    return res;
  }
  absl::string_view path = parts[1].substr(0, parts[1].find('?'));
  if (path == "/metrics") {
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = metrics != nullptr ? metrics->Render() : "";
  } else if (path == "/healthz") {
    res.body = "ok\n";
  } else if (path == "/readyz") {
    absl::Status status = ready ? ready() : absl::OkStatus();
    if (status.ok()) {
      res.body = "ready\n";
    } else {
      res.status = 503;
      res.body = absl::StrCat("not ready: ", status.message(), "\n");
    }
  } else {
    res.status = 404;
    res.body = "not found; try /metrics, /healthz or /readyz\n";
  }
  return res;
}

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(absl::string_view address) {
  size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", address, "' must be host:port or :port"));
  }
  std::string host(address.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("address '", address, "' has a bad port"));
  }
  return std::make_pair(host, port);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(absl::string_view address,
                                                              const MetricsRegistry* metrics,
                                                              std::function<absl::Status()> ready) {
  absl::StatusOr<std::pair<std::string, int>> host_port = ParseHostPort(address);
  if (!host_port.ok()) return host_port.status();
  const auto& [host, port] = *host_port;

  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "address '", address, "': host must be a numeric IP (", gai_strerror(rc), ")"));
  }
  std::unique_ptr<HttpServer> http(new HttpServer());
  http->metrics_ = metrics;
  http->ready_ = std::move(ready);
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, found->ai_addr, found->ai_addrlen) != 0 || listen(fd, 16) != 0) {
    std::string err = strerror(errno);
    if (fd >= 0) close(fd);
    freeaddrinfo(found);
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", address, ": ", err));
  }
  freeaddrinfo(found);
  sockaddr_storage bound = {};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  http->port_ = bound.ss_family == AF_INET6
                    ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                    : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  http->listen_fd_ = fd;
  if (pipe2(http->wake_fd_, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", strerror(errno)));
  }
  http->thread_ = std::thread([server = http.get()] { server->Serve(); });
  LOG(INFO) << "serving /metrics, /healthz and /readyz on " << host << ":" << http->port_;
  return http;
}

void HttpServer::Serve() {
  while (!stopped_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      PLOG(ERROR) << "HTTP server poll";
      return;
    }
    if (fds[1].revents != 0 || stopped_) return;
    int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    std::string head = ReadHead(conn);
    HttpResponse res = HandleHttpRequest(head, metrics_, ready_);
    bool head_only = absl::StartsWith(head, "HEAD ");
    std::string out = absl::StrCat(
        "HTTP/1.1 ", res.status, " ", Reason(res.status), "\r\nContent-Type: ", res.content_type,
        "\r\nContent-Length: ", res.body.size(), "\r\nConnection: close\r\n\r\n");
    if (!head_only) out += res.body;
    WriteAll(conn, out);
    close(conn);
  }
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (stopped_.exchange(true)) return;
  if (wake_fd_[1] >= 0) {
    char byte = 1;
    (void)!write(wake_fd_[1], &byte, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]}) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace lustre_csi::server
