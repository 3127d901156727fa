#include "pkg/server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lustre_csi::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Sends `request` to 127.0.0.1:port and returns the whole answer; empty when
// nothing listens.
std::string Fetch(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, n);
  }
  close(fd);
  return out;
}

std::string Get(int port, const std::string& path) {
  return Fetch(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
}

TEST(ParseHostPortTest, Table) {
  EXPECT_EQ(*ParseHostPort(":29635"), std::make_pair(std::string("0.0.0.0"), 29635));
  EXPECT_EQ(*ParseHostPort("127.0.0.1:0"), std::make_pair(std::string("127.0.0.1"), 0));
  EXPECT_EQ(*ParseHostPort("[::1]:80"), std::make_pair(std::string("::1"), 80));
  EXPECT_FALSE(ParseHostPort("localhost").ok());
  EXPECT_FALSE(ParseHostPort("x:99999").ok());
  EXPECT_FALSE(ParseHostPort("x:port").ok());
}

struct RequestCase {
  const char* head;
  int status;
};

class HandleHttpRequestTest : public testing::TestWithParam<RequestCase> {};

TEST_P(HandleHttpRequestTest, Status) {
  MetricsRegistry registry;
  EXPECT_EQ(HandleHttpRequest(GetParam().head, &registry, nullptr).status, GetParam().status)
      << GetParam().head;
}

INSTANTIATE_TEST_SUITE_P(Table, HandleHttpRequestTest,
                         testing::Values(RequestCase{"GET /metrics HTTP/1.1\r\n\r\n", 200},
                                         RequestCase{"GET /healthz?x=1 HTTP/1.0\r\n\r\n", 200},
                                         RequestCase{"HEAD /readyz HTTP/1.1\r\n\r\n", 200},
                                         RequestCase{"GET /nope HTTP/1.1\r\n\r\n", 404},
                                         RequestCase{"POST /metrics HTTP/1.1\r\n\r\n", 405},
                                         RequestCase{"garbage\r\n\r\n", 400}, RequestCase{"", 400},
                                         RequestCase{"GET /metrics SPDY/3\r\n\r\n", 400}));

TEST(HttpServerTest, ServesMetricsHealthAndReadiness) {
  MetricsRegistry registry;
  registry.AddCounter("probes_total", "Probes.")->Increment();
  std::atomic<bool> ready{false};
  auto server = HttpServer::Start("127.0.0.1:0", &registry, [&]() -> absl::Status {
    if (ready) return absl::OkStatus();
    return absl::UnavailableError("lustre client missing");
  });
  ASSERT_TRUE(server.ok()) << server.status();
  int port = (*server)->port();
  ASSERT_GT(port, 0);

  std::string metrics = Get(port, "/metrics");
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(metrics, HasSubstr("\r\n\r\n# HELP probes_total Probes.\n"));
  EXPECT_THAT(metrics, HasSubstr("probes_total 1\n"));

  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 200 OK\r\n"));
  std::string not_ready = Get(port, "/readyz");
  EXPECT_THAT(not_ready, StartsWith("HTTP/1.1 503 "));
  EXPECT_THAT(not_ready, HasSubstr("lustre client missing"));
  ready = true;
  EXPECT_THAT(Get(port, "/readyz"), StartsWith("HTTP/1.1 200 OK\r\n"));

  // A client that sends nothing does not wedge the server for others.
  int idle = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 200 OK\r\n"));
  close(idle);

  (*server)->Stop();
  EXPECT_EQ(Get(port, "/healthz"), "");
}

TEST(HttpServerTest, BusyPortIsUnavailable) {
  MetricsRegistry registry;
  auto first = HttpServer::Start("127.0.0.1:0", &registry, nullptr);
  ASSERT_TRUE(first.ok());
  auto second =
      HttpServer::Start("127.0.0.1:" + std::to_string((*first)->port()), &registry, nullptr);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace lustre_csi::server
