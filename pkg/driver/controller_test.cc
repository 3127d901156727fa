#include "pkg/driver/controller.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/driver/fake_lfs.h"
#include "pkg/volume/left_behind.h"
#include "pkg/volume/owned_dir.h"
#include "pkg/volume/testing/fake_syscalls.h"
#include "pkg/volume/testing/fault_injector.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;

struct CapacityCase {
  int64_t required, limit;
  absl::StatusCode code;
  int64_t want;
};

class RoundCapacityTest : public testing::TestWithParam<CapacityCase> {};

TEST_P(RoundCapacityTest, Table) {
  absl::StatusOr<int64_t> got = RoundCapacity(GetParam().required, GetParam().limit);
  EXPECT_EQ(got.status().code(), GetParam().code);
  if (got.ok()) EXPECT_EQ(*got, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, RoundCapacityTest,
    testing::Values(CapacityCase{0, 0, absl::StatusCode::kOk, 4 * kTiB},
                    CapacityCase{1, 0, absl::StatusCode::kOk, 4 * kTiB},
                    CapacityCase{4 * kTiB, 0, absl::StatusCode::kOk, 4 * kTiB},
                    CapacityCase{4 * kTiB + 1, 0, absl::StatusCode::kOk, 8 * kTiB},
                    CapacityCase{48 * kTiB, 48 * kTiB, absl::StatusCode::kOk, 48 * kTiB},
                    CapacityCase{0, 8 * kTiB, absl::StatusCode::kOk, 4 * kTiB},
                    // Below the next step, the limit: inside [required, limit].
                    CapacityCase{int64_t{1} << 30, int64_t{2} << 30, absl::StatusCode::kOk,
                                 int64_t{2} << 30},
                    CapacityCase{0, int64_t{1} << 30, absl::StatusCode::kOk, int64_t{1} << 30},
                    CapacityCase{int64_t{10} << 30, int64_t{10} << 30, absl::StatusCode::kOk,
                                 int64_t{10} << 30},
                    CapacityCase{4 * kTiB + 1, 6 * kTiB, absl::StatusCode::kOk, 6 * kTiB},
                    CapacityCase{INT64_MAX, INT64_MAX, absl::StatusCode::kOk, INT64_MAX},
                    CapacityCase{5, 4, absl::StatusCode::kInvalidArgument, 0},
                    CapacityCase{-1, 0, absl::StatusCode::kInvalidArgument, 0},
                    CapacityCase{INT64_MAX, 0, absl::StatusCode::kOutOfRange, 0}));

CreateVolumeArgs Args(std::string name = "pvc-1") {
  CreateVolumeArgs args;
  args.name = std::move(name);
  args.parameters = {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "lustrefs"}};
  return args;
}

TEST(ControllerLogicTest, CreateReturnsCompatibleIdAndContext) {
  ControllerLogic logic;
  CreateVolumeArgs args = Args();
  args.parameters["sub-dir"] = "${pvc.metadata.namespace}/${pod.metadata.name}";
  absl::StatusOr<CreatedVolume> v = logic.Create(args);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->volume_id,
            "pvc-1#lustrefs#10.0.0.4#${pvc.metadata.namespace}/${pod.metadata.name}#f");
  EXPECT_EQ(v->capacity_bytes, 4 * kTiB);
  EXPECT_EQ(v->context.at("mgs-ip-address"), "10.0.0.4");
  EXPECT_EQ(v->context.at("created-by-dynamic-provisioning"), "f");
}

TEST(ControllerLogicTest, SameRequestIsIdempotentConflictIsAlreadyExists) {
  ControllerLogic logic;
  absl::StatusOr<CreatedVolume> first = logic.Create(Args());
  absl::StatusOr<CreatedVolume> again = logic.Create(Args());
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->volume_id, again->volume_id);

  CreateVolumeArgs other = Args();
  other.parameters["fs-name"] = "otherfs";
  EXPECT_EQ(logic.Create(other).status().code(), absl::StatusCode::kAlreadyExists);
  CreateVolumeArgs bigger = Args();
  bigger.required_bytes = 8 * kTiB;
  EXPECT_EQ(logic.Create(bigger).status().code(), absl::StatusCode::kAlreadyExists);

  // After delete, the name is free for a new request.
  ASSERT_TRUE(logic.Delete(first->volume_id).ok());
  EXPECT_TRUE(logic.Create(other).ok());
}

// A file system at a directory of an in-memory file system, for the logic
// above the mount seam.
class DirFileSystems : public FileSystemAccess {
 public:
  DirFileSystems(volume::Syscalls* sys, std::string root) : sys_(sys), root_(std::move(root)) {}
  absl::Status WithFileSystemRoot(const LustreSource&, const FsRootFn& fn) override {
    if (!reachable) return absl::UnavailableError("file system unreachable");
    return fn(*sys_, root_);
  }
  bool reachable = true;

