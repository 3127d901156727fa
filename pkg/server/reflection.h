// The answers of gRPC server reflection (grpc.reflection.v1alpha), from the
// descriptors compiled into the binary: the services a server serves, and
// for a file name or a symbol the file that defines it with every file it
// depends on. Plain logic: grpc_server.cc carries the stream. Thread-safe.
#ifndef LUSTRE_CSI_PKG_SERVER_REFLECTION_H_
#define LUSTRE_CSI_PKG_SERVER_REFLECTION_H_

#include <string>
#include <vector>

#include "proto/reflection.pb.h"

namespace lustre_csi::server {

class ReflectionIndex {
 public:
  // `services`: full names ("csi.v1.Node"), listed in this order.
  explicit ReflectionIndex(std::vector<std::string> services);

  // The answer to one request; what is not found is an error_response
  // (NOT_FOUND), a request naming nothing INVALID_ARGUMENT.
  grpc::reflection::v1alpha::ServerReflectionResponse Answer(
      const grpc::reflection::v1alpha::ServerReflectionRequest& request) const;

  const std::vector<std::string>& services() const { return services_; }

 private:
  const std::vector<std::string> services_;
};

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_REFLECTION_H_
