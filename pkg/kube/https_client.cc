#include "pkg/kube/https_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"

namespace lustre_csi::kube {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

class HttpsClient : public HttpClient {
 public:
  explicit HttpsClient(HttpsClientOptions options) : options_(std::move(options)) {}

  absl::StatusOr<HttpResponse> Do(const HttpRequest& request) override {
    ssl::context ctx(ssl::context::tls_client);
    beast::error_code ec;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                    ec);
    ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    ctx.load_verify_file(options_.ca_file, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("loading the CA bundle ", options_.ca_file, ": ", ec.message()));
    }
    net::io_context ioc;
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    stream.set_verify_callback(ssl::host_name_verification(options_.host));
    const net::ip::address address = net::ip::make_address(options_.host, ec);
    const bool is_address = !ec;
    // SNI carries names only.
    if (!is_address && !SSL_set_tlsext_host_name(stream.native_handle(), options_.host.c_str())) {
      return absl::InternalError("setting the TLS server name");
    }

    const http::verb verb = http::string_to_verb(request.method);
    if (verb == http::verb::unknown) {
      return absl::InvalidArgumentError(absl::StrCat("unknown method ", request.method));
    }
    http::request<http::string_body> req{verb, request.target, 11};
    req.set(http::field::host, Authority(options_.host, options_.port));
    req.set(http::field::connection, "close");
    for (const auto& [name, value] : request.headers) req.set(name, value);
    req.body() = request.body;
    req.prepare_payload();

    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_body);
    beast::flat_buffer buffer;
    tcp::resolver resolver(ioc);
    const char* stage = "resolve";
    beast::error_code failed;
    bool done = false;
    auto fail = [&](const char* at, beast::error_code e) {
      stage = at;
      failed = e;
    };
    const auto timeout = std::chrono::nanoseconds(absl::ToInt64Nanoseconds(options_.timeout));
    auto on_connect = [&](beast::error_code e, const tcp::endpoint&) {
      if (e) return fail("connect", e);
      stream.async_handshake(ssl::stream_base::client, [&](beast::error_code e) {
        if (e) return fail("TLS handshake", e);
        http::async_write(stream, req, [&](beast::error_code e, size_t) {
          if (e) return fail("send", e);
          http::async_read(stream, buffer, parser, [&](beast::error_code e, size_t) {
            if (e) return fail("receive", e);
            done = true;
          });
        });
      });
    };
    if (is_address) {
      // An address (as KUBERNETES_SERVICE_HOST is) needs no resolver, and so
      // none of the C library's name services, which a static binary in an
      // empty root does not have.
      std::vector<tcp::endpoint> endpoints = {
          tcp::endpoint(address, static_cast<uint16_t>(options_.port))};
      beast::get_lowest_layer(stream).expires_after(timeout);
      beast::get_lowest_layer(stream).async_connect(endpoints, on_connect);
    } else {
      resolver.async_resolve(options_.host, std::to_string(options_.port),
                             [&](beast::error_code e, tcp::resolver::results_type results) {
                               if (e) return fail("resolve", e);
                               beast::get_lowest_layer(stream).expires_after(timeout);
                               beast::get_lowest_layer(stream).async_connect(results, on_connect);
                             });
    }
    // The stream's expiry bounds each step after resolving; this bounds the
    // whole exchange, resolving included.
    ioc.run_for(timeout + std::chrono::seconds(1));
    const std::string what = absl::StrCat(request.method, " https://",
                                          std::string(req[http::field::host]), request.target);
    if (done) {
      HttpResponse out;
      out.status = static_cast<int>(parser.get().result_int());
      out.body = std::move(parser.get().body());
      return out;
    }
    if (!failed && !ioc.stopped()) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": no answer within ", absl::FormatDuration(options_.timeout)));
    }
    if (failed == beast::error::timeout) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": ", stage, " timed out after ",
                                                      absl::FormatDuration(options_.timeout)));
    }
    std::string reason = failed.message();
    if (failed.category() == net::error::get_ssl_category()) {
      long verify = SSL_get_verify_result(stream.native_handle());
      if (verify != X509_V_OK) {
        reason = absl::StrCat(reason, " (", X509_verify_cert_error_string(verify), ")");
      }
    }
    return absl::UnavailableError(absl::StrCat(what, ": ", stage, ": ", reason));
  }

 private:
  const HttpsClientOptions options_;
};

}  // namespace

std::unique_ptr<HttpClient> NewHttpsClient(HttpsClientOptions options) {
  return std::make_unique<HttpsClient>(std::move(options));
}

}  // namespace lustre_csi::kube
