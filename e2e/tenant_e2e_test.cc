// What a tenant can plant in the shared file system, against the real binary
// in each mount mode: local (binds from <local-root>), shared clients (the
// shipped default) and per-volume clients, through the stand-in
// mount.lustre (e2e/standin_mount_lustre.cc), which resolves a sub-dir as a
// Lustre server does: no symlink followed. A tenant writes anywhere under
// scratch/ (world-writable, sticky) and chooses PVC names and namespaces
// that fill sub-dir templates; team-b/ is another team's. Around every case
// the test records, without following links, every entry of two canary
// trees outside the file system (one reachable by absolute links, one by
// relative links that climb out of the file system), of team-b/, and the
// whole mount table, and fails on any change: type, owner, group, mode,
// mtime, ctime. A negative control plants each kind of escape by hand and
// shows the checks see it. Also run as on older kernels (e2e/older-kernel:
// no openat2 before 5.6, no mount API before 5.12).
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/csi.grpc.pb.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kStandin[] = "/run/lustre-standin";
constexpr char kFs[] = "/run/lustre-standin/servers/lustrefs";
// Outside the file system, reached from it by climbing: scratch/x/../../../canary.
constexpr char kNearCanary[] = "/run/lustre-standin/servers/canary";
constexpr int kGroup = 4321;

// What a check compares of one entry; lstat(2), never following a link.
struct Entry {
  mode_t mode;
  uid_t uid;
  gid_t gid;
  int64_t mtime_ns;
  int64_t ctime_ns;
  bool operator==(const Entry& o) const {
    return mode == o.mode && uid == o.uid && gid == o.gid && mtime_ns == o.mtime_ns &&
           ctime_ns == o.ctime_ns;
  }
};

std::string Describe(const Entry& e) {
  return absl::StrCat("mode ", absl::Hex(e.mode), " owner ", e.uid, ":", e.gid, " mtime ",
                      e.mtime_ns, " ctime ", e.ctime_ns);
}

// Every entry at or below `dir`, links not followed, other mounts not entered.
void Record(const std::string& dir, std::map<std::string, Entry>* out) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return;
  (*out)[dir] =
      Entry{st.st_mode, st.st_uid, st.st_gid, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
            st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec};
  if (!S_ISDIR(st.st_mode)) return;
  std::error_code ec;
  for (const auto& child : std::filesystem::directory_iterator(dir, ec)) {
    struct stat cst;
    if (lstat(child.path().c_str(), &cst) == 0 && cst.st_dev != st.st_dev) {
      (*out)[child.path().string()] =
          Entry{cst.st_mode, 0, 0, 0, 0};  // a mount: noted, not entered
      continue;
    }
    Record(child.path().string(), out);
  }
}

// What must not change: the canaries, the other team's tree, the mounts.
struct Snapshot {
  std::map<std::string, Entry> entries;
  std::vector<std::string> mounts;
};

