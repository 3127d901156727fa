// End-to-end across all three roles of the binary: `lustre-csi controller`
// provisions a volume (creating its sub-dir), `lustre-csi plugin-manager`
// finds `lustre-csi node --mount-mode=local` through the kubelet-style
// registration directory and mounts the volume for allocations with the
// volume context CreateVolume returned, then everything is undone.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

namespace pb = ::lustre_csi::manager::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kDriver[] = "azurelustre.csi.azure.com";

// Occurrences of `needle` in `text`.
int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

class LifecycleE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"lustre", "lustre/lustrefs", "registry", "mounts", "state"}) {
      ASSERT_EQ(mkdir(tmp_.Join(d).c_str(), 0755), 0) << d;
    }
    // The file system, on a tmpfs of its own.
    ASSERT_EQ(mount("tmpfs", tmp_.Join("lustre/lustrefs").c_str(), "tmpfs", 0, "size=16m"), 0);

    controller_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "controller", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + tmp_.Join("controller.sock")},
        tmp_.Join("controller.log"));
    node_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "node", "--nodeid=node-1", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + tmp_.Join("node.sock"),
                                 "--plugin-registration-dir=" + tmp_.Join("registry")},
        tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join("controller.sock"), absl::Seconds(10)).ok())
        << ReadFile(tmp_.Join("controller.log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join("node.sock"), absl::Seconds(10)).ok())
        << ReadFile(tmp_.Join("node.log"));
    controller_stub_ = csi::v1::Controller::NewStub(UnixChannel(tmp_.Join("controller.sock")));
  }

  void TearDown() override {
    manager_.reset();
    node_.reset();
    controller_.reset();
    EXPECT_THAT(ChildProcesses(), IsEmpty());
    EXPECT_THAT(ProcessesMentioning(tmp_.path()), IsEmpty());
    EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
  }

  void StartManager(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {BinaryPath(),
                                     "plugin-manager",
                                     "--endpoint=unix://" + tmp_.Join("pm.sock"),
                                     "--state-file=" + tmp_.Join("state/pm.db"),
                                     "--mount-root=" + tmp_.Join("mounts"),
                                     "--registration-dir=" + tmp_.Join("registry"),
                                     "--node-name=node-1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    manager_ = std::make_unique<Subprocess>(argv, tmp_.Join("manager.log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join("pm.sock"), absl::Seconds(20)).ok())
        << ReadFile(tmp_.Join("manager.log"));
    manager_stub_ = pb::PluginManager::NewStub(UnixChannel(tmp_.Join("pm.sock")));
    pb::WaitForPluginRequest req;
    req.set_name(kDriver);
    req.set_type(pb::PLUGIN_TYPE_NODE);
    req.set_timeout_ms(30000);
    pb::Plugin plugin;
    grpc::ClientContext ctx;
    grpc::Status found = manager_stub_->WaitForPlugin(&ctx, req, &plugin);
    ASSERT_TRUE(found.ok()) << found.error_message() << ReadFile(tmp_.Join("manager.log"));
    EXPECT_EQ(plugin.source(), pb::PLUGIN_SOURCE_REGISTRATION_DIR);
    EXPECT_EQ(plugin.node_id(), "node-1");
  }

  // Creates a volume whose sub-dir (named after the PVC) the controller
  // makes, and removes again at DeleteVolume.
  csi::v1::Volume CreateVolume(const std::string& name) {
    csi::v1::CreateVolumeRequest req;
    req.set_name(name);
    *req.add_volume_capabilities() = MountCapability();
    auto& p = *req.mutable_parameters();
    p["mgs-ip-address"] = "10.0.0.4";
    p["fs-name"] = "lustrefs";
    p["sub-dir"] = "${pvc.metadata.namespace}-${pvc.metadata.name}";
    p["create-sub-dir"] = "true";
    p["sub-dir-on-delete"] = "delete";
    p["csi.storage.k8s.io/pvc/namespace"] = "team";
    p["csi.storage.k8s.io/pvc/name"] = name;
    csi::v1::CreateVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status status = controller_stub_->CreateVolume(&ctx, req, &res);
    EXPECT_TRUE(status.ok()) << status.error_message() << ReadFile(tmp_.Join("controller.log"));
    return res.volume();
  }

  grpc::Status DeleteVolume(const std::string& id) {
    csi::v1::DeleteVolumeRequest req;
    req.set_volume_id(id);
    csi::v1::DeleteVolumeResponse res;
    grpc::ClientContext ctx;
    return controller_stub_->DeleteVolume(&ctx, req, &res);
  }

  // A claim of `volume` for `alloc`, made from what CreateVolume returned.
  static pb::MountVolumeRequest MountRequest(const csi::v1::Volume& volume,
                                             const std::string& alloc, bool read_only) {
    pb::MountVolumeRequest req;
    req.set_plugin(kDriver);
    req.set_namespace_("team");
    req.set_volume_id("data");
    req.set_remote_id(volume.volume_id());
    req.set_alloc_id(alloc);
    req.mutable_usage()->set_read_only(read_only);
    req.mutable_usage()->set_attachment_mode(pb::ATTACHMENT_MODE_FILE_SYSTEM);
    req.mutable_usage()->set_access_mode(pb::ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
    req.mutable_volume_context()->insert(volume.volume_context().begin(),
                                         volume.volume_context().end());
    return req;
  }

  grpc::Status Mount(const pb::MountVolumeRequest& req, pb::MountInfo* info) {
    pb::MountVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status s = manager_stub_->MountVolume(&ctx, req, &res);
    *info = res.mount();
    return s;
  }

  grpc::Status Unmount(const pb::MountVolumeRequest& like) {
    pb::UnmountVolumeRequest req = UnmountRequestFor(like);
    pb::UnmountVolumeResponse res;
    grpc::ClientContext ctx;
    return manager_stub_->UnmountVolume(&ctx, req, &res);
  }

  std::vector<pb::Claim> Claims() {
    pb::ListClaimsResponse res;
    grpc::ClientContext ctx;
    EXPECT_TRUE(manager_stub_->ListClaims(&ctx, {}, &res).ok());
    return {res.claims().begin(), res.claims().end()};
  }

  bool HasMount(const pb::MountInfo& info) {
    pb::HasMountRequest req;
    req.set_plugin(kDriver);
    *req.mutable_mount() = info;
    pb::HasMountResponse res;
    grpc::ClientContext ctx;
    grpc::Status s = manager_stub_->HasMount(&ctx, req, &res);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return res.mounted();
  }

  TempDir tmp_;
  std::unique_ptr<Subprocess> controller_, node_, manager_;
  std::unique_ptr<csi::v1::Controller::Stub> controller_stub_;
  std::unique_ptr<pb::PluginManager::Stub> manager_stub_;
};