 private:
  volume::Syscalls* const sys_;
  std::string root_;
};

// A controller restart loses the in-memory record; the owner marker of a
// provisioned sub-dir keeps what was asked.
TEST(ControllerLogicTest, ProvisionedVolumesAreKnownAfterARestart) {
  volume::FakeSyscalls sys;
  const std::string root = "/fs";
  ASSERT_TRUE(sys.AddDir(root).ok());
  DirFileSystems file_systems(&sys, root);
  CreateVolumeArgs args = Args("pvc-p");
  args.parameters["sub-dir"] = "volumes/pvc-p";
  args.parameters["create-sub-dir"] = "true";
  args.required_bytes = 10 * kGiB;
  absl::StatusOr<CreatedVolume> first = ControllerLogic(&file_systems).Create(args);
  ASSERT_TRUE(first.ok()) << first.status();

  ControllerLogic restarted(&file_systems);
  absl::StatusOr<CreatedVolume> again = restarted.Create(args);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->volume_id, first->volume_id);
  // Keys are case-insensitive: another spelling is the same request.
  CreateVolumeArgs spelled = args;
  spelled.parameters.erase("fs-name");
  spelled.parameters["FS-Name"] = "lustrefs";
  EXPECT_TRUE(ControllerLogic(&file_systems).Create(spelled).ok());
  CreateVolumeArgs bigger = args;
  bigger.required_bytes = 20 * kGiB;
  EXPECT_EQ(ControllerLogic(&file_systems).Create(bigger).status().code(),
            absl::StatusCode::kAlreadyExists);
  CreateVolumeArgs other = args;
  other.parameters["sub-dir-on-delete"] = "delete";
  EXPECT_EQ(ControllerLogic(&file_systems).Create(other).status().code(),
            absl::StatusCode::kAlreadyExists);

  // Validation: the sub-dir is there; unreachable decides nothing; gone is
  // NOT_FOUND; without the context's create-sub-dir, nothing is looked at.
  EXPECT_TRUE(ControllerLogic(&file_systems).CheckExists(first->volume_id, first->context).ok());
  file_systems.reachable = false;
  EXPECT_TRUE(ControllerLogic(&file_systems).CheckExists(first->volume_id, first->context).ok());
  file_systems.reachable = true;
  ASSERT_TRUE(volume::RemoveTreeBeneath(sys, root, "volumes/pvc-p", 8).ok());
  EXPECT_EQ(ControllerLogic(&file_systems).CheckExists(first->volume_id, first->context).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(ControllerLogic(&file_systems).CheckExists(first->volume_id).ok());
  // An id whose fields no context could hold is not a volume of ours.
  EXPECT_EQ(ControllerLogic(&file_systems).CheckExists("pv#lustrefs#-oremount##f").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ControllerLogic(&file_systems).CheckExists("pv#lustrefs#10.0.0.4#../x#f").code(),
            absl::StatusCode::kNotFound);
}

struct BadCreate {
  std::string name;
  std::map<std::string, std::string> params;
  const char* message;
};

class BadCreateTest : public testing::TestWithParam<BadCreate> {};

TEST_P(BadCreateTest, InvalidArgument) {
  ControllerLogic logic;
  CreateVolumeArgs args;
  args.name = GetParam().name;
  args.parameters = GetParam().params;
  absl::Status s = logic.Create(args).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadCreateTest,
    testing::Values(
        BadCreate{"", {{"mgs-ip-address", "m"}, {"fs-name", "f"}}, "name missing"},
        BadCreate{"a#b", {{"mgs-ip-address", "m"}, {"fs-name", "f"}}, "cannot contain '#'"},
        BadCreate{std::string(300, 'n'), {{"mgs-ip-address", "m"}, {"fs-name", "f"}}, "at most"},
        BadCreate{"v",
                  {{"mgs-ip-address", "m"}, {"fs-name", "f"}, {"sub-dir", "a#b"}},
                  "cannot contain '#'"},
        BadCreate{"v",
                  {{"mgs-ip-address", "m"}, {"fs-name", "f"}, {"sub-dir", "../x"}},
                  "'..' component"},
        BadCreate{"v",
                  {{"mgs-ip-address", "m"}, {"fs-name", "f"}, {"sub-dir", "${nope}"}},
                  "unknown variable"},
        BadCreate{"v", {{"mgs-ip-address", "m"}, {"fs-name", "f"}, {"SkuName", "x"}}, "SkuName"},
        BadCreate{"v", {{"fs-name", "f"}}, "mgs-ip-address must be provided"}));

