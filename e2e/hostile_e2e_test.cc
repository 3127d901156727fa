// Hostile input through the real sockets of all three roles: ids built to
// escape the plugin manager's mount root, over-long and malformed paths and
// ids at the node and the controller, messages over the 4 MiB limit, bytes
// that are no protobuf at all, and thousands of concurrent calls. After each,
// every process must still serve and nothing may be mounted or created where
// it does not belong.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

namespace fs = std::filesystem;
namespace pb = ::lustre_csi::manager::v1;
using ::testing::AnyOf;
using ::testing::IsEmpty;

constexpr char kDriver[] = "azurelustre.csi.azure.com";
constexpr char kVolumeId[] = "pvc-1#lustrefs#10.0.0.4##f";

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return ctx;
}

// Every path below `root` (relative), not following symlinks or entering
// `skip` (relative names of top-level entries).
std::set<std::string> Tree(const std::string& root, const std::set<std::string>& skip = {}) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::string rel = fs::relative(it->path(), root).string();
    std::string top = rel.substr(0, rel.find('/'));
    if (skip.count(top)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    out.insert(rel);
  }
  return out;
}

class HostileE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"lustre", "lustre/lustrefs", "registry", "mounts", "state", "pods"}) {
      ASSERT_EQ(mkdir(tmp_.Join(d).c_str(), 0755), 0) << d;
    }
    ASSERT_TRUE(WriteFile(tmp_.Join("lustre/lustrefs/marker"), "data").ok());
    node_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "node", "--nodeid=node-1", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + tmp_.Join("node.sock"),
                                 "--plugin-registration-dir=" + tmp_.Join("registry")},
        tmp_.Join("node.log"));
    controller_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "controller", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + tmp_.Join("controller.sock")},
        tmp_.Join("controller.log"));
    manager_ = std::make_unique<Subprocess>(
        std::vector<std::string>{
            BinaryPath(), "plugin-manager", "--endpoint=unix://" + tmp_.Join("pm.sock"),
            "--state-file=" + tmp_.Join("state/pm.db"), "--mount-root=" + tmp_.Join("mounts"),
            "--registration-dir=" + tmp_.Join("registry"), "--retry-attempts=1",
            "--node-name=node-1"},
        tmp_.Join("manager.log"));
    for (const char* s : {"node.sock", "controller.sock", "pm.sock"}) {
      ASSERT_TRUE(WaitForSocket(tmp_.Join(s), absl::Seconds(20)).ok()) << s;
    }
    auto node_channel = UnixChannel(tmp_.Join("node.sock"));
    node_stub_ = csi::v1::Node::NewStub(node_channel);
    node_identity_ = csi::v1::Identity::NewStub(node_channel);
    auto controller_channel = UnixChannel(tmp_.Join("controller.sock"));
    controller_stub_ = csi::v1::Controller::NewStub(controller_channel);
    controller_identity_ = csi::v1::Identity::NewStub(controller_channel);
    manager_stub_ = pb::PluginManager::NewStub(UnixChannel(tmp_.Join("pm.sock")));

    pb::WaitForPluginRequest wait;
    wait.set_name(kDriver);
    wait.set_timeout_ms(30000);
    pb::Plugin plugin;
    grpc::Status found = manager_stub_->WaitForPlugin(Context().get(), wait, &plugin);
    ASSERT_TRUE(found.ok()) << found.error_message() << ReadFile(tmp_.Join("manager.log"));
  }

  void TearDown() override {
    ExpectAllServing("at the end");
    manager_.reset();
    controller_.reset();
    node_.reset();
    EXPECT_THAT(ChildProcesses(), IsEmpty());
    EXPECT_THAT(ProcessesMentioning(tmp_.path()), IsEmpty());
    EXPECT_THAT(MountsUnder(tmp_.path()), IsEmpty());
  }

  // Every process is alive and answers; nothing is mounted.
  void ExpectAllServing(const std::string& where) {
    EXPECT_TRUE(node_->running()) << where << ReadFile(tmp_.Join("node.log"));
    EXPECT_TRUE(controller_->running()) << where << ReadFile(tmp_.Join("controller.log"));
    EXPECT_TRUE(manager_->running()) << where << ReadFile(tmp_.Join("manager.log"));
    csi::v1::ProbeResponse probe;
    EXPECT_TRUE(node_identity_->Probe(Context().get(), {}, &probe).ok()) << where;
    EXPECT_TRUE(probe.ready().value()) << where;
    EXPECT_TRUE(controller_identity_->Probe(Context().get(), {}, &probe).ok()) << where;
    pb::ListPluginsResponse plugins;
    EXPECT_TRUE(manager_stub_->ListPlugins(Context().get(), {}, &plugins).ok()) << where;
    EXPECT_EQ(plugins.plugins_size(), 1) << where;
    EXPECT_THAT(MountsUnder(tmp_.path()), IsEmpty()) << where;
  }

  static csi::v1::NodePublishVolumeRequest PublishRequest(const std::string& target) {
    return MakePublishRequest(kVolumeId, target);
  }

  grpc::Status Publish(const csi::v1::NodePublishVolumeRequest& req) {
    csi::v1::NodePublishVolumeResponse res;
    return node_stub_->NodePublishVolume(Context().get(), req, &res);
  }

  grpc::Status Unpublish(const std::string& volume_id, const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id(volume_id);
    req.set_target_path(target);
    csi::v1::NodeUnpublishVolumeResponse res;
    return node_stub_->NodeUnpublishVolume(Context().get(), req, &res);
  }

  static pb::MountVolumeRequest MountRequest() {
    pb::MountVolumeRequest req;
    req.set_plugin(kDriver);
    req.set_namespace_("default");
    req.set_volume_id("vol-1");
    req.set_remote_id(kVolumeId);
    req.set_alloc_id("alloc-1");
    req.mutable_usage()->set_attachment_mode(pb::ATTACHMENT_MODE_FILE_SYSTEM);
    req.mutable_usage()->set_access_mode(pb::ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
    (*req.mutable_volume_context())["mgs-ip-address"] = "10.0.0.4";
    (*req.mutable_volume_context())["fs-name"] = "lustrefs";
    return req;
  }

  grpc::Status Mount(const pb::MountVolumeRequest& req, pb::MountInfo* info = nullptr) {
    pb::MountVolumeResponse res;
    grpc::Status s = manager_stub_->MountVolume(Context().get(), req, &res);
    if (info != nullptr) *info = res.mount();
    return s;
  }

  grpc::Status Unmount(const pb::MountVolumeRequest& like) {
    pb::UnmountVolumeRequest req = UnmountRequestFor(like);
    pb::UnmountVolumeResponse res;
    return manager_stub_->UnmountVolume(Context().get(), req, &res);
  }

  std::vector<pb::Claim> Claims() {
    pb::ListClaimsResponse res;
    EXPECT_TRUE(manager_stub_->ListClaims(Context().get(), {}, &res).ok());
    return {res.claims().begin(), res.claims().end()};
  }

  // Everything outside the manager's mount root and store, and the logs.
  std::set<std::string> TreeOutsideMountRoot() {
    // bind-staging: where the node stages its binds on kernels before 5.12.
    std::set<std::string> tree = Tree(tmp_.path(), {"mounts", "state", "bind-staging"});
    for (auto it = tree.begin(); it != tree.end();) {
      it = absl::EndsWith(*it, ".log") ? tree.erase(it) : std::next(it);
    }
    return tree;
  }

  TempDir tmp_;
  std::unique_ptr<Subprocess> node_, controller_, manager_;
  std::unique_ptr<csi::v1::Node::Stub> node_stub_;
  std::unique_ptr<csi::v1::Identity::Stub> node_identity_, controller_identity_;
  std::unique_ptr<csi::v1::Controller::Stub> controller_stub_;
  std::unique_ptr<pb::PluginManager::Stub> manager_stub_;
};