class TenantE2eTest : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    // A private /run for the stand-in's state (this process's own mount
    // namespace; nothing reaches the host).
    run_is_private_ = mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") == 0;
    ASSERT_TRUE(run_is_private_) << strerror(errno);
    ASSERT_TRUE(PretendLustreModuleLoaded(scratch_.path()).ok());
  }

  void SetUp() override {
    ASSERT_TRUE(run_is_private_);
    std::filesystem::create_directories(std::string(kStandin) + "/servers");
    std::filesystem::create_directories(kFs);
    // The file system, a tmpfs of its own as a Lustre server's is.
    ASSERT_EQ(mount("10.0.0.4@tcp:/lustrefs", kFs, "tmpfs", 0, "mode=0755"), 0);
    for (const char* d : {"team-a", "team-a/vol", "team-b", "team-b/secret", "scratch"}) {
      ASSERT_EQ(mkdir(Fs(d).c_str(), 0755), 0) << d;
    }
    ASSERT_EQ(chmod(Fs("scratch").c_str(), 01777), 0);
    ASSERT_EQ(chmod(Fs("team-b/secret").c_str(), 0700), 0);
    ASSERT_TRUE(WriteFile(Fs("team-b/secret/file"), "b's").ok());
    ASSERT_EQ(chmod(Fs("team-b/secret/file").c_str(), 0600), 0);
    // The canaries, each with a "vol" for links to land on.
    far_canary_ = tmp_.Join("host-canary");
    for (const std::string& c : {far_canary_, std::string(kNearCanary)}) {
      std::filesystem::create_directories(c + "/vol/sub");
      ASSERT_EQ(chmod((c + "/vol").c_str(), 0700), 0);
      ASSERT_TRUE(WriteFile(c + "/vol/file", "host").ok());
      ASSERT_EQ(chmod((c + "/vol/file").c_str(), 0600), 0);
    }
    for (const char* d : {"pods", "work"}) ASSERT_EQ(mkdir(tmp_.Join(d).c_str(), 0755), 0);

    std::vector<std::string> argv = {BinaryPath(), "node", "--nodeid=n1",
                                     "--endpoint=unix://" + tmp_.Join("node.sock")};
    const std::string& mode = GetParam();
    if (mode == "local") {
      argv.insert(argv.end(),
                  {"--mount-mode=local", "--local-root=" + std::string(kStandin) + "/servers"});
    } else {
      argv.insert(argv.end(),
                  {"--mount-mode=lustre", "--mount-helper=" + Runfile("e2e/standin-mount-lustre"),
                   "--mount-namespace=current", "--lustre-client=" + mode,
                   "--working-mount-dir=" + tmp_.Join("work")});
    }
    node_ = std::make_unique<Subprocess>(argv, tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join("node.sock"), absl::Seconds(20)).ok()) << Log();
    stub_ = csi::v1::Node::NewStub(UnixChannel(tmp_.Join("node.sock")));
  }

  void TearDown() override {
    node_.reset();
    // An idle shared client stays here (see Take); it goes with the test.
    for (const std::string& m : MountsUnder(tmp_.Join("work/clients"))) {
      umount2(m.c_str(), MNT_DETACH);
    }
    EXPECT_THAT(MountsUnder(tmp_.Join("pods")), IsEmpty());
    EXPECT_THAT(MountsUnder(tmp_.Join("work")), IsEmpty());
    umount2(kFs, MNT_DETACH);
    std::filesystem::remove_all(kStandin);
  }

  static std::string Fs(const std::string& rel) { return std::string(kFs) + "/" + rel; }
  std::string Log() { return ReadFile(tmp_.Join("node.log")); }

  Snapshot Take() {
    Snapshot s;
    Record(far_canary_, &s.entries);
    Record(kNearCanary, &s.entries);
    Record(Fs("team-b"), &s.entries);
    // Not the shared clients: the stand-in's server is a mount of this
    // namespace on the clients' device, which the driver counts as a user of
    // a client (no real node has its server mounted), so an idle client
    // stays. A client is the file system's root in the driver's own
    // directory, not an escape.
    const std::string clients = tmp_.Join("work/clients/");
    for (const volume::MountEntry& e : MountTable()) {
      if (e.mount_point.rfind(clients, 0) == 0) continue;
      s.mounts.push_back(absl::StrCat(e.mount_point, " ", e.root, " ", e.source));
    }
    std::sort(s.mounts.begin(), s.mounts.end());
    return s;
  }

  // What differs between `before` and now; empty when nothing does.
  std::vector<std::string> Changes(const Snapshot& before) {
    Snapshot now = Take();
    std::vector<std::string> out;
    for (const auto& [path, e] : before.entries) {
      auto it = now.entries.find(path);
      if (it == now.entries.end()) {
        out.push_back("gone: " + path);
      } else if (!(it->second == e)) {
        out.push_back(
            absl::StrCat("changed: ", path, ": ", Describe(e), " -> ", Describe(it->second)));
      }
    }
    for (const auto& [path, e] : now.entries) {
      if (before.entries.count(path) == 0) out.push_back("new: " + path);
    }
    if (now.mounts != before.mounts) {
      out.push_back(absl::StrCat("mount table: ", absl::StrJoin(before.mounts, "; "), " -> ",
                                 absl::StrJoin(now.mounts, "; ")));
    }
    return out;
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return ctx;
  }

  grpc::Status Publish(const std::map<std::string, std::string>& context, const std::string& target,
                       bool group = false) {
    csi::v1::NodePublishVolumeRequest req = MakePublishRequest("pv-t", target, context);
    if (group) {
      req.mutable_volume_capability()->mutable_mount()->set_volume_mount_group(
          std::to_string(kGroup));
    }
    csi::v1::NodePublishVolumeResponse res;
    return stub_->NodePublishVolume(Context().get(), req, &res);
  }
  grpc::Status Publish(const std::string& sub_dir, const std::string& target, bool group = false) {
    return Publish(LustreContext(sub_dir), target, group);
  }

  grpc::Status Unpublish(const std::string& target) {
    csi::v1::NodeUnpublishVolumeRequest req;
    req.set_volume_id("pv-t");
    req.set_target_path(target);
    csi::v1::NodeUnpublishVolumeResponse res;
    return stub_->NodeUnpublishVolume(Context().get(), req, &res);
  }

  static inline TempDir scratch_;  // holds the /proc/filesystems stand-in
  static inline bool run_is_private_ = false;
  TempDir tmp_;
  std::string far_canary_;
  std::unique_ptr<Subprocess> node_;
  std::unique_ptr<csi::v1::Node::Stub> stub_;
};