TEST(ControllerLogicTest, SubDirProvisioningNeedsAFileSystemAccess) {
  ControllerLogic logic;  // no file_systems
  CreateVolumeArgs args = Args();
  args.parameters["create-sub-dir"] = "true";
  args.parameters["sub-dir"] = "vol";
  absl::Status s = logic.Create(args).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("--mount-mode"));
}

TEST(ControllerLogicTest, AccessibilityRequirementsAreMet) {
  ControllerLogic logic;
  CreateVolumeArgs args = Args();
  args.requisite = {{{"topology.kubernetes.io/zone", "z1"}}};
  args.preferred = {{{"topology.kubernetes.io/zone", "z1"}}};
  absl::StatusOr<CreatedVolume> v = logic.Create(args);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->accessible_topology.size(), 1u);
  EXPECT_EQ(v->accessible_topology[0].at("topology.kubernetes.io/zone"), "z1");
}

TEST(ControllerLogicTest, DeleteIsIdempotent) {
  ControllerLogic logic;
  EXPECT_TRUE(logic.Delete("not-ours").ok());
  EXPECT_TRUE(logic.Delete("pvc-9#fs#10.0.0.4##f").ok());
  EXPECT_EQ(logic.Delete("").code(), absl::StatusCode::kInvalidArgument);
}

// A volume the Go driver's dynamic provisioning made is a whole Azure
// Managed Lustre cluster: deleting it must not answer OK and leave the
// cluster running.
TEST(ControllerLogicTest, DeleteOfAProvisionedClusterIsRefusedSayingWhatIsLeft) {
  ControllerLogic logic;
  absl::Status s = logic.Delete("pvc-5#lustrefs#10.1.0.5##t#my-rg");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("cluster pvc-5"));
  EXPECT_THAT(s.message(), HasSubstr("resource group my-rg"));
  EXPECT_THAT(s.message(), HasSubstr("nothing was deleted"));
  // A repeat answers the same.
  EXPECT_EQ(logic.Delete("pvc-5#lustrefs#10.1.0.5##t#my-rg").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ControllerLogicTest, CheckExists) {
  ControllerLogic logic;
  absl::StatusOr<CreatedVolume> v = logic.Create(Args());
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(logic.CheckExists(v->volume_id).ok());
  // A static volume in our format (the file system exists outside us).
  EXPECT_TRUE(logic.CheckExists("static#fs#10.0.0.5").ok());
  EXPECT_EQ(logic.CheckExists("no-such-volume").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(logic.CheckExists("pvc-1#otherfs#10.0.0.4##f").code(), absl::StatusCode::kNotFound);
}

// A file system whose root, once `hang` is set, is reached only after
// `release` is notified: a server that stopped answering.
class HangingFileSystems : public FileSystemAccess {
 public:
  HangingFileSystems(volume::Syscalls* sys, std::string root) : sys_(sys), root_(std::move(root)) {}
  absl::Status WithFileSystemRoot(const LustreSource&, const FsRootFn& fn) override {
    if (hang.load()) {
      entered.fetch_add(1);
      release.WaitForNotification();
    }
    return fn(*sys_, root_);
  }
  std::atomic<bool> hang{false};
  std::atomic<int> entered{0};
  absl::Notification release;

 private:
  volume::Syscalls* const sys_;
  std::string root_;
};

// Controller calls bounded at 1 s, on a file system that can stop
// answering.
class BoundedControllerTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(sys.AddDir("/fs").ok()); }
  static ControllerOptions Bounded() {
    ControllerOptions options;
    options.call_timeout = absl::Seconds(1);
    return options;
  }
  // A volume with a sub-dir the controller makes (volumes/<name>).
  static CreateVolumeArgs Provisioned(const std::string& name) {
    CreateVolumeArgs args = Args(name);
    args.parameters["sub-dir"] = "volumes/" + name;
    args.parameters["create-sub-dir"] = "true";
    return args;
  }
  volume::FakeSyscalls sys;
  HangingFileSystems file_systems{&sys, "/fs"};
  ControllerLogic logic{&file_systems, Bounded()};
};

