// Routes: the table of unary gRPC methods a UnixGrpcServer serves, each with
// its handler and where the handler runs.
//
// A service adds its methods with Unary(), naming the generated service and
// the method, and pointing at a handler with the usual synchronous signature
// (`grpc::Status Method(grpc::ServerContext*, const Req*, Res*)`). The method
// is checked against the generated descriptors: a name that the service does
// not have, or request and response types that are not the method's, make
// status() an error, and UnixGrpcServer::Start refuses the table. A method
// that no route names is answered UNIMPLEMENTED.
//
// Dispatch says where a call runs. kInline runs it on the server's polling
// thread as soon as the request is read: no thread hand-over, the cheapest
// way to answer, and the right one for handlers that return in microseconds
// and never block (no system call that can hang, no lock held across one).
// Everything else is kWorker: it runs on a worker thread, so a mount that
// hangs never holds up the calls behind it.
//
// The handler's ServerContext is an asynchronous call's: its deadline,
// metadata and peer may be read, but not IsCancelled(), which gRPC only
// answers for an asynchronous call after its end has been reported.
#ifndef LUSTRE_CSI_PKG_SERVER_ROUTES_H_
#define LUSTRE_CSI_PKG_SERVER_ROUTES_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace lustre_csi::server {

enum class Dispatch { kInline, kWorker };

// A unary handler over serialized messages: parses `request`, calls the
// method, and fills `response` when the status is OK.
using RawUnaryHandler = std::function<grpc::Status(
    grpc::ServerContext* context, grpc::ByteBuffer* request, grpc::ByteBuffer* response)>;

struct Route {
  std::string path;  // as on the wire: "/csi.v1.Identity/Probe"
  Dispatch dispatch = Dispatch::kWorker;
  RawUnaryHandler handler;
};

class Routes {
 public:
  // Routes `service`'s method `method` (service as in
  // csi::v1::Identity::service_full_name(), method as in the .proto) to
  // `(impl->*fn)`. `impl` is borrowed and must outlive the server.
  template <typename Impl, typename Request, typename Response>
  void Unary(const std::string& service, const std::string& method, Impl* impl,
             grpc::Status (Impl::*fn)(grpc::ServerContext*, const Request*, Response*),
             Dispatch dispatch) {
    Add(service, method, Request::descriptor()->full_name(), Response::descriptor()->full_name(),
        dispatch,
        [impl, fn](grpc::ServerContext* context, grpc::ByteBuffer* raw_request,
                   grpc::ByteBuffer* raw_response) {
          Request request;
          grpc::Status parsed =
              grpc::SerializationTraits<Request>::Deserialize(raw_request, &request);
          if (!parsed.ok()) return parsed;
          Response response;
          grpc::Status status = (impl->*fn)(context, &request, &response);
          if (!status.ok()) return status;
          bool own_buffer = false;
          return grpc::SerializationTraits<Response>::Serialize(response, raw_response,
                                                                &own_buffer);
        });
  }

  // OK, or what was wrong with the first bad route.
  const absl::Status& status() const { return status_; }
  const std::vector<Route>& routes() const { return routes_; }
  // The services routed, each once, in the order first routed.
  const std::vector<std::string>& services() const { return services_; }

 private:
  void Add(const std::string& service, const std::string& method, const std::string& request_type,
           const std::string& response_type, Dispatch dispatch, RawUnaryHandler handler);

  std::vector<Route> routes_;
  std::vector<std::string> services_;
  absl::Status status_;
};

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_ROUTES_H_