// Ids that would be path traversal or odd names if used raw.
std::vector<std::string> HostileIds() {
  return {"..",
          ".",
          "...",
          "../../../../etc",
          "/",
          "/etc/passwd",
          "a/../../b",
          std::string("a\0b", 3),
          std::string("\0", 1),
          "%2E%2E",
          "%2F",
          "\n",
          " ",
          "-rf",
          "*",
          "\xc3\xa9t\xc3\xa9",  // UTF-8
          std::string(255, 'a')};
}

TEST_F(HostileE2eTest, ManagerEscapesHostileIdsInsideTheMountRootOrRefusesThem) {
  const std::string per_alloc = tmp_.Join(absl::StrCat("mounts/", kDriver, "/per-alloc/"));
  const std::set<std::string> before = TreeOutsideMountRoot();
  using Setter = void (*)(pb::MountVolumeRequest*, const std::string&);
  const std::vector<std::pair<const char*, Setter>> fields = {
      {"namespace", [](pb::MountVolumeRequest* r, const std::string& v) { r->set_namespace_(v); }},
      {"volume id", [](pb::MountVolumeRequest* r, const std::string& v) { r->set_volume_id(v); }},
      {"alloc id", [](pb::MountVolumeRequest* r, const std::string& v) { r->set_alloc_id(v); }},
  };
  for (const auto& [field, set] : fields) {
    std::set<std::string> targets;
    for (const std::string& id : HostileIds()) {
      const std::string where = absl::StrCat(field, " \"", absl::CHexEscape(id), "\"");
      pb::MountVolumeRequest req = MountRequest();
      set(&req, id);
      pb::MountInfo info;
      grpc::Status s = Mount(req, &info);
      ASSERT_TRUE(s.ok()) << where << ": " << s.error_code() << " " << s.error_message();
      // Escaped: three plain segments below per-alloc, no NUL, no dot names.
      const std::string& t = info.target();
      ASSERT_TRUE(absl::StartsWith(t, per_alloc)) << where << ": " << t;
      std::vector<std::string> segments = absl::StrSplit(t.substr(per_alloc.size()), '/');
      EXPECT_EQ(segments.size(), 3u) << where << ": " << t;
      for (const std::string& seg : segments) {
        EXPECT_TRUE(seg != "" && seg != "." && seg != "..") << where << ": " << t;
      }
      EXPECT_EQ(t.find('\0'), std::string::npos) << where;
      EXPECT_EQ(fs::weakly_canonical(t).string(), t) << where;
      EXPECT_THAT(MountsUnder(tmp_.path()), testing::ElementsAre(t)) << where;
      EXPECT_EQ(ReadFile(t + "/marker"), "data") << where;
      targets.insert(t);
      // Listed as given, and unmounted through the same ids.
      std::vector<pb::Claim> claims = Claims();
      ASSERT_EQ(claims.size(), 1u) << where;
      EXPECT_EQ(claims[0].namespace_() + "|" + claims[0].volume_id() + "|" + claims[0].alloc_id(),
                req.namespace_() + "|" + req.volume_id() + "|" + req.alloc_id())
          << where;
      grpc::Status u = Unmount(req);
      EXPECT_TRUE(u.ok()) << where << ": " << u.error_message();
      EXPECT_THAT(MountsUnder(tmp_.path()), IsEmpty()) << where;
      EXPECT_THAT(Claims(), IsEmpty()) << where;
    }
    // Different ids never share a path (the namespace is not part of a
    // publish path; it is part of the staging path and the queue key).
    if (std::string(field) != "namespace") {
      EXPECT_EQ(targets.size(), HostileIds().size()) << field;
    }

    // Refused: empty, and too long for one path segment once escaped.
    for (const std::string& id : {std::string(), std::string(256, 'a'), std::string(86, '/'),
                                  std::string(10 * 1024, 'x'), std::string(10 * 1024, '.')}) {
      pb::MountVolumeRequest req = MountRequest();
      set(&req, id);
      grpc::Status s = Mount(req);
      EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT)
          << field << " of " << id.size() << " bytes: " << s.error_message();
      EXPECT_EQ(Unmount(req).error_code(), grpc::INVALID_ARGUMENT) << field;
    }
  }

  // Plugin names are validated, not escaped.
  for (const std::string& plugin : {std::string(".."), std::string("../../x"), std::string("a/b"),
                                    std::string("a\0b", 3), std::string(10 * 1024, 'p')}) {
    pb::MountVolumeRequest req = MountRequest();
    req.set_plugin(plugin);
    EXPECT_THAT(Mount(req).error_code(), AnyOf(grpc::INVALID_ARGUMENT, grpc::NOT_FOUND))
        << absl::CHexEscape(plugin.substr(0, 20));
  }
  // Bad usage enums and a hostile volume context (refused by the node; the
  // manager drops the claim).
  pb::MountVolumeRequest bad_mode = MountRequest();
  bad_mode.mutable_usage()->set_access_mode(static_cast<pb::AccessMode>(99));
  EXPECT_EQ(Mount(bad_mode).error_code(), grpc::INVALID_ARGUMENT);
  pb::MountVolumeRequest traversal = MountRequest();
  (*traversal.mutable_volume_context())["sub-dir"] = "../../../../etc";
  EXPECT_EQ(Mount(traversal).error_code(), grpc::INVALID_ARGUMENT);
  pb::MountVolumeRequest flags = MountRequest();
  flags.mutable_usage()->add_mount_flags("remount,bind");
  EXPECT_EQ(Mount(flags).error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(Claims(), IsEmpty());

  // Nothing appeared outside the mount root, and inside it only the empty
  // directories of the plugin are left.
  EXPECT_EQ(TreeOutsideMountRoot(), before);
  for (const std::string& p : Tree(tmp_.Join("mounts"))) {
    EXPECT_TRUE(p == kDriver || p == absl::StrCat(kDriver, "/per-alloc")) << p;
  }
  ExpectAllServing("after hostile ids");
}