// A link of each kind at each component, and missing levels below them:
// refused with INVALID_ARGUMENT naming the link, nothing made or mounted.
TEST_P(TenantE2eTest, SymlinksAtAnyComponentAreRefusedAndNamed) {
  ASSERT_EQ(mkdir(Fs("scratch/ns1").c_str(), 0777), 0);
  const std::pair<std::string, std::string> links[] = {
      {far_canary_, "scratch/ns1/abs"},
      {"../../../canary", "scratch/ns1/climb"},
      {"chain2", "scratch/ns1/chain1"},
      {far_canary_, "scratch/ns1/chain2"},
      {far_canary_ + "/missing", "scratch/ns1/dangling"},
      {"../../team-b", "scratch/ns1/other"},
      {"..", "scratch/ns1/up"},
      {"ns1", "scratch/mid"},
  };
  for (const auto& [to, at] : links) ASSERT_EQ(symlink(to.c_str(), Fs(at).c_str()), 0) << at;
  const std::pair<const char*, const char*> cases[] = {
      {"scratch/ns1/abs", "scratch/ns1/abs"},
      {"scratch/ns1/abs/vol", "scratch/ns1/abs"},
      {"scratch/ns1/abs/new/deeper", "scratch/ns1/abs"},
      {"scratch/ns1/climb/vol", "scratch/ns1/climb"},
      {"scratch/ns1/climb/new", "scratch/ns1/climb"},
      {"scratch/ns1/chain1/vol", "scratch/ns1/chain1"},
      {"scratch/ns1/dangling", "scratch/ns1/dangling"},
      {"scratch/ns1/dangling/new", "scratch/ns1/dangling"},
      {"scratch/ns1/other", "scratch/ns1/other"},
      {"scratch/ns1/other/secret", "scratch/ns1/other"},
      {"scratch/ns1/up", "scratch/ns1/up"},
      {"scratch/mid/abs", "scratch/mid"},
      {"scratch/mid/new", "scratch/mid"},
  };
  Snapshot before = Take();
  for (const auto& [sub_dir, link] : cases) {
    const std::string target = tmp_.Join("pods/t");
    grpc::Status s = Publish(sub_dir, target, /*group=*/true);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT) << sub_dir << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat("\"", link, "\" is a symlink")))
        << sub_dir;
    EXPECT_FALSE(std::filesystem::exists(target)) << sub_dir << ": the target was left";
    EXPECT_THAT(Changes(before), IsEmpty()) << sub_dir;
  }
  EXPECT_FALSE(std::filesystem::exists(Fs("scratch/ns1/new")));
  EXPECT_FALSE(std::filesystem::exists(Fs("scratch/new")));
  EXPECT_FALSE(std::filesystem::exists(Fs("new")));
}

