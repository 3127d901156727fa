// Capacity that holds, through the real binary: sub-dir volumes with a
// project quota and a default layout, made with the host's lfs - here the
// stand-in (e2e/standin_lfs.cc), which takes the real command lines and keeps
// what they set in files. The stand-in mount helper binds a directory of a
// tmpfs named like a Lustre client mount ("10.0.0.4@tcp:/lustrefs"), so the
// stand-in lfs finds the file system a path is on as the real one does.
// No write can fail with EDQUOT here (the kernel has no quota support); the
// proof is the exact tool calls, the state they leave and the codes.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;

class QuotaE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"servers", "servers/lustrefs", "work", "bin", "pods"}) {
      ASSERT_EQ(mkdir(tmp_.Join(d).c_str(), 0755), 0) << d;
    }
    ASSERT_EQ(mount("10.0.0.4@tcp:/lustrefs", fs_root().c_str(), "tmpfs", 0, "mode=0755"), 0);
    ASSERT_EQ(mkdir((fs_root() + "/team").c_str(), 0755), 0);
    // The stand-in client helper: `mount.lustre [-o opts] <mgs>:/<fs>[/<sub>] <target>`
    // binds the server's directory.
    std::string script = absl::StrCat(
        "#!/bin/sh\n"
        "[ \"$1\" = -V ] && { echo 'mount.lustre stand-in'; exit 0; }\n"
        "while [ $# -gt 2 ]; do shift; done\n"
        "path=${1#*:/}\n",
        "exec mount --bind ", tmp_.Join("servers"), "/\"$path\" \"$2\" || exit 2\n");
    ASSERT_TRUE(WriteFile(tmp_.Join("bin/mount"), script).ok());
    ASSERT_EQ(chmod(tmp_.Join("bin/mount").c_str(), 0755), 0);
    ASSERT_EQ(symlink(Runfile("e2e/standin-lfs").c_str(), tmp_.Join("bin/lfs").c_str()), 0);
    ASSERT_EQ(mkdir(state("").c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(state("pools"), "lustrefs.fast\n").ok());
    ASSERT_TRUE(PretendLustreModuleLoaded(scratch_.path()).ok());
  }

  void TearDown() override {
    processes_.clear();
    umount2(fs_root().c_str(), MNT_DETACH);
  }

  std::string fs_root() const { return tmp_.Join("servers/lustrefs"); }
  std::string state(const std::string& file) const { return tmp_.Join("bin/lfs-state/") + file; }

  // A controller (or, with a node id, a monolith) in lustre mode; returns
  // its socket.
  std::string Start(const std::string& name, std::vector<std::string> extra = {},
                    const std::string& role = "controller") {
    std::string socket = tmp_.Join(name + ".sock");
    std::vector<std::string> argv = {BinaryPath(),
                                     role,
                                     "--mount-mode=lustre",
                                     "--mount-namespace=current",
                                     "--mount-helper=" + tmp_.Join("bin/mount"),
                                     "--working-mount-dir=" + tmp_.Join("work"),
                                     "--endpoint=unix://" + socket};
    if (role != "node") {  // the controller's flags
      argv.insert(argv.end(), {"--lfs=" + tmp_.Join("bin/lfs"), "--project-id-range=100-105"});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    processes_.push_back(std::make_unique<Subprocess>(argv, tmp_.Join(name + ".log")));
    EXPECT_TRUE(WaitForSocket(socket, absl::Seconds(10)).ok()) << Log(name);
    return socket;
  }

  std::string Log(const std::string& name) { return ReadFile(tmp_.Join(name + ".log")); }

  static std::map<std::string, std::string> QuotaParams(const std::string& name) {
    return {{"mgs-ip-address", "10.0.0.4"},           {"fs-name", "lustrefs"},
            {"sub-dir", "team/${pvc.metadata.name}"}, {"create-sub-dir", "true"},
            {"sub-dir-on-delete", "delete"},          {"sub-dir-quota", "true"},
            {"csi.storage.k8s.io/pvc/name", name}};
  }

  static grpc::Status Create(const std::string& socket, const std::string& name,
                             std::map<std::string, std::string> params, int64_t bytes,
                             csi::v1::Volume* out = nullptr) {
    auto stub = csi::v1::Controller::NewStub(UnixChannel(socket));
    csi::v1::CreateVolumeRequest req;
    req.set_name(name);
    *req.add_volume_capabilities() = MountCapability();
    req.mutable_parameters()->insert(params.begin(), params.end());
    req.mutable_capacity_range()->set_required_bytes(bytes);
    csi::v1::CreateVolumeResponse res;
    grpc::ClientContext ctx;
    grpc::Status status = stub->CreateVolume(&ctx, req, &res);
    if (out != nullptr) *out = res.volume();
    return status;
  }

  static grpc::Status Expand(const std::string& socket, const std::string& id, int64_t bytes,
                             csi::v1::ControllerExpandVolumeResponse* res) {
    auto stub = csi::v1::Controller::NewStub(UnixChannel(socket));
    csi::v1::ControllerExpandVolumeRequest req;
    req.set_volume_id(id);
    req.mutable_capacity_range()->set_required_bytes(bytes);
    *req.mutable_volume_capability() = MountCapability();
    grpc::ClientContext ctx;
    return stub->ControllerExpandVolume(&ctx, req, res);
  }

  static grpc::Status Delete(const std::string& socket, const std::string& id) {
    auto stub = csi::v1::Controller::NewStub(UnixChannel(socket));
    csi::v1::DeleteVolumeRequest req;
    req.set_volume_id(id);
    csi::v1::DeleteVolumeResponse res;
    grpc::ClientContext ctx;
    return stub->DeleteVolume(&ctx, req, &res);
  }

  // What `lfs project -d <dir>` says: "<id> <P|->".
  std::string ProjectOf(const std::string& dir) {
    std::string out = tmp_.Join("project.out");
    std::string cmd = absl::StrCat(tmp_.Join("bin/lfs"), " project -d ", dir, " > ", out);
    if (std::system(cmd.c_str()) != 0) return "error";
    std::vector<std::string> words =
        absl::StrSplit(ReadFile(out), absl::ByAnyChar(" \n"), absl::SkipEmpty());
    return words.size() >= 2 ? words[0] + " " + words[1] : "";
  }

  // The limits set for project `id`: "<block-kib> <inodes>", "" when never set.
  std::string QuotaOf(const std::string& id) {
    for (absl::string_view line : absl::StrSplit(ReadFile(state("quotas")), '\n')) {
      if (absl::ConsumePrefix(&line, absl::StrCat("lustrefs/", id, " "))) return std::string(line);
    }
    return "";
  }

  // The claimed IDs (not the volumes' entries that point at them).
  std::set<std::string> Claims() {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(fs_root() + "/.lustre-csi-projects", ec)) {
      if (e.path().filename() != "by-volume") out.insert(e.path().filename());
    }
    return out;
  }

  std::string MarkedProject(const std::string& sub_dir) {
    for (absl::string_view line :
         absl::StrSplit(ReadFile(fs_root() + "/" + sub_dir + "/.lustre-csi-volume"), '\n')) {
      if (absl::ConsumePrefix(&line, "project=")) return std::string(line);
    }
    return "";
  }

  static inline TempDir scratch_;  // holds the /proc/filesystems stand-in
  TempDir tmp_;
  std::vector<std::unique_ptr<Subprocess>> processes_;
};

