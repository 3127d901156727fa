// End-to-end: the real lustre-csi binary (node in local mount mode, and
// controller) over real unix sockets, making real bind mounts inside this
// test's private mount namespace.
#include <arpa/inet.h>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"
#include "proto/pluginregistration.grpc.pb.h"
#include "proto/reflection.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::IsEmpty;

class DriverE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    // The "file system": <root>/lustrefs on a tmpfs of its own, so statfs
    // reports its real size.
    ASSERT_EQ(mkdir(tmp_.Join("lustre").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(tmp_.Join("lustre/lustrefs").c_str(), 0755), 0);
    ASSERT_EQ(mount("tmpfs", tmp_.Join("lustre/lustrefs").c_str(), "tmpfs", 0, "size=64m"), 0);
    ASSERT_EQ(mkdir(tmp_.Join("pods").c_str(), 0755), 0);
    node_socket_ = tmp_.Join("node.sock");
    controller_socket_ = tmp_.Join("controller.sock");
    StartNode();
    controller_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "controller",
                                 "--endpoint=unix://" + controller_socket_},
        tmp_.Join("controller.log"));
    ASSERT_TRUE(WaitForSocket(controller_socket_, absl::Seconds(10)).ok())
        << ReadFile(tmp_.Join("controller.log"));
    controller_stub_ = csi::v1::Controller::NewStub(UnixChannel(controller_socket_));
  }

  void TearDown() override {
    node_process_.reset();
    controller_.reset();
  }

  void StartNode() {
    node_process_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "node", "--nodeid=node-1", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + node_socket_},
        tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(node_socket_, absl::Seconds(10)).ok())
        << ReadFile(tmp_.Join("node.log"));
    // A fresh channel: one that saw the old server die sits in reconnect backoff.
    auto node_channel = UnixChannel(node_socket_);
    node_ = csi::v1::Node::NewStub(node_channel);
    identity_ = csi::v1::Identity::NewStub(node_channel);
  }

  static csi::v1::VolumeCapability Capability(
      csi::v1::VolumeCapability::AccessMode::Mode mode =
          csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER) {
    return MountCapability(mode);
  }

  csi::v1::Volume CreateVolume(const std::string& name, const std::string& sub_dir = "") {
    csi::v1::CreateVolumeRequest req;
    req.set_name(name);
    *req.add_volume_capabilities() = Capability();
    (*req.mutable_parameters())["mgs-ip-address"] = "10.0.0.4";
    (*req.mutable_parameters())["fs-name"] = "lustrefs";
    if (!sub_dir.empty()) (*req.mutable_parameters())["sub-dir"] = sub_dir;
    csi::v1::CreateVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status status = controller_stub_->CreateVolume(&ctx, req, &res);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return res.volume();
  }

  csi::v1::NodePublishVolumeRequest PublishRequest(const csi::v1::Volume& volume,
                                                   const std::string& target, bool read_only) {
    return MakePublishRequest(volume.volume_id(), target,
                              {volume.volume_context().begin(), volume.volume_context().end()},
                              read_only);
  }

  grpc::Status Publish(const csi::v1::NodePublishVolumeRequest& req) {
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return node_->NodePublishVolume(&ctx, req, &res);
  }

  grpc::Status Unpublish(const std::string& volume_id, const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id(volume_id);
    req.set_target_path(target);
    grpc::ClientContext ctx;
    csi::v1::NodeUnpublishVolumeResponse res;
    return node_->NodeUnpublishVolume(&ctx, req, &res);
  }

  TempDir tmp_;
  std::string node_socket_, controller_socket_;
  std::unique_ptr<Subprocess> node_process_, controller_;
  std::unique_ptr<csi::v1::Node::Stub> node_;
  std::unique_ptr<csi::v1::Identity::Stub> identity_;
  std::unique_ptr<csi::v1::Controller::Stub> controller_stub_;
};

