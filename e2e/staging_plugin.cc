// staging-plugin: a small CSI node plugin for tests that advertises
// STAGE_UNSTAGE_VOLUME. NodeStageVolume bind-mounts the directory named by
// the volume context key "source" at the staging path; NodePublishVolume
// bind-mounts the staging path at the target (read-only when asked). Every
// stage and unstage is appended to --log, so a test can tell how often the
// volume was staged and when it was unstaged.
//
//   staging-plugin --endpoint=unix:///tmp/x.sock --log=/tmp/calls --name=stager.test
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <mutex>

#include "pkg/server/endpoint.h"
#include "pkg/server/grpc_server.h"
#include "pkg/server/signals.h"
#include "proto/csi.grpc.pb.h"

DEFINE_string(endpoint, "", "unix:///path.sock");
DEFINE_string(log, "", "file that records stage and unstage calls");
DEFINE_string(name, "stager.test", "plugin name");

namespace {

std::mutex log_mu;

void Record(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mu);
  std::ofstream(FLAGS_log, std::ios::app) << line << "\n";
}

bool IsMountPoint(const std::string& path) {
  struct stat self, parent;
  if (stat(path.c_str(), &self) != 0) return false;
  if (stat((path + "/..").c_str(), &parent) != 0) return false;
  if (self.st_dev != parent.st_dev) return true;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" " + path + " ") != std::string::npos) return true;
  }
  return false;
}

grpc::Status Errno(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, what + ": " + strerror(errno));
}

grpc::Status Bind(const std::string& source, const std::string& target, bool read_only) {
  mkdir(target.c_str(), 0750);
  if (IsMountPoint(target)) return grpc::Status::OK;
  if (mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Errno("bind " + source + " -> " + target);
  }
  if (read_only &&
      mount(nullptr, target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
    return Errno("remount read-only " + target);
  }
  return grpc::Status::OK;
}

grpc::Status Unbind(const std::string& target) {
  while (IsMountPoint(target)) {
    if (umount2(target.c_str(), MNT_DETACH) != 0) return Errno("unmount " + target);
  }
  rmdir(target.c_str());
  return grpc::Status::OK;
}

class Identity final : public csi::v1::Identity::Service {
  grpc::Status GetPluginInfo(grpc::ServerContext*, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse* res) override {
    res->set_name(FLAGS_name);
    res->set_vendor_version("0.1.0");
    return grpc::Status::OK;
  }
  grpc::Status GetPluginCapabilities(grpc::ServerContext*,
                                     const csi::v1::GetPluginCapabilitiesRequest*,
                                     csi::v1::GetPluginCapabilitiesResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status Probe(grpc::ServerContext*, const csi::v1::ProbeRequest*,
                     csi::v1::ProbeResponse* res) override {
    res->mutable_ready()->set_value(true);
    return grpc::Status::OK;
  }
};

class Node final : public csi::v1::Node::Service {
  grpc::Status NodeGetCapabilities(grpc::ServerContext*, const csi::v1::NodeGetCapabilitiesRequest*,
                                   csi::v1::NodeGetCapabilitiesResponse* res) override {
    res->add_capabilities()->mutable_rpc()->set_type(
        csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
    return grpc::Status::OK;
  }
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse* res) override {
    res->set_node_id("stager-node");
    return grpc::Status::OK;
  }
  grpc::Status NodeStageVolume(grpc::ServerContext*, const csi::v1::NodeStageVolumeRequest* req,
                               csi::v1::NodeStageVolumeResponse*) override {
    auto it = req->volume_context().find("source");
    if (it == req->volume_context().end()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "volume context needs source");
    }
    Record("stage " + req->volume_id() + " " + req->staging_target_path());
    return Bind(it->second, req->staging_target_path(), false);
  }
  grpc::Status NodeUnstageVolume(grpc::ServerContext*, const csi::v1::NodeUnstageVolumeRequest* req,
                                 csi::v1::NodeUnstageVolumeResponse*) override {
    Record("unstage " + req->volume_id() + " " + req->staging_target_path());
    return Unbind(req->staging_target_path());
  }
  grpc::Status NodePublishVolume(grpc::ServerContext*, const csi::v1::NodePublishVolumeRequest* req,
                                 csi::v1::NodePublishVolumeResponse*) override {
    if (req->staging_target_path().empty() || !IsMountPoint(req->staging_target_path())) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "volume is not staged");
    }
    return Bind(req->staging_target_path(), req->target_path(), req->readonly());
  }
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*,
                                   const csi::v1::NodeUnpublishVolumeRequest* req,
                                   csi::v1::NodeUnpublishVolumeResponse*) override {
    return Unbind(req->target_path());
  }
};

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  absl::StatusOr<std::string> socket = lustre_csi::server::ParseUnixEndpoint(FLAGS_endpoint);
  if (!socket.ok()) {
    LOG(ERROR) << socket.status();
    return 2;
  }
  lustre_csi::server::BlockTerminationSignals();
  Identity identity;
  Node node;
  auto server = lustre_csi::server::UnixGrpcServer::Start(*socket, {&identity, &node});
  if (!server.ok()) {
    LOG(ERROR) << server.status();
    return 1;
  }
  lustre_csi::server::WaitForTerminationSignal();
  (*server)->Shutdown(absl::Seconds(1));
  return 0;
}