TEST_F(LifecycleE2eTest, CreateMountReadWriteAndReadOnlyUnmountDelete) {
  StartManager();
  csi::v1::Volume volume = CreateVolume("data");
  ASSERT_EQ(volume.volume_id(), "data#lustrefs#10.0.0.4#team-data#f");
  const std::string sub_dir = tmp_.Join("lustre/lustrefs/team-data");
  ASSERT_EQ(access(sub_dir.c_str(), F_OK), 0) << "CreateVolume did not create the sub-dir";

  pb::MountVolumeRequest writer = MountRequest(volume, "alloc-writer", false);
  pb::MountVolumeRequest reader = MountRequest(volume, "alloc-reader", true);
  pb::MountInfo w, r;
  grpc::Status mounted = Mount(writer, &w);
  ASSERT_TRUE(mounted.ok()) << mounted.error_message() << ReadFile(tmp_.Join("manager.log"));
  ASSERT_TRUE(Mount(reader, &r).ok());
  EXPECT_EQ(w.target(), tmp_.Join(absl::StrCat("mounts/", kDriver,
                                               "/per-alloc/alloc-writer/data/"
                                               "rw-file-system-multi-node-multi-writer")));
  EXPECT_EQ(r.target(), tmp_.Join(absl::StrCat("mounts/", kDriver,
                                               "/per-alloc/alloc-reader/data/"
                                               "ro-file-system-multi-node-multi-writer")));
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")).size(), 2u);
  EXPECT_TRUE(HasMount(w));
  EXPECT_TRUE(HasMount(r));
  std::vector<pb::Claim> claims = Claims();
  ASSERT_EQ(claims.size(), 2u);
  for (const pb::Claim& c : claims) {
    EXPECT_EQ(c.state(), "mounted");
    EXPECT_EQ(c.remote_id(), volume.volume_id());
  }

  // Written through the read-write allocation, read through the read-only
  // one, and stored in the sub-dir the controller made.
  ASSERT_TRUE(WriteFile(w.target() + "/results.txt", "42").ok());
  EXPECT_EQ(ReadFile(r.target() + "/results.txt"), "42");
  EXPECT_EQ(ReadFile(sub_dir + "/results.txt"), "42");
  // The read-only allocation really refuses writes.
  int fd = open((r.target() + "/nope").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EROFS);
  if (fd >= 0) close(fd);
  fd = open((r.target() + "/results.txt").c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EROFS);
  if (fd >= 0) close(fd);
  EXPECT_EQ(ReadFile(sub_dir + "/results.txt"), "42");

  ASSERT_TRUE(Unmount(writer).ok());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), ElementsAre(r.target()));
  EXPECT_EQ(ReadFile(r.target() + "/results.txt"), "42") << "the reader lost its mount";
  ASSERT_TRUE(Unmount(reader).ok());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
  EXPECT_THAT(Claims(), IsEmpty());
  EXPECT_FALSE(HasMount(w));
  // Mount-state answers are about the manager's own paths only.
  for (const std::string& foreign : {std::string("/proc"), tmp_.Join("lustre")}) {
    pb::HasMountRequest req;
    req.set_plugin(kDriver);
    req.mutable_mount()->set_target(foreign);
    pb::HasMountResponse res;
    grpc::ClientContext ctx;
    EXPECT_EQ(manager_stub_->HasMount(&ctx, req, &res).error_code(), grpc::INVALID_ARGUMENT)
        << foreign;
  }
  EXPECT_NE(access(w.target().c_str(), F_OK), 0) << "target directory left behind";
  EXPECT_EQ(ReadFile(sub_dir + "/results.txt"), "42") << "unmounting deleted data";

  // DeleteVolume removes the sub-dir (its policy is delete), idempotently.
  grpc::Status deleted = DeleteVolume(volume.volume_id());
  ASSERT_TRUE(deleted.ok()) << deleted.error_message();
  EXPECT_NE(access(sub_dir.c_str(), F_OK), 0) << "sub-dir not deleted";
  EXPECT_TRUE(DeleteVolume(volume.volume_id()).ok());
  EXPECT_THAT(ReadFile(tmp_.Join("node.log")), Not(HasSubstr("already in progress")));
}