TEST_F(DriverE2eTest, IdentityAndSocketPermissions) {
  grpc::ClientContext ctx;
  csi::v1::GetPluginInfoResponse info;
  ASSERT_TRUE(identity_->GetPluginInfo(&ctx, {}, &info).ok());
  EXPECT_EQ(info.name(), "azurelustre.csi.azure.com");
  EXPECT_FALSE(info.vendor_version().empty());
  grpc::ClientContext probe_ctx;
  csi::v1::ProbeResponse probe;
  ASSERT_TRUE(identity_->Probe(&probe_ctx, {}, &probe).ok());
  EXPECT_TRUE(probe.ready().value());
  struct stat st;
  ASSERT_EQ(stat(node_socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// What grpcurl sees: the node's services through server reflection, and
// csi.proto with what it imports for any of them.
TEST_F(DriverE2eTest, ServerReflectionDescribesTheCsiServices) {
  using grpc::reflection::v1alpha::ServerReflection;
  using grpc::reflection::v1alpha::ServerReflectionRequest;
  using grpc::reflection::v1alpha::ServerReflectionResponse;
  auto stub = ServerReflection::NewStub(UnixChannel(node_socket_));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->ServerReflectionInfo(&ctx);
  ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  ServerReflectionResponse listed;
  ASSERT_TRUE(stream->Read(&listed));
  std::vector<std::string> names;
  for (const auto& service : listed.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names,
              testing::IsSupersetOf({"csi.v1.Identity", "csi.v1.Node", "grpc.health.v1.Health",
                                     "grpc.reflection.v1alpha.ServerReflection"}));
  ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("csi.v1.Node.NodePublishVolume");
  ASSERT_TRUE(stream->Write(symbol));
  ServerReflectionResponse files;
  ASSERT_TRUE(stream->Read(&files));
  ASSERT_FALSE(files.has_error_response()) << files.error_response().error_message();
  std::vector<std::string> file_names;
  for (const std::string& bytes : files.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    file_names.push_back(file.name());
  }
  ASSERT_FALSE(file_names.empty());
  EXPECT_EQ(file_names.back(), csi::v1::NodePublishVolumeRequest::descriptor()->file()->name());
  EXPECT_GT(file_names.size(), 1u) << "csi.proto's imports are missing";
  EXPECT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(DriverE2eTest, FullLifecycleTwoTargetsReadWriteAndReadOnly) {
  csi::v1::Volume volume = CreateVolume("pvc-e2e", "${pvc.metadata.name}");
  ASSERT_FALSE(volume.volume_id().empty());
  // The provisioner would pass PVC facts; the kubelet adds pod facts.
  (*volume.mutable_volume_context())["csi.storage.k8s.io/pvc/name"] = "data";

  std::string rw = tmp_.Join("pods/rw"), ro = tmp_.Join("pods/ro");
  ASSERT_TRUE(Publish(PublishRequest(volume, rw, false)).ok());
  ASSERT_TRUE(Publish(PublishRequest(volume, ro, true)).ok());
  // Idempotent repeats.
  EXPECT_TRUE(Publish(PublishRequest(volume, rw, false)).ok());
  EXPECT_TRUE(Publish(PublishRequest(volume, ro, true)).ok());
  // The same target with a different read-only state is another mount.
  EXPECT_EQ(Publish(PublishRequest(volume, rw, true)).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);

  // Data written through one target is read through the other, and lands in
  // the sub-dir of the file system.
  ASSERT_TRUE(WriteFile(rw + "/hello.txt", "hello lustre").ok());
  EXPECT_EQ(ReadFile(ro + "/hello.txt"), "hello lustre");
  EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/data/hello.txt")), "hello lustre");
  // Read-only really is read-only.
  EXPECT_FALSE(WriteFile(ro + "/nope.txt", "x").ok());

  csi::v1::NodeGetVolumeStatsRequest stats_req;
  stats_req.set_volume_id(volume.volume_id());
  stats_req.set_volume_path(rw);
  csi::v1::NodeGetVolumeStatsResponse stats;
  grpc::ClientContext stats_ctx;
  ASSERT_TRUE(node_->NodeGetVolumeStats(&stats_ctx, stats_req, &stats).ok());
  ASSERT_EQ(stats.usage_size(), 2);
  EXPECT_EQ(stats.usage(0).total(), 64 << 20);
  EXPECT_GT(stats.usage(1).total(), 0);
  EXPECT_FALSE(stats.volume_condition().abnormal());

  ASSERT_TRUE(Unpublish(volume.volume_id(), rw).ok());
  ASSERT_TRUE(Unpublish(volume.volume_id(), ro).ok());
  EXPECT_TRUE(Unpublish(volume.volume_id(), ro).ok());  // idempotent
  EXPECT_NE(access(rw.c_str(), F_OK), 0) << "target directory left behind";
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
  // The data stays on the file system.
  EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/data/hello.txt")), "hello lustre");

  // Stats of an unpublished path: NOT_FOUND.
  grpc::ClientContext gone_ctx;
  EXPECT_EQ(node_->NodeGetVolumeStats(&gone_ctx, stats_req, &stats).error_code(),
            grpc::StatusCode::NOT_FOUND);

  for (int i = 0; i < 2; ++i) {
    csi::v1::DeleteVolumeRequest del;
    del.set_volume_id(volume.volume_id());
    csi::v1::DeleteVolumeResponse del_res;
    grpc::ClientContext del_ctx;
    EXPECT_TRUE(controller_stub_->DeleteVolume(&del_ctx, del, &del_res).ok());
  }
}

struct BadPublish {
  const char* name;
  std::function<void(csi::v1::NodePublishVolumeRequest*)> mutate;
  grpc::StatusCode code;
};

TEST_F(DriverE2eTest, BadInputGetsTheRightCodeAndMountsNothing) {
  csi::v1::Volume volume = CreateVolume("pvc-bad");
  const std::string target = tmp_.Join("pods/bad");
  const std::vector<BadPublish> cases = {
      {"no volume id", [](auto* r) { r->clear_volume_id(); }, grpc::INVALID_ARGUMENT},
      {"no target", [](auto* r) { r->clear_target_path(); }, grpc::INVALID_ARGUMENT},
      {"no capability", [](auto* r) { r->clear_volume_capability(); }, grpc::INVALID_ARGUMENT},
      {"block", [](auto* r) { r->mutable_volume_capability()->mutable_block(); },
       grpc::INVALID_ARGUMENT},
      {"relative target", [](auto* r) { r->set_target_path("pods/x"); }, grpc::INVALID_ARGUMENT},
      {"dotdot target", [&](auto* r) { r->set_target_path(target + "/../../x"); },
       grpc::INVALID_ARGUMENT},
      {"no context", [](auto* r) { r->clear_volume_context(); }, grpc::INVALID_ARGUMENT},
      {"unknown key", [](auto* r) { (*r->mutable_volume_context())["bogus"] = "1"; },
       grpc::INVALID_ARGUMENT},
      {"sub-dir traversal",
       [](auto* r) { (*r->mutable_volume_context())["sub-dir"] = "../../etc"; },
       grpc::INVALID_ARGUMENT},
      // A leading '/' goes, as the Go driver trims it: the '..' after it stays.
      {"absolute sub-dir that climbs",
       [](auto* r) { (*r->mutable_volume_context())["sub-dir"] = "/../etc"; },
       grpc::INVALID_ARGUMENT},
      {"template escape",
       [](auto* r) {
         (*r->mutable_volume_context())["sub-dir"] = "${pod.metadata.name}";
         (*r->mutable_volume_context())["csi.storage.k8s.io/pod.name"] = "..";
       },
       grpc::INVALID_ARGUMENT},
      {"option injection",
       [](auto* r) {
         r->mutable_volume_capability()->mutable_mount()->add_mount_flags("noatime,remount");
       },
       grpc::INVALID_ARGUMENT},
      {"bind option",
       [](auto* r) { r->mutable_volume_capability()->mutable_mount()->add_mount_flags("bind"); },
       grpc::INVALID_ARGUMENT},
      {"unknown fs", [](auto* r) { (*r->mutable_volume_context())["fs-name"] = "nofs"; },
       grpc::NOT_FOUND},
  };
  for (const BadPublish& c : cases) {
    csi::v1::NodePublishVolumeRequest req = PublishRequest(volume, target, false);
    c.mutate(&req);
    grpc::Status status = Publish(req);
    EXPECT_EQ(status.error_code(), c.code) << c.name << ": " << status.error_message();
    EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty()) << c.name;
    EXPECT_NE(access(target.c_str(), F_OK), 0) << c.name << ": target left behind";
  }
  // A sub-dir that escapes through a symlink inside the file system.
  ASSERT_EQ(symlink("/etc", tmp_.Join("lustre/lustrefs/evil").c_str()), 0);
  csi::v1::NodePublishVolumeRequest req = PublishRequest(volume, target, false);
  (*req.mutable_volume_context())["sub-dir"] = "evil";
  EXPECT_EQ(Publish(req).error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());

  // The process keeps serving.
  EXPECT_TRUE(Publish(PublishRequest(volume, target, false)).ok());
  EXPECT_TRUE(Unpublish(volume.volume_id(), target).ok());
}

TEST_F(DriverE2eTest, ControllerCodes) {
  csi::v1::ValidateVolumeCapabilitiesRequest validate;
  validate.set_volume_id("no-such-volume");
  *validate.add_volume_capabilities() = Capability();
  csi::v1::ValidateVolumeCapabilitiesResponse res;
  grpc::ClientContext ctx;
  EXPECT_EQ(controller_stub_->ValidateVolumeCapabilities(&ctx, validate, &res).error_code(),
            grpc::NOT_FOUND);

  csi::v1::Volume volume = CreateVolume("pvc-validate");
  validate.set_volume_id(volume.volume_id());
  grpc::ClientContext ok_ctx;
  ASSERT_TRUE(controller_stub_->ValidateVolumeCapabilities(&ok_ctx, validate, &res).ok());
  EXPECT_TRUE(res.has_confirmed());

  csi::v1::CreateVolumeRequest block;
  block.set_name("pvc-block");
  block.add_volume_capabilities()->mutable_block();
  (*block.mutable_parameters())["mgs-ip-address"] = "10.0.0.4";
  (*block.mutable_parameters())["fs-name"] = "lustrefs";
  csi::v1::CreateVolumeResponse created;
  grpc::ClientContext block_ctx;
  EXPECT_EQ(controller_stub_->CreateVolume(&block_ctx, block, &created).error_code(),
            grpc::INVALID_ARGUMENT);
}

TEST_F(DriverE2eTest, CorruptedMountAtTargetIsRepairedNotReportedAsSuccess) {
  csi::v1::Volume volume = CreateVolume("pvc-repair");
  const std::string target = tmp_.Join("pods/repair");
  ASSERT_TRUE(Publish(PublishRequest(volume, target, false)).ok());
  // Something else mounted over the target: a different source.
  ASSERT_EQ(mount("tmpfs", target.c_str(), "tmpfs", 0, "size=1m"), 0);
  EXPECT_EQ(Publish(PublishRequest(volume, target, false)).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  // Unpublish removes every mount stacked there.
  EXPECT_TRUE(Unpublish(volume.volume_id(), target).ok());
  EXPECT_THAT(MountsUnder(target), IsEmpty());
}

TEST_F(DriverE2eTest, SigtermUnderLoadKeepsMountsAndRemovesSocket) {
  csi::v1::Volume volume = CreateVolume("pvc-term");
  constexpr int kTargets = 40;
  std::atomic<int> published{0};
  std::vector<std::string> ok_targets(kTargets);
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      for (int i = t; i < kTargets; i += 4) {
        std::string target = tmp_.Join(absl::StrCat("pods/t", i));
        if (Publish(PublishRequest(volume, target, false)).ok()) {
          ok_targets[i] = target;
          ++published;
        }
      }
    });
  }
  while (published < 5) absl::SleepFor(absl::Milliseconds(1));
  node_process_->Signal(SIGTERM);
  for (std::thread& w : workers) w.join();
  EXPECT_EQ(node_process_->Wait(absl::Seconds(30)), 0);
  EXPECT_NE(access(node_socket_.c_str(), F_OK), 0) << "socket left behind";
  // Every publish that succeeded is still mounted: SIGTERM loses no mount.
  std::vector<std::string> mounted = MountsUnder(tmp_.Join("pods"));
  for (const std::string& target : ok_targets) {
    if (target.empty()) continue;
    EXPECT_NE(std::find(mounted.begin(), mounted.end(), target), mounted.end()) << target;
  }
  EXPECT_GE(published.load(), 5);

  // A restart on the same endpoint serves again, and cleans up.
  StartNode();
  for (const std::string& target : ok_targets) {
    if (!target.empty()) {
      EXPECT_TRUE(Unpublish(volume.volume_id(), target).ok()) << target;
    }
  }
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
}

TEST_F(DriverE2eTest, StaleSocketIsReplacedLiveSocketIsRefused) {
  // Live: a second node on the same endpoint fails and the first keeps serving.
  Subprocess second({BinaryPath(), "node", "--nodeid=node-2", "--mount-mode=mock",
                     "--endpoint=unix://" + node_socket_},
                    tmp_.Join("second.log"));
  EXPECT_EQ(second.Wait(absl::Seconds(10)), 1);
  EXPECT_THAT(ReadFile(tmp_.Join("second.log")), testing::HasSubstr("another process"));
  grpc::ClientContext ctx;
  csi::v1::ProbeResponse probe;
  EXPECT_TRUE(identity_->Probe(&ctx, {}, &probe).ok());

  // Stale: a killed node leaves its socket; the next start replaces it.
  node_process_->Signal(SIGKILL);
  node_process_->Wait(absl::Seconds(10));
  ASSERT_EQ(access(node_socket_.c_str(), F_OK), 0) << "expected a stale socket";
  StartNode();
  grpc::ClientContext again;
  grpc::Status again_status = identity_->Probe(&again, {}, &probe);
  EXPECT_TRUE(again_status.ok()) << again_status.error_message() << ReadFile(tmp_.Join("node.log"));
}

TEST(SubDirProvisioningE2eTest, CreateMakesOwnedSubDirDeleteHonoursThePolicy) {
  TempDir tmp;
  ASSERT_EQ(mkdir(tmp.Join("lustre").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(tmp.Join("lustre/lustrefs").c_str(), 0755), 0);
  std::string socket_path = tmp.Join("controller.sock");
  Subprocess controller({BinaryPath(), "controller", "--mount-mode=local",
                         "--local-root=" + tmp.Join("lustre"), "--endpoint=unix://" + socket_path},
                        tmp.Join("controller.log"));
  ASSERT_TRUE(WaitForSocket(socket_path, absl::Seconds(10)).ok())
      << ReadFile(tmp.Join("controller.log"));
  auto stub = csi::v1::Controller::NewStub(UnixChannel(socket_path));

  auto create = [&](const std::string& name, const std::string& policy, csi::v1::Volume* out) {
    csi::v1::CreateVolumeRequest req;
    req.set_name(name);
    req.add_volume_capabilities()->mutable_mount();
    req.mutable_volume_capabilities(0)->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
    auto& p = *req.mutable_parameters();
    p["mgs-ip-address"] = "10.0.0.4";
    p["fs-name"] = "lustrefs";
    p["sub-dir"] = "${pvc.metadata.namespace}/${pvc.metadata.name}";
    p["create-sub-dir"] = "true";
    p["sub-dir-mode"] = "2770";
    p["sub-dir-on-delete"] = policy;
    p["csi.storage.k8s.io/pvc/namespace"] = "team";
    p["csi.storage.k8s.io/pvc/name"] = name;
    csi::v1::CreateVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status status = stub->CreateVolume(&ctx, req, &res);
    *out = res.volume();
    return status;
  };
  auto remove = [&](const std::string& id) {
    csi::v1::DeleteVolumeRequest req;
    req.set_volume_id(id);
    csi::v1::DeleteVolumeResponse res;
    grpc::ClientContext ctx;
    return stub->DeleteVolume(&ctx, req, &res);
  };

  csi::v1::Volume del, keep, again;
  grpc::Status created = create("data", "delete", &del);
  ASSERT_TRUE(created.ok()) << created.error_message();
  EXPECT_EQ(del.volume_id(), "data#lustrefs#10.0.0.4#team/data#f");
  EXPECT_EQ(del.volume_context().at("sub-dir"), "team/data");
  struct stat st;
  ASSERT_EQ(stat(tmp.Join("lustre/lustrefs/team/data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 02770u);
  ASSERT_TRUE(create("data", "delete", &again).ok());  // idempotent
  EXPECT_EQ(again.volume_id(), del.volume_id());
  ASSERT_TRUE(create("logs", "retain", &keep).ok());
  ASSERT_TRUE(WriteFile(tmp.Join("lustre/lustrefs/team/data/f"), "x").ok());
  ASSERT_TRUE(WriteFile(tmp.Join("lustre/lustrefs/team/logs/f"), "y").ok());

  // A directory the driver did not create is never taken over.
  ASSERT_EQ(mkdir(tmp.Join("lustre/lustrefs/team/users").c_str(), 0755), 0);
  csi::v1::Volume users;
  EXPECT_EQ(create("users", "delete", &users).error_code(), grpc::ALREADY_EXISTS);

  EXPECT_TRUE(remove(del.volume_id()).ok());
  EXPECT_NE(access(tmp.Join("lustre/lustrefs/team/data").c_str(), F_OK), 0) << "not deleted";
  EXPECT_TRUE(remove(del.volume_id()).ok());  // idempotent
  EXPECT_TRUE(remove(keep.volume_id()).ok());
  EXPECT_EQ(ReadFile(tmp.Join("lustre/lustrefs/team/logs/f")), "y") << "retained data lost";
  // Deleting a volume whose id names the foreign directory removes nothing.
  EXPECT_TRUE(remove("users#lustrefs#10.0.0.4#team/users#f").ok());
  EXPECT_EQ(access(tmp.Join("lustre/lustrefs/team/users").c_str(), F_OK), 0);
}

TEST(NodeServingE2eTest, KubeletRegistrationAndHttpEndpoints) {
  TempDir tmp;
  ASSERT_EQ(mkdir(tmp.Join("registry").c_str(), 0755), 0);
  int port = FreePort();
  std::string socket_path = tmp.Join("csi.sock");
  Subprocess node(
      {BinaryPath(), "node", "--nodeid=n1", "--mount-mode=lustre",
       "--endpoint=unix://" + socket_path, "--plugin-registration-dir=" + tmp.Join("registry"),
       "--kubelet-registration-path=/var/lib/kubelet/plugins/x/csi.sock",
       absl::StrCat("--metrics-address=127.0.0.1:", port)},
      tmp.Join("node.log"));
  std::string reg_socket = tmp.Join("registry/azurelustre.csi.azure.com-reg.sock");
  ASSERT_TRUE(WaitForSocket(reg_socket, absl::Seconds(10)).ok()) << ReadFile(tmp.Join("node.log"));

  // What the kubelet does: GetInfo, then NotifyRegistrationStatus.
  auto reg = pluginregistration::Registration::NewStub(UnixChannel(reg_socket));
  grpc::ClientContext ctx;
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(reg->GetInfo(&ctx, {}, &info).ok());
  EXPECT_EQ(info.type(), "CSIPlugin");
  EXPECT_EQ(info.name(), "azurelustre.csi.azure.com");
  EXPECT_EQ(info.endpoint(), "/var/lib/kubelet/plugins/x/csi.sock");
  EXPECT_THAT(info.supported_versions(), testing::ElementsAre("1.0.0"));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse ack;
  grpc::ClientContext notify_ctx;
  EXPECT_TRUE(reg->NotifyRegistrationStatus(&notify_ctx, status, &ack).ok());

  // Lustre mode on a machine without the Lustre client: alive, not ready,
  // and Probe says so too.
  EXPECT_THAT(HttpGet(port, "/healthz"), testing::StartsWith("HTTP/1.1 200"));
  std::string readyz = HttpGet(port, "/readyz");
  EXPECT_THAT(readyz, testing::StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(readyz, testing::HasSubstr("mount.lustre"));
  auto identity = csi::v1::Identity::NewStub(UnixChannel(socket_path));
  grpc::ClientContext probe_ctx;
  csi::v1::ProbeResponse probe;
  ASSERT_TRUE(identity->Probe(&probe_ctx, {}, &probe).ok());
  EXPECT_FALSE(probe.ready().value());
  std::string metrics = HttpGet(port, "/metrics");
  EXPECT_THAT(metrics,
              testing::HasSubstr("lustre_csi_calls_total{method=\"Probe\",code=\"OK\"} 1"));

  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(absl::Seconds(30)), 0);
  EXPECT_NE(access(reg_socket.c_str(), F_OK), 0) << "registration socket left behind";
  EXPECT_NE(access(socket_path.c_str(), F_OK), 0) << "CSI socket left behind";
}

}  // namespace
}  // namespace lustre_csi::e2e
