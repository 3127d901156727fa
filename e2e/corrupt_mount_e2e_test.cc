// Faults at the mount layer under the real node plugin (local mount mode):
// a dead FUSE mount ("transport endpoint is not connected") at a publish
// target, and errors injected with strace into the node's statx and statfs
// calls. The node must repair what it can, report what it cannot as an
// abnormal volume condition (or a clear error), and keep serving.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// File-system types of the mounts stacked at `point`, bottom first.
std::vector<std::string> FsTypesAt(const std::string& point) {
  std::vector<std::string> out;
  for (const volume::MountEntry& e : MountsAt(point)) out.push_back(e.fs_type);
  return out;
}

class CorruptMountTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mkdir(tmp_.Join("lustre").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(tmp_.Join("lustre/lustrefs").c_str(), 0755), 0);
    ASSERT_EQ(mount("tmpfs", tmp_.Join("lustre/lustrefs").c_str(), "tmpfs", 0, "size=16m"), 0);
    ASSERT_TRUE(WriteFile(tmp_.Join("lustre/lustrefs/marker"), "data").ok());
    ASSERT_EQ(mkdir(tmp_.Join("pods").c_str(), 0755), 0);
    socket_ = tmp_.Join("node.sock");
    node_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "node", "--nodeid=node-1", "--mount-mode=local",
                                 "--local-root=" + tmp_.Join("lustre"),
                                 "--endpoint=unix://" + socket_},
        tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(socket_, absl::Seconds(10)).ok()) << ReadFile(tmp_.Join("node.log"));
    auto channel = UnixChannel(socket_);
    stub_ = csi::v1::Node::NewStub(channel);
    identity_ = csi::v1::Identity::NewStub(channel);
  }

  void TearDown() override {
    node_.reset();
    EXPECT_THAT(ChildProcesses(), IsEmpty());
    EXPECT_THAT(ProcessesMentioning(tmp_.path()), IsEmpty());
    EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
  }

  // Mounts a FUSE file system at `dir` whose daemon is gone before it ever
  // answered: every access then fails with ENOTCONN. False (with the reason)
  // when this kernel or sandbox cannot make one.
  bool MountDeadFuse(const std::string& dir, std::string* why) {
    int fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fuse < 0) {
      *why = absl::StrCat("/dev/fuse: ", strerror(errno));
      return false;
    }
    std::string opts = absl::StrCat("fd=", fuse, ",rootmode=40000,user_id=0,group_id=0");
    int rc = mount("lustre-csi-dead-fuse", dir.c_str(), "fuse", MS_NOSUID | MS_NODEV, opts.c_str());
    int err = errno;
    close(fuse);  // the connection is aborted: no daemon will ever answer
    if (rc != 0) {
      *why = absl::StrCat("mount -t fuse: ", strerror(err));
      return false;
    }
    struct stat st;
    EXPECT_NE(stat(dir.c_str(), &st), 0);
    EXPECT_EQ(errno, ENOTCONN) << "the FUSE mount is not dead";
    return true;
  }

  csi::v1::NodePublishVolumeRequest PublishRequest(const std::string& target) {
    return MakePublishRequest("pvc-1#lustrefs#10.0.0.4##f", target);
  }

  grpc::Status Publish(const std::string& target) {
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return stub_->NodePublishVolume(&ctx, PublishRequest(target), &res);
  }

  grpc::Status Unpublish(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("pvc-1#lustrefs#10.0.0.4##f");
    req.set_target_path(target);
    grpc::ClientContext ctx;
    csi::v1::NodeUnpublishVolumeResponse res;
    return stub_->NodeUnpublishVolume(&ctx, req, &res);
  }

  grpc::Status Stats(const std::string& path, csi::v1::NodeGetVolumeStatsResponse* res) {
    csi::v1::NodeGetVolumeStatsRequest req;
    req.set_volume_id("pvc-1#lustrefs#10.0.0.4##f");
    req.set_volume_path(path);
    grpc::ClientContext ctx;
    return stub_->NodeGetVolumeStats(&ctx, req, res);
  }

  // Probe answers and the volume at `target` reports healthy usage.
  void ExpectServingAndHealthy(const std::string& target, const std::string& where) {
    grpc::ClientContext ctx;
    csi::v1::ProbeResponse probe;
    EXPECT_TRUE(identity_->Probe(&ctx, {}, &probe).ok()) << where;
    EXPECT_TRUE(node_->running()) << where;
    csi::v1::NodeGetVolumeStatsResponse stats;
    grpc::Status s = Stats(target, &stats);
    ASSERT_TRUE(s.ok()) << where << ": " << s.error_message();
    EXPECT_FALSE(stats.volume_condition().abnormal()) << where;
    ASSERT_EQ(stats.usage_size(), 2) << where;
    EXPECT_EQ(stats.usage(0).total(), 16 << 20) << where;
  }

  TempDir tmp_;
  std::string socket_;
  std::unique_ptr<Subprocess> node_;
  std::unique_ptr<csi::v1::Node::Stub> stub_;
  std::unique_ptr<csi::v1::Identity::Stub> identity_;
};