// Many allocations of one volume mounted at once, each asked for several
// times: the manager queues operations on one volume, so the node never sees
// two publishes of one target together (it would answer ABORTED, which
// --retry-attempts=1 would pass straight back). Every mount is slowed down at
// the mount system call to make overlaps certain if the queue were missing.
TEST_F(LifecycleE2eTest, ConcurrentMountsOfOneVolumeAreQueuedNeverAborted) {
  StartManager({"--retry-attempts=1"});
  csi::v1::Volume volume = CreateVolume("shared");
  ASSERT_FALSE(volume.volume_id().empty());

  // A bind is attached by move_mount(2), or before Linux 5.12 by a mount(2)
  // with MS_MOVE from its staging point.
  Strace slow(node_->pid(),
              {"-e", "trace=mount,move_mount", "-e", "inject=mount,move_mount:delay_enter=100000"},
              tmp_.Join("strace.log"));
  ASSERT_TRUE(slow.WaitAttached(absl::Seconds(20)).ok());

  constexpr int kAllocs = 8;
  constexpr int kCallsPerAlloc = 3;
  std::vector<grpc::Status> results(kAllocs * kCallsPerAlloc);
  std::vector<pb::MountInfo> infos(results.size());
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      pb::MountVolumeRequest req = MountRequest(volume, absl::StrCat("alloc-", i % kAllocs), false);
      ++ready;
      while (ready < static_cast<int>(results.size())) std::this_thread::yield();
      results[i] = Mount(req, &infos[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<std::string> targets;
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].error_code() << " "
                                 << results[i].error_message();
    targets.insert(infos[i].target());
  }
  EXPECT_EQ(targets.size(), static_cast<size_t>(kAllocs));
  EXPECT_EQ(MountsUnder(tmp_.Join("mounts")).size(), static_cast<size_t>(kAllocs));
  // One bind attached per allocation, each of them slowed down.
  std::string trace = slow.Log();
  EXPECT_EQ(Count(trace, "move_mount(") + Count(trace, "MS_MOVE"), kAllocs) << trace;
  EXPECT_GE(Count(trace, "(DELAYED)"), kAllocs) << trace;
  EXPECT_THAT(ReadFile(tmp_.Join("node.log")), Not(HasSubstr("already in progress")));
  EXPECT_EQ(Claims().size(), static_cast<size_t>(kAllocs));

  // Data written by one allocation is seen by all.
  ASSERT_TRUE(WriteFile(infos[0].target() + "/shared.txt", "all").ok());
  for (const std::string& t : targets) EXPECT_EQ(ReadFile(t + "/shared.txt"), "all") << t;

  // Unmount all at once, again with repeats.
  threads.clear();
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = Unmount(MountRequest(volume, absl::StrCat("alloc-", i % kAllocs), false));
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].error_message();
  }
  EXPECT_THAT(Claims(), IsEmpty());
  EXPECT_THAT(MountsUnder(tmp_.Join("mounts")), IsEmpty());
  EXPECT_TRUE(DeleteVolume(volume.volume_id()).ok());
}

}  // namespace
}  // namespace lustre_csi::e2e
