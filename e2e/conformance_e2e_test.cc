// What a CO and the community's conformance suites check, against the real
// binary over its sockets: NodeGetVolumeStats codes, the capacity of a
// static volume, a republish with another capability, the volume id's
// sub-dir, one validation of parameters in every mount mode, the whole
// lifecycle through one socket (monolith) and the Go driver's command line.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kTiB = int64_t{1} << 40;

csi::v1::VolumeCapability Capability() { return MountCapability(); }

// A started `lustre-csi <role>` with its stubs.
struct Plugin {
  std::string socket;
  std::unique_ptr<Subprocess> process;
  std::unique_ptr<csi::v1::Node::Stub> node;
  std::unique_ptr<csi::v1::Controller::Stub> controller;
};

class ConformanceE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(tmp_.Join("lustre").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(tmp_.Join("lustre/lustrefs").c_str(), 0755), 0);
    ASSERT_EQ(mount("tmpfs", tmp_.Join("lustre/lustrefs").c_str(), "tmpfs", 0, "size=16m"), 0);
    ASSERT_EQ(mkdir(tmp_.Join("pods").c_str(), 0755), 0);
    ASSERT_NO_FATAL_FAILURE(Start(
        &local_, "local",
        {"node", "--nodeid=node-1", "--mount-mode=local", "--local-root=" + tmp_.Join("lustre")}));
    ASSERT_NO_FATAL_FAILURE(
        Start(&mock_, "mock", {"node", "--nodeid=node-1", "--mount-mode=mock"}));
    ASSERT_NO_FATAL_FAILURE(Start(&controller_, "controller", {"controller"}));
  }

  void TearDown() override {
    for (Plugin* p : {&local_, &mock_, &controller_}) p->process.reset();
    EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
  }

  void Start(Plugin* p, const std::string& name, std::vector<std::string> args) {
    std::string socket = tmp_.Join(name + ".sock");
    args.insert(args.begin(), BinaryPath());
    args.push_back("--endpoint=unix://" + socket);
    p->socket = socket;
    p->process = std::make_unique<Subprocess>(args, tmp_.Join(name + ".log"));
    ASSERT_TRUE(WaitForSocket(socket, absl::Seconds(10)).ok())
        << ReadFile(tmp_.Join(name + ".log"));
    auto channel = UnixChannel(socket);
    p->node = csi::v1::Node::NewStub(channel);
    p->controller = csi::v1::Controller::NewStub(channel);
  }

  csi::v1::NodePublishVolumeRequest PublishRequest(const std::string& volume_id,
                                                   const std::string& target) {
    return MakePublishRequest(volume_id, target);
  }

  static grpc::Status Publish(Plugin& p, const csi::v1::NodePublishVolumeRequest& req) {
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return p.node->NodePublishVolume(&ctx, req, &res);
  }

  static grpc::Status Unpublish(Plugin& p, const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("v");
    req.set_target_path(target);
    grpc::ClientContext ctx;
    csi::v1::NodeUnpublishVolumeResponse res;
    return p.node->NodeUnpublishVolume(&ctx, req, &res);
  }

  static grpc::Status Stats(Plugin& p, const std::string& volume_id, const std::string& path) {
    csi::v1::NodeGetVolumeStatsRequest req;
    req.set_volume_id(volume_id);
    req.set_volume_path(path);
    grpc::ClientContext ctx;
    csi::v1::NodeGetVolumeStatsResponse res;
    return p.node->NodeGetVolumeStats(&ctx, req, &res);
  }

  grpc::Status Create(const std::string& name, int64_t required, int64_t limit,
                      csi::v1::CreateVolumeResponse* res, const std::string& mgs = "10.0.0.4") {
    csi::v1::CreateVolumeRequest req;
    req.set_name(name);
    *req.add_volume_capabilities() = Capability();
    req.mutable_capacity_range()->set_required_bytes(required);
    req.mutable_capacity_range()->set_limit_bytes(limit);
    (*req.mutable_parameters())["mgs-ip-address"] = mgs;
    (*req.mutable_parameters())["fs-name"] = "lustrefs";
    grpc::ClientContext ctx;
    return controller_.controller->CreateVolume(&ctx, req, res);
  }

  // The per-mount options of the mount at `path`, from this process's
  // mount table.
  static std::string MountOptionsAt(const std::string& path) {
    std::vector<volume::MountEntry> at = MountsAt(path);
    return at.empty() ? "" : at.front().options;
  }

  TempDir tmp_;
  Plugin local_, mock_, controller_;
};