TEST_F(CorruptMountTest, DeadFuseAtTargetIsReportedAbnormalThenRepairedByPublish) {
  const std::string target = tmp_.Join("pods/dead");
  ASSERT_EQ(mkdir(target.c_str(), 0750), 0);
  std::string why;
  if (!MountDeadFuse(target, &why)) GTEST_SKIP() << why;
  ASSERT_THAT(FsTypesAt(target), ElementsAre("fuse"));

  // Stats of the dead mount: an abnormal condition, not a failed call.
  csi::v1::NodeGetVolumeStatsResponse stats;
  grpc::Status s = Stats(target, &stats);
  ASSERT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
  EXPECT_TRUE(stats.volume_condition().abnormal());
  EXPECT_THAT(stats.volume_condition().message(), HasSubstr("not connected"));
  EXPECT_EQ(stats.usage_size(), 0);

  // Publish unmounts the dead mount and mounts the volume properly.
  grpc::Status published = Publish(target);
  ASSERT_TRUE(published.ok()) << published.error_message() << ReadFile(tmp_.Join("node.log"));
  EXPECT_THAT(FsTypesAt(target), ElementsAre("tmpfs")) << "the dead mount is still stacked";
  EXPECT_EQ(ReadFile(target + "/marker"), "data");
  ASSERT_TRUE(WriteFile(target + "/written", "after repair").ok());
  EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/written")), "after repair");
  ExpectServingAndHealthy(target, "after repair");

  ASSERT_TRUE(Unpublish(target).ok());
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
  EXPECT_NE(access(target.c_str(), F_OK), 0);
}

TEST_F(CorruptMountTest, DeadFuseOverAPublishedVolumeIsReportedRepairedAndCleanedUp) {
  const std::string target = tmp_.Join("pods/stacked");
  ASSERT_TRUE(Publish(target).ok());
  std::string why;
  if (!MountDeadFuse(target, &why)) GTEST_SKIP() << why;
  ASSERT_THAT(FsTypesAt(target), ElementsAre("tmpfs", "fuse"));

  csi::v1::NodeGetVolumeStatsResponse stats;
  grpc::Status s = Stats(target, &stats);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(stats.volume_condition().abnormal());

  // A repeated publish (the kubelet does that) repairs the target.
  ASSERT_TRUE(Publish(target).ok()) << ReadFile(tmp_.Join("node.log"));
  EXPECT_THAT(FsTypesAt(target), ElementsAre("tmpfs"));
  EXPECT_EQ(ReadFile(target + "/marker"), "data");
  ExpectServingAndHealthy(target, "after repair");

  // And when it is not repaired first, unpublish removes the whole stack.
  ASSERT_TRUE(MountDeadFuse(target, &why)) << why;
  grpc::Status unpublished = Unpublish(target);
  EXPECT_TRUE(unpublished.ok()) << unpublished.error_message();
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
  EXPECT_NE(access(target.c_str(), F_OK), 0);
  EXPECT_EQ(ReadFile(tmp_.Join("lustre/lustrefs/marker")), "data") << "data below deleted";
}

struct InjectedError {
  const char* syscall;
  const char* error;
  const char* text;  // strerror of it, as the condition message shows it
};

// The errors of a dying or unreachable file system: reported as an abnormal
// volume condition; the node is fine again once they stop.
TEST_F(CorruptMountTest, InjectedStatErrorsAreAbnormalAndTheNodeKeepsServing) {
  const std::string target = tmp_.Join("pods/vol");
  ASSERT_TRUE(Publish(target).ok());
  ExpectServingAndHealthy(target, "before");
  for (const InjectedError& e : {InjectedError{"statx", "EIO", "Input/output error"},
                                 InjectedError{"statx", "ESTALE", "Stale file handle"},
                                 InjectedError{"statx", "ENOTCONN", "not connected"},
                                 InjectedError{"statfs", "EIO", "Input/output error"},
                                 InjectedError{"statfs", "ESTALE", "Stale file handle"}}) {
    const std::string where = absl::StrCat(e.syscall, " ", e.error);
    {
      Strace strace(node_->pid(),
                    {"-e", absl::StrCat("trace=", e.syscall), "-e",
                     absl::StrCat("inject=", e.syscall, ":error=", e.error)},
                    tmp_.Join("strace.log"));
      ASSERT_TRUE(strace.WaitAttached(absl::Seconds(20)).ok()) << where;
      csi::v1::NodeGetVolumeStatsResponse stats;
      grpc::Status s = Stats(target, &stats);
      ASSERT_TRUE(s.ok()) << where << ": " << s.error_code() << " " << s.error_message();
      EXPECT_TRUE(stats.volume_condition().abnormal()) << where;
      EXPECT_THAT(stats.volume_condition().message(), HasSubstr(e.text)) << where;
      EXPECT_EQ(stats.usage_size(), 0) << where;
      EXPECT_THAT(strace.Log(), HasSubstr("(INJECTED)")) << where;
    }
    ExpectServingAndHealthy(target, where + ", after");
  }

  // An error that says nothing about the volume's health fails the call
  // clearly, naming the path; the node keeps serving.
  {
    Strace strace(node_->pid(), {"-e", "trace=statx", "-e", "inject=statx:error=ENOMEM"},
                  tmp_.Join("strace.log"));
    ASSERT_TRUE(strace.WaitAttached(absl::Seconds(20)).ok());
    csi::v1::NodeGetVolumeStatsResponse stats;
    grpc::Status s = Stats(target, &stats);
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.error_message(), HasSubstr(target));
    EXPECT_THAT(s.error_message(), HasSubstr("Cannot allocate memory"));
    // A publish over the unreadable target fails without mounting anything.
    EXPECT_FALSE(Publish(tmp_.Join("pods/other")).ok());
  }
  ExpectServingAndHealthy(target, "after ENOMEM");
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), ElementsAre(target));
  EXPECT_TRUE(Unpublish(target).ok());
  EXPECT_NE(access(tmp_.Join("pods/other").c_str(), F_OK), 0) << "target left behind";
}

}  // namespace
}  // namespace lustre_csi::e2e