TEST_F(HostileE2eTest, NodeRefusesOverLongAndMalformedTargetsAndValues) {
  const std::string target = tmp_.Join("pods/t");
  struct Case {
    std::string name;
    std::function<void(csi::v1::NodePublishVolumeRequest*)> mutate;
  };
  const std::vector<Case> cases = {
      {"target over 4096 bytes",
       [&](auto* r) { r->set_target_path(tmp_.Join("pods/") + std::string(5000, 'a')); }},
      {"10 KB target", [&](auto* r) { r->set_target_path("/" + std::string(10240, 'a')); }},
      {"target component over NAME_MAX",
       [&](auto* r) { r->set_target_path(tmp_.Join("pods/") + std::string(300, 'a')); }},
      {"target with NUL",
       [&](auto* r) { r->set_target_path(target + std::string("\0/../../etc", 11)); }},
      {"target with ..", [&](auto* r) { r->set_target_path(tmp_.Join("pods/../pods/t")); }},
      {"target with //", [&](auto* r) { r->set_target_path(tmp_.Join("pods//t")); }},
      {"relative target", [&](auto* r) { r->set_target_path("pods/t"); }},
      {"target /", [&](auto* r) { r->set_target_path("/"); }},
      {"10 KB mgs address",
       [](auto* r) { (*r->mutable_volume_context())["mgs-ip-address"] = std::string(10240, '1'); }},
      {"10 KB fs name",
       [](auto* r) { (*r->mutable_volume_context())["fs-name"] = std::string(10240, 'f'); }},
      {"10 KB sub-dir",
       [](auto* r) { (*r->mutable_volume_context())["sub-dir"] = std::string(10240, 's'); }},
      {"sub-dir with NUL",
       [](auto* r) {
         (*r->mutable_volume_context())["sub-dir"] = std::string("ok\0/../../..", 12);
       }},
      {"10 KB context key",
       [](auto* r) { (*r->mutable_volume_context())[std::string(10240, 'k')] = "v"; }},
      {"10 KB mount flag",
       [](auto* r) {
         r->mutable_volume_capability()->mutable_mount()->add_mount_flags(std::string(10240, 'o'));
       }},
      {"10 KB fs group",
       [](auto* r) {
         r->mutable_volume_capability()->mutable_mount()->set_volume_mount_group(
             std::string(10240, '9'));
       }},
  };
  for (const Case& c : cases) {
    csi::v1::NodePublishVolumeRequest req = PublishRequest(target);
    c.mutate(&req);
    grpc::Status s = Publish(req);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << c.name << ": " << s.error_message();
    EXPECT_LT(s.error_message().size(), 16u * 1024) << c.name << ": the error echoes too much";
    EXPECT_EQ(Tree(tmp_.Join("pods")), std::set<std::string>()) << c.name;
    EXPECT_THAT(MountsUnder(tmp_.path()), IsEmpty()) << c.name;
    if (req.target_path().size() > 4096 || req.target_path().find('\0') != std::string::npos) {
      EXPECT_EQ(Unpublish(kVolumeId, req.target_path()).error_code(), grpc::INVALID_ARGUMENT)
          << c.name;
      csi::v1::NodeGetVolumeStatsRequest stats;
      stats.set_volume_id(kVolumeId);
      stats.set_volume_path(req.target_path());
      csi::v1::NodeGetVolumeStatsResponse res;
      EXPECT_EQ(node_stub_->NodeGetVolumeStats(Context().get(), stats, &res).error_code(),
                grpc::INVALID_ARGUMENT)
          << c.name;
    }
  }

  // The volume id is opaque to the node (the volume context decides what is
  // mounted) and never becomes a path: any id mounts exactly the context at
  // exactly the target, and unpublishes with it.
  for (const std::string& id :
       {std::string(10 * 1024, 'v'), std::string("../../etc\0\n#x#y", 15), std::string("/")}) {
    csi::v1::NodePublishVolumeRequest req = PublishRequest(target);
    req.set_volume_id(id);
    grpc::Status s = Publish(req);
    ASSERT_TRUE(s.ok()) << id.size() << ": " << s.error_message();
    EXPECT_THAT(MountsUnder(tmp_.path()), testing::ElementsAre(target));
    EXPECT_EQ(ReadFile(target + "/marker"), "data");
    EXPECT_TRUE(Unpublish(id, target).ok());
    EXPECT_EQ(Tree(tmp_.Join("pods")), std::set<std::string>());
  }
  ExpectAllServing("after hostile node input");
}

