// The gRPC health checking protocol (grpc.health.v1) as a synchronous
// service, so that a server needs no callback-API machinery for it: gRPC's
// default health service uses the callback API, whose polling threads (on
// this gRPC) sleep 100 ms after each idle second and then stall the calls
// of synchronous services now and then.
//
// One status for the whole server (service ""): Check answers it, and
// NOT_FOUND for any other service name; Watch sends it, then every change,
// until the caller goes or Shutdown(); other names get SERVICE_UNKNOWN.
// Thread-safe.
#ifndef LUSTRE_CSI_PKG_SERVER_HEALTH_H_
#define LUSTRE_CSI_PKG_SERVER_HEALTH_H_

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "proto/health.grpc.pb.h"

namespace lustre_csi::server {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  // SERVING until told otherwise.
  void SetServing(bool serving);
  // NOT_SERVING for good; open watches get it and end.
  void Shutdown();

  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;
  absl::Mutex mu_;
  Status status_ ABSL_GUARDED_BY(mu_) = grpc::health::v1::HealthCheckResponse::SERVING;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_HEALTH_H_
