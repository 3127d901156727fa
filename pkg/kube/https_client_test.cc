// The HTTPS client against a server that accepts connections and never
// answers (an API server that has stopped): a call ends at its timeout,
// naming the step it waited in.
#include "pkg/kube/https_client.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace lustre_csi::kube {
namespace {

using tcp = boost::asio::ip::tcp;

// A self-signed CA made for this test (openssl req -x509, P-256): the client
// loads it before connecting; no server here ever shows a certificate.
constexpr char kCa[] = R"(-----BEGIN CERTIFICATE-----
MIIBljCCATugAwIBAgIUX1V55UrFDyAp7tlkL8NlSeRmnPowCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUaHR0cHMtY2xpZW50LXRlc3QtY2EwIBcNMjYxMTI4MDEzNTQ3
WhgPMjEyNjExMDQwMTM1NDdaMB8xHTAbBgNVBAMMFGh0dHBzLWNsaWVudC10ZXN0
LWNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEY1Vebp8UHNPXrAIMCDMB0Kf6
ayDA13XuSaZOb5BiJlR5aaILvxFFLwfv8Q+3RDEXxmIcNUiIDA38FakTvUmUiKNT
MFEwHQYDVR0OBBYEFFzrkxdzB0uEgwP/VKRyTbTMS4rkMB8GA1UdIwQYMBaAFFzr
kxdzB0uEgwP/VKRyTbTMS4rkMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID
SQAwRgIhAIFaUAmQgpkP5FGII5aR5+3tLNPP7OoS8XKow5s3lWg1AiEAkrA9BriL
A1Nu/mtRexIOIzgZ+Dd7K2BGzmn0M+SWV6k=
-----END CERTIFICATE-----
)";

class SilentServerTest : public testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("TEST_TMPDIR");
    ca_file_ = std::string(dir == nullptr ? "/tmp" : dir) + "/https_client_test_ca.pem";
    std::ofstream(ca_file_) << kCa;
    // Listening: the kernel completes each connection, nobody ever reads.
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
    acceptor_.listen();
    options_.host = "127.0.0.1";
    options_.port = acceptor_.local_endpoint().port();
    options_.ca_file = ca_file_;
  }
  void TearDown() override { std::remove(ca_file_.c_str()); }

  HttpRequest Get() { return HttpRequest{"GET", "/api/v1/nodes/n1", {}, ""}; }

  std::string ca_file_;
  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_{ioc_};
  HttpsClientOptions options_;
};

TEST_F(SilentServerTest, ACallEndsAtItsTimeout) {
  options_.timeout = absl::Milliseconds(300);
  std::unique_ptr<HttpClient> client = NewHttpsClient(options_);
  absl::Time start = absl::Now();
  absl::StatusOr<HttpResponse> res = client->Do(Get());
  EXPECT_EQ(res.status().code(), absl::StatusCode::kDeadlineExceeded) << res.status();
  EXPECT_TRUE(absl::StrContains(res.status().message(), "TLS handshake")) << res.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace lustre_csi::kube
