// staging-plugin: a small CSI node plugin for tests that advertises
// STAGE_UNSTAGE_VOLUME. NodeStageVolume bind-mounts the directory named by
// the volume context key "source" at the staging path (--stage-mode=bind), or
// only records the stage and leaves the staging path as it is
// (--stage-mode=record, as a plugin that stages a device or state does);
// NodePublishVolume bind-mounts the staged source at the target (read-only
// when asked) and fails with FAILED_PRECONDITION unless the volume is staged.
// Every stage, publish, unpublish and unstage is appended to --log as
// "<call> <volume id> <path>" (" failed" appended when --fail-once failed it),
// so a test can check the exact sequence of calls.
//
//   staging-plugin --endpoint=unix:///tmp/x.sock --log=/tmp/calls --name=stager.test
//       [--stage-mode=record] [--fail-once=NodePublishVolume,NodeUnstageVolume@2]
//       [--hang=NodePublishVolume@1]
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "pkg/server/endpoint.h"
#include "pkg/server/signals.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/mount_table.h"
#include "proto/csi.grpc.pb.h"

DEFINE_string(endpoint, "", "unix:///path.sock");
DEFINE_string(log, "", "file that records stage and unstage calls");
DEFINE_string(name, "stager.test", "plugin name");
DEFINE_string(stage_mode, "bind",
              "bind: mount the source at the staging path; record: only "
              "remember the stage");
DEFINE_string(hang, "",
              "comma-separated Method or Method@n calls that block until the caller goes away "
              "(a manager killed in the middle of a mount)");
DEFINE_string(fail_once, "",
              "comma-separated methods whose first call (Method) or n-th call (Method@n) fails "
              "with INTERNAL, e.g. NodePublishVolume,NodeUnstageVolume@2");

namespace {

std::mutex mu;
std::map<std::string, std::string> staged;  // staging path -> source (record mode)
std::map<std::string, int> calls;           // per method

void Record(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu);
  std::ofstream(FLAGS_log, std::ios::app) << line << "\n";
}

// Whether the `n`-th call of `method` is named by `list` (Method or Method@n).
bool Names(const std::string& list, const std::string& method, int n) {
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(item, '@');
    int which = 1;
    if (parts.size() == 2 && !absl::SimpleAtoi(parts[1], &which)) which = 0;
    if (parts[0] == method && n == which) return true;
  }
  return false;
}

// Logs the call, blocks it while --hang says so (until the caller is gone),
// and says whether it must fail now (--fail-once, or the caller went away).
bool Enter(const std::string& method, const std::string& volume, const std::string& path,
           grpc::ServerContext* context) {
  bool fail, hang;
  {
    std::lock_guard<std::mutex> lock(mu);
    int n = ++calls[method];
    fail = Names(FLAGS_fail_once, method, n);
    hang = Names(FLAGS_hang, method, n);
  }
  Record(method + " " + volume + " " + path + (fail ? " failed" : "") + (hang ? " hung" : ""));
  while (hang && !context->IsCancelled()) usleep(10000);
  return fail || hang;
}

grpc::Status Injected(const std::string& method) {
  return grpc::Status(grpc::StatusCode::INTERNAL, method + " fails once, as asked");
}

bool IsMountPoint(const std::string& path) {
  struct stat self, parent;
  if (stat(path.c_str(), &self) != 0) return false;
  if (stat((path + "/..").c_str(), &parent) != 0) return false;
  if (self.st_dev != parent.st_dev) return true;
  static lustre_csi::volume::Syscalls* const sys =
      lustre_csi::volume::NewLinuxSyscalls({}).release();
  absl::StatusOr<std::string> text = sys->ReadMountInfo();
  if (!text.ok()) return false;
  absl::StatusOr<std::vector<lustre_csi::volume::MountEntry>> table =
      lustre_csi::volume::ParseMountInfo(*text);
  return table.ok() && lustre_csi::volume::TopMountAt(*table, path).has_value();
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
  grpc::Status NodeStageVolume(grpc::ServerContext* ctx, const csi::v1::NodeStageVolumeRequest* req,
                               csi::v1::NodeStageVolumeResponse*) override {
    const std::string& path = req->staging_target_path();
    if (Enter("NodeStageVolume", req->volume_id(), path, ctx)) return Injected("NodeStageVolume");
    auto it = req->volume_context().find("source");
    if (it == req->volume_context().end()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "volume context needs source");
    }
    if (FLAGS_stage_mode == "record") {
      std::lock_guard<std::mutex> lock(mu);
      staged[path] = it->second;
      return grpc::Status::OK;
    }
    return Bind(it->second, path, false);
  }
  grpc::Status NodeUnstageVolume(grpc::ServerContext* ctx,
                                 const csi::v1::NodeUnstageVolumeRequest* req,
                                 csi::v1::NodeUnstageVolumeResponse*) override {
    const std::string& path = req->staging_target_path();
    if (Enter("NodeUnstageVolume", req->volume_id(), path, ctx))
      return Injected("NodeUnstageVolume");
    if (FLAGS_stage_mode == "record") {
      std::lock_guard<std::mutex> lock(mu);
      staged.erase(path);
      return grpc::Status::OK;
    }
    return Unbind(path);
  }
  grpc::Status NodePublishVolume(grpc::ServerContext* ctx,
                                 const csi::v1::NodePublishVolumeRequest* req,
                                 csi::v1::NodePublishVolumeResponse*) override {
    if (Enter("NodePublishVolume", req->volume_id(), req->target_path(), ctx)) {
      return Injected("NodePublishVolume");
    }
    std::string source = req->staging_target_path();
    if (FLAGS_stage_mode == "record") {
      std::lock_guard<std::mutex> lock(mu);
      auto it = staged.find(source);
      source = it == staged.end() ? "" : it->second;
    } else if (!source.empty() && !IsMountPoint(source)) {
      source.clear();
    }
    if (source.empty()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "volume is not staged");
    }
    return Bind(source, req->target_path(), req->readonly());
  }
  grpc::Status NodeUnpublishVolume(grpc::ServerContext* ctx,
                                   const csi::v1::NodeUnpublishVolumeRequest* req,
                                   csi::v1::NodeUnpublishVolumeResponse*) override {
    if (Enter("NodeUnpublishVolume", req->volume_id(), req->target_path(), ctx)) {
      return Injected("NodeUnpublishVolume");
    }
    return Unbind(req->target_path());
  }
};

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_stage_mode != "bind" && FLAGS_stage_mode != "record") {
    LOG(ERROR) << "--stage-mode must be bind or record";
    return 2;
  }
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  absl::StatusOr<std::string> socket = lustre_csi::server::ParseUnixEndpoint(FLAGS_endpoint);
  if (!socket.ok()) {
    LOG(ERROR) << socket.status();
    return 2;
  }
  lustre_csi::server::BlockTerminationSignals();
  // Served the way another vendor's plugin would be: gRPC's synchronous
  // server, nothing of this project's serving code.
  if (absl::Status prepared = lustre_csi::server::PrepareSocketPath(*socket); !prepared.ok()) {
    LOG(ERROR) << prepared;
    return 1;
  }
  Identity identity;
  Node node;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + *socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&identity);
  builder.RegisterService(&node);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    LOG(ERROR) << "cannot listen on " << *socket;
    return 1;
  }
  lustre_csi::server::WaitForTerminationSignal();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  unlink(socket->c_str());
  return 0;
}