// A call whose file system does not answer answers UNAVAILABLE within the
// call timeout, saying it is still in progress, and goes on; a retry of the
// same request joins it (UNAVAILABLE at once, no second call into the file
// system), never ABORTED; once the file system answers, the retry gets the
// volume the call made.
TEST_F(BoundedControllerTest, ACallStuckInItsFileSystemIsBoundedAndARetryJoinsIt) {
  CreateVolumeArgs args = Provisioned("pvc-s");
  file_systems.hang = true;

  absl::Time start = absl::Now();
  absl::Status first = logic.Create(args).status();
  EXPECT_GE(absl::Now() - start, absl::Seconds(1));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable) << first;
  EXPECT_THAT(first.message(), HasSubstr("CreateVolume pvc-s"));
  EXPECT_THAT(first.message(), HasSubstr("has not returned since"));
  EXPECT_THAT(first.message(), HasSubstr("still in progress"));

  start = absl::Now();
  absl::Status retry = logic.Create(args).status();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500)) << "waited again";
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable) << retry;
  EXPECT_EQ(file_systems.entered.load(), 1) << "the retry reached the file system again";
  // A different request for the volume meets the one in progress.
  CreateVolumeArgs other = args;
  other.required_bytes = 8 * kTiB;
  EXPECT_EQ(logic.Create(other).status().code(), absl::StatusCode::kAborted);

  file_systems.release.Notify();
  absl::StatusOr<CreatedVolume> made;
  for (int i = 0; i < 100; ++i) {
    made = logic.Create(args);
    if (made.ok()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->volume_id, "pvc-s#lustrefs#10.0.0.4#volumes/pvc-s#f");
  EXPECT_TRUE(sys.Exists("/fs/volumes/pvc-s"));
}

TEST_F(BoundedControllerTest, ADeleteStuckInItsFileSystemIsBoundedAndStopsBeingWaitedFor) {
  CreateVolumeArgs args = Provisioned("pvc-d");
  args.parameters["sub-dir-on-delete"] = "delete";
  absl::StatusOr<CreatedVolume> made = logic.Create(args);
  ASSERT_TRUE(made.ok()) << made.status();
  file_systems.hang = true;

  absl::Status first = logic.Delete(made->volume_id);
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable) << first;
  EXPECT_THAT(first.message(), HasSubstr("DeleteVolume " + made->volume_id));
  absl::Status retry = logic.Delete(made->volume_id);
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable) << retry;
  EXPECT_EQ(file_systems.entered.load(), 1);

  // The process ends: a caller waiting now answers at once.
  absl::Status waiting = absl::UnknownError("not returned");
  std::thread caller([&] { waiting = logic.CheckExists(made->volume_id, made->context); });
  absl::SleepFor(absl::Milliseconds(50));
  logic.StopWaiting();
  caller.join();
  EXPECT_EQ(waiting.code(), absl::StatusCode::kUnavailable) << waiting;
  EXPECT_THAT(waiting.message(), HasSubstr("shutting down"));

  file_systems.release.Notify();
  // What went on in the background finished: the sub-dir is gone.
  for (int i = 0; i < 100 && sys.Exists("/fs/volumes/pvc-d"); ++i) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_FALSE(sys.Exists("/fs/volumes/pvc-d"));
  // The calls that went on in the background use the logic and the fake.
  for (int i = 0; i < 500 && logic.CallsInFlight() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(logic.CallsInFlight(), 0);
}

