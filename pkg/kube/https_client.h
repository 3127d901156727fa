// HttpClient over TLS: HTTP/1.1, one connection per request, the server's
// certificate verified against a CA bundle (read again for every request, as
// the service account's may change) and its name or IP address checked
// against the host asked for. Verification is never skipped. Built on
// Boost.Beast and Asio (Debian's libboost-dev) with the OpenSSL the binary
// already links.
#ifndef LUSTRE_CSI_PKG_KUBE_HTTPS_CLIENT_H_
#define LUSTRE_CSI_PKG_KUBE_HTTPS_CLIENT_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "pkg/kube/http.h"

namespace lustre_csi::kube {

struct HttpsClientOptions {
  std::string host;  // a name, an IPv4 or an IPv6 address (no brackets)
  int port = 443;
  std::string ca_file;                         // PEM bundle of the CAs to trust
  absl::Duration timeout = absl::Seconds(30);  // for the whole exchange
  size_t max_body = 8 << 20;
};

// Do: FAILED_PRECONDITION when the CA bundle cannot be loaded; UNAVAILABLE
// naming the step (resolve, connect, TLS handshake, send, receive) and its
// error, e.g. "certificate verify failed"; DEADLINE_EXCEEDED past the
// timeout. Thread-safe (each call has its own connection).
std::unique_ptr<HttpClient> NewHttpsClient(HttpsClientOptions options);

}  // namespace lustre_csi::kube

#endif  // LUSTRE_CSI_PKG_KUBE_HTTPS_CLIENT_H_