TEST_F(HostileE2eTest, ControllerRefusesOverLongNamesAndDeletesNothingOutsideTheFileSystem) {
  // A real provisioned sub-dir gives a real owner marker, for "victim".
  csi::v1::CreateVolumeRequest create;
  create.set_name("victim");
  create.add_volume_capabilities()->mutable_mount();
  create.mutable_volume_capabilities(0)->mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
  auto& p = *create.mutable_parameters();
  p["mgs-ip-address"] = "10.0.0.4";
  p["fs-name"] = "lustrefs";
  p["sub-dir"] = "victim-dir";
  p["create-sub-dir"] = "true";
  p["sub-dir-on-delete"] = "delete";
  csi::v1::CreateVolumeResponse created;
  grpc::Status s = controller_stub_->CreateVolume(Context().get(), create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message() << ReadFile(tmp_.Join("controller.log"));
  const std::string marker = ".lustre-csi-volume";
  std::string marker_text = ReadFile(tmp_.Join("lustre/lustrefs/victim-dir/") + marker);
  ASSERT_FALSE(marker_text.empty());
  // The same marker in directories outside the file system: only a release
  // that escaped the file system could find (and delete) them.
  for (const char* canary : {"canary", "lustre/canary"}) {
    ASSERT_EQ(mkdir(tmp_.Join(canary).c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(tmp_.Join(canary) + "/" + marker, marker_text).ok());
    ASSERT_TRUE(WriteFile(tmp_.Join(canary) + "/precious", "keep").ok());
  }
  const std::string abs_canary = tmp_.Join("canary");
  for (const std::string& id :
       {std::string("victim#lustrefs#10.0.0.4#../../canary#f"),
        std::string("victim#lustrefs#10.0.0.4#../canary#f"),
        "victim#lustrefs#10.0.0.4#" + abs_canary + "#f", std::string("victim#..#10.0.0.4#canary#f"),
        std::string("victim#../..#10.0.0.4#canary#f"),
        std::string("victim#lustrefs#10.0.0.4#victim-dir/../../canary#f"),
        std::string("victim#lustrefs#10.0.0.4#") + std::string(10240, 'd'),
        std::string(10240, '#')}) {
    csi::v1::DeleteVolumeRequest del;
    del.set_volume_id(id);
    csi::v1::DeleteVolumeResponse res;
    grpc::Status d = controller_stub_->DeleteVolume(Context().get(), del, &res);
    EXPECT_THAT(d.error_code(), AnyOf(grpc::OK, grpc::INVALID_ARGUMENT, grpc::NOT_FOUND))
        << absl::CHexEscape(id.substr(0, 80)) << ": " << d.error_message();
    EXPECT_EQ(ReadFile(tmp_.Join("canary/precious")), "keep") << id.substr(0, 80);
    EXPECT_EQ(ReadFile(tmp_.Join("lustre/canary/precious")), "keep") << id.substr(0, 80);
  }
  EXPECT_EQ(access(tmp_.Join("lustre/lustrefs/victim-dir").c_str(), F_OK), 0);

  // Over-long and malformed names are refused at CreateVolume.
  for (const std::string& name :
       {std::string(10240, 'n'), std::string("a#b"), std::string("a\0b", 3)}) {
    csi::v1::CreateVolumeRequest bad = create;
    bad.set_name(name);
    bad.mutable_parameters()->erase("create-sub-dir");
    csi::v1::CreateVolumeResponse res;
    EXPECT_EQ(controller_stub_->CreateVolume(Context().get(), bad, &res).error_code(),
              grpc::INVALID_ARGUMENT)
        << absl::CHexEscape(name.substr(0, 20));
  }
  csi::v1::CreateVolumeRequest escape = create;
  escape.set_name("escape");
  (*escape.mutable_parameters())["sub-dir"] = "../../canary2";
  csi::v1::CreateVolumeResponse res;
  EXPECT_EQ(controller_stub_->CreateVolume(Context().get(), escape, &res).error_code(),
            grpc::INVALID_ARGUMENT);
  EXPECT_NE(access(tmp_.Join("canary2").c_str(), F_OK), 0);

  // The real volume is still deleted by its real id.
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(created.volume().volume_id());
  csi::v1::DeleteVolumeResponse del_res;
  EXPECT_TRUE(controller_stub_->DeleteVolume(Context().get(), del, &del_res).ok());
  EXPECT_NE(access(tmp_.Join("lustre/lustrefs/victim-dir").c_str(), F_OK), 0);
  ExpectAllServing("after hostile controller input");
}

TEST_F(HostileE2eTest, MessagesOverFourMebibytesAreResourceExhausted) {
  const std::string big(5 << 20, 'x');
  const std::string under(3 << 20, 'x');

  csi::v1::NodePublishVolumeRequest publish = PublishRequest(tmp_.Join("pods/big"));
  (*publish.mutable_volume_context())["x"] = big;
  grpc::Status s = Publish(publish);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED) << s.error_message();
  (*publish.mutable_volume_context())["x"] = under;  // under the limit: read and refused
  EXPECT_EQ(Publish(publish).error_code(), grpc::INVALID_ARGUMENT);

  csi::v1::CreateVolumeRequest create;
  create.set_name("big");
  create.add_volume_capabilities()->mutable_mount();
  (*create.mutable_parameters())["x"] = big;
  csi::v1::CreateVolumeResponse created;
  s = controller_stub_->CreateVolume(Context().get(), create, &created);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED) << s.error_message();

  pb::MountVolumeRequest mount = MountRequest();
  (*mount.mutable_volume_context())["x"] = big;
  s = Mount(mount);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED) << s.error_message();
  (*mount.mutable_volume_context())["x"] = under;  // passed on; the node refuses the key
  s = Mount(mount);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(Claims(), IsEmpty());
  ExpectAllServing("after oversized messages");
}

