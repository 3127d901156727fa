// The shipped image under the shipped manifests, at pod level: the real image
// archive, imported into containerd as an operator imports it, runs under
// containerd and runc with the args, env and volumes of the rendered
// Kubernetes manifests, translated to CRI calls as the kubelet translates a
// pod (e2e/kubelet_cri.h), on a synthetic host whose only Lustre client is a
// stand-in mount.lustre (e2e/standin_mount_lustre.cc). The test drives the
// driver the way the kubelet does: over the host-side sockets, with kubelet
// target paths, and checks the mounts in the host's mount table.
//
// Run through e2e/pod_test.sh, which renders the manifests, builds the image
// archives, and starts this binary as PID 1 of new namespaces.
#include <grpcpp/grpcpp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "e2e/cri_runtime.h"
#include "e2e/e2e_util.h"
#include "e2e/pod_spec.h"
#include "e2e/synthetic_host.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"
#include "proto/pluginregistration.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kStandIn[] = "/opt/standin/mount.lustre";
constexpr char kDriver[] = "azurelustre.csi.azure.com";
constexpr char kFsData[] = "/run/lustre-standin/servers/lustrefs";

// The node's container runtime, started by main() once the host is built.
Containerd* g_containerd = nullptr;

std::string g_base_yaml, g_subdir_yaml, g_nomad_node_yaml, g_nomad_other_state_yaml;

// The Nomad client that e2e/pod_test.sh models (tools/manifest-check/
// nomad-pod.mjs): its state_dir (the node job's default) and the plugin
// task's allocation.
constexpr char kNomadStateDir[] = "/opt/nomad/data/client";
constexpr char kNomadPluginAlloc[] = "7c2f1d4e-0b5a-4c8e-9a61-3d2b8e5f1a90";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// The host's Lustre client: the stand-in helper at /sbin/mount.lustre and the
// kernel module as /proc/filesystems reports it (on this host only).
void InstallHelper() {
  std::filesystem::copy_file(kStandIn, "/sbin/mount.lustre",
                             std::filesystem::copy_options::overwrite_existing);
  chmod("/sbin/mount.lustre", 0755);
}
void RemoveHelper() { unlink("/sbin/mount.lustre"); }
void LoadModule() {
  std::string list = ReadFile("/proc/filesystems");
  if (absl::StrContains(list, "\tlustre\n")) return;
  ASSERT_TRUE(WriteFile("/run/filesystems", list + "nodev\tlustre\n").ok());
  ASSERT_EQ(mount("/run/filesystems", "/proc/filesystems", nullptr, MS_BIND, nullptr), 0);
}
void UnloadModule() {
  while (umount2("/proc/filesystems", 0) == 0) {
  }
}

// Helper calls other than readiness checks (-V), in order.
std::vector<std::string> MountCalls() {
  std::vector<std::string> calls;
  for (absl::string_view line : absl::StrSplit(ReadFile("/run/lustre-standin/calls.log"), '\n')) {
    if (!line.empty() && !absl::EndsWith(line, " -V")) calls.emplace_back(line);
  }
  return calls;
}

bool IsMountPoint(const std::string& path) {
  for (const std::string& m : MountsUnder(path)) {
    if (m == path) return true;
  }
  return false;
}

class PodTest : public testing::Test {
 protected:
  void SetUp() override {
    InstallHelper();
    LoadModule();
    std::filesystem::create_directories(kFsData);
    // What the kubelet keeps on every node.
    std::filesystem::create_directories("/var/lib/kubelet/plugins_registry");
    std::filesystem::create_directories("/var/lib/kubelet/pods");
    unlink("/run/lustre-standin/calls.log");
    absl::StatusOr<PodSpec> node =
        LoadPodSpec(g_base_yaml, "DaemonSet", "lustre-csi-node", "lustre-csi", "node-1");
    ASSERT_TRUE(node.ok()) << node.status();
    node_spec_ = *node;
  }

  void TearDown() override {
    container_.reset();
    // Nothing the driver mounted may stay on the host.
    EXPECT_THAT(MountsUnder("/var/lib/kubelet"), IsEmpty());
    EXPECT_THAT(MountsUnder("/var/lib/lustre-csi"), IsEmpty());
    EXPECT_THAT(MountsUnder("/opt/nomad"), IsEmpty());
  }

  // Starts the node and connects to its CSI socket at `socket`, a path on
  // the host.
  void StartNode(const PodSpec& spec, const std::string& socket = NodeSocket()) {
    absl::StatusOr<std::unique_ptr<Container>> c = Container::Start(g_containerd, spec);
    ASSERT_TRUE(c.ok()) << c.status();
    container_ = std::move(*c);
    absl::Status up = WaitForSocket(socket, absl::Seconds(20));
    ASSERT_TRUE(up.ok()) << up << "\n" << container_->Log();
    // The HTTP server comes up just after the CSI socket: wait for it, as
    // the kubelet's probes retry, before a test reads it.
    if (spec.host_network && spec.liveness.port != 0) {
      ASSERT_TRUE(WaitUntil([&] {
        return !HttpGet(spec.liveness.port, spec.liveness.path).empty();
      })) << container_->Log();
    }
    node_ = csi::v1::Node::NewStub(UnixChannel(socket));
    identity_ = csi::v1::Identity::NewStub(UnixChannel(socket));
  }

  // Where the shipped node manifest puts its working dir, and in it the
  // shared Lustre clients.
  static std::string WorkDir() { return absl::StrCat("/var/lib/kubelet/lustre-csi/", kDriver); }
  static std::string ClientsDir() { return WorkDir() + "/clients"; }
  static std::string NodeSocket() {
    return absl::StrCat("/var/lib/kubelet/plugins/", kDriver, "/csi.sock");
  }
  static std::string Target(const std::string& pod) {
    return absl::StrCat("/var/lib/kubelet/pods/", pod, "/volumes/kubernetes.io~csi/pv1/mount");
  }

  bool Ready() {
    csi::v1::ProbeRequest req;
    csi::v1::ProbeResponse res;
    grpc::ClientContext ctx;
    grpc::Status s = identity_->Probe(&ctx, req, &res);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return res.ready().value();
  }

