// csi-client: a CSI client for any endpoint, for demos and benchmarks.
//
//   csi-client --endpoint=unix:///csi.sock --rpc=Probe
//   csi-client --endpoint=... --rpc=CreateVolume --name=pvc-1 \
//       --params=mgs-ip-address=10.0.0.4,fs-name=lustrefs
//   csi-client --endpoint=... --rpc=NodePublishVolume --volume-id=ID \
//       --target=/mnt/t --params=mgs-ip-address=...,fs-name=... [--readonly]
//   csi-client --endpoint=... --rpc=PublishUnpublish --target=/mnt/t%d \
//       --params=... --n=10000 --concurrency=16
//
// With --n=1 (the default) it prints the reply in protobuf text format and
// exits 0 on success, 1 on an error status (printed as CODE: message). With
// --n>1 it repeats the call from --concurrency threads and prints count,
// errors, throughput and latency percentiles (p50 to p99.9 and the maximum),
// and with --server-pid the server's CPU time per call; the threads share one
// connection unless --channels says otherwise. In --target, --name and CreateVolume's parameter
// values, %d is replaced by the call's index, so concurrent calls use distinct volumes.
#include <gflags/gflags.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "bench/load_report.h"
#include "google/protobuf/text_format.h"
#include "proto/csi.grpc.pb.h"

DEFINE_string(endpoint, "", "CSI endpoint, unix:///path.sock");
DEFINE_string(rpc, "Probe",
              "GetPluginInfo, GetPluginCapabilities, Probe, NodeGetInfo, NodeGetCapabilities, "
              "NodeGetVolumeStats, NodePublishVolume, NodeUnpublishVolume, PublishUnpublish, "
              "CreateVolume, DeleteVolume, CreateDelete, ValidateVolumeCapabilities, "
              "ControllerGetCapabilities");
DEFINE_string(params, "", "key=value[,key=value]: parameters or volume context");
DEFINE_string(name, "vol-%d", "CreateVolume name");
DEFINE_int64(required_bytes, 0, "CreateVolume capacity_range.required_bytes (0: none)");
DEFINE_string(volume_id, "vol", "volume id");
DEFINE_string(target, "", "target or volume path");
DEFINE_bool(readonly, false, "publish read-only");
DEFINE_string(mount_flags, "", "comma-separated mount flags");
DEFINE_string(volume_mount_groups, "",
              "comma-separated groups: call i asks for the (i mod count)-th as the "
              "capability's volume_mount_group (empty: none)");
DEFINE_int64(n, 1, "number of calls (pairs count as one)");
DEFINE_int32(concurrency, 1, "client threads");
DEFINE_int32(timeout_seconds, 120, "per-call deadline");
DEFINE_int32(server_pid, 0,
             "also print the CPU time (user + system) this process spent per call during the "
             "run, from /proc/<pid>/stat");
DEFINE_int32(channels, 1,
             "connections to open, shared round-robin by the threads (1: one connection for "
             "all, as the kubelet calls a plugin; 0: one per thread)");