// Templates filled from PVC names and namespaces the tenant chose: a name
// that is a link is refused; an honest one is made inside scratch/.
TEST_P(TenantE2eTest, SubDirTemplatesFilledByPvcNamesStayInside) {
  ASSERT_EQ(mkdir(Fs("scratch/ns1").c_str(), 0777), 0);
  ASSERT_EQ(symlink("../../team-b", Fs("scratch/ns1/data").c_str()), 0);
  ASSERT_EQ(symlink(far_canary_.c_str(), Fs("scratch/evil-ns").c_str()), 0);
  auto context = [](const std::string& ns, const std::string& name) {
    std::map<std::string, std::string> c =
        LustreContext("scratch/${pvc.metadata.namespace}/${pvc.metadata.name}");
    c["csi.storage.k8s.io/pvc/namespace"] = ns;
    c["csi.storage.k8s.io/pvc/name"] = name;
    return c;
  };
  Snapshot before = Take();
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"ns1", "data"}, {"evil-ns", "vol"}, {"evil-ns", "fresh"}}) {
    grpc::Status s = Publish(context(ns, name), tmp_.Join("pods/t"), true);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT)
        << ns << "/" << name << ": " << s.error_message();
  }
  EXPECT_THAT(Changes(before), IsEmpty());
  grpc::Status honest = Publish(context("ns2", "web"), tmp_.Join("pods/ok"), true);
  ASSERT_TRUE(honest.ok()) << honest.error_message() << Log();
  struct stat made, at;
  ASSERT_EQ(lstat(Fs("scratch/ns2/web").c_str(), &made), 0);
  EXPECT_TRUE(S_ISDIR(made.st_mode));
  ASSERT_EQ(stat(tmp_.Join("pods/ok").c_str(), &at), 0);
  EXPECT_EQ(made.st_ino, at.st_ino) << "the target is not the directory made";
  EXPECT_EQ(made.st_dev, at.st_dev);
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/ok")).ok());
  EXPECT_THAT(Changes(before), IsEmpty());
}

// renameat2(RENAME_EXCHANGE) swaps a directory of the sub-dir's path with a
// link out of the file system, again and again, while publishes (with
// fsGroup, and missing levels to make) run: every publish either fails or
// binds a directory of the file system, and nothing outside changes.
TEST_P(TenantE2eTest, RenameRacesNeverLeadOutside) {
  for (const char* d : {"scratch/race", "scratch/race/vol", "scratch/race/vol/sub"}) {
    ASSERT_EQ(mkdir(Fs(d).c_str(), 0777), 0) << d;
  }
  ASSERT_EQ(symlink(far_canary_.c_str(), Fs("scratch/race/swap").c_str()), 0);
  ASSERT_EQ(symlink("../../canary", Fs("scratch/race-link").c_str()), 0);
  struct stat fs_root;
  ASSERT_EQ(stat(kFs, &fs_root), 0);
  Snapshot before = Take();
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  auto racer = [&](std::string a, std::string b) {
    while (!stop.load()) {
      if (syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) {
        swaps.fetch_add(1);
      }
    }
  };
  std::thread leaf(racer, Fs("scratch/race/vol"), Fs("scratch/race/swap"));
  std::thread middle(racer, Fs("scratch/race"), Fs("scratch/race-link"));
  int published = 0, refused = 0;
  std::vector<std::string> escapes;
  const absl::Time end = absl::Now() + absl::Seconds(3);
  for (int i = 0; i < 400 && absl::Now() < end; ++i) {
    const std::string target = tmp_.Join(absl::StrCat("pods/r", i));
    const std::string sub = i % 2 == 0 ? "scratch/race/vol" : absl::StrCat("scratch/race/vol/n", i);
    grpc::Status s = Publish(sub, target, /*group=*/true);
    if (!s.ok()) {
      ++refused;
      EXPECT_NE(s.error_code(), grpc::INTERNAL) << sub << ": " << s.error_message();
      continue;
    }
    ++published;
    struct stat at;
    if (stat(target.c_str(), &at) != 0 || at.st_dev != fs_root.st_dev) {
      escapes.push_back(absl::StrCat(sub, " bound something off the file system at ", target));
    }
    grpc::Status u = Unpublish(target);
    EXPECT_TRUE(u.ok()) << u.error_message();
  }
  stop = true;
  leaf.join();
  middle.join();
  EXPECT_THAT(escapes, IsEmpty());
  EXPECT_THAT(Changes(before), IsEmpty());
  EXPECT_GT(swaps.load(), 0);
  EXPECT_GT(published + refused, 0);
  RecordProperty("published", published);
  RecordProperty("refused", refused);
  RecordProperty("swaps", swaps.load());
}