// The whole life of a volume with a quota and a layout, through one monolith
// or through a controller and a node apart (as the manifests run them).
class QuotaLifecycleE2eTest : public QuotaE2eTest, public testing::WithParamInterface<bool> {};

TEST_P(QuotaLifecycleE2eTest, CreatePublishStatsExpandDelete) {
  std::string socket, node_socket;
  if (GetParam()) {
    socket = node_socket =
        Start("monolith", {"--nodeid=n1", "--lustre-client=per-volume"}, "monolith");
  } else {
    socket = Start("controller");
    node_socket = Start("node", {"--nodeid=n1", "--lustre-client=per-volume"}, "node");
  }
  std::map<std::string, std::string> params = QuotaParams("pvc-a");
  params["sub-dir-inode-limit"] = "5000";
  params["sub-dir-stripe-count"] = "2";
  params["sub-dir-stripe-size"] = "1M";
  params["sub-dir-stripe-pool"] = "fast";
  csi::v1::Volume volume;
  grpc::Status created = Create(socket, "pvc-a", params, 10 * kGiB);
  ASSERT_TRUE(created.ok()) << created.error_message() << Log("monolith") << Log("controller")
                            << Log("node");
  ASSERT_TRUE(Create(socket, "pvc-a", params, 10 * kGiB, &volume).ok());
  EXPECT_EQ(volume.capacity_bytes(), 10 * kGiB);
  std::string dir = fs_root() + "/team/pvc-a";
  std::string id = MarkedProject("team/pvc-a");
  int id_number = 0;
  ASSERT_TRUE(absl::SimpleAtoi(id, &id_number)) << "marker: " << id;
  EXPECT_GE(id_number, 100);
  EXPECT_LE(id_number, 105);
  EXPECT_EQ(ProjectOf(dir), id + " P");  // the ID with the inherit flag
  EXPECT_EQ(QuotaOf(id), "10485760 5000");
  EXPECT_THAT(ReadFile(state("layouts")), HasSubstr(" 2 1048576 fast\n"));
  EXPECT_EQ(Claims(), std::set<std::string>{id});
  // The exact command lines, on the file system root mounted for the call.
  std::string calls = ReadFile(state("calls.log"));
  EXPECT_THAT(calls, HasSubstr("/bin/lfs setstripe -c 2 -S 1048576 -p fast " + tmp_.Join("work/")));
  EXPECT_THAT(calls,
              HasSubstr(absl::StrCat("/bin/lfs project -p ", id, " -s ", tmp_.Join("work/"))));
  EXPECT_THAT(calls, HasSubstr(absl::StrCat("/bin/lfs setquota -p ", id, " -B 10485760k -I 5000 ",
                                            tmp_.Join("work/"))));
  EXPECT_TRUE(MountsUnder(tmp_.Join("work")).empty()) << "a root mount was left";

  // Published and measured like any sub-dir volume.
  std::string target = tmp_.Join("pods/t1");
  ASSERT_EQ(mkdir(target.c_str(), 0750), 0);
  auto node = csi::v1::Node::NewStub(UnixChannel(node_socket));
  std::map<std::string, std::string> context(volume.volume_context().begin(),
                                             volume.volume_context().end());
  csi::v1::NodePublishVolumeRequest publish =
      MakePublishRequest(volume.volume_id(), target, context);
  csi::v1::NodePublishVolumeResponse published;
  grpc::ClientContext publish_ctx;
  grpc::Status publish_status = node->NodePublishVolume(&publish_ctx, publish, &published);
  ASSERT_TRUE(publish_status.ok())
      << publish_status.error_message() << Log("monolith") << Log("controller") << Log("node");
  ASSERT_TRUE(WriteFile(target + "/data", "x").ok());
  EXPECT_EQ(ReadFile(dir + "/data"), "x");
  csi::v1::NodeGetVolumeStatsRequest stats_req;
  stats_req.set_volume_id(volume.volume_id());
  stats_req.set_volume_path(target);
  csi::v1::NodeGetVolumeStatsResponse stats;
  grpc::ClientContext stats_ctx;
  ASSERT_TRUE(node->NodeGetVolumeStats(&stats_ctx, stats_req, &stats).ok());
  ASSERT_GE(stats.usage_size(), 1);
  EXPECT_GT(stats.usage(0).total(), 0);

  // Online expansion: the limit rises, a smaller ask keeps it.
  csi::v1::ControllerExpandVolumeResponse expanded;
  grpc::Status grown = Expand(socket, volume.volume_id(), 11 * kGiB, &expanded);
  ASSERT_TRUE(grown.ok()) << grown.error_message() << Log("monolith") << Log("controller")
                          << Log("node");
  EXPECT_EQ(expanded.capacity_bytes(), 11 * kGiB);
  EXPECT_FALSE(expanded.node_expansion_required());
  EXPECT_EQ(QuotaOf(id), "11534336 5000");
  ASSERT_TRUE(Expand(socket, volume.volume_id(), 5 * kGiB, &expanded).ok());
  EXPECT_EQ(expanded.capacity_bytes(), 11 * kGiB);
  EXPECT_EQ(QuotaOf(id), "11534336 5000");

  csi::v1::NodeUnpublishVolumeRequest unpublish;
  unpublish.set_volume_id(volume.volume_id());
  unpublish.set_target_path(target);
  csi::v1::NodeUnpublishVolumeResponse unpublished;
  grpc::ClientContext unpublish_ctx;
  ASSERT_TRUE(node->NodeUnpublishVolume(&unpublish_ctx, unpublish, &unpublished).ok());

  // Delete: the directory, then the quota and the ID go.
  grpc::Status deleted = Delete(socket, volume.volume_id());
  ASSERT_TRUE(deleted.ok()) << deleted.error_message() << Log("monolith") << Log("controller")
                            << Log("node");
  EXPECT_NE(access(dir.c_str(), F_OK), 0);
  EXPECT_EQ(QuotaOf(id), "0 0");
  EXPECT_TRUE(Claims().empty());
  EXPECT_TRUE(std::filesystem::is_empty(fs_root() + "/.lustre-csi-projects/by-volume"))
      << "the volume's entry stayed";
  EXPECT_TRUE(Delete(socket, volume.volume_id()).ok());
  EXPECT_EQ(Expand(socket, volume.volume_id(), 12 * kGiB, &expanded).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

INSTANTIATE_TEST_SUITE_P(MonolithAndApart, QuotaLifecycleE2eTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "Monolith" : "ControllerAndNode";
                         });

// Two controllers on one file system, every volume asked of both at once:
// one ID per volume, never one twice, and a full range says so.
TEST_F(QuotaE2eTest, TwoControllersRacingNeverHandOutAnIdTwice) {
  std::string a = Start("controller-a");
  std::string b = Start("controller-b");
  constexpr int kVolumes = 6;  // the whole range 100-105
  absl::Mutex mu;
  std::map<std::string, std::set<std::string>> ids_by_volume;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int i = 0; i < kVolumes; ++i) {
    for (const std::string& socket : {a, b}) {
      threads.emplace_back([&, i, socket] {
        std::string name = absl::StrCat("pvc-", i);
        csi::v1::Volume v;
        grpc::Status s = Create(socket, name, QuotaParams(name), kGiB, &v);
        absl::MutexLock l(&mu);
        if (!s.ok() && s.error_code() != grpc::StatusCode::ABORTED) {
          failures.push_back(s.error_message());
        }
      });
    }
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(failures.empty()) << failures.front();
  std::set<std::string> projects;
  for (int i = 0; i < kVolumes; ++i) {
    // A call refused as in progress elsewhere is retried, as a CO does.
    std::string name = absl::StrCat("pvc-", i);
    ASSERT_TRUE(Create(a, name, QuotaParams(name), kGiB).ok());
    std::string id = MarkedProject("team/" + name);
    EXPECT_FALSE(id.empty());
    EXPECT_TRUE(projects.insert(id).second) << "project " << id << " handed out twice";
    EXPECT_EQ(QuotaOf(id), "1048576 0");
  }
  EXPECT_EQ(Claims(), projects);
  grpc::Status full = Create(b, "pvc-more", QuotaParams("pvc-more"), kGiB);
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << full.error_message();
  EXPECT_THAT(full.error_message(), HasSubstr("--project-id-range"));
  EXPECT_NE(access((fs_root() + "/team/pvc-more").c_str(), F_OK), 0);
}

TEST_F(QuotaE2eTest, ARestartedControllerAnswersARepeatAsBefore) {
  std::string socket = Start("first");
  csi::v1::Volume before, after;
  ASSERT_TRUE(Create(socket, "pvc-r", QuotaParams("pvc-r"), 3 * kGiB, &before).ok())
      << Log("first");
  std::string id = MarkedProject("team/pvc-r");
  processes_.back()->Signal(SIGKILL);
  processes_.back()->Wait(absl::Seconds(10));
  socket = Start("second");
  grpc::Status again = Create(socket, "pvc-r", QuotaParams("pvc-r"), 3 * kGiB, &after);
  ASSERT_TRUE(again.ok()) << again.error_message() << Log("second");
  EXPECT_EQ(after.volume_id(), before.volume_id());
  EXPECT_EQ(after.capacity_bytes(), before.capacity_bytes());
  EXPECT_EQ(MarkedProject("team/pvc-r"), id);
  EXPECT_EQ(Claims(), std::set<std::string>{id});
  // Another size under the same name is another request.
  EXPECT_EQ(Create(socket, "pvc-r", QuotaParams("pvc-r"), 4 * kGiB).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
}

// Every refusal has the right code, says why, and leaves no directory and no
// claim behind.
TEST_F(QuotaE2eTest, RefusalsSayWhyAndLeaveNothing) {
  std::string socket = Start("controller");
  auto nothing_left = [&](const std::string& name) {
    EXPECT_NE(access((fs_root() + "/team/" + name).c_str(), F_OK), 0) << name << " left";
    EXPECT_TRUE(Claims().empty()) << name << " left a claim";
  };
  // A file system without project quotas.
  ASSERT_TRUE(WriteFile(state("no-project-quota"), "lustrefs\n").ok());
  grpc::Status s = Create(socket, "pvc-n", QuotaParams("pvc-n"), kGiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("Operation not supported"));
  EXPECT_THAT(s.error_message(), HasSubstr("no project quotas"));
  nothing_left("pvc-n");
  ASSERT_EQ(unlink(state("no-project-quota").c_str()), 0);
  // Servers that squash this node's root.
  ASSERT_TRUE(WriteFile(state("squash"), "lustrefs\n").ok());
  s = Create(socket, "pvc-s", QuotaParams("pvc-s"), kGiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("Operation not permitted"));
  EXPECT_THAT(s.error_message(), HasSubstr("squash"));
  nothing_left("pvc-s");
  ASSERT_EQ(unlink(state("squash").c_str()), 0);
  // An OST pool that does not exist.
  std::map<std::string, std::string> pool = QuotaParams("pvc-p");
  pool["sub-dir-stripe-pool"] = "slow";
  s = Create(socket, "pvc-p", pool, kGiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("pool 'lustrefs.slow' does not exist"));
  nothing_left("pvc-p");
  // Parameters Lustre would refuse never reach the tool.
  std::string calls = ReadFile(state("calls.log"));
  std::map<std::string, std::string> size = QuotaParams("pvc-z");
  size["sub-dir-stripe-size"] = "100k";
  s = Create(socket, "pvc-z", size, kGiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("sub-dir-stripe-size"));
  EXPECT_EQ(ReadFile(state("calls.log")), calls);
  nothing_left("pvc-z");

  // A host without lfs.
  std::string missing = Start("no-lfs", {"--lfs=" + tmp_.Join("bin/none")});
  s = Create(missing, "pvc-l", QuotaParams("pvc-l"), kGiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("--lfs"));
  nothing_left("pvc-l");
}

// NodeGetVolumeStats reports statfs of the volume's own directory, so where
// the client answers for a directory with the inherit flag with its
// project's limit and usage (Lustre 2.14 on), the volume's figures are what
// a CO sees. Here a directory of the file system with figures of its own (a
// small tmpfs) stands in for that answer.
TEST_F(QuotaE2eTest, StatsAreWhatTheClientReportsForTheVolumesDirectory) {
  std::string small = fs_root() + "/team/small";
  ASSERT_EQ(mkdir(small.c_str(), 0755), 0);
  ASSERT_EQ(mount("10.0.0.4@tcp:/lustrefs", small.c_str(), "tmpfs", 0, "size=8m"), 0);
  std::string socket = Start("node", {"--nodeid=n1", "--lustre-client=per-volume"}, "monolith");
  std::string target = tmp_.Join("pods/small");
  ASSERT_EQ(mkdir(target.c_str(), 0750), 0);
  auto node = csi::v1::Node::NewStub(UnixChannel(socket));
  csi::v1::NodePublishVolumeResponse published;
  grpc::ClientContext publish_ctx;
  grpc::Status s =
      node->NodePublishVolume(&publish_ctx,
                              MakePublishRequest("small#lustrefs#10.0.0.4#team/small#f", target,
                                                 LustreContext("team/small")),
                              &published);
  ASSERT_TRUE(s.ok()) << s.error_message() << Log("node");
  csi::v1::NodeGetVolumeStatsRequest req;
  req.set_volume_id("small#lustrefs#10.0.0.4#team/small#f");
  req.set_volume_path(target);
  csi::v1::NodeGetVolumeStatsResponse stats;
  grpc::ClientContext stats_ctx;
  ASSERT_TRUE(node->NodeGetVolumeStats(&stats_ctx, req, &stats).ok());
  int64_t total = -1;
  for (const auto& u : stats.usage()) {
    if (u.unit() == csi::v1::VolumeUsage::BYTES) total = u.total();
  }
  EXPECT_EQ(total, 8 << 20);
  csi::v1::NodeUnpublishVolumeRequest unpublish;
  unpublish.set_volume_id("small");
  unpublish.set_target_path(target);
  csi::v1::NodeUnpublishVolumeResponse unpublished;
  grpc::ClientContext unpublish_ctx;
  ASSERT_TRUE(node->NodeUnpublishVolume(&unpublish_ctx, unpublish, &unpublished).ok());
  umount2(small.c_str(), MNT_DETACH);
}

// Without the host's tool (local mode has none), a class asking for a quota
// is refused before anything is made.
TEST_F(QuotaE2eTest, LocalModeRefusesQuotas) {
  std::string socket = tmp_.Join("local.sock");
  Subprocess local({BinaryPath(), "controller", "--mount-mode=local",
                    "--local-root=" + tmp_.Join("servers"), "--endpoint=unix://" + socket},
                   tmp_.Join("local.log"));
  ASSERT_TRUE(WaitForSocket(socket, absl::Seconds(10)).ok()) << ReadFile(tmp_.Join("local.log"));
  grpc::Status s = Create(socket, "pvc-x", QuotaParams("pvc-x"), kGiB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("--mount-mode=lustre"));
  EXPECT_NE(access((fs_root() + "/team/pvc-x").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace lustre_csi::e2e