// A file system whose root's mount helper was killed at its timeout and
// still waits for the servers: the controller's other calls into it answer
// UNAVAILABLE at once, without another helper, until that one has ended;
// other file systems are not held up.
TEST(ControllerLogicTest, ARootMountHelperLeftWaitingHoldsItsFileSystemUp) {
  volume::FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/fs").ok());
  class LeavingFileSystems : public FileSystemAccess {
   public:
    LeavingFileSystems(volume::Syscalls* sys, volume::LeftBehind* left) : sys_(sys), left_(left) {}
    absl::Status WithFileSystemRoot(const LustreSource& source, const FsRootFn& fn) override {
      ++mounts;
      if (source.fs_name == "deadfs") {
        id = left_->Add();
        return volume::WithLeftBehind(
            absl::DeadlineExceededError("mount.lustre: did not finish within 90s, killed"), id);
      }
      return fn(*sys_, "/fs");
    }
    int mounts = 0;
    uint64_t id = 0;

   private:
    volume::Syscalls* const sys_;
    volume::LeftBehind* const left_;
  };
  volume::LeftBehind left;
  LeavingFileSystems file_systems(&sys, &left);
  ControllerOptions options;
  options.left_behind = &left;
  ControllerLogic logic(&file_systems, options);
  auto provisioned = [](const std::string& name, const std::string& fs) {
    CreateVolumeArgs args = Args(name);
    args.parameters["fs-name"] = fs;
    args.parameters["sub-dir"] = "volumes/" + name;
    args.parameters["create-sub-dir"] = "true";
    return args;
  };
  EXPECT_EQ(logic.Create(provisioned("pvc-1", "deadfs")).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  absl::Status held = logic.Create(provisioned("pvc-2", "deadfs")).status();
  EXPECT_EQ(held.code(), absl::StatusCode::kUnavailable) << held;
  EXPECT_THAT(held.message(),
              HasSubstr("10.0.0.4@tcp:/deadfs has not answered the mount at its root"));
  EXPECT_EQ(file_systems.mounts, 1) << "another helper ran";
  EXPECT_TRUE(logic.Create(provisioned("pvc-3", "lustrefs")).ok());

  left.End(file_systems.id);
  EXPECT_EQ(logic.Create(provisioned("pvc-2", "deadfs")).status().code(),
            absl::StatusCode::kDeadlineExceeded)
      << "not mounted again";
  EXPECT_EQ(file_systems.mounts, 3);
}

// ------------------------------------------------ capacity that holds

constexpr int64_t kKiB = 1024;

TEST(QuotaCapacityTest, WholeKiBInsideTheRange) {
  EXPECT_EQ(*QuotaCapacity(10 * kGiB, 0), 10 * kGiB);
  EXPECT_EQ(*QuotaCapacity(10 * kGiB + 1, 0), 10 * kGiB + kKiB);
  EXPECT_EQ(*QuotaCapacity(1, 0), kKiB);
  EXPECT_EQ(*QuotaCapacity(0, 0), 4 * kTiB);
  EXPECT_EQ(*QuotaCapacity(0, 5 * kGiB + 7), 5 * kGiB);
  EXPECT_EQ(*QuotaCapacity(5 * kGiB + 1, 5 * kGiB + kKiB), 5 * kGiB + kKiB);
  EXPECT_EQ(*QuotaCapacity(INT64_MAX - 2000, INT64_MAX), INT64_MAX / kKiB * kKiB);
  EXPECT_EQ(QuotaCapacity(INT64_MAX - 10, INT64_MAX).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(QuotaCapacity(5 * kGiB + 1, 5 * kGiB + 2).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(QuotaCapacity(INT64_MAX, 0).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(QuotaCapacity(5, 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(QuotaCapacity(-1, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

class QuotaControllerTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(sys_.AddDir(kRoot).ok()); }

  ControllerLogic Logic(ProjectIdRange range = {500, 599}) {
    return ControllerLogic(&mode_, {&lfs_, range});
  }

  static CreateVolumeArgs QuotaArgs(const std::string& name, int64_t bytes) {
    CreateVolumeArgs args = Args(name);
    args.parameters["sub-dir"] = "volumes/" + name;
    args.parameters["create-sub-dir"] = "true";
    args.parameters["sub-dir-on-delete"] = "delete";
    args.parameters["sub-dir-quota"] = "true";
    args.required_bytes = bytes;
    return args;
  }

  std::optional<uint32_t> MarkedProject(const std::string& name) {
    absl::StatusOr<std::optional<volume::DirOwner>> owner =
        volume::ReadDirOwner(sys_, kRoot, "volumes/" + name);
    if (!owner.ok() || !owner->has_value()) return std::nullopt;
    return (*owner)->project;
  }

  bool WriteData(const std::string& path) { return sys_.AddFile(path, 0644, "data").ok(); }

  static constexpr char kRoot[] = "/fs";
  volume::FakeSyscalls sys_;
  DirFileSystems mode_{&sys_, kRoot};
  FakeLustreTool lfs_;
};

TEST_F(QuotaControllerTest, CreateGivesTheSubDirAProjectALimitAndALayout) {
  CreateVolumeArgs args = QuotaArgs("pvc-q", 10 * kGiB + 1);
  args.parameters["sub-dir-inode-limit"] = "100000";
  args.parameters["sub-dir-stripe-count"] = "4";
  args.parameters["sub-dir-stripe-size"] = "1M";
  args.parameters["sub-dir-stripe-pool"] = "flash";
  absl::StatusOr<CreatedVolume> v = Logic().Create(args);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->capacity_bytes, 10 * kGiB + kKiB);  // whole KiB, not 4 TiB steps
  std::optional<uint32_t> project = MarkedProject("pvc-q");
  ASSERT_TRUE(project.has_value());
  EXPECT_GE(*project, 500u);
  EXPECT_LE(*project, 599u);
  EXPECT_EQ(lfs_.ProjectOf("/fs/volumes/pvc-q"), *project);
  QuotaLimits limits = lfs_.LimitsOf(*project);
  EXPECT_EQ(limits.block_kib, static_cast<uint64_t>((10 * kGiB + kKiB) / kKiB));
  EXPECT_EQ(limits.inodes, 100000u);
  EXPECT_EQ(lfs_.LayoutOf("/fs/volumes/pvc-q"), (StripeLayout{4, 1 << 20, "flash"}));
  // The layout before the project, the quota on the file system root.
  EXPECT_THAT(
      lfs_.Calls(),
      testing::ElementsAre(
          "setstripe /fs/volumes/pvc-q", absl::StrCat("project ", *project, " /fs/volumes/pvc-q"),
          absl::StrCat("setquota ", *project, " ", limits.block_kib, " 100000 /fs")));
  // A restarted controller answers the same request the same, same project.
  absl::StatusOr<CreatedVolume> again = Logic().Create(args);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->volume_id, v->volume_id);
  EXPECT_EQ(again->capacity_bytes, v->capacity_bytes);
  EXPECT_EQ(MarkedProject("pvc-q"), project);
  EXPECT_EQ(lfs_.LimitedProjects(), std::vector<uint32_t>{*project});
  // Another stripe size is another request.
  CreateVolumeArgs other = args;
  other.parameters["sub-dir-stripe-size"] = "2M";
  EXPECT_EQ(Logic().Create(other).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(QuotaControllerTest, ExpandRaisesTheLimitNeverLowersIt) {
  absl::StatusOr<CreatedVolume> v = Logic().Create(QuotaArgs("pvc-e", 10 * kGiB));
  ASSERT_TRUE(v.ok()) << v.status();
  uint32_t project = *MarkedProject("pvc-e");
  absl::StatusOr<ExpandedVolume> grown = Logic().Expand(v->volume_id, 11 * kGiB, 0);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->capacity_bytes, 11 * kGiB);
  EXPECT_EQ(lfs_.LimitsOf(project).block_kib, static_cast<uint64_t>(11 * kGiB / kKiB));
  // Already that large (a retry, or a smaller ask): OK with its size, no call.
  size_t calls = lfs_.Calls().size();
  EXPECT_EQ(Logic().Expand(v->volume_id, 11 * kGiB, 0)->capacity_bytes, 11 * kGiB);
  EXPECT_EQ(Logic().Expand(v->volume_id, 5 * kGiB, 0)->capacity_bytes, 11 * kGiB);
  EXPECT_EQ(lfs_.Calls().size(), calls);
  EXPECT_EQ(lfs_.LimitsOf(project).block_kib, static_cast<uint64_t>(11 * kGiB / kKiB));
  // A repeated CreateVolume after the expansion does not shrink it.
  ASSERT_TRUE(Logic().Create(QuotaArgs("pvc-e", 10 * kGiB)).ok());
  EXPECT_EQ(lfs_.LimitsOf(project).block_kib, static_cast<uint64_t>(11 * kGiB / kKiB));

  // The spec's codes.
  EXPECT_EQ(Logic().Expand("", kGiB, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Logic().Expand(v->volume_id, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Logic().Expand(v->volume_id, 2 * kGiB, kGiB).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Logic().Expand(v->volume_id, 20 * kGiB + 1, 20 * kGiB + 2).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Logic().Expand("not-ours", kGiB, 0).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(Logic().Delete(v->volume_id).ok());
  EXPECT_EQ(Logic().Expand(v->volume_id, 12 * kGiB, 0).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(QuotaControllerTest, AVolumeWithoutAQuotaHasOnlyTheSizeItIsGiven) {
  CreateVolumeArgs args = QuotaArgs("pvc-plain", 10 * kGiB);
  args.parameters.erase("sub-dir-quota");
  absl::StatusOr<CreatedVolume> v = Logic().Create(args);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->capacity_bytes, 4 * kTiB);
  absl::StatusOr<ExpandedVolume> grown = Logic().Expand(v->volume_id, 11 * kGiB, 0);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->capacity_bytes, 11 * kGiB);
  EXPECT_EQ(Logic().Expand("static#lustrefs#10.0.0.4##f", 0, 3 * kGiB)->capacity_bytes, 3 * kGiB);
  EXPECT_TRUE(lfs_.Calls().empty());
}

TEST_F(QuotaControllerTest, DeleteClearsTheQuotaAndFreesTheIdRetainKeepsThem) {
  absl::StatusOr<CreatedVolume> del = Logic({700, 700}).Create(QuotaArgs("pvc-d", kGiB));
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_EQ(MarkedProject("pvc-d"), 700u);
  // The one ID is taken.
  EXPECT_EQ(Logic({700, 700}).Create(QuotaArgs("pvc-x", kGiB)).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(sys_.Stat("/fs/volumes/pvc-x").ok()) << "a refused create left its sub-dir";
  ASSERT_TRUE(Logic({700, 700}).Delete(del->volume_id).ok());
  EXPECT_FALSE(sys_.Stat("/fs/volumes/pvc-d").ok());
  EXPECT_TRUE(lfs_.LimitedProjects().empty());
  EXPECT_TRUE(Logic({700, 700}).Delete(del->volume_id).ok());  // idempotent
  absl::StatusOr<CreatedVolume> next = Logic({700, 700}).Create(QuotaArgs("pvc-x", kGiB));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(MarkedProject("pvc-x"), 700u);

  // Retained: the files keep the ID, so the ID and its limit stay.
  CreateVolumeArgs keep = QuotaArgs("pvc-k", kGiB);
  keep.parameters["sub-dir-on-delete"] = "retain";
  absl::StatusOr<CreatedVolume> kept = Logic({800, 800}).Create(keep);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(Logic({800, 800}).Delete(kept->volume_id).ok());
  EXPECT_TRUE(sys_.Stat("/fs/volumes/pvc-k").ok());
  EXPECT_EQ(lfs_.LimitsOf(800).block_kib, static_cast<uint64_t>(kGiB / kKiB));
  EXPECT_EQ(Logic({800, 800}).Create(QuotaArgs("pvc-y", kGiB)).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// The host's lfs, counting the calls made outside a marking isolation.
class LfsCallsOutside : public LustreTool {
 public:
  explicit LfsCallsOutside(LustreTool* lfs) : lfs_(lfs) {}
  absl::Status SetProject(const std::string& dir, uint32_t id) override {
    Count();
    return lfs_->SetProject(dir, id);
  }
  absl::Status SetProjectQuota(const std::string& mount, uint32_t id,
                               const QuotaLimits& limits) override {
    Count();
    return lfs_->SetProjectQuota(mount, id, limits);
  }
  absl::Status SetDefaultLayout(const std::string& dir, const StripeLayout& layout) override {
    Count();
    return lfs_->SetDefaultLayout(dir, layout);
  }
  int calls = 0;
  int outside = 0;

 private:
  void Count() {
    ++calls;
    if (!volume::InMarkedIsolation()) ++outside;
  }
  LustreTool* const lfs_;
};

// What the controller does in a file system's root (the sub-dir, its
// project and quota, the claims; lfs) runs in the isolation given: where
// the servers stop answering, a task waits there, not a thread of the
// process, which can then still exit.
TEST_F(QuotaControllerTest, TheWorkInAFileSystemRunsInTheIsolation) {
  volume::MarkingIsolation isolation;
  LfsCallsOutside lfs(&lfs_);
  ControllerLogic logic(&mode_, {&lfs, {500, 599}, &isolation});
  CreateVolumeArgs args = QuotaArgs("pvc-i", 10 * kGiB);
  args.parameters["sub-dir-stripe-count"] = "4";
  sys_.ResetCalls();
  absl::StatusOr<CreatedVolume> v = logic.Create(args);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(logic.Expand(v->volume_id, 20 * kGiB, 0).ok());
  ASSERT_TRUE(logic.CheckExists(v->volume_id, v->context).ok());
  ASSERT_TRUE(logic.Delete(v->volume_id).ok());
  EXPECT_EQ(isolation.runs(), 4);
  int calls = 0;
  for (int i = 0; i < volume::kNumSyscallOps; ++i) {
    const auto op = static_cast<volume::SyscallOp>(i);
    calls += sys_.CallCount(op);
    EXPECT_EQ(sys_.IsolatedCallCount(op), sys_.CallCount(op)) << volume::SyscallOpName(op);
  }
  EXPECT_GT(calls, 10);
  EXPECT_GE(lfs.calls, 4);  // setstripe, project, two setquota, the clear
  EXPECT_EQ(lfs.outside, 0);
}

// Nothing half-done: a failure after the directory exists takes it and its
// claim back; the tool's code and words reach the caller.
TEST_F(QuotaControllerTest, AFailedToolCallTakesTheSubDirAndItsIdBack) {
  lfs_.FailOp("setquota",
              absl::FailedPreconditionError("lfs setquota: Operation not permitted (root squash)"));
  absl::Status s = Logic({900, 900}).Create(QuotaArgs("pvc-f", kGiB)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("root squash"));
  EXPECT_FALSE(sys_.Stat("/fs/volumes/pvc-f").ok());
  lfs_.FailOp("setquota", absl::OkStatus());
  // The ID was given back: another volume gets it.
  absl::StatusOr<CreatedVolume> other = Logic({900, 900}).Create(QuotaArgs("pvc-g", kGiB));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(MarkedProject("pvc-g"), 900u);

  // A bad pool: the layout fails first, nothing is left.
  CreateVolumeArgs pool = QuotaArgs("pvc-p", kGiB);
  pool.parameters["sub-dir-stripe-pool"] = "nope";
  lfs_.FailOp("setstripe", absl::InvalidArgumentError("pool 'lustrefs.nope' does not exist"));
  EXPECT_EQ(Logic().Create(pool).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(sys_.Stat("/fs/volumes/pvc-p").ok());
}

TEST_F(QuotaControllerTest, AFailedClearIsFinishedByTheRetryOfDelete) {
  absl::StatusOr<CreatedVolume> v = Logic({600, 600}).Create(QuotaArgs("pvc-r", kGiB));
  ASSERT_TRUE(v.ok()) << v.status();
  lfs_.FailOp("setquota", absl::UnavailableError("lfs setquota: Connection timed out"));
  EXPECT_EQ(Logic({600, 600}).Delete(v->volume_id).code(), absl::StatusCode::kUnavailable);
  lfs_.FailOp("setquota", absl::OkStatus());
  // The directory went first; the retry finds the project by its claim.
  EXPECT_FALSE(sys_.Stat("/fs/volumes/pvc-r").ok());
  ASSERT_TRUE(Logic({600, 600}).Delete(v->volume_id).ok());
  EXPECT_TRUE(lfs_.LimitedProjects().empty());
  EXPECT_TRUE(Logic({600, 600}).Create(QuotaArgs("pvc-s", kGiB)).ok());
}

// A call that found the directory made (a retry, or a twin call on another
// controller that made it and answered OK) never takes it back when its own
// tool calls fail: only what a call made is undone.
TEST_F(QuotaControllerTest, AFailureOfACallThatFoundTheVolumeTakesNothingBack) {
  absl::StatusOr<CreatedVolume> v = Logic({300, 300}).Create(QuotaArgs("pvc-t", kGiB));
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(WriteData("/fs/volumes/pvc-t/data"));
  lfs_.FailOp("setquota", absl::FailedPreconditionError("Operation not permitted"));
  EXPECT_EQ(Logic({300, 300}).Create(QuotaArgs("pvc-t", kGiB)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  lfs_.FailOp("setquota", absl::OkStatus());
  EXPECT_TRUE(sys_.Stat("/fs/volumes/pvc-t/data").ok()) << "the volume's data went";
  EXPECT_EQ(MarkedProject("pvc-t"), 300u);
  EXPECT_EQ(Logic({300, 300}).Create(QuotaArgs("pvc-u", kGiB)).status().code(),
            absl::StatusCode::kResourceExhausted)
      << "the volume's ID was given away";
}

// The marker is in the volume's own directory, where a pod may write: the
// project a delete clears and an expansion raises is the one the claims say
// the volume holds, never the marker's.
TEST_F(QuotaControllerTest, AForgedMarkerCannotReachAnotherVolumesProject) {
  absl::StatusOr<CreatedVolume> victim = Logic({400, 401}).Create(QuotaArgs("pvc-v", kGiB));
  absl::StatusOr<CreatedVolume> tenant = Logic({400, 401}).Create(QuotaArgs("pvc-w", kGiB));
  ASSERT_TRUE(victim.ok() && tenant.ok());
  uint32_t victim_id = *MarkedProject("pvc-v");
  uint32_t tenant_id = *MarkedProject("pvc-w");
  ASSERT_NE(victim_id, tenant_id);
  // The tenant rewrites its marker to name the victim's project.
  const std::string marker = std::string("volumes/pvc-w/") + volume::kOwnerMarkerName;
  ASSERT_TRUE(volume::RemoveTreeBeneath(sys_, kRoot, "volumes/pvc-w", 4).ok());
  ASSERT_TRUE(sys_.AddDir("/fs/volumes/pvc-w").ok());
  ASSERT_TRUE(
      sys_.AddFile("/fs/" + marker, 0444,
                   absl::StrCat("volume=pvc-w\non-delete=delete\nproject=", victim_id, "\n"))
          .ok());
  EXPECT_EQ(Logic({400, 401}).Expand(tenant->volume_id, 5 * kGiB, 0)->capacity_bytes, 5 * kGiB);
  EXPECT_EQ(lfs_.LimitsOf(victim_id).block_kib, static_cast<uint64_t>(kGiB / kKiB));
  EXPECT_EQ(lfs_.LimitsOf(tenant_id).block_kib, static_cast<uint64_t>(5 * kGiB / kKiB));
  ASSERT_TRUE(Logic({400, 401}).Delete(tenant->volume_id).ok());
  EXPECT_EQ(lfs_.LimitsOf(victim_id).block_kib, static_cast<uint64_t>(kGiB / kKiB))
      << "the victim's quota was cleared";
  EXPECT_EQ(lfs_.LimitsOf(tenant_id).block_kib, 0u);
  EXPECT_EQ(MarkedProject("pvc-v"), victim_id);
}

TEST_F(QuotaControllerTest, WithoutTheHostsLfsQuotaAndLayoutAreAPrecondition) {
  ControllerLogic no_lfs(&mode_);
  absl::Status s = no_lfs.Create(QuotaArgs("pvc-n", kGiB)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("lfs"));
  EXPECT_FALSE(sys_.Stat("/fs/volumes/pvc-n").ok());
}

}  // namespace
}  // namespace lustre_csi::driver
