// The shipped mode - one shared Lustre client per file system, every publish
// a bind of the volume's sub-dir - with the real binary in lustre mode and a
// stand-in for the lowest level only: the mount program, which binds a local
// directory where the Lustre client would be mounted. The kubelet directory
// is shared with a "host" view of it, as a Bidirectional volume is, so the
// tests see what propagates out of the driver. Also run under emulated older
// kernels (e2e/older-kernel), where the binds are staged.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
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

class SharedClientE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"fs", "fs/team", "fs/team/v1", "pods", "host", "work", "outside"}) {
      ASSERT_EQ(mkdir(tmp_.Join(d).c_str(), 0755), 0) << d;
    }
    ASSERT_TRUE(WriteFile(tmp_.Join("fs/team/v1/data"), "lustre").ok());
    // The kubelet directory, shared with the host's view of it.
    ASSERT_EQ(
        mount(tmp_.Join("pods").c_str(), tmp_.Join("pods").c_str(), nullptr, MS_BIND, nullptr), 0);
    ASSERT_EQ(mount(nullptr, tmp_.Join("pods").c_str(), nullptr, MS_SHARED, nullptr), 0);
    ASSERT_EQ(
        mount(tmp_.Join("pods").c_str(), tmp_.Join("host").c_str(), nullptr, MS_BIND, nullptr), 0);
    // The stand-in mount.lustre: a tmpfs client filled with a copy of <tmp>/fs.
    ASSERT_TRUE(
        WriteTmpfsClientHelper(tmp_.Join("mount"), tmp_.Join("fs"), tmp_.Join("calls")).ok());
    ASSERT_TRUE(PretendLustreModuleLoaded(scratch_.path()).ok());
    socket_ = tmp_.Join("node.sock");
    port_ = FreePort();
    node_ = std::make_unique<Subprocess>(
        std::vector<std::string>{
            BinaryPath(), "node", "--nodeid=n1", "--mount-mode=lustre",
            "--mount-helper=" + tmp_.Join("mount"), "--mount-namespace=current",
            "--lustre-client=shared", "--working-mount-dir=" + tmp_.Join("work"),
            absl::StrCat("--metrics-address=127.0.0.1:", port_), "--endpoint=unix://" + socket_},
        tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(socket_, absl::Seconds(10)).ok()) << ReadFile(tmp_.Join("node.log"));
    stub_ = csi::v1::Node::NewStub(UnixChannel(socket_));
    // The HTTP server starts after the gRPC socket.
    ASSERT_TRUE(WaitUntil([&] {
      return absl::StartsWith(HttpGet(port_, "/healthz"), "HTTP/1.1 200");
    })) << ReadFile(tmp_.Join("node.log"));
  }

  void TearDown() override {
    node_.reset();
    for (const char* m : {"host", "pods"}) umount2(tmp_.Join(m).c_str(), MNT_DETACH);
  }

  grpc::Status Publish(const std::string& sub_dir, const std::string& target, bool read_only) {
    csi::v1::NodePublishVolumeRequest req =
        MakePublishRequest("pv-" + sub_dir, target, LustreContext(sub_dir), read_only);
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return stub_->NodePublishVolume(&ctx, req, &res);
  }

  grpc::Status Unpublish(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("pv");
    req.set_target_path(target);
    grpc::ClientContext ctx;
    csi::v1::NodeUnpublishVolumeResponse res;
    return stub_->NodeUnpublishVolume(&ctx, req, &res);
  }

  // The mounts below `dir`, not counting `dir` itself.
  static std::vector<std::string> MountsBelow(const std::string& dir) {
    std::vector<std::string> out;
    for (const std::string& m : MountsUnder(dir)) {
      if (m != dir) out.push_back(m);
    }
    return out;
  }

  static bool ReadOnly(const std::string& path) {
    struct statvfs st;
    return statvfs(path.c_str(), &st) == 0 && (st.f_flag & ST_RDONLY) != 0;
  }

  // The peer group ("shared:N") of the mount at `path`, "" when private.
  static std::string PeerGroup(const std::string& path) {
    std::string group;
    for (const volume::MountEntry& e : MountsAt(path)) {
      group.clear();  // the top-most mount's
      for (const std::string& field : e.optional_fields) {
        if (absl::StartsWith(field, "shared:")) group = field;
      }
    }
    return group;
  }

  static inline TempDir scratch_;  // holds the /proc/filesystems stand-in
  TempDir tmp_;
  std::string socket_;
  int port_ = 0;
  std::unique_ptr<Subprocess> node_;
  std::unique_ptr<csi::v1::Node::Stub> stub_;
};

