#include "pkg/server/grpc_server.h"

#include <glog/logging.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "pkg/server/endpoint.h"

namespace lustre_csi::server {

absl::StatusOr<std::unique_ptr<UnixGrpcServer>> UnixGrpcServer::Start(
    const std::string& socket_path, const std::vector<grpc::Service*>& services,
    const GrpcServerOptions& options) {
  absl::Status prepared = PrepareSocketPath(socket_path);
  if (!prepared.ok()) return prepared;

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path), grpc::InsecureServerCredentials(),
                           &bound);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  for (grpc::Service* service : services) builder.RegisterService(service);

  // The socket is created by bind(); with this umask it is born 0600.
  mode_t old_umask = umask(0177);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  umask(old_umask);
  if (server == nullptr || bound == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on unix socket ", socket_path));
  }
  // Belt and braces: the mode is what the contract says, whatever bind did.
  if (chmod(socket_path.c_str(), 0600) != 0) {
    PLOG(WARNING) << "chmod 0600 " << socket_path;
  }
  LOG(INFO) << "serving gRPC on unix://" << socket_path;
  return std::unique_ptr<UnixGrpcServer>(new UnixGrpcServer(socket_path, std::move(server)));
}

UnixGrpcServer::UnixGrpcServer(std::string socket_path, std::unique_ptr<grpc::Server> server)
    : socket_path_(std::move(socket_path)), server_(std::move(server)) {}

UnixGrpcServer::~UnixGrpcServer() { Shutdown(absl::ZeroDuration()); }

void UnixGrpcServer::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (server_ == nullptr || shut_down_) return;
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health != nullptr) health->SetServingStatus(serving);
}

void UnixGrpcServer::Shutdown(absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  shut_down_ = true;
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health != nullptr) health->Shutdown();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
  if (unlink(socket_path_.c_str()) != 0 && errno != ENOENT) {
    PLOG(WARNING) << "cannot remove socket " << socket_path_;
  }
  LOG(INFO) << "stopped serving on unix://" << socket_path_;
}

}  // namespace lustre_csi::server