TEST_F(ConformanceE2eTest, StatsWhereNothingIsPublishedIsNotFound) {
  const std::string unpublished = tmp_.Join("pods/empty");
  ASSERT_EQ(mkdir(unpublished.c_str(), 0755), 0);
  for (const std::string& path : {std::string("some/path"), tmp_.Join("pods/missing"), unpublished,
                                  tmp_.Join("pods/../pods/empty")}) {
    grpc::Status s = Stats(local_, "v", path);
    EXPECT_EQ(s.error_code(), grpc::NOT_FOUND) << path << ": " << s.error_message();
  }
  EXPECT_EQ(Stats(local_, "", unpublished).error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(Stats(local_, "v", "").error_code(), grpc::INVALID_ARGUMENT);

  // Published, then unpublished: found, then not.
  const std::string target = tmp_.Join("pods/a");
  ASSERT_TRUE(Publish(local_, PublishRequest("pv#lustrefs#10.0.0.4##f", target)).ok());
  EXPECT_TRUE(Stats(local_, "v", target).ok());
  ASSERT_TRUE(Unpublish(local_, target).ok());
  EXPECT_EQ(Stats(local_, "v", target).error_code(), grpc::NOT_FOUND);
}

TEST_F(ConformanceE2eTest, StaticCapacityLiesInsideTheRequestedRange) {
  csi::v1::CreateVolumeResponse res;
  ASSERT_TRUE(Create("pvc-small", 10 * kGiB, 10 * kGiB, &res).ok());
  EXPECT_EQ(res.volume().capacity_bytes(), 10 * kGiB);
  ASSERT_TRUE(Create("pvc-small", 10 * kGiB, 10 * kGiB, &res).ok());  // the same again
  EXPECT_EQ(Create("pvc-small", 20 * kGiB, 20 * kGiB, &res).error_code(), grpc::ALREADY_EXISTS);

  ASSERT_TRUE(Create("pvc-upto", kGiB, 100 * kGiB, &res).ok());
  EXPECT_EQ(res.volume().capacity_bytes(), 100 * kGiB);
  ASSERT_TRUE(Create("pvc-default", 0, 0, &res).ok());
  EXPECT_EQ(res.volume().capacity_bytes(), 4 * kTiB);
  ASSERT_TRUE(Create("pvc-steps", 5 * kTiB, 0, &res).ok());
  EXPECT_EQ(res.volume().capacity_bytes(), 8 * kTiB);
  EXPECT_EQ(Create("pvc-inverted", 2 * kGiB, kGiB, &res).error_code(), grpc::INVALID_ARGUMENT);
}

// csi-sanity's ExpandVolume cases, which it runs because the controller
// advertises EXPAND_VOLUME: no volume id, no capacity range (with no id
// either, as it sends it), and a 10 GiB volume asked for 11 GiB with a
// SINGLE_NODE_WRITER mount capability, expected back exactly.
TEST_F(ConformanceE2eTest, ExpansionAsTheSanitySuiteAsksIt) {
  csi::v1::ControllerGetCapabilitiesResponse caps;
  grpc::ClientContext caps_ctx;
  ASSERT_TRUE(controller_.controller->ControllerGetCapabilities(&caps_ctx, {}, &caps).ok());
  bool advertised = false;
  for (const auto& c : caps.capabilities()) {
    advertised =
        advertised || c.rpc().type() == csi::v1::ControllerServiceCapability::RPC::EXPAND_VOLUME;
  }
  ASSERT_TRUE(advertised);
  auto expand = [&](const csi::v1::ControllerExpandVolumeRequest& req,
                    csi::v1::ControllerExpandVolumeResponse* res) {
    grpc::ClientContext ctx;
    return controller_.controller->ControllerExpandVolume(&ctx, req, res);
  };
  csi::v1::ControllerExpandVolumeResponse res;
  csi::v1::ControllerExpandVolumeRequest no_id;
  no_id.mutable_capacity_range()->set_required_bytes(10 * kGiB);
  EXPECT_EQ(expand(no_id, &res).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(expand({}, &res).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  csi::v1::CreateVolumeResponse created;
  ASSERT_TRUE(Create("sanity-expand", 10 * kGiB, 0, &created).ok());
  csi::v1::ControllerExpandVolumeRequest req;
  req.set_volume_id(created.volume().volume_id());
  req.mutable_capacity_range()->set_required_bytes(11 * kGiB);
  *req.mutable_volume_capability() =
      MountCapability(csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  grpc::Status grown = expand(req, &res);
  ASSERT_TRUE(grown.ok()) << grown.error_message();
  EXPECT_EQ(res.capacity_bytes(), 11 * kGiB);
  EXPECT_FALSE(res.node_expansion_required());
}

TEST_F(ConformanceE2eTest, RepublishWithAnotherCapabilityIsAlreadyExists) {
  const std::string target = tmp_.Join("pods/r");
  csi::v1::NodePublishVolumeRequest plain = PublishRequest("pv#lustrefs#10.0.0.4##f", target);
  ASSERT_TRUE(Publish(local_, plain).ok());
  std::string before = MountOptionsAt(target);
  ASSERT_FALSE(before.empty());
  EXPECT_TRUE(Publish(local_, plain).ok()) << "the same request again";

  csi::v1::NodePublishVolumeRequest noatime = plain;
  noatime.mutable_volume_capability()->mutable_mount()->add_mount_flags("noatime");
  grpc::Status s = Publish(local_, noatime);
  EXPECT_EQ(s.error_code(), grpc::ALREADY_EXISTS) << s.error_message();
  EXPECT_EQ(MountOptionsAt(target), before) << "the first mount must stay as it was";
  csi::v1::NodePublishVolumeRequest read_only = plain;
  read_only.set_readonly(true);
  EXPECT_EQ(Publish(local_, read_only).error_code(), grpc::ALREADY_EXISTS);
  ASSERT_TRUE(Unpublish(local_, target).ok());

  // fsGroup: applied at the first publish; another group is another
  // capability.
  csi::v1::NodePublishVolumeRequest group = plain;
  group.mutable_volume_capability()->mutable_mount()->set_volume_mount_group("4321");
  s = Publish(local_, group);
  ASSERT_TRUE(s.ok()) << s.error_message();
  struct stat st;
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4321u);
  s = Publish(local_, group);
  EXPECT_TRUE(s.ok()) << s.error_message();
  group.mutable_volume_capability()->mutable_mount()->set_volume_mount_group("1234");
  s = Publish(local_, group);
  EXPECT_EQ(s.error_code(), grpc::ALREADY_EXISTS) << s.error_message();
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4321u);
  // Another pod of the shared volume with another group: its own target, OK;
  // it regroups the volume's root, which does not make the first pod's
  // republish a conflict.
  const std::string other = tmp_.Join("pods/r2");
  group.set_target_path(other);
  s = Publish(local_, group);
  ASSERT_TRUE(s.ok()) << s.error_message();
  group.set_target_path(target);
  group.mutable_volume_capability()->mutable_mount()->set_volume_mount_group("4321");
  s = Publish(local_, group);
  EXPECT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(Unpublish(local_, other).ok());
  ASSERT_TRUE(Unpublish(local_, target).ok());
}

TEST_F(ConformanceE2eTest, NeverMountsWiderThanTheVolumeIdNames) {
  ASSERT_EQ(mkdir(tmp_.Join("lustre/lustrefs/team-a").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(tmp_.Join("lustre/lustrefs/secret"), "root only").ok());
  const std::string target = tmp_.Join("pods/id");
  // The context is silent about the sub-dir: the id's is mounted.
  ASSERT_TRUE(Publish(local_, PublishRequest("pv#lustrefs#10.0.0.4#team-a#f", target)).ok());
  EXPECT_FALSE(std::filesystem::exists(target + "/secret"));
  ASSERT_TRUE(WriteFile(target + "/hello", "in team-a").ok());
  EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/team-a/hello")), "in team-a");
  ASSERT_TRUE(Unpublish(local_, target).ok());

  for (const char* id : {"pv#lustrefs#10.0.0.4#../../x#f", "pv#lustrefs#10.0.0.4#a/b/../../..#f"}) {
    for (bool context_sub_dir : {false, true}) {
      csi::v1::NodePublishVolumeRequest req = PublishRequest(id, target);
      if (context_sub_dir) (*req.mutable_volume_context())["sub-dir"] = "team-a";
      grpc::Status s = Publish(local_, req);
      EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << id << ": " << s.error_message();
      EXPECT_FALSE(std::filesystem::exists(target)) << id;
    }
  }
}

TEST_F(ConformanceE2eTest, OneValidationInEveryMode) {
  struct Bad {
    const char* key;
    const char* value;
  };
  for (const Bad& bad : {Bad{"mgs-ip-address", "-oremount"}, Bad{"mgs-ip-address", "10.0.0.4:-o"},
                         Bad{"fs-name", "-orw"}, Bad{"sub-dir", "-x"}}) {
    for (Plugin* node : {&local_, &mock_}) {
      csi::v1::NodePublishVolumeRequest req = PublishRequest("opaque-handle", tmp_.Join("pods/v"));
      (*req.mutable_volume_context())[bad.key] = bad.value;
      grpc::Status s = Publish(*node, req);
      EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << bad.key << "=" << bad.value;
      EXPECT_THAT(s.error_message(), HasSubstr(bad.key));
    }
    if (absl::string_view(bad.key) == "mgs-ip-address") {
      csi::v1::CreateVolumeResponse res;
      grpc::Status s = Create("pvc-bad", 0, 0, &res, bad.value);
      EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << bad.value;
      EXPECT_THAT(s.error_message(), HasSubstr(bad.key));
    }
  }
  // Failover and NID lists stay valid, in every mode.
  int lists = 0;
  for (const char* mgs : {"10.0.0.4@tcp:10.0.0.5@tcp", "10.0.0.4,10.0.0.6"}) {
    csi::v1::NodePublishVolumeRequest req = PublishRequest("opaque-handle", tmp_.Join("pods/v"));
    (*req.mutable_volume_context())["mgs-ip-address"] = mgs;
    for (Plugin* node : {&local_, &mock_}) {
      grpc::Status s = Publish(*node, req);
      EXPECT_TRUE(s.ok()) << mgs << ": " << s.error_message();
      EXPECT_TRUE(Unpublish(*node, tmp_.Join("pods/v")).ok());
    }
    csi::v1::CreateVolumeResponse res;
    EXPECT_TRUE(Create(absl::StrCat("pvc-list-", ++lists), 0, 0, &res, mgs).ok()) << mgs;
  }
}

// With sub-dir provisioning, the owner marker records what was asked, so a
// restarted controller still tells a repeat from a conflict, and knows when a
// provisioned sub-dir is gone.
TEST_F(ConformanceE2eTest, ControllerKnowsItsProvisionedVolumesAfterARestart) {
  std::vector<std::string> args = {"controller", "--mount-mode=local",
                                   "--local-root=" + tmp_.Join("lustre")};
  Plugin ctl;
  ASSERT_NO_FATAL_FAILURE(Start(&ctl, "provisioner", args));
  csi::v1::CreateVolumeRequest create;
  create.set_name("pvc-r");
  *create.add_volume_capabilities() = Capability();
  create.mutable_capacity_range()->set_required_bytes(10 * kGiB);
  (*create.mutable_parameters())["mgs-ip-address"] = "10.0.0.4";
  (*create.mutable_parameters())["fs-name"] = "lustrefs";
  (*create.mutable_parameters())["sub-dir"] = "volumes/pvc-r";
  (*create.mutable_parameters())["create-sub-dir"] = "true";
  auto create_volume = [&](const csi::v1::CreateVolumeRequest& req,
                           csi::v1::CreateVolumeResponse* res) {
    grpc::ClientContext ctx;
    return ctl.controller->CreateVolume(&ctx, req, res);
  };
  csi::v1::CreateVolumeResponse first;
  ASSERT_TRUE(create_volume(create, &first).ok());

  ctl.process->Signal(SIGTERM);
  ASSERT_EQ(ctl.process->Wait(absl::Seconds(20)), 0);
  ASSERT_NO_FATAL_FAILURE(Start(&ctl, "provisioner", args));

  csi::v1::CreateVolumeResponse again;
  grpc::Status s = create_volume(create, &again);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(again.volume().volume_id(), first.volume().volume_id());
  csi::v1::CreateVolumeRequest bigger = create;
  bigger.mutable_capacity_range()->set_required_bytes(20 * kGiB);
  s = create_volume(bigger, &again);
  EXPECT_EQ(s.error_code(), grpc::ALREADY_EXISTS) << s.error_message();
  csi::v1::CreateVolumeRequest other_mode = create;
  (*other_mode.mutable_parameters())["sub-dir-mode"] = "0700";
  EXPECT_EQ(create_volume(other_mode, &again).error_code(), grpc::ALREADY_EXISTS);

  auto validate = [&](Plugin& p) {
    csi::v1::ValidateVolumeCapabilitiesRequest req;
    req.set_volume_id(first.volume().volume_id());
    *req.add_volume_capabilities() = Capability();
    *req.mutable_volume_context() = first.volume().volume_context();
    csi::v1::ValidateVolumeCapabilitiesResponse res;
    grpc::ClientContext ctx;
    return p.controller->ValidateVolumeCapabilities(&ctx, req, &res);
  };
  EXPECT_TRUE(validate(ctl).ok());
  std::filesystem::remove_all(tmp_.Join("lustre/lustrefs/volumes/pvc-r"));
  s = validate(ctl);
  EXPECT_EQ(s.error_code(), grpc::NOT_FOUND) << s.error_message();
  // A controller that does not reach file systems cannot know: it confirms.
  EXPECT_TRUE(validate(controller_).ok());
}

bool HasControllerService(Plugin& p) {
  auto identity = csi::v1::Identity::NewStub(UnixChannel(p.socket));
  csi::v1::GetPluginCapabilitiesResponse caps;
  grpc::ClientContext ctx;
  EXPECT_TRUE(identity->GetPluginCapabilities(&ctx, {}, &caps).ok());
  for (const auto& c : caps.capabilities()) {
    if (c.service().type() == csi::v1::PluginCapability::Service::CONTROLLER_SERVICE) return true;
  }
  return false;
}

// Identity, Controller and Node on one endpoint: the whole lifecycle through
// one socket, as a single-endpoint CO or a conformance suite drives it.
TEST_F(ConformanceE2eTest, MonolithServesTheWholeLifecycleOnOneSocket) {
  Plugin mono;
  ASSERT_NO_FATAL_FAILURE(Start(&mono, "monolith",
                                {"monolith", "--nodeid=node-1", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre")}));
  EXPECT_TRUE(HasControllerService(mono));
  EXPECT_FALSE(HasControllerService(local_)) << "a node alone offers no controller";

  csi::v1::CreateVolumeRequest create;
  create.set_name("pvc-mono");
  *create.add_volume_capabilities() = Capability();
  (*create.mutable_parameters())["mgs-ip-address"] = "10.0.0.4";
  (*create.mutable_parameters())["fs-name"] = "lustrefs";
  (*create.mutable_parameters())["sub-dir"] = "volumes/${pvc.metadata.name}";
  (*create.mutable_parameters())["csi.storage.k8s.io/pvc/name"] = "data";
  (*create.mutable_parameters())["create-sub-dir"] = "true";
  (*create.mutable_parameters())["sub-dir-on-delete"] = "delete";
  csi::v1::CreateVolumeResponse created;
  grpc::ClientContext create_ctx;
  grpc::Status s = mono.controller->CreateVolume(&create_ctx, create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(std::filesystem::is_directory(tmp_.Join("lustre/lustrefs/volumes/data")));

  const std::string target = tmp_.Join("pods/mono");
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(created.volume().volume_id());
  publish.set_target_path(target);
  *publish.mutable_volume_capability() = Capability();
  *publish.mutable_volume_context() = created.volume().volume_context();
  s = Publish(mono, publish);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(WriteFile(target + "/f", "one socket").ok());
  EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/volumes/data/f")), "one socket");
  EXPECT_TRUE(Stats(mono, created.volume().volume_id(), target).ok());
  ASSERT_TRUE(Unpublish(mono, target).ok());

  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(created.volume().volume_id());
  csi::v1::DeleteVolumeResponse deleted;
  grpc::ClientContext del_ctx;
  ASSERT_TRUE(mono.controller->DeleteVolume(&del_ctx, del, &deleted).ok());
  EXPECT_FALSE(std::filesystem::exists(tmp_.Join("lustre/lustrefs/volumes/data")));
  mono.process->Signal(SIGTERM);
  EXPECT_EQ(mono.process->Wait(absl::Seconds(20)), 0);
}

// An existing manifest of the Go driver runs the binary with its flags and no
// subcommand: that is the monolith.
TEST_F(ConformanceE2eTest, GoDriverCommandLineRunsTheMonolith) {
  Plugin go;
  ASSERT_NO_FATAL_FAILURE(
      Start(&go, "go",
            {"-v=5", "--nodeid=node-7", "--drivername=lustre.example.com",
             "--enable-azurelustre-mock-mount", "--enable-azurelustre-mock-dyn-prov=false",
             "--remove-not-ready-taint=false", "--working-mount-dir=/tmp"}));
  EXPECT_TRUE(HasControllerService(go));
  auto identity = csi::v1::Identity::NewStub(UnixChannel(go.socket));
  csi::v1::GetPluginInfoResponse info;
  grpc::ClientContext info_ctx;
  ASSERT_TRUE(identity->GetPluginInfo(&info_ctx, {}, &info).ok());
  EXPECT_EQ(info.name(), "lustre.example.com");
  csi::v1::NodeGetInfoResponse node_info;
  grpc::ClientContext node_ctx;
  ASSERT_TRUE(go.node->NodeGetInfo(&node_ctx, {}, &node_info).ok());
  EXPECT_EQ(node_info.node_id(), "node-7");
  // Mock mount mode: the target directory only.
  const std::string target = tmp_.Join("pods/go");
  ASSERT_TRUE(Publish(go, PublishRequest("pv#lustrefs#10.0.0.4##f", target)).ok());
  EXPECT_TRUE(std::filesystem::is_directory(target));
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
  ASSERT_TRUE(Unpublish(go, target).ok());
  EXPECT_THAT(ReadFile(tmp_.Join("go.log")),
              HasSubstr("accepted for the Go driver's command line"));
  // The controller half in mock mode: ids only, and deletes always succeed.
  csi::v1::CreateVolumeRequest create;
  create.set_name("pvc-go");
  *create.add_volume_capabilities() = Capability();
  (*create.mutable_parameters())["mgs-ip-address"] = "10.0.0.4";
  (*create.mutable_parameters())["fs-name"] = "lustrefs";
  (*create.mutable_parameters())["sub-dir"] = "team/x";
  csi::v1::CreateVolumeResponse created;
  grpc::ClientContext create_ctx;
  ASSERT_TRUE(go.controller->CreateVolume(&create_ctx, create, &created).ok());
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(created.volume().volume_id());
  csi::v1::DeleteVolumeResponse deleted;
  grpc::ClientContext del_ctx;
  grpc::Status deleted_status = go.controller->DeleteVolume(&del_ctx, del, &deleted);
  EXPECT_TRUE(deleted_status.ok()) << deleted_status.error_message();

  // The Go driver's controller Deployment: its exact arguments, no --nodeid.
  // Identity and Controller are served; Node is not.
  Plugin controller;
  ASSERT_NO_FATAL_FAILURE(
      Start(&controller, "go-controller", {"-v=5", "--enable-azurelustre-mock-dyn-prov=false"}));
  EXPECT_TRUE(HasControllerService(controller));
  csi::v1::CreateVolumeResponse created_here;
  grpc::ClientContext create_here_ctx;
  create.set_name("pvc-go-controller");
  grpc::Status created_status =
      controller.controller->CreateVolume(&create_here_ctx, create, &created_here);
  ASSERT_TRUE(created_status.ok()) << created_status.error_message();
  csi::v1::NodeGetInfoResponse no_node;
  grpc::ClientContext no_node_ctx;
  EXPECT_EQ(controller.node->NodeGetInfo(&no_node_ctx, {}, &no_node).error_code(),
            grpc::UNIMPLEMENTED);
  EXPECT_THAT(ReadFile(tmp_.Join("go-controller.log")),
              HasSubstr("serving Identity and Controller only"));

  // Mock mount mode is the controller's too (ids only): no --nodeid needed.
  Plugin mock_controller;
  ASSERT_NO_FATAL_FAILURE(
      Start(&mock_controller, "go-controller-mock", {"--enable-azurelustre-mock-mount"}));
  EXPECT_TRUE(HasControllerService(mock_controller));

  // A node's flag without --nodeid means a node was meant: refused.
  Subprocess node_flag({BinaryPath(), "--plugin-registration-dir=" + tmp_.Join("reg"),
                        "--endpoint=unix://" + tmp_.Join("no-node.sock")},
                       tmp_.Join("no-node.log"));
  node_flag.Wait(absl::Seconds(10));
  EXPECT_EQ(node_flag.ExitCode(), 2);
  EXPECT_THAT(ReadFile(tmp_.Join("no-node.log")), HasSubstr("needs --nodeid"));

  // What this driver does not offer is refused, with exit code 2.
  Subprocess refused({BinaryPath(), "--nodeid=n", "--status-controller-only=true",
                      "--endpoint=unix://" + tmp_.Join("refused.sock")},
                     tmp_.Join("refused.log"));
  refused.Wait(absl::Seconds(10));
  EXPECT_EQ(refused.ExitCode(), 2);
  EXPECT_THAT(ReadFile(tmp_.Join("refused.log")), HasSubstr("--status-controller-only"));
}

}  // namespace
}  // namespace lustre_csi::e2e