  grpc::Status Publish(const std::string& pod, const std::string& sub_dir) {
    // The kubelet creates the volume's directory; the driver creates `mount`.
    std::filesystem::create_directories(std::filesystem::path(Target(pod)).parent_path());
    return PublishAt(Target(pod), sub_dir);
  }

  grpc::Status PublishAt(const std::string& target, const std::string& sub_dir,
                         const std::string& fs = "lustrefs",
                         const std::vector<std::string>& flags = {}) {
    csi::v1::NodePublishVolumeRequest req = MakePublishRequest(
        "pv1#" + fs + "#10.0.0.4#" + sub_dir + "#f", target,
        {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", fs}, {"sub-dir", sub_dir}}, false, flags);
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return node_->NodePublishVolume(&ctx, req, &res);
  }

  grpc::Status Unpublish(const std::string& pod) { return UnpublishAt(Target(pod)); }

  grpc::Status UnpublishAt(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("pv1");
    req.set_target_path(target);
    grpc::ClientContext ctx;
    csi::v1::NodeUnpublishVolumeResponse res;
    return node_->NodeUnpublishVolume(&ctx, req, &res);
  }

  PodSpec node_spec_;
  std::unique_ptr<Container> container_;
  std::unique_ptr<csi::v1::Node::Stub> node_;
  std::unique_ptr<csi::v1::Identity::Stub> identity_;
};

TEST_F(PodTest, ManifestRunsTheNodeAgainstTheHostsClient) {
  EXPECT_TRUE(node_spec_.host_pid) << "the node manifest must share the host's PID namespace";
  ASSERT_NO_FATAL_FAILURE(StartNode(node_spec_));

  // The kubelet finds the plugin through its registration socket.
  std::string reg = absl::StrCat("/var/lib/kubelet/plugins_registry/", kDriver, "-reg.sock");
  auto registration = pluginregistration::Registration::NewStub(UnixChannel(reg));
  pluginregistration::InfoRequest info_req;
  pluginregistration::PluginInfo info;
  grpc::ClientContext info_ctx;
  ASSERT_TRUE(registration->GetInfo(&info_ctx, info_req, &info).ok()) << container_->Log();
  EXPECT_EQ(info.name(), kDriver);
  EXPECT_EQ(info.endpoint(), NodeSocket());

  EXPECT_TRUE(Ready()) << container_->Log();
  EXPECT_THAT(HttpGet(29635, "/readyz"), HasSubstr("200 OK"));

  // The manifest shares one Lustre client per file system: the first publish
  // mounts the file system's root under the working dir once; the sub-dir,
  // missing yet, is made through it and bound at the target.
  grpc::Status s = Publish("p1", "team-a");
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  std::vector<std::string> calls = MountCalls();
  ASSERT_EQ(calls.size(), 1u) << absl::StrJoin(calls, "\n");
  EXPECT_THAT(calls[0], HasSubstr("10.0.0.4@tcp:/lustrefs " + ClientsDir() + "/lustrefs-"));

  // The mount is the host's, at the kubelet path, and carries the data.
  EXPECT_TRUE(IsMountPoint(Target("p1")));
  ASSERT_TRUE(WriteFile(Target("p1") + "/hello", "from pod p1").ok());
  EXPECT_EQ(ReadFile(std::string(kFsData) + "/team-a/hello"), "from pod p1");

  csi::v1::NodeGetVolumeStatsRequest stats_req;
  stats_req.set_volume_id("pv1");
  stats_req.set_volume_path(Target("p1"));
  csi::v1::NodeGetVolumeStatsResponse stats;
  grpc::ClientContext stats_ctx;
  ASSERT_TRUE(node_->NodeGetVolumeStats(&stats_ctx, stats_req, &stats).ok());
  ASSERT_GE(stats.usage_size(), 1);
  EXPECT_GT(stats.usage(0).total(), 0);
  EXPECT_FALSE(stats.volume_condition().abnormal()) << stats.volume_condition().message();

  // A second pod: a bind from the same client, no helper call.
  ASSERT_TRUE(Publish("p2", "team-a").ok());
  EXPECT_EQ(MountCalls().size(), 1u);
  EXPECT_EQ(ReadFile(Target("p2") + "/hello"), "from pod p1");

  ASSERT_TRUE(Unpublish("p1").ok());
  EXPECT_THAT(MountsUnder(ClientsDir()), testing::SizeIs(1)) << "p2 still uses the client";
  ASSERT_TRUE(Unpublish("p2").ok());
  EXPECT_FALSE(std::filesystem::exists(Target("p1")));
  EXPECT_THAT(MountsUnder("/var/lib/kubelet/pods"), IsEmpty());
  // The last bind took the client with it.
  EXPECT_THAT(MountsUnder(ClientsDir()), IsEmpty());
  EXPECT_TRUE(std::filesystem::is_empty(ClientsDir()));

  node_.reset();
  identity_.reset();
  EXPECT_EQ(container_->Stop(), 0) << container_->Log();
  EXPECT_FALSE(std::filesystem::exists(NodeSocket()));
}

// The negative control of the suite: the same manifest with the kubelet
// directory's Bidirectional propagation taken out. The node is not ready;
// the client mount the driver makes in the host's namespace does not reach
// its view, so a publish fails, says why, and leaves nothing mounted on the
// host. Were this
// runtime to get propagation wrong, this test or the one above would fail.
// Readiness says so before any publish: the mount holding the client
// directory is not shared.
TEST_F(PodTest, WithoutBidirectionalPropagationThePublishFails) {
  std::string yaml = g_base_yaml;
  const std::string bidirectional = "mountPropagation: Bidirectional";
  size_t at = yaml.find(bidirectional);
  ASSERT_NE(at, std::string::npos) << "the base no longer asks for Bidirectional";
  yaml.replace(at, bidirectional.size(), "mountPropagation: None");
  ASSERT_EQ(yaml.find(bidirectional), std::string::npos) << "more than one Bidirectional mount";
  absl::StatusOr<PodSpec> spec =
      LoadPodSpec(yaml, "DaemonSet", "lustre-csi-node", "lustre-csi", "node-1");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_NO_FATAL_FAILURE(StartNode(*spec));
  // Not ready, and why: the taint stays, no pod is scheduled here.
  EXPECT_FALSE(Ready());
  std::string readyz = HttpGet(29635, "/readyz");
  EXPECT_THAT(readyz, HasSubstr("is not shared")) << readyz;
  EXPECT_THAT(readyz, HasSubstr("Bidirectional")) << readyz;
  grpc::Status s = Publish("p1", "team-a");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("Bidirectional"));
  EXPECT_FALSE(IsMountPoint(Target("p1")));
  EXPECT_THAT(MountsUnder("/var/lib/kubelet/pods"), IsEmpty());
  node_.reset();
  identity_.reset();
  EXPECT_EQ(container_->Stop(), 0) << container_->Log();
}

TEST_F(PodTest, HostWithoutLustreClientIsNotReadyAndSaysWhy) {
  RemoveHelper();
  UnloadModule();
  ASSERT_NO_FATAL_FAILURE(StartNode(node_spec_));
  EXPECT_FALSE(Ready());
  std::string readyz = HttpGet(29635, "/readyz");
  EXPECT_THAT(readyz, HasSubstr("503"));
  EXPECT_THAT(readyz, HasSubstr("/sbin/mount.lustre cannot run in mount namespace /proc/1/ns/mnt"));
  EXPECT_THAT(HttpGet(29635, "/healthz"), HasSubstr("200 OK"));
  EXPECT_THAT(HttpGet(29635, "/metrics"),
              HasSubstr("lustre_csi_not_ready{reason=\"mount-helper\"} 1"));
  grpc::Status s = Publish("p1", "team-a");
  EXPECT_EQ(s.error_code(), grpc::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("mount.lustre"));
  EXPECT_THAT(MountCalls(), IsEmpty());

  // The helper without the module: still not ready, for the module's sake.
  InstallHelper();
  s = Publish("p1", "team-a");
  EXPECT_EQ(s.error_code(), grpc::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("kernel module"));

  // Client complete: the next publish checks again and mounts.
  LoadModule();
  s = Publish("p1", "team-a");
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  EXPECT_TRUE(Ready());
  ASSERT_TRUE(Unpublish("p1").ok());
}

TEST_F(PodTest, WithoutHostPidTheNodeSaysSo) {
  PodSpec spec = node_spec_;
  spec.host_pid = false;  // an operator dropped hostPID from the manifest
  ASSERT_NO_FATAL_FAILURE(StartNode(spec));
  EXPECT_FALSE(Ready());
  EXPECT_THAT(HttpGet(29635, "/readyz"), HasSubstr("hostPID: true"));
  grpc::Status s = Publish("p1", "team-a");
  EXPECT_EQ(s.error_code(), grpc::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(MountCalls(), IsEmpty());
}

// The manifest with --lustre-client=per-volume: one client mount per publish,
// at the target; a missing sub-dir is made through a brief root mount under
// the working dir.
TEST_F(PodTest, PerVolumeClientsMountAtTheTarget) {
  PodSpec spec = node_spec_;
  for (std::string& arg : spec.args) {
    if (arg == "--lustre-client=shared") arg = "--lustre-client=per-volume";
  }
  ASSERT_NO_FATAL_FAILURE(StartNode(spec));
  grpc::Status s = Publish("p1", "team-per-volume");
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  std::vector<std::string> calls = MountCalls();
  ASSERT_EQ(calls.size(), 3u) << absl::StrJoin(calls, "\n");
  EXPECT_THAT(calls[0], HasSubstr("10.0.0.4@tcp:/lustrefs/team-per-volume " + Target("p1")));
  EXPECT_THAT(calls[1], HasSubstr("10.0.0.4@tcp:/lustrefs " + WorkDir() + "/fs-"));
  EXPECT_EQ(calls[2], calls[0]);
  ASSERT_TRUE(Publish("p2", "team-per-volume").ok());
  EXPECT_EQ(MountCalls().size(), 4u);
  ASSERT_TRUE(Unpublish("p1").ok());
  ASSERT_TRUE(Unpublish("p2").ok());
  // The working dir holds nothing after the sub-dir was made (an empty
  // clients directory is left by the shared-client tests).
  for (const auto& entry : std::filesystem::directory_iterator(WorkDir())) {
    EXPECT_EQ(entry.path().string(), ClientsDir());
    EXPECT_TRUE(std::filesystem::is_empty(entry.path()));
  }
}

// One Lustre client per file system and set of client-wide options serves
// every publish; it outlives a killed node and goes with its last bind.
TEST_F(PodTest, OneLustreClientPerFileSystemServesEveryPublish) {
  std::filesystem::create_directories("/run/lustre-standin/servers/otherfs");
  ASSERT_NO_FATAL_FAILURE(StartNode(node_spec_));
  auto target = [](int volume, int pod) {
    return absl::StrCat("/var/lib/kubelet/pods/pod", pod, "/volumes/kubernetes.io~csi/vol", volume,
                        "/mount");
  };
  // 20 publishes of 5 sub-dir volumes of one file system: one helper call.
  for (int v = 0; v < 5; ++v) {
    for (int p = 0; p < 4; ++p) {
      std::filesystem::create_directories(std::filesystem::path(target(v, p)).parent_path());
      grpc::Status s = PublishAt(target(v, p), absl::StrCat("team-", v));
      ASSERT_TRUE(s.ok()) << v << "/" << p << ": " << s.error_message() << "\n"
                          << container_->Log();
    }
  }
  EXPECT_EQ(MountCalls().size(), 1u) << absl::StrJoin(MountCalls(), "\n");
  EXPECT_THAT(MountsUnder(ClientsDir()), testing::SizeIs(1));
  ASSERT_TRUE(WriteFile(target(3, 0) + "/f", "v3").ok());
  EXPECT_EQ(ReadFile(target(3, 2) + "/f"), "v3");
  EXPECT_FALSE(std::filesystem::exists(target(2, 2) + "/f"));

  // Another file system, and other client-wide options: a client each.
  const std::string other = "/var/lib/kubelet/pods/pod9/volumes/kubernetes.io~csi/other/mount";
  const std::string flock = "/var/lib/kubelet/pods/pod9/volumes/kubernetes.io~csi/flock/mount";
  std::filesystem::create_directories(std::filesystem::path(other).parent_path());
  std::filesystem::create_directories(std::filesystem::path(flock).parent_path());
  ASSERT_TRUE(PublishAt(other, "x", "otherfs").ok()) << container_->Log();
  EXPECT_EQ(MountCalls().size(), 2u);
  ASSERT_TRUE(PublishAt(flock, "team-0", "lustrefs", {"flock"}).ok()) << container_->Log();
  EXPECT_EQ(MountCalls().size(), 3u);
  EXPECT_THAT(MountsUnder(ClientsDir()), testing::SizeIs(3));
  EXPECT_THAT(HttpGet(29635, "/metrics"), HasSubstr("lustre_csi_clients{fs_name=\"lustrefs\"} 2"));

  // Hostile sub-dirs never leave the client root.
  std::filesystem::create_directory_symlink("/etc", std::string(kFsData) + "/evil");
  const std::string hostile = "/var/lib/kubelet/pods/pod9/volumes/kubernetes.io~csi/evil/mount";
  std::filesystem::create_directories(std::filesystem::path(hostile).parent_path());
  for (const char* sub : {"evil", "evil/x", "../../etc"}) {
    grpc::Status s = PublishAt(hostile, sub);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << sub << ": " << s.error_message();
    EXPECT_FALSE(IsMountPoint(hostile)) << sub;
  }
  ASSERT_TRUE(UnpublishAt(other).ok());
  ASSERT_TRUE(UnpublishAt(flock).ok());
  // The other file system's client went with its only bind. (The stand-in
  // serves every client of one file system from one tmpfs, so the mount
  // table cannot tell the flock client's binds from the plain client's: it
  // stays as long as any bind of the file system does. Real Lustre clients
  // each have a device of their own.)
  for (const std::string& m : MountsUnder(ClientsDir())) {
    EXPECT_THAT(m, Not(HasSubstr("/otherfs-")));
  }

  // The node dies with 20 binds live; a new one unpublishes half: the
  // client stays until the last bind goes.
  node_.reset();
  identity_.reset();
  container_->Kill();
  container_.reset();
  const size_t clients = MountsUnder(ClientsDir()).size();
  EXPECT_GE(clients, 1u);
  ASSERT_NO_FATAL_FAILURE(StartNode(node_spec_));
  for (int v = 0; v < 5; ++v) {
    for (int p = 0; p < 2; ++p) ASSERT_TRUE(UnpublishAt(target(v, p)).ok());
  }
  EXPECT_EQ(MountsUnder(ClientsDir()).size(), clients) << "binds are left";
  EXPECT_EQ(ReadFile(target(3, 2) + "/f"), "v3");
  for (int v = 0; v < 5; ++v) {
    for (int p = 2; p < 4; ++p) ASSERT_TRUE(UnpublishAt(target(v, p)).ok());
  }
  EXPECT_THAT(MountsUnder(ClientsDir()), IsEmpty()) << container_->Log();
  EXPECT_EQ(MountCalls().size(), 3u) << "unpublishing never mounts";
  std::filesystem::remove(std::string(kFsData) + "/evil");
}

// The shipped node manifest on the oldest kernels Lustre clients run on: the
// image's binary behind a seccomp filter that answers ENOSYS for every system
// call newer than Linux 4.18 (no openat2, no mount API) or 5.11 (openat2, no
// mount_setattr). Shared clients still serve every publish; a read-only bind
// reaches the host read-only; nothing is left on the host.
TEST_F(PodTest, SharedClientsOnOlderKernels) {
  for (const char* kernel : {"4.18", "5.11"}) {
    SCOPED_TRACE(absl::StrCat("Linux ", kernel));
    PodSpec spec = node_spec_;
    spec.emulated_kernel = kernel;
    ASSERT_NO_FATAL_FAILURE(StartNode(spec));
    EXPECT_TRUE(Ready()) << container_->Log();
    // The runtime copies the container's output to its log as it comes.
    EXPECT_TRUE(WaitUntil([&] {
      return absl::StrContains(container_->Log(), "fallbacks in use for ");
    })) << container_->Log();
    ASSERT_TRUE(Publish("p1", "team-a").ok()) << container_->Log();
    const std::string ro = "/var/lib/kubelet/pods/p2/volumes/kubernetes.io~csi/pv1/mount";
    std::filesystem::create_directories(std::filesystem::path(ro).parent_path());
    grpc::Status s = PublishAt(ro, "team-a", "lustrefs", {"ro"});
    ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
    ASSERT_TRUE(WriteFile(Target("p1") + "/f", kernel).ok());
    EXPECT_EQ(ReadFile(ro + "/f"), kernel);
    struct statvfs st;
    ASSERT_EQ(statvfs(ro.c_str(), &st), 0);
    EXPECT_TRUE(st.f_flag & ST_RDONLY) << "the host's copy of the read-only bind is writable";
    EXPECT_FALSE(WriteFile(ro + "/g", "x").ok());
    EXPECT_EQ(MountCalls().size(), 1u) << absl::StrJoin(MountCalls(), "\n");
    // Hostile sub-dirs are refused by the user-space walk as by openat2.
    std::filesystem::create_directory_symlink("/etc", std::string(kFsData) + "/evil");
    const std::string hostile = "/var/lib/kubelet/pods/p3/volumes/kubernetes.io~csi/pv1/mount";
    std::filesystem::create_directories(std::filesystem::path(hostile).parent_path());
    for (const char* sub : {"evil", "evil/x", "../../etc"}) {
      grpc::Status refused = PublishAt(hostile, sub);
      EXPECT_EQ(refused.error_code(), grpc::INVALID_ARGUMENT)
          << sub << ": " << refused.error_message();
      EXPECT_FALSE(IsMountPoint(hostile)) << sub;
    }
    std::filesystem::remove(std::string(kFsData) + "/evil");
    ASSERT_TRUE(Unpublish("p1").ok());
    ASSERT_TRUE(UnpublishAt(ro).ok());
    EXPECT_THAT(MountsUnder("/var/lib/kubelet"), IsEmpty()) << container_->Log();
    EXPECT_THAT(MountsUnder(ClientsDir()), IsEmpty());
    node_.reset();
    identity_.reset();
    EXPECT_EQ(container_->Stop(), 0) << container_->Log();
    container_.reset();
    std::filesystem::remove_all("/var/lib/kubelet/pods");
    std::filesystem::remove("/run/lustre-standin/calls.log");
  }
}

// Switching a node from the Go driver: what the Go node mounted (a Lustre
// client per volume, at the target) stays mounted when this image's node
// starts, and is unpublished by it; PVs written as the Go driver's examples
// and its dynamic provisioning write them publish unchanged.
TEST_F(PodTest, GoDriverVolumesPublishAndItsMountsSurviveTheSwitch) {
  // The Go node's mount of a sub-dir volume, left running when its pod was
  // replaced: the host's helper, at the kubelet's target.
  const std::string old_target = Target("go-old");
  std::filesystem::create_directories(old_target);
  auto helper = [](const std::string& spec, const std::string& at) {
    Subprocess run({"/sbin/mount.lustre", "-o", "noatime,flock", spec, at}, "/run/go-node.log");
    return run.Wait(absl::Seconds(10));
  };
  // The stand-in's file system comes to life at its first mount.
  ASSERT_EQ(helper("10.0.0.4@tcp:/lustrefs", old_target), 0) << ReadFile("/run/go-node.log");
  ASSERT_EQ(umount(old_target.c_str()), 0);
  std::filesystem::create_directories(std::string(kFsData) + "/go-old");
  ASSERT_TRUE(WriteFile(std::string(kFsData) + "/go-old/data", "from the Go driver").ok());
  ASSERT_EQ(helper("10.0.0.4@tcp:/lustrefs/go-old", old_target), 0) << ReadFile("/run/go-node.log");
  ASSERT_TRUE(IsMountPoint(old_target));

  ASSERT_NO_FATAL_FAILURE(StartNode(node_spec_));
  EXPECT_TRUE(Ready()) << container_->Log();
  EXPECT_EQ(ReadFile(old_target + "/data"), "from the Go driver") << "the workload lost its mount";

  auto publish = [&](const std::string& pod, const std::string& handle,
                     std::map<std::string, std::string> context) {
    std::filesystem::create_directories(std::filesystem::path(Target(pod)).parent_path());
    csi::v1::NodePublishVolumeRequest req =
        MakePublishRequest(handle, Target(pod), context, false, {"noatime", "flock"});
    grpc::ClientContext ctx;
    csi::v1::NodePublishVolumeResponse res;
    return node_->NodePublishVolume(&ctx, req, &res);
  };
  // docs/examples/pv.yaml of the Go driver: any handle, only the MGS.
  grpc::Status s = publish("go-pv", "my-unique-volume", {{"mgs-ip-address", "10.0.0.4"}});
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  EXPECT_EQ(ReadFile(Target("go-pv") + "/go-old/data"), "from the Go driver") << "not the root";
  // A sub-dir with slashes around it.
  s = publish("go-sub", "my-sub-volume",
              {{"mgs-ip-address", "10.0.0.4"}, {"sub-dir", "/team-go/"}});
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  ASSERT_TRUE(WriteFile(Target("go-sub") + "/f", "x").ok());
  EXPECT_EQ(ReadFile(std::string(kFsData) + "/team-go/f"), "x");
  // A volume of the Go driver's dynamic provisioning, as its PV reads.
  s = publish("go-dyn", "pvc-dyn#lustrefs#10.0.0.4##t#my-rg",
              {{"mgs-ip-address", "10.0.0.4"},
               {"created-by-dynamic-provisioning", "t"},
               {"resource-group-name", "my-rg"},
               {"sku-name", "AMLFS-Durable-Premium-125"},
               {"zone", "1"},
               {"maintenance-day-of-week", "Sunday"},
               {"maintenance-time-of-day-utc", "22:00"}});
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  EXPECT_TRUE(IsMountPoint(Target("go-dyn")));

  // The Go node's mount goes when the kubelet unpublishes it here.
  ASSERT_TRUE(UnpublishAt(old_target).ok()) << container_->Log();
  EXPECT_FALSE(IsMountPoint(old_target));
  for (const char* pod : {"go-pv", "go-dyn"}) ASSERT_TRUE(Unpublish(pod).ok()) << pod;

  // Rollback, as docs/deploy.md says: this node goes, the workload keeps its
  // bind; the Go node's unpublish is a plain unmount of the target, after
  // which the idle shared client is unmounted by hand.
  node_.reset();
  identity_.reset();
  EXPECT_EQ(container_->Stop(), 0) << container_->Log();
  EXPECT_EQ(ReadFile(Target("go-sub") + "/f"), "x") << "the workload lost its mount";
  // The runbook's manual step, while the workload still uses its bind: the
  // bind keeps working, and goes with the Go node's plain unmount.
  std::vector<std::string> clients = MountsUnder(ClientsDir());
  EXPECT_THAT(clients, testing::SizeIs(1)) << "the runbook's manual step has nothing to do";
  for (const std::string& client : clients) EXPECT_EQ(umount(client.c_str()), 0) << client;
  EXPECT_EQ(ReadFile(Target("go-sub") + "/f"), "x") << "unmounting the client took the bind";
  ASSERT_TRUE(WriteFile(Target("go-sub") + "/g", "still").ok());
  ASSERT_EQ(umount(Target("go-sub").c_str()), 0);
  EXPECT_THAT(MountsUnder("/var/lib/kubelet/pods"), IsEmpty());
  EXPECT_THAT(MountsUnder(ClientsDir()), IsEmpty());
}

// The Nomad node job, run as a Nomad client with the docker driver would run
// it: Nomad reaches the plugin at <state_dir>/csi/plugins/<alloc>/csi.sock
// and gives it targets under stage_publish_base_dir, which the job makes the
// host directory Nomad binds there, so the helper, running in the host's
// mount namespace, mounts where Nomad then binds the volume into the
// workload's task.
TEST_F(PodTest, NomadNodeJobMountsWhereNomadLooks) {
  absl::StatusOr<PodSpec> spec =
      LoadPodSpec(g_nomad_node_yaml, "Pod", "plugin", "plugin", "node-1");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->host_pid) << "the Nomad node job must use pid_mode = \"host\"";
  std::string socket =
      absl::StrCat(kNomadStateDir, "/csi/plugins/", kNomadPluginAlloc, "/csi.sock");
  ASSERT_NO_FATAL_FAILURE(StartNode(*spec, socket));
  EXPECT_TRUE(Ready()) << container_->Log();

  // Nomad's volume manager makes the per-allocation directory on the host
  // and passes the plugin the same directory as the task sees it.
  std::string plugin_dir = absl::StrCat(kNomadStateDir, "/csi/node/", kDriver);
  std::string target = absl::StrCat(plugin_dir, "/per-alloc/0b9e6d2c-5f4a-4e1b-8c3d-2a7f9e1b4c6d",
                                    "/pv1/rw-file-system-multi-node-multi-writer");
  std::filesystem::create_directories(target);
  grpc::Status s = PublishAt(target, "team-n");
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  std::vector<std::string> calls = MountCalls();
  ASSERT_EQ(calls.size(), 1u) << absl::StrJoin(calls, "\n");
  EXPECT_THAT(calls[0], HasSubstr("10.0.0.4@tcp:/lustrefs " + plugin_dir + "/work/clients/"));

  // The host's mount, at the path Nomad binds into the workload.
  EXPECT_TRUE(IsMountPoint(target));
  ASSERT_TRUE(WriteFile(target + "/hello", "from a Nomad task").ok());
  EXPECT_EQ(ReadFile(std::string(kFsData) + "/team-n/hello"), "from a Nomad task");

  ASSERT_TRUE(UnpublishAt(target).ok());
  EXPECT_FALSE(IsMountPoint(target));
  EXPECT_THAT(MountsUnder(plugin_dir), IsEmpty());
  EXPECT_TRUE(std::filesystem::is_empty(plugin_dir + "/work/clients"));

  node_.reset();
  identity_.reset();
  EXPECT_EQ(container_->Stop(), 0) << container_->Log();
  EXPECT_FALSE(std::filesystem::exists(socket));
}

// The node job with a client_state_dir that is not the client's state_dir
// (here /var/lib/nomad/client): Nomad binds the host's plugin directory at a
// path the host does not have, so mounts made on the host would never reach
// the task. The plugin says so through Probe, which Nomad's plugin health
// uses, before any volume is published.
TEST_F(PodTest, NomadNodeJobWithTheWrongStateDirIsNotReadyAndSaysWhy) {
  absl::StatusOr<PodSpec> spec =
      LoadPodSpec(g_nomad_other_state_yaml, "Pod", "plugin", "plugin", "node-1");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::string socket =
      absl::StrCat("/var/lib/nomad/client/csi/plugins/", kNomadPluginAlloc, "/csi.sock");
  ASSERT_NO_FATAL_FAILURE(StartNode(*spec, socket));
  EXPECT_FALSE(Ready()) << container_->Log();
  const std::string work = absl::StrCat(kNomadStateDir, "/csi/node/", kDriver, "/work");
  EXPECT_TRUE(WaitUntil([&] {
    std::string log = container_->Log();
    return absl::StrContains(log, "client_state_dir must be the client's state_dir") &&
           absl::StrContains(log, work);
  })) << container_->Log();
  node_.reset();
  identity_.reset();
  EXPECT_EQ(container_->Stop(), 0) << container_->Log();
}

// The sub-dir-provisioning overlay with a class that asks for a project
// quota and a layout: the controller runs the host's lfs (the stand-in, at
// /usr/bin/lfs, keeping its state beside it) in the host's mount namespace.
TEST_F(PodTest, ControllerOverlayCreatesAndDeletesSubDirsThroughTheHostsClient) {
  std::filesystem::create_directories("/usr/bin/lfs-state");
  std::filesystem::copy_file("/opt/standin/lfs", "/usr/bin/lfs",
                             std::filesystem::copy_options::overwrite_existing);
  chmod("/usr/bin/lfs", 0755);
  ASSERT_TRUE(WriteFile("/usr/bin/lfs-state/pools", "lustrefs.fast\n").ok());
  absl::StatusOr<PodSpec> spec =
      LoadPodSpec(g_subdir_yaml, "Deployment", "lustre-csi-controller", "lustre-csi", "node-1");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::unique_ptr<Container>> c = Container::Start(g_containerd, *spec);
  ASSERT_TRUE(c.ok()) << c.status();
  container_ = std::move(*c);
  // The emptyDir's path on the host is longer than a unix socket's address
  // may be (the sidecars reach it inside the pod); the test goes through a
  // short link to it.
  const std::string socket_dir = "/run/controller-socket-dir";
  ASSERT_EQ(symlink(container_->HostPathOf("socket-dir").c_str(), socket_dir.c_str()), 0);
  absl::Cleanup unlink_socket_dir = [&] { unlink(socket_dir.c_str()); };
  std::string socket = socket_dir + "/csi.sock";
  absl::Status up = WaitForSocket(socket, absl::Seconds(20));
  ASSERT_TRUE(up.ok()) << up << "\n" << container_->Log();
  auto controller = csi::v1::Controller::NewStub(UnixChannel(socket));
  // The kubelet probes the pod on its own address, on the ports the
  // manifest names; the pod is on the node's bridge, not its network.
  std::string ip = container_->PodIp();
  ASSERT_FALSE(ip.empty()) << "the controller's pod has no address";
  ASSERT_NE(spec->liveness.port, 0);
  // The HTTP server comes up beside the CSI socket, not before it: probe
  // until it answers, as the kubelet does.
  EXPECT_TRUE(WaitUntil([&] {
    return absl::StrContains(HttpGet(ip, spec->liveness.port, spec->liveness.path), "200 OK");
  })) << container_->Log();
  EXPECT_TRUE(WaitUntil([&] {
    return absl::StrContains(HttpGet(ip, spec->readiness.port, spec->readiness.path), "200 OK");
  })) << container_->Log();
  EXPECT_EQ(HttpGet(spec->liveness.port, spec->liveness.path), "")
      << "the controller's port answers on the node's own loopback";

  csi::v1::CreateVolumeRequest create;
  create.set_name("pvc-123");
  *create.add_volume_capabilities() = MountCapability();
  create.mutable_capacity_range()->set_required_bytes(int64_t{10} << 30);
  auto& params = *create.mutable_parameters();
  params["mgs-ip-address"] = "10.0.0.4";
  params["fs-name"] = "lustrefs";
  params["sub-dir"] = "volumes/pvc-123";
  params["create-sub-dir"] = "true";
  params["sub-dir-on-delete"] = "delete";
  params["sub-dir-quota"] = "true";
  params["sub-dir-stripe-count"] = "2";
  params["sub-dir-stripe-pool"] = "fast";
  csi::v1::CreateVolumeResponse created;
  grpc::ClientContext create_ctx;
  grpc::Status s = controller->CreateVolume(&create_ctx, create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  EXPECT_EQ(created.volume().capacity_bytes(), int64_t{10} << 30);
  std::string dir = std::string(kFsData) + "/volumes/pvc-123";
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_THAT(MountsUnder("/var/lib/lustre-csi"), IsEmpty());
  std::string project;
  for (absl::string_view line : absl::StrSplit(ReadFile(dir + "/.lustre-csi-volume"), '\n')) {
    if (absl::ConsumePrefix(&line, "project=")) project = std::string(line);
  }
  ASSERT_FALSE(project.empty()) << ReadFile(dir + "/.lustre-csi-volume");
  std::string quotas = ReadFile("/usr/bin/lfs-state/quotas");
  EXPECT_THAT(quotas, HasSubstr(absl::StrCat("lustrefs/", project, " 10485760 0\n")));
  EXPECT_THAT(ReadFile("/usr/bin/lfs-state/layouts"), HasSubstr(" 2 - fast\n"));
  EXPECT_THAT(ReadFile("/usr/bin/lfs-state/calls.log"),
              HasSubstr(absl::StrCat("/usr/bin/lfs project -p ", project,
                                     " -s /var/lib/lustre-csi/controller/")));

  // What csi-resizer sends after kubectl edit pvc.
  csi::v1::ControllerExpandVolumeRequest expand;
  expand.set_volume_id(created.volume().volume_id());
  expand.mutable_capacity_range()->set_required_bytes(int64_t{20} << 30);
  csi::v1::ControllerExpandVolumeResponse expanded;
  grpc::ClientContext expand_ctx;
  s = controller->ControllerExpandVolume(&expand_ctx, expand, &expanded);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  EXPECT_EQ(expanded.capacity_bytes(), int64_t{20} << 30);
  EXPECT_FALSE(expanded.node_expansion_required());
  EXPECT_THAT(ReadFile("/usr/bin/lfs-state/quotas"),
              HasSubstr(absl::StrCat("lustrefs/", project, " 20971520 0\n")));

  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(created.volume().volume_id());
  csi::v1::DeleteVolumeResponse deleted;
  grpc::ClientContext del_ctx;
  s = controller->DeleteVolume(&del_ctx, del, &deleted);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << container_->Log();
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_THAT(ReadFile("/usr/bin/lfs-state/quotas"),
              HasSubstr(absl::StrCat("lustrefs/", project, " 0 0\n")));
  EXPECT_FALSE(std::filesystem::exists(absl::StrCat(kFsData, "/.lustre-csi-projects/", project)));
  EXPECT_EQ(container_->Stop(), 0) << container_->Log();
}

// The not-ready taint, as on a cluster: the kubelet gives every pod the API
// server's address (KUBERNETES_SERVICE_HOST, _PORT) and mounts the service
// account's token and CA at /var/run/secrets/kubernetes.io/serviceaccount;
// the API server is the stand-in (e2e/standin_apiserver.cc) on this host's
// loopback, with a certificate e2e/pod_test.sh made. The node plugin removes
// its taint only once it is ready: not while the host has no Lustre client.
TEST_F(PodTest, TheNotReadyTaintGoesOnlyOnceTheNodeIsReady) {
  const std::string taint = absl::StrCat(kDriver, "/agent-not-ready");
  std::filesystem::create_directories("/run/kube/sa");
  for (const char* f : {"ca.crt", "token"}) {
    std::filesystem::copy_file(absl::StrCat("/opt/kube/", f), absl::StrCat("/run/kube/sa/", f),
                               std::filesystem::copy_options::overwrite_existing);
  }
  ASSERT_TRUE(
      WriteFile("/run/kube/node.json",
                absl::StrCat(R"({"kind":"Node","metadata":{"name":"node-1"},)",
                             R"("spec":{"taints":[{"key":")", taint, R"(","effect":"NoSchedule"},)",
                             R"({"key":"other","effect":"NoExecute"}]}})"))
          .ok());
  unlink("/run/kube/requests.log");
  const int port = FreePort();
  Subprocess api(
      {"/opt/kube/standin-apiserver", absl::StrCat("--port=", port), "--cert=/opt/kube/server.crt",
       "--key=/opt/kube/server.key", "--node=/run/kube/node.json", "--log=/run/kube/requests.log"},
      "/run/kube/api.log");
  ASSERT_TRUE(WaitUntil([] {
    return absl::StrContains(ReadFile("/run/kube/api.log"), "listening");
  })) << ReadFile("/run/kube/api.log");

  // What the kubelet adds to the pod.
  PodSpec spec = node_spec_;
  spec.env["KUBERNETES_SERVICE_HOST"] = "127.0.0.1";
  spec.env["KUBERNETES_SERVICE_PORT"] = std::to_string(port);
  spec.volumes["kube-api-access"] = Volume{"kube-api-access", "/run/kube/sa", "Directory"};
  spec.mounts.push_back(
      {"kube-api-access", "/var/run/secrets/kubernetes.io/serviceaccount", "None", true});

  RemoveHelper();  // the host's Lustre client is not installed yet
  ASSERT_NO_FATAL_FAILURE(StartNode(spec));
  std::string reg = absl::StrCat("/var/lib/kubelet/plugins_registry/", kDriver, "-reg.sock");
  auto registration = pluginregistration::Registration::NewStub(UnixChannel(reg));
  {
    pluginregistration::InfoRequest req;
    pluginregistration::PluginInfo info;
    grpc::ClientContext ctx;
    ASSERT_TRUE(registration->GetInfo(&ctx, req, &info).ok()) << container_->Log();
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(true);
    pluginregistration::RegistrationStatusResponse res;
    grpc::ClientContext notify_ctx;
    ASSERT_TRUE(registration->NotifyRegistrationStatus(&notify_ctx, status, &res).ok());
  }
  ASSERT_TRUE(WaitUntil([&] {
    return absl::StrContains(container_->Log(), "waiting until this node plugin is registered");
  })) << container_->Log();
  EXPECT_FALSE(Ready());
  EXPECT_EQ(ReadFile("/run/kube/requests.log"), "") << "nothing is sent before the node is ready";

  // The client arrives; at the next readiness check the node is ready, and
  // the taint goes (the other stays).
  InstallHelper();
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(container_->Log(), "removed taint"); },
                        absl::Seconds(60)))
      << container_->Log();
  EXPECT_TRUE(Ready());
  std::string node = ReadFile("/run/kube/node.json");
  EXPECT_THAT(node, Not(HasSubstr(taint)));
  EXPECT_THAT(node, HasSubstr(R"("key":"other")"));
  std::vector<std::string> requests;
  for (absl::string_view line : absl::StrSplit(ReadFile("/run/kube/requests.log"), '\n')) {
    if (!line.empty()) requests.emplace_back(line);
  }
  ASSERT_EQ(requests.size(), 2u) << absl::StrJoin(requests, "\n");
  EXPECT_THAT(requests[0], HasSubstr(R"("method":"GET")"));
  EXPECT_THAT(requests[1], HasSubstr(R"("method":"PATCH")"));
  EXPECT_THAT(requests[1], HasSubstr("Bearer pod-token"));
  EXPECT_THAT(requests[1], HasSubstr("application/json-patch+json"));
}

}  // namespace
}  // namespace lustre_csi::e2e

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  using lustre_csi::e2e::ReadFile;
  lustre_csi::e2e::g_base_yaml = ReadFile(lustre_csi::e2e::Env("POD_E2E_BASE"));
  lustre_csi::e2e::g_subdir_yaml = ReadFile(lustre_csi::e2e::Env("POD_E2E_SUBDIR"));
  lustre_csi::e2e::g_nomad_node_yaml = ReadFile(lustre_csi::e2e::Env("POD_E2E_NOMAD_NODE"));
  lustre_csi::e2e::g_nomad_other_state_yaml =
      ReadFile(lustre_csi::e2e::Env("POD_E2E_NOMAD_NODE_OTHER_STATE"));
  if (lustre_csi::e2e::g_base_yaml.empty() || lustre_csi::e2e::g_subdir_yaml.empty() ||
      lustre_csi::e2e::g_nomad_node_yaml.empty() ||
      lustre_csi::e2e::g_nomad_other_state_yaml.empty()) {
    fprintf(stderr,
            "POD_E2E_BASE, POD_E2E_SUBDIR and POD_E2E_NOMAD_NODE must name rendered manifests\n");
    return 1;
  }
  absl::Status host = lustre_csi::e2e::EnterHost(
      lustre_csi::e2e::Env("POD_E2E_WORK"),
      {{"/images/lustre-csi.oci.tar", lustre_csi::e2e::Env("POD_E2E_IMAGE")},
       {"/images/pause.tar", lustre_csi::e2e::Env("POD_E2E_PAUSE_IMAGE")},
       {"/opt/standin/mount.lustre", lustre_csi::e2e::Env("POD_E2E_STANDIN")},
       {"/opt/standin/lfs", lustre_csi::e2e::Env("POD_E2E_STANDIN_LFS")},
       {"/opt/standin/older-kernel", lustre_csi::e2e::Env("POD_E2E_OLDER_KERNEL")},
       {"/opt/kube", lustre_csi::e2e::Env("POD_E2E_KUBE")}});
  if (!host.ok()) {
    fprintf(stderr, "%s\n", std::string(host.message()).c_str());
    return 1;
  }
  // The node's runtime: containerd and runc, the images loaded as an
  // operator loads them.
  lustre_csi::e2e::ContainerdOptions options;
  options.sandbox_image = lustre_csi::e2e::Env("POD_E2E_PAUSE_NAME");
  options.archives = {"/images/pause.tar", "/images/lustre-csi.oci.tar"};
  options.cgroup_parent = "/" + lustre_csi::e2e::Env("POD_E2E_CGROUP");
  options.older_kernel = "/opt/standin/older-kernel";
  absl::StatusOr<std::unique_ptr<lustre_csi::e2e::Containerd>> containerd =
      lustre_csi::e2e::Containerd::Start(options);
  if (!containerd.ok()) {
    fprintf(stderr, "containerd: %s\n", std::string(containerd.status().message()).c_str());
    return 1;
  }
  lustre_csi::e2e::g_containerd = containerd->get();
  int result = RUN_ALL_TESTS();
  absl::Status stopped = (*containerd)->Stop();
  if (!stopped.ok()) {
    fprintf(stderr, "containerd left something behind: %s\n",
            std::string(stopped.message()).c_str());
    return 1;
  }
  return result;
}
