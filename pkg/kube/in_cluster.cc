#include "pkg/kube/in_cluster.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pkg/kube/http.h"

namespace lustre_csi::kube {

std::string InClusterConfig::Authority() const { return kube::Authority(host, port); }

absl::StatusOr<InClusterConfig> InClusterConfigFrom(
    const std::function<std::string(const char*)>& getenv,
    const std::function<bool(const std::string&)>& exists, const std::string& service_account_dir) {
  InClusterConfig config;
  config.host = getenv("KUBERNETES_SERVICE_HOST");
  if (config.host.empty()) {
    return absl::NotFoundError("KUBERNETES_SERVICE_HOST is not set: not running in a pod");
  }
  std::string port = getenv("KUBERNETES_SERVICE_PORT");
  if (!port.empty()) {
    int p = 0;
    if (!absl::SimpleAtoi(port, &p) || p < 1 || p > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("KUBERNETES_SERVICE_PORT \"", port, "\" is not a port number"));
    }
    config.port = p;
  }
  config.token_file = absl::StrCat(service_account_dir, "/token");
  config.ca_file = absl::StrCat(service_account_dir, "/ca.crt");
  if (!exists(config.token_file)) {
    return absl::NotFoundError(absl::StrCat("no service account token at ", config.token_file,
                                            " (automountServiceAccountToken off?)"));
  }
  return config;
}

absl::StatusOr<std::string> ReadToken(const std::string& token_file) {
  std::ifstream in(token_file);
  if (!in.is_open()) return absl::NotFoundError(absl::StrCat("cannot open ", token_file));
  std::stringstream buf;
  buf << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(buf.str()));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(token_file, " is empty"));
  return token;
}

}  // namespace lustre_csi::kube