// Sends `payload` as the serialized request of `method`; the status.
grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& payload) {
  grpc::GenericStub stub(channel);
  grpc::Slice slice(payload);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  auto ctx = Context();
  std::promise<grpc::Status> done;
  stub.UnaryCall(ctx.get(), method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(s); });
  return done.get_future().get();
}

TEST_F(HostileE2eTest, BytesThatAreNoProtobufAreRefusedWithoutACrash) {
  // Each is invalid for any message: an over-long varint, a length beyond the
  // end, an invalid wire type, an end-group without a start, field number 0,
  // and (for the string field 1 of the requests below) invalid UTF-8.
  const std::vector<std::string> garbage = {
      std::string(11, '\xff'),
      std::string("\x0a\x64"
                  "abc",
                  5),
      std::string("\x0f\x01", 2),
      std::string("\x0c", 1),
      std::string("\x00\x01", 2),
      std::string("\x0a\x02\xc3\x28", 4),
      std::string("\x0a\xff\xff\xff\xff\x0f", 6),
  };
  auto node = UnixChannel(tmp_.Join("node.sock"));
  auto controller = UnixChannel(tmp_.Join("controller.sock"));
  auto manager = UnixChannel(tmp_.Join("pm.sock"));
  const std::vector<std::pair<std::shared_ptr<grpc::Channel>, std::string>> methods = {
      {node, "/csi.v1.Node/NodePublishVolume"},
      {node, "/csi.v1.Node/NodeUnpublishVolume"},
      {node, "/csi.v1.Node/NodeGetVolumeStats"},
      {controller, "/csi.v1.Controller/CreateVolume"},
      {controller, "/csi.v1.Controller/DeleteVolume"},
      {manager, "/lustre_csi.manager.v1.PluginManager/MountVolume"},
      {manager, "/lustre_csi.manager.v1.PluginManager/UnmountVolume"},
  };
  for (const auto& [channel, method] : methods) {
    for (size_t i = 0; i < garbage.size(); ++i) {
      grpc::Status s = RawCall(channel, method, garbage[i]);
      EXPECT_THAT(s.error_code(), AnyOf(grpc::INTERNAL, grpc::INVALID_ARGUMENT))
          << method << " garbage #" << i << ": " << s.error_message();
    }
    // A well-formed but empty request is read and refused on its merits.
    EXPECT_EQ(RawCall(channel, method, "").error_code(), grpc::INVALID_ARGUMENT) << method;
    // An unknown method is UNIMPLEMENTED.
    EXPECT_EQ(RawCall(channel, method + "X", "").error_code(), grpc::UNIMPLEMENTED) << method;
  }
  EXPECT_THAT(Claims(), IsEmpty());
  ExpectAllServing("after garbage");
}

