// Where the Kubernetes API server is and how to speak to it from a pod, read
// as every in-cluster client reads it: KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT from the environment (an IPv6 address is
// bracketed in the authority), the service account's token and CA bundle
// from its directory (/var/run/secrets/kubernetes.io/serviceaccount). The
// token is a path, not a value: tokens rotate, and callers re-read it for
// every request (ReadToken).
#ifndef LUSTRE_CSI_PKG_KUBE_IN_CLUSTER_H_
#define LUSTRE_CSI_PKG_KUBE_IN_CLUSTER_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace lustre_csi::kube {

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

struct InClusterConfig {
  std::string host;  // as given: "10.96.0.1", "fd00::1" or a name
  int port = 443;
  std::string token_file;  // <dir>/token
  std::string ca_file;     // <dir>/ca.crt

  // "10.96.0.1:443", "[fd00::1]:443".
  std::string Authority() const;
};

// `getenv` returns "" for an unset variable; `exists` tells whether a file
// is there. NOT_FOUND (saying what is missing) outside a cluster: no
// KUBERNETES_SERVICE_HOST, or no token file. INVALID_ARGUMENT for a port
// that is not a number from 1 to 65535.
absl::StatusOr<InClusterConfig> InClusterConfigFrom(
    const std::function<std::string(const char*)>& getenv,
    const std::function<bool(const std::string&)>& exists,
    const std::string& service_account_dir = kServiceAccountDir);

// The token, surrounding whitespace removed; NOT_FOUND when the file cannot
// be opened, INVALID_ARGUMENT when it is empty.
absl::StatusOr<std::string> ReadToken(const std::string& token_file);

}  // namespace lustre_csi::kube

#endif  // LUSTRE_CSI_PKG_KUBE_IN_CLUSTER_H_
