// Faults at the mount layer, with the real binary in lustre mode and a
// stand-in for the lowest level only: the mount program.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

class MountFaultTest : public testing::Test {
 protected:
  void SetUp() override {
    // The stand-in mount program: hangs while <tmp>/hang exists, fails while
    // <tmp>/fail exists, otherwise bind-mounts <tmp>/fs onto the target
    // (its last argument) and records its arguments.
    ASSERT_EQ(mkdir(tmp_.Join("fs").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(tmp_.Join("pods").c_str(), 0755), 0);
    std::string script = absl::StrCat(
        "#!/bin/sh\n"
        "[ \"$1\" = -V ] && { echo 'mount.lustre stand-in'; exit 0; }\n"
        "echo \"$@\" >> ",
        tmp_.Join("calls"), "\n", "[ -e ", tmp_.Join("hang"), " ] && exec sleep 3600\n", "[ -e ",
        tmp_.Join("fail"), " ] && { echo 'mount.lustre: mount ",
        "failed: Connection refused' >&2; exit 111; }\n", "for last; do :; done\n",
        "exec mount --bind ", tmp_.Join("fs"), " \"$last\"\n");
    ASSERT_TRUE(WriteFile(tmp_.Join("mount"), script).ok());
    ASSERT_EQ(chmod(tmp_.Join("mount").c_str(), 0755), 0);
    ASSERT_TRUE(PretendLustreModuleLoaded(scratch_.path()).ok());
    socket_ = tmp_.Join("node.sock");
    node_ = std::make_unique<Subprocess>(
        std::vector<std::string>{BinaryPath(), "node", "--nodeid=n1", "--mount-mode=lustre",
                                 "--mount-helper=" + tmp_.Join("mount"),
                                 "--mount-namespace=current", "--lustre-client=per-volume",
                                 "--mount-timeout-seconds=1", "--endpoint=unix://" + socket_},
        tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(socket_, absl::Seconds(10)).ok()) << ReadFile(tmp_.Join("node.log"));
    stub_ = csi::v1::Node::NewStub(UnixChannel(socket_));
  }

  grpc::Status Publish(const std::string& target) {
    csi::v1::NodePublishVolumeRequest req =
        MakePublishRequest("pvc-1#lustrefs#10.0.0.4##f", target);
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return stub_->NodePublishVolume(&ctx, req, &res);
  }

  grpc::Status Unpublish(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("pvc-1#lustrefs#10.0.0.4##f");
    req.set_target_path(target);
    grpc::ClientContext ctx;
    csi::v1::NodeUnpublishVolumeResponse res;
    return stub_->NodeUnpublishVolume(&ctx, req, &res);
  }

  static inline TempDir scratch_;  // holds the /proc/filesystems stand-in
  TempDir tmp_;
  std::string socket_;
  std::unique_ptr<Subprocess> node_;
  std::unique_ptr<csi::v1::Node::Stub> stub_;
};

TEST_F(MountFaultTest, MountProgramGetsLustreArguments) {
  ASSERT_TRUE(Publish(tmp_.Join("pods/a")).ok()) << ReadFile(tmp_.Join("node.log"));
  EXPECT_EQ(ReadFile(tmp_.Join("calls")),
            absl::StrCat("10.0.0.4@tcp:/lustrefs ", tmp_.Join("pods/a"), "\n"));
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), testing::ElementsAre(tmp_.Join("pods/a")));
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/a")).ok());
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), testing::IsEmpty());
}