// The same races against the controller: CreateVolume makes sub-dirs below
// a component swapped with a link out, DeleteVolume removes them while it is
// swapped; the canary holds directories of the same names with the same
// owner markers, which only an escaping delete could take.
TEST_P(TenantE2eTest, RenameRacesNeverLeadTheControllerOutside) {
  std::vector<std::string> argv = {BinaryPath(), "controller",
                                   "--endpoint=unix://" + tmp_.Join("controller.sock")};
  if (GetParam() == "local") {
    argv.push_back("--local-root=" + std::string(kStandin) + "/servers");
    argv.push_back("--mount-mode=local");
  } else {
    argv.insert(argv.end(),
                {"--mount-mode=lustre", "--mount-helper=" + Runfile("e2e/standin-mount-lustre"),
                 "--mount-namespace=current", "--working-mount-dir=" + tmp_.Join("work")});
  }
  Subprocess controller(argv, tmp_.Join("controller.log"));
  ASSERT_TRUE(WaitForSocket(tmp_.Join("controller.sock"), absl::Seconds(20)).ok())
      << ReadFile(tmp_.Join("controller.log"));
  auto stub = csi::v1::Controller::NewStub(UnixChannel(tmp_.Join("controller.sock")));
  auto create = [&](const std::string& name, std::string* id) {
    csi::v1::CreateVolumeRequest req;
    req.set_name(name);
    *req.add_volume_capabilities() = MountCapability();
    auto& p = *req.mutable_parameters();
    p["mgs-ip-address"] = "10.0.0.4";
    p["fs-name"] = "lustrefs";
    p["sub-dir"] = "scratch/race/${pvc.metadata.name}";
    p["create-sub-dir"] = "true";
    p["sub-dir-on-delete"] = "delete";
    p["csi.storage.k8s.io/pvc/namespace"] = "ns";
    p["csi.storage.k8s.io/pvc/name"] = name;
    csi::v1::CreateVolumeResponse res;
    grpc::Status s = stub->CreateVolume(Context().get(), req, &res);
    if (s.ok()) *id = res.volume().volume_id();
    return s;
  };
  auto remove = [&](const std::string& id) {
    csi::v1::DeleteVolumeRequest req;
    req.set_volume_id(id);
    csi::v1::DeleteVolumeResponse res;
    return stub->DeleteVolume(Context().get(), req, &res);
  };
  ASSERT_EQ(mkdir(Fs("scratch/race").c_str(), 0777), 0);
  ASSERT_EQ(symlink("../../canary", Fs("scratch/race-link").c_str()), 0);
  // Volumes to delete under the race, and their twins in the canary.
  constexpr int kVolumes = 20;
  std::vector<std::string> ids(kVolumes);
  for (int i = 0; i < kVolumes; ++i) {
    const std::string name = absl::StrCat("d", i);
    grpc::Status s = create(name, &ids[i]);
    ASSERT_TRUE(s.ok()) << s.error_message() << ReadFile(tmp_.Join("controller.log"));
    const std::string twin = absl::StrCat(kNearCanary, "/", name);
    ASSERT_EQ(mkdir(twin.c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(twin + "/.lustre-csi-volume",
                          ReadFile(Fs("scratch/race/" + name + "/.lustre-csi-volume")))
                    .ok());
    ASSERT_TRUE(WriteFile(twin + "/precious", "keep").ok());
  }
  Snapshot before = Take();
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  const std::string a = Fs("scratch/race"), b = Fs("scratch/race-link");
  std::thread racer([&] {
    while (!stop.load()) {
      if (syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) {
        swaps.fetch_add(1);
      }
    }
  });
  const absl::Time end = absl::Now() + absl::Seconds(3);
  int calls = 0;
  for (int i = 0; absl::Now() < end && i < 200; ++i, ++calls) {
    std::string id;
    grpc::Status made = create(absl::StrCat("c", i), &id);
    EXPECT_NE(made.error_code(), grpc::INTERNAL) << made.error_message();
    if (i < kVolumes) {
      grpc::Status gone = remove(ids[i]);
      EXPECT_NE(gone.error_code(), grpc::INTERNAL) << gone.error_message();
    }
  }
  stop = true;
  racer.join();
  // Nothing made in, or taken from, the canary; no twin lost its marker.
  EXPECT_THAT(Changes(before), IsEmpty());
  for (int i = 0; i < kVolumes; ++i) {
    EXPECT_EQ(ReadFile(absl::StrCat(kNearCanary, "/d", i, "/precious")), "keep") << i;
  }
  EXPECT_GT(swaps.load(), 0);
  EXPECT_GT(calls, 0);
  controller.Signal(SIGTERM);
  EXPECT_EQ(controller.Wait(absl::Seconds(20)), 0) << ReadFile(tmp_.Join("controller.log"));
}

// What fsGroup walks over: FIFOs, sockets, device nodes, links out, and a
// tree deeper than the walk goes. The publish answers, nothing is opened or
// followed, and nothing outside the volume changes.
TEST_P(TenantE2eTest, FsGroupWalkOverFifosDevicesLinksAndDeepTrees) {
  const std::string vol = Fs("team-a/vol");
  ASSERT_EQ(mkfifo((vol + "/fifo").c_str(), 0666), 0);
  ASSERT_EQ(mknod((vol + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = vol + "/sock";
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::strncpy(addr.sun_path, sock_path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(symlink(far_canary_.c_str(), (vol + "/out").c_str()), 0);
  ASSERT_EQ(symlink((far_canary_ + "/vol/file").c_str(), (vol + "/outfile").c_str()), 0);
  std::string deep = vol;
  for (int i = 0; i < 600; ++i) {
    deep += "/d";
    ASSERT_EQ(mkdir(deep.c_str(), 0700), 0) << i;
  }
  Snapshot before = Take();
  grpc::Status s = Publish("team-a/vol", tmp_.Join("pods/g"), /*group=*/true);
  // Too deep for the walk is an answer too; hanging or reaching out is not.
  EXPECT_TRUE(s.ok() || s.error_code() == grpc::FAILED_PRECONDITION ||
              s.error_code() == grpc::RESOURCE_EXHAUSTED)
      << s.error_code() << " " << s.error_message();
  EXPECT_THAT(Changes(before), IsEmpty());
  struct stat fifo;
  ASSERT_EQ(lstat((vol + "/fifo").c_str(), &fifo), 0);
  EXPECT_TRUE(S_ISFIFO(fifo.st_mode));
  if (s.ok()) EXPECT_TRUE(Unpublish(tmp_.Join("pods/g")).ok());
  close(sock);
  EXPECT_THAT(Changes(before), IsEmpty());
}

// Stats of a path below a target, through a tenant's link: never the
// figures of what the link names.
TEST_P(TenantE2eTest, StatsFollowNoLinkBelowATarget) {
  ASSERT_TRUE(Publish("team-a/vol", tmp_.Join("pods/s")).ok()) << Log();
  ASSERT_EQ(symlink("/", Fs("team-a/vol/root").c_str()), 0);
  csi::v1::NodeGetVolumeStatsRequest req;
  req.set_volume_id("pv-t");
  req.set_volume_path(tmp_.Join("pods/s/root/run"));
  csi::v1::NodeGetVolumeStatsResponse res;
  grpc::Status s = stub_->NodeGetVolumeStats(Context().get(), req, &res);
  EXPECT_EQ(s.error_code(), grpc::NOT_FOUND) << s.error_message() << res.DebugString();
  req.set_volume_path(tmp_.Join("pods/s"));
  EXPECT_TRUE(stub_->NodeGetVolumeStats(Context().get(), req, &res).ok());
  EXPECT_TRUE(Unpublish(tmp_.Join("pods/s")).ok());
}

// The negative control: each kind of escape, planted by hand, is seen.
TEST_P(TenantE2eTest, PlantedEscapesAreCaught) {
  Snapshot before = Take();
  ASSERT_THAT(Changes(before), IsEmpty());
  ASSERT_EQ(mkdir((far_canary_ + "/vol/planted").c_str(), 0755), 0);
  EXPECT_THAT(Changes(before), testing::Not(IsEmpty())) << "a directory made outside";
  ASSERT_EQ(rmdir((far_canary_ + "/vol/planted").c_str()), 0);
  before = Take();
  ASSERT_EQ(chown((std::string(kNearCanary) + "/vol/file").c_str(), -1, kGroup), 0);
  EXPECT_THAT(Changes(before), testing::Not(IsEmpty())) << "a group changed outside";
  before = Take();
  ASSERT_EQ(chmod(Fs("team-b/secret").c_str(), 02770), 0);
  EXPECT_THAT(Changes(before), testing::Not(IsEmpty())) << "another team's mode changed";
  before = Take();
  ASSERT_EQ(mount(Fs("team-b").c_str(), tmp_.Join("pods").c_str(), nullptr, MS_BIND, nullptr), 0);
  EXPECT_THAT(Changes(before), testing::Not(IsEmpty())) << "a mount made";
  ASSERT_EQ(umount2(tmp_.Join("pods").c_str(), 0), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, TenantE2eTest, testing::Values("local", "shared", "per-volume"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

}  // namespace
}  // namespace lustre_csi::e2e
