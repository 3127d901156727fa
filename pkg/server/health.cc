#include "pkg/server/health.h"

#include "absl/time/time.h"

namespace lustre_csi::server {

using grpc::health::v1::HealthCheckResponse;

void HealthService::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  Status status = serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  if (status != status_) ++changes_;
  status_ = status;
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (status_ != HealthCheckResponse::NOT_SERVING) ++changes_;
  status_ = HealthCheckResponse::NOT_SERVING;
  shut_down_ = true;
  ++changes_;
}

grpc::Status HealthService::Check(grpc::ServerContext*,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  if (!request->service().empty()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no health status for service " + request->service());
  }
  absl::MutexLock lock(&mu_);
  response->set_status(status_);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  HealthCheckResponse response;
  if (!request->service().empty()) {
    response.set_status(HealthCheckResponse::SERVICE_UNKNOWN);
    writer->Write(response);
    return grpc::Status::OK;
  }
  uint64_t seen = 0;
  bool first = true;
  while (true) {
    bool done;
    {
      absl::MutexLock lock(&mu_);
      // Wake on a change or shutdown; look at the caller now and then.
      auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return first || changes_ != seen; };
      mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(200));
      if (!changed()) {
        if (context->IsCancelled()) return grpc::Status::OK;
        continue;
      }
      first = false;
      seen = changes_;
      response.set_status(status_);
      done = shut_down_;
    }
    if (!writer->Write(response) || done) return grpc::Status::OK;
  }
}

}  // namespace lustre_csi::server