TEST_F(HostileE2eTest, ThousandsOfConcurrentCallsAreAllAnswered) {
  constexpr int kThreads = 32;
  constexpr int kCallsPerThread = 63;  // 2,016 calls per server
  struct Tally {
    std::atomic<int> answered{0};
    std::atomic<int> unexpected{0};
  };
  std::map<std::string, Tally> tallies;
  for (const char* name : {"node", "controller", "manager"}) tallies[name];
  std::mutex mu;
  std::vector<std::string> failures;
  auto check = [&](const char* server, const char* what, const grpc::Status& s,
                   grpc::StatusCode want) {
    ++tallies[server].answered;
    if (s.error_code() != want) {
      ++tallies[server].unexpected;
      std::lock_guard<std::mutex> lock(mu);
      if (failures.size() < 10) {
        failures.push_back(
            absl::StrCat(server, " ", what, ": ", s.error_code(), " ", s.error_message()));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // A connection of its own per thread and server.
      auto node_channel = UnixChannel(tmp_.Join("node.sock"));
      auto node = csi::v1::Node::NewStub(node_channel);
      auto node_identity = csi::v1::Identity::NewStub(node_channel);
      auto controller = csi::v1::Controller::NewStub(UnixChannel(tmp_.Join("controller.sock")));
      auto manager = pb::PluginManager::NewStub(UnixChannel(tmp_.Join("pm.sock")));
      for (int i = 0; i < kCallsPerThread; ++i) {
        std::string target = tmp_.Join(absl::StrCat("pods/c", t, "-", i));
        switch (i % 4) {
          case 0: {
            csi::v1::NodeGetCapabilitiesResponse res;
            check("node", "NodeGetCapabilities",
                  node->NodeGetCapabilities(Context().get(), {}, &res), grpc::OK);
            break;
          }
          case 1: {
            csi::v1::ProbeResponse res;
            check("node", "Probe", node_identity->Probe(Context().get(), {}, &res), grpc::OK);
            break;
          }
          case 2: {
            csi::v1::NodePublishVolumeRequest req = PublishRequest(target);
            (*req.mutable_volume_context())["sub-dir"] = "../../escape";
            csi::v1::NodePublishVolumeResponse res;
            check("node", "bad publish", node->NodePublishVolume(Context().get(), req, &res),
                  grpc::INVALID_ARGUMENT);
            break;
          }
          case 3: {
            csi::v1::NodePublishVolumeRequest req = PublishRequest("relative/" + target);
            csi::v1::NodePublishVolumeResponse res;
            check("node", "relative publish", node->NodePublishVolume(Context().get(), req, &res),
                  grpc::INVALID_ARGUMENT);
            break;
          }
        }
        if (i % 2 == 0) {
          csi::v1::ValidateVolumeCapabilitiesRequest req;
          req.set_volume_id("nope");
          req.add_volume_capabilities()->mutable_mount();
          csi::v1::ValidateVolumeCapabilitiesResponse res;
          check("controller", "Validate",
                controller->ValidateVolumeCapabilities(Context().get(), req, &res),
                grpc::NOT_FOUND);
        } else {
          csi::v1::CreateVolumeRequest req;
          req.set_name(absl::StrCat("c", t, "-", i));
          req.add_volume_capabilities()->mutable_block();
          csi::v1::CreateVolumeResponse res;
          check("controller", "bad create", controller->CreateVolume(Context().get(), req, &res),
                grpc::INVALID_ARGUMENT);
        }
        if (i % 2 == 0) {
          pb::ListPluginsResponse res;
          check("manager", "ListPlugins", manager->ListPlugins(Context().get(), {}, &res),
                grpc::OK);
        } else {
          pb::MountVolumeRequest req = MountRequest();
          req.set_alloc_id(std::string(10 * 1024, 'a'));
          pb::MountVolumeResponse res;
          check("manager", "bad mount", manager->MountVolume(Context().get(), req, &res),
                grpc::INVALID_ARGUMENT);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (auto& [server, tally] : tallies) {
    EXPECT_EQ(tally.answered.load(), kThreads * kCallsPerThread) << server;
    EXPECT_EQ(tally.unexpected.load(), 0) << server;
  }
  EXPECT_THAT(failures, IsEmpty());
  EXPECT_EQ(Tree(tmp_.Join("pods")), std::set<std::string>());
  EXPECT_THAT(Claims(), IsEmpty());
  ExpectAllServing("after the flood");
}

}  // namespace
}  // namespace lustre_csi::e2e