namespace {

using Clock = std::function<grpc::Status(int64_t index)>;

std::string Fill(const std::string& pattern, int64_t index) {
  return absl::StrReplaceAll(pattern, {{"%d", std::to_string(index)}});
}

std::map<std::string, std::string> Params() {
  std::map<std::string, std::string> out;
  for (absl::string_view kv : absl::StrSplit(FLAGS_params, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    out[parts[0]] = parts.size() > 1 ? parts[1] : "";
  }
  return out;
}

csi::v1::VolumeCapability Capability(int64_t index) {
  csi::v1::VolumeCapability cap;
  auto* mount = cap.mutable_mount();
  std::vector<std::string> groups =
      absl::StrSplit(FLAGS_volume_mount_groups, ',', absl::SkipEmpty());
  if (!groups.empty()) mount->set_volume_mount_group(groups[index % groups.size()]);
  for (absl::string_view f : absl::StrSplit(FLAGS_mount_flags, ',', absl::SkipEmpty())) {
    mount->add_mount_flags(std::string(f));
  }
  cap.mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
  return cap;
}

class Client {
 public:
  explicit Client(std::shared_ptr<grpc::Channel> channel)
      : identity_(csi::v1::Identity::NewStub(channel)),
        node_(csi::v1::Node::NewStub(channel)),
        controller_(csi::v1::Controller::NewStub(channel)) {}

  // Makes call `index`; the reply goes to `reply` when not null.
  grpc::Status Call(const std::string& rpc, int64_t index, std::string* reply) {
    const auto params = Params();
    auto ctx = [] {
      auto c = std::make_unique<grpc::ClientContext>();
      c->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(FLAGS_timeout_seconds));
      return c;
    };
    auto done = [reply](const google::protobuf::Message& m, grpc::Status s) {
      if (reply != nullptr && s.ok()) google::protobuf::TextFormat::PrintToString(m, reply);
      return s;
    };
    if (rpc == "GetPluginInfo") {
      csi::v1::GetPluginInfoResponse r;
      return done(r, identity_->GetPluginInfo(ctx().get(), {}, &r));
    }
    if (rpc == "GetPluginCapabilities") {
      csi::v1::GetPluginCapabilitiesResponse r;
      return done(r, identity_->GetPluginCapabilities(ctx().get(), {}, &r));
    }
    if (rpc == "Probe") {
      csi::v1::ProbeResponse r;
      return done(r, identity_->Probe(ctx().get(), {}, &r));
    }
    if (rpc == "NodeGetInfo") {
      csi::v1::NodeGetInfoResponse r;
      return done(r, node_->NodeGetInfo(ctx().get(), {}, &r));
    }
    if (rpc == "NodeGetCapabilities") {
      csi::v1::NodeGetCapabilitiesResponse r;
      return done(r, node_->NodeGetCapabilities(ctx().get(), {}, &r));
    }
    if (rpc == "ControllerGetCapabilities") {
      csi::v1::ControllerGetCapabilitiesResponse r;
      return done(r, controller_->ControllerGetCapabilities(ctx().get(), {}, &r));
    }
    if (rpc == "NodeGetVolumeStats") {
      csi::v1::NodeGetVolumeStatsRequest q;
      q.set_volume_id(Fill(FLAGS_volume_id, index));
      q.set_volume_path(Fill(FLAGS_target, index));
      csi::v1::NodeGetVolumeStatsResponse r;
      return done(r, node_->NodeGetVolumeStats(ctx().get(), q, &r));
    }
    if (rpc == "NodePublishVolume" || rpc == "PublishUnpublish") {
      csi::v1::NodePublishVolumeRequest q;
      q.set_volume_id(Fill(FLAGS_volume_id, index));
      q.set_target_path(Fill(FLAGS_target, index));
      q.set_readonly(FLAGS_readonly);
      *q.mutable_volume_capability() = Capability(index);
      q.mutable_volume_context()->insert(params.begin(), params.end());
      csi::v1::NodePublishVolumeResponse r;
      grpc::Status s = node_->NodePublishVolume(ctx().get(), q, &r);
      if (rpc == "NodePublishVolume" || !s.ok()) return done(r, s);
      return Call("NodeUnpublishVolume", index, reply);
    }
    if (rpc == "NodeUnpublishVolume") {
      csi::v1::NodeUnpublishVolumeRequest q;
      q.set_volume_id(Fill(FLAGS_volume_id, index));
      q.set_target_path(Fill(FLAGS_target, index));
      csi::v1::NodeUnpublishVolumeResponse r;
      return done(r, node_->NodeUnpublishVolume(ctx().get(), q, &r));
    }
    if (rpc == "CreateVolume" || rpc == "CreateDelete") {
      csi::v1::CreateVolumeRequest q;
      q.set_name(Fill(FLAGS_name, index));
      *q.add_volume_capabilities() = Capability(index);
      for (const auto& [key, value] : params) (*q.mutable_parameters())[key] = Fill(value, index);
      if (FLAGS_required_bytes > 0)
        q.mutable_capacity_range()->set_required_bytes(FLAGS_required_bytes);
      csi::v1::CreateVolumeResponse r;
      grpc::Status s = controller_->CreateVolume(ctx().get(), q, &r);
      if (rpc == "CreateVolume" || !s.ok()) return done(r, s);
      csi::v1::DeleteVolumeRequest d;
      d.set_volume_id(r.volume().volume_id());
      csi::v1::DeleteVolumeResponse dr;
      return done(dr, controller_->DeleteVolume(ctx().get(), d, &dr));
    }
    if (rpc == "DeleteVolume") {
      csi::v1::DeleteVolumeRequest q;
      q.set_volume_id(Fill(FLAGS_volume_id, index));
      csi::v1::DeleteVolumeResponse r;
      return done(r, controller_->DeleteVolume(ctx().get(), q, &r));
    }
    if (rpc == "ValidateVolumeCapabilities") {
      csi::v1::ValidateVolumeCapabilitiesRequest q;
      q.set_volume_id(Fill(FLAGS_volume_id, index));
      *q.add_volume_capabilities() = Capability(index);
      q.mutable_volume_context()->insert(params.begin(), params.end());
      csi::v1::ValidateVolumeCapabilitiesResponse r;
      return done(r, controller_->ValidateVolumeCapabilities(ctx().get(), q, &r));
    }
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unknown --rpc " + rpc);
  }

 private:
  std::unique_ptr<csi::v1::Identity::Stub> identity_;
  std::unique_ptr<csi::v1::Node::Stub> node_;
  std::unique_ptr<csi::v1::Controller::Stub> controller_;
};

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("a CSI client for demos and benchmarks; see the source header");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::string endpoint = FLAGS_endpoint;
  if (endpoint.rfind("unix://", 0) == 0) endpoint = "unix:" + endpoint.substr(7);
  if (endpoint.empty()) {
    std::cerr << "csi-client: --endpoint is required\n";
    return 2;
  }
  int channels = FLAGS_channels > 0 ? FLAGS_channels : std::max(1, FLAGS_concurrency);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // its own connection
    clients.push_back(std::make_unique<Client>(
        grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args)));
  }
  Client& client = *clients[0];

  if (FLAGS_n <= 1) {
    std::string reply;
    grpc::Status s = client.Call(FLAGS_rpc, 0, &reply);
    if (!s.ok()) {
      std::cerr << FLAGS_rpc << ": "
                << absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code())) << ": "
                << s.error_message() << "\n";
      return 1;
    }
    std::cout << reply;
    return 0;
  }

  return lustre_csi::bench::RunLoad(absl::StrCat("rpc=", FLAGS_rpc), FLAGS_n, FLAGS_concurrency,
                                    FLAGS_server_pid, [&clients](int thread, int64_t index) {
                                      return clients[thread % clients.size()]->Call(FLAGS_rpc,
                                                                                    index, nullptr);
                                    });
}
