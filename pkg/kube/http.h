// The one HTTP exchange the Kubernetes client needs: a request, its answer.
// HttpClient is the seam: HttpsClient (https_client.h) speaks HTTP/1.1 over
// verified TLS; tests use a fake.
#ifndef LUSTRE_CSI_PKG_KUBE_HTTP_H_
#define LUSTRE_CSI_PKG_KUBE_HTTP_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::kube {

// "host:port", an IPv6 address in brackets: "[fd00::1]:443".
inline std::string Authority(absl::string_view host, int port) {
  bool ipv6 = host.find(':') != absl::string_view::npos;
  return absl::StrCat(ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", port);
}

struct HttpRequest {
  std::string method;  // "GET", "PATCH"
  std::string target;  // "/api/v1/nodes/n1"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct HttpResponse {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // OK with the response for any HTTP status; UNAVAILABLE when the server
  // cannot be reached or the exchange breaks off (TLS verification failures
  // included, with the reason), DEADLINE_EXCEEDED when it takes too long.
  virtual absl::StatusOr<HttpResponse> Do(const HttpRequest& request) = 0;
};

}  // namespace lustre_csi::kube

#endif  // LUSTRE_CSI_PKG_KUBE_HTTP_H_