TEST_F(MountFaultTest, HungMountTimesOutReleasesItsTargetAndOthersProceed) {
  ASSERT_TRUE(WriteFile(tmp_.Join("hang"), "").ok());
  grpc::Status hung;
  std::thread slow([&] { hung = Publish(tmp_.Join("pods/slow")); });
  // While it hangs (the mount program has been called), a retry of the same
  // publish joins it, and an unpublish of the target (the CO gave up on the
  // publish) abandons it and waits for it to return, never ABORTED.
  ASSERT_TRUE(WaitUntil(
      [&] { return absl::StrContains(ReadFile(tmp_.Join("calls")), tmp_.Join("pods/slow")); }));
  grpc::Status retried;
  std::thread retry([&] { retried = Publish(tmp_.Join("pods/slow")); });
  grpc::Status unpublished;
  std::thread unpublish([&] {
    absl::SleepFor(absl::Milliseconds(100));  // after the retry has joined
    unpublished = Unpublish(tmp_.Join("pods/slow"));
  });
  // The hung mount holds a worker, not the server: the fixed-answer calls and
  // stats of another path still answer, well inside the mount's 1 s bound
  // (a server blocked by the mount would miss these deadlines).
  auto identity = csi::v1::Identity::NewStub(UnixChannel(socket_));
  grpc::ClientContext probe_ctx;
  probe_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  csi::v1::ProbeResponse probe;
  EXPECT_TRUE(identity->Probe(&probe_ctx, {}, &probe).ok());
  grpc::ClientContext caps_ctx;
  caps_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  csi::v1::NodeGetCapabilitiesResponse caps;
  EXPECT_TRUE(stub_->NodeGetCapabilities(&caps_ctx, {}, &caps).ok());
  grpc::ClientContext stats_ctx;
  stats_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  csi::v1::NodeGetVolumeStatsRequest stats_req;
  stats_req.set_volume_id("v");
  stats_req.set_volume_path(tmp_.Join("pods/none"));
  csi::v1::NodeGetVolumeStatsResponse stats;
  EXPECT_EQ(stub_->NodeGetVolumeStats(&stats_ctx, stats_req, &stats).error_code(), grpc::NOT_FOUND);
  slow.join();
  retry.join();
  unpublish.join();
  EXPECT_TRUE(unpublished.ok()) << unpublished.error_code() << " " << unpublished.error_message();
  EXPECT_EQ(hung.error_code(), grpc::DEADLINE_EXCEEDED) << hung.error_message();
  // The retry joined the hung publish and got its outcome; it mounted nothing
  // of its own.
  EXPECT_EQ(retried.error_code(), grpc::DEADLINE_EXCEEDED) << retried.error_message();
  int slow_calls = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(tmp_.Join("calls")), '\n')) {
    slow_calls += absl::StrContains(line, tmp_.Join("pods/slow"));
  }
  EXPECT_EQ(slow_calls, 1) << ReadFile(tmp_.Join("calls"));
  EXPECT_NE(access(tmp_.Join("pods/slow").c_str(), F_OK), 0) << "target left behind";

  unlink(tmp_.Join("hang").c_str());
  EXPECT_TRUE(Publish(tmp_.Join("pods/slow")).ok()) << "target still locked";
  EXPECT_TRUE(Publish(tmp_.Join("pods/other")).ok());
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/slow")).ok());
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/other")).ok());
  // The hung mount program was killed, not left behind.
  EXPECT_EQ(system(("pgrep -f '^sleep 3600$' >/dev/null")), 256) << "stray mount program";
}

TEST_F(MountFaultTest, FailedMountReportsTheMountOutputAndLeavesNothing) {
  ASSERT_TRUE(WriteFile(tmp_.Join("fail"), "").ok());
  grpc::Status status = Publish(tmp_.Join("pods/a"));
  // mount.lustre exits with the errno (ECONNREFUSED): worth a retry.
  EXPECT_EQ(status.error_code(), grpc::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(status.error_message(), testing::HasSubstr("Connection refused"));
  EXPECT_THAT(status.error_message(), testing::HasSubstr("exit status 111 (ECONNREFUSED"));
  EXPECT_NE(access(tmp_.Join("pods/a").c_str(), F_OK), 0);
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), testing::IsEmpty());
}

TEST_F(MountFaultTest, BusyTargetIsDetachedOnUnpublish) {
  ASSERT_TRUE(Publish(tmp_.Join("pods/busy")).ok());
  // A process holds the mount busy (its working directory is inside).
  Subprocess holder({"/bin/sh", "-c", "cd " + tmp_.Join("pods/busy") + " && exec sleep 3600"});
  std::string cwd_link = absl::StrCat("/proc/", holder.pid(), "/cwd");
  ASSERT_TRUE(WaitUntil([&] {
    char buf[4096];
    ssize_t n = readlink(cwd_link.c_str(), buf, sizeof(buf));
    return n > 0 && std::string(buf, n) == tmp_.Join("pods/busy");
  }));
  grpc::Status status = Unpublish(tmp_.Join("pods/busy"));
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(MountsUnder(tmp_.Join("pods")), testing::IsEmpty());
}

}  // namespace
}  // namespace lustre_csi::e2e