TEST_F(SharedClientE2eTest, ReadOnlyBindArrivesReadOnlyOnTheHostAndOutsideTheClientsGroup) {
  EXPECT_THAT(HttpGet(port_, "/readyz"), HasSubstr("200")) << ReadFile(tmp_.Join("node.log"));
  ASSERT_TRUE(Publish("team/v1", tmp_.Join("pods/rw"), false).ok())
      << ReadFile(tmp_.Join("node.log"));
  grpc::Status ro = Publish("team/v1", tmp_.Join("pods/ro"), true);
  ASSERT_TRUE(ro.ok()) << ro.error_message() << ReadFile(tmp_.Join("node.log"));
  // One client for both.
  std::vector<std::string> calls =
      absl::StrSplit(ReadFile(tmp_.Join("calls")), '\n', absl::SkipEmpty());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_THAT(calls[0], HasSubstr("10.0.0.4@tcp:/lustrefs " + tmp_.Join("work/clients/")));
  // What one pod writes the other reads, on the host too; the read-only bind
  // is read-only in the driver's view and in the copy that reached the host.
  ASSERT_TRUE(WriteFile(tmp_.Join("pods/rw/new"), "x").ok());
  EXPECT_EQ(ReadFile(tmp_.Join("host/ro/new")), "x");
  EXPECT_EQ(ReadFile(tmp_.Join("host/ro/data")), "lustre");
  EXPECT_FALSE(ReadOnly(tmp_.Join("pods/rw")));
  EXPECT_TRUE(ReadOnly(tmp_.Join("pods/ro")));
  EXPECT_TRUE(ReadOnly(tmp_.Join("host/ro"))) << "the host's copy was born writable";
  EXPECT_FALSE(WriteFile(tmp_.Join("host/ro/other"), "y").ok());
  // The binds are not peers of the client: nothing mounted under one reaches
  // the others.
  std::vector<std::string> clients = MountsUnder(tmp_.Join("work/clients"));
  ASSERT_EQ(clients.size(), 1u);
  std::string client_group = PeerGroup(clients[0]);
  ASSERT_FALSE(client_group.empty()) << "the stand-in client is not shared";
  EXPECT_NE(PeerGroup(tmp_.Join("pods/ro")), client_group);
  EXPECT_NE(PeerGroup(tmp_.Join("pods/rw")), client_group);

  EXPECT_TRUE(Unpublish(tmp_.Join("pods/ro")).ok());
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/rw")).ok());
  EXPECT_THAT(MountsBelow(tmp_.Join("pods")), IsEmpty());
  EXPECT_THAT(MountsBelow(tmp_.Join("host")), IsEmpty());
  EXPECT_THAT(MountsUnder(tmp_.Join("work/clients")), IsEmpty()) << "the idle client stayed";
  // Whatever was staged (kernels before 5.12, beside the socket) went on to
  // its target: nothing is left there, and a staging directory on a mount
  // that does not propagate needs no mount of its own.
  EXPECT_THAT(MountsUnder(tmp_.Join("bind-staging")), IsEmpty());
  if (!EmulatedKernel().empty()) {
    EXPECT_TRUE(std::filesystem::is_directory(tmp_.Join("bind-staging")));
    for (const auto& entry : std::filesystem::directory_iterator(tmp_.Join("bind-staging"))) {
      EXPECT_TRUE(absl::EndsWith(entry.path().string(), ".owner"))
          << "staging point left: " << entry.path();
    }
  }
}

TEST_F(SharedClientE2eTest, SubDirsThatLeaveTheFileSystemAreRefused) {
  // Symlinks in the file system: absolute, and one that climbs out.
  ASSERT_EQ(symlink(tmp_.Join("outside").c_str(), tmp_.Join("fs/team/abs").c_str()), 0);
  ASSERT_EQ(symlink("../../outside", tmp_.Join("fs/team/up").c_str()), 0);
  for (const char* sub_dir : {"team/abs", "team/up", "team/abs/x"}) {
    grpc::Status s = Publish(sub_dir, tmp_.Join("pods/t"), false);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << sub_dir << ": " << s.error_message();
  }
  EXPECT_THAT(MountsBelow(tmp_.Join("pods")), IsEmpty());
  EXPECT_THAT(MountsUnder(tmp_.Join("work/clients")), IsEmpty()) << "an idle client stayed";
  // A missing sub-dir is made inside the file system, then bound.
  ASSERT_TRUE(Publish("team/new", tmp_.Join("pods/n"), false).ok())
      << ReadFile(tmp_.Join("node.log"));
  std::vector<std::string> clients = MountsUnder(tmp_.Join("work/clients"));
  ASSERT_EQ(clients.size(), 1u);
  struct stat st;
  EXPECT_EQ(stat((clients[0] + "/team/new").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/n")).ok());
  EXPECT_THAT(MountsUnder(tmp_.Join("work/clients")), IsEmpty());
}

TEST_F(SharedClientE2eTest, MetricsSayWhichKernelInterfacesAreThere) {
  std::string metrics = HttpGet(port_, "/metrics");
  // The x86_64 tables e2e/older-kernel emulates: openat2 from 5.6 on, the
  // mount API (mount_setattr) from 5.12 on.
  std::string kernel = EmulatedKernel();
  const bool openat2 = kernel.empty() || kernel == "5.11";
  const bool mount_api = kernel.empty();
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat(
                           "lustre_csi_kernel_interface{interface=\"openat2\",since=\"5.6\"} ",
                           openat2 ? 1 : 0)));
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat(
                           "lustre_csi_kernel_interface{interface=\"mount_api\",since=\"5.12\"} ",
                           mount_api ? 1 : 0)));
  EXPECT_THAT(ReadFile(tmp_.Join("node.log")), HasSubstr("kernel interfaces: "));
}

}  // namespace
}  // namespace lustre_csi::e2e
