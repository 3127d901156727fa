#include "pkg/server/routes.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace lustre_csi::server {

void Routes::Add(const std::string& service, const std::string& method,
                 const std::string& request_type, const std::string& response_type,
                 Dispatch dispatch, RawUnaryHandler handler) {
  std::string path = absl::StrCat("/", service, "/", method);
  absl::Status problem;
  const google::protobuf::MethodDescriptor* found =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
          absl::StrCat(service, ".", method));
  if (found == nullptr) {
    problem = absl::InvalidArgumentError(absl::StrCat("no method ", path, " in the protos"));
  } else if (found->client_streaming() || found->server_streaming()) {
    problem = absl::InvalidArgumentError(absl::StrCat(path, " streams; only unary is routed"));
  } else if (found->input_type()->full_name() != request_type ||
             found->output_type()->full_name() != response_type) {
    problem = absl::InvalidArgumentError(absl::StrCat(
        path, " takes ", found->input_type()->full_name(), " and returns ",
        found->output_type()->full_name(), ", not ", request_type, " and ", response_type));
  } else {
    for (const Route& route : routes_) {
      if (route.path == path) {
        problem = absl::InvalidArgumentError(absl::StrCat(path, " is routed twice"));
      }
    }
  }
  if (!problem.ok()) {
    if (status_.ok()) status_ = problem;
    return;
  }
  routes_.push_back(Route{std::move(path), dispatch, std::move(handler)});
  if (std::find(services_.begin(), services_.end(), service) == services_.end()) {
    services_.push_back(service);
  }
}

}  // namespace lustre_csi::server
