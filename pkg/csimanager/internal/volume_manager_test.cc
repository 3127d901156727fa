#include "pkg/csimanager/internal/volume_manager.h"

#include <functional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/testing/failing_store.h"
#include "pkg/csimanager/testing/fake_node.h"
#include "pkg/csimanager/testing/fake_plugin.h"
#include "pkg/csimanager/testing/test_util.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kPlugin[] = "fake.csi.test";
constexpr char kRoot[] = "/csi/fake.csi.test";
constexpr char kRwUsage[] = "rw-file-system-multi-node-multi-writer";

VolumeUsage RwUsage() {
  VolumeUsage usage;
  usage.attachment_mode = AttachmentMode::kFileSystem;
  usage.access_mode = AccessMode::kMultiNodeMultiWriter;
  usage.fs_type = "lustre";
  usage.mount_flags = {"noatime", "flock"};
  return usage;
}

VolumeUsage RoUsage() {
  VolumeUsage usage = RwUsage();
  usage.read_only = true;
  usage.access_mode = AccessMode::kMultiNodeReaderOnly;
  return usage;
}

MountRequest Mount(const std::string& alloc, const std::string& volume = "vol-1",
                   VolumeUsage usage = RwUsage()) {
  MountRequest request;
  request.namespace_ = "default";
  request.volume_id = volume;
  request.remote_id = "remote-" + volume;
  request.alloc_id = alloc;
  request.usage = usage;
  request.publish_context = {{"device", "/dev/x"}};
  request.volume_context = {{"fs-name", "lustrefs"}};
  request.secrets = {{"token", "s3cret"}};
  return request;
}

UnmountRequest Unmount(const std::string& alloc, const std::string& volume = "vol-1",
                       VolumeUsage usage = RwUsage()) {
  UnmountRequest request;
  request.namespace_ = "default";
  request.volume_id = volume;
  request.remote_id = "remote-" + volume;
  request.alloc_id = alloc;
  request.usage = usage;
  return request;
}

std::string Staging(const std::string& volume = "vol-1", const std::string& usage = kRwUsage) {
  return absl::StrCat(kRoot, "/staging/default/", volume, "/", usage);
}

std::string Target(const std::string& alloc, const std::string& volume = "vol-1",
                   const std::string& usage = kRwUsage) {
  return absl::StrCat(kRoot, "/per-alloc/", alloc, "/", volume, "/", usage);
}

class VolumeManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.SetAutoAdvance(true);
    OpenStore();
  }

  void OpenStore() {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(dir_.Sub("state.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    faults_ = std::make_unique<fakes::FailingStore>(store_.get());
  }

  // Starts the fake plugin and an instance manager for it (not fingerprinted
  // yet: the volume manager fingerprints on first use).
  void StartPlugin(bool stage_unstage, bool stage_mounts = true) {
    instance_.reset();
    plugin_.reset();
    fakes::FakePluginConfig config;
    config.name = kPlugin;
    config.stage_unstage = stage_unstage;
    config.stage_mounts = stage_mounts;
    config.node_id = "node-7";
    plugin_ = fakes::FakePlugin::Start({dir_.Sub("csi.sock")}, config, &mounts_);
    PluginRecord record;
    record.id = StaticPluginId(PluginType::kNode, kPlugin);
    record.name = kPlugin;
    record.type = PluginType::kNode;
    record.endpoint = dir_.Sub("csi.sock");
    instance_ = std::make_shared<InstanceManager>(record, DialingClientFactory(), &clock_,
                                                  InstanceOptions());
  }

  std::unique_ptr<VolumeManager> NewManager(RetryPolicy retry = RetryPolicy()) {
    VolumeManagerOptions options;
    options.root = kRoot;
    options.retry = retry;
    auto manager = std::make_unique<VolumeManager>(
        kPlugin, options, [this] { return instance_; }, faults_.get(), mounts_.inspector(), &clock_,
        &cancel_);
    absl::StatusOr<RestoreReport> report = manager->Restore();
    EXPECT_TRUE(report.ok()) << report.status();
    if (report.ok()) last_report_ = *report;
    return manager;
  }

  // Simulates a manager restart: new store handle, new volume manager.
  std::unique_ptr<VolumeManager> Restart(std::unique_ptr<VolumeManager> old) {
    old.reset();
    faults_.reset();
    store_.reset();
    OpenStore();
    return NewManager();
  }

  std::vector<Claim> StoredClaims() { return *store_->ListClaims(); }
  std::vector<StagingRecord> StoredStagings() { return *store_->ListStagings(); }

  // The volume calls the plugin received, in order ("NodeStageVolume <path>").
  std::vector<std::string> VolumeCalls() {
    std::vector<std::string> out;
    for (const std::string& entry : plugin_->Log()) {
      if (absl::StartsWith(entry, "NodeStage") || absl::StartsWith(entry, "NodeUnstage") ||
          absl::StartsWith(entry, "NodePublish") || absl::StartsWith(entry, "NodeUnpublish")) {
        out.push_back(entry);
      }
    }
    return out;
  }

  fakes::TempDir dir_;
  base::FakeClock clock_;
  base::CancelToken cancel_;
  fakes::FakeNode mounts_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<fakes::FailingStore> faults_;  // what the manager writes through
  std::unique_ptr<fakes::FakePlugin> plugin_;
  std::shared_ptr<InstanceManager> instance_;
  RestoreReport last_report_;
};

struct PathCase {
  std::string ns, volume, alloc, usage, staging, target;
};

class PathLayoutTest : public ::testing::TestWithParam<PathCase> {};

TEST_P(PathLayoutTest, FollowsTheDesign) {
  const PathCase& c = GetParam();
  VolumeManagerOptions options;
  options.root = "/var/lib/csi/p";
  VolumeManager manager("p", options, nullptr, nullptr, nullptr, base::RealClock(), nullptr);
  EXPECT_EQ(*manager.StagingPath(c.ns, c.volume, c.usage), c.staging);
  EXPECT_EQ(*manager.TargetPath(c.alloc, c.volume, c.usage), c.target);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PathLayoutTest,
    ::testing::Values(
        PathCase{"default", "vol-1", "a1", kRwUsage,
                 "/var/lib/csi/p/staging/default/vol-1/rw-file-system-multi-node-multi-writer",
                 "/var/lib/csi/p/per-alloc/a1/vol-1/rw-file-system-multi-node-multi-writer"},
        PathCase{"prod", "scratch", "6b1d9e3c-0000-4000-8000-000000000001",
                 "ro-block-device-single-node-reader-only",
                 "/var/lib/csi/p/staging/prod/scratch/ro-block-device-single-node-reader-only",
                 "/var/lib/csi/p/per-alloc/6b1d9e3c-0000-4000-8000-000000000001/scratch/"
                 "ro-block-device-single-node-reader-only"},
        PathCase{"../etc", "a/b", "..", "rw-x", "/var/lib/csi/p/staging/..%2Fetc/a%2Fb/rw-x",
                 "/var/lib/csi/p/per-alloc/%2E%2E/a%2Fb/rw-x"},
        PathCase{"ns", "vol#fs#10.0.0.4", "a", "rw-x",
                 "/var/lib/csi/p/staging/ns/vol%23fs%2310.0.0.4/rw-x",
                 "/var/lib/csi/p/per-alloc/a/vol%23fs%2310.0.0.4/rw-x"},
        // Only the POSIX portable filename set stays as it is: the paths go
        // to other vendors' plugins.
        PathCase{"ns", "vol[0];$(x)", "a b", "rw-x",
                 "/var/lib/csi/p/staging/ns/vol%5B0%5D%3B%24%28x%29/rw-x",
                 "/var/lib/csi/p/per-alloc/a%20b/vol%5B0%5D%3B%24%28x%29/rw-x"},
        PathCase{"ns", "50%~", "\n", "rw-x", "/var/lib/csi/p/staging/ns/50%25%7E/rw-x",
                 "/var/lib/csi/p/per-alloc/%0A/50%25%7E/rw-x"}));

TEST(PathLayoutTest, EmptyIdsAreRejected) {
  VolumeManagerOptions options;
  options.root = "/r";
  VolumeManager manager("p", options, nullptr, nullptr, nullptr, base::RealClock(), nullptr);
  EXPECT_EQ(manager.StagingPath("", "v", "u").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager.TargetPath("", "v", "u").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager.TargetPath("a", "", "u").status().code(), absl::StatusCode::kInvalidArgument);
  // Too long to escape reversibly.
  EXPECT_EQ(manager.TargetPath(std::string(256, 'a'), "v", "u").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager.StagingPath("ns", std::string(86, '/'), "u").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Claims and stages recorded under another layout (an earlier mount root,
// say) keep their paths: a new allocation of the same volume publishes from
// the recorded staging path, no second stage is made, and unmounts go where
// the claims say.
TEST_F(VolumeManagerTest, PathsRecordedUnderAnotherLayoutKeepWorking) {
  StartPlugin(/*stage_unstage=*/true);
  const std::string volume = "pvc-1#lustrefs#10.0.0.4";
  const std::string old_staging = "/csi/old-layout/staging/pvc-1";
  const std::string old_target = "/csi/old-layout/per-alloc/a1/pvc-1";
  StagingRecord record;
  record.plugin = kPlugin;
  record.path = old_staging;
  record.namespace_ = "default";
  record.volume_id = volume;
  record.remote_id = "remote-" + volume;
  record.usage = kRwUsage;
  record.state = StagingState::kStaged;
  ASSERT_TRUE(store_->PutStaging(record).ok());
  Claim claim;
  claim.plugin = kPlugin;
  claim.namespace_ = "default";
  claim.volume_id = volume;
  claim.remote_id = "remote-" + volume;
  claim.alloc_id = "a1";
  claim.usage = RwUsage();
  claim.mount = {old_staging, old_target, true};
  claim.state = ClaimState::kMounted;
  ASSERT_TRUE(store_->PutClaim(claim).ok());
  mounts_.SetMounted(old_staging, true);
  mounts_.SetMounted(old_target, true);
  auto manager = NewManager();
  EXPECT_EQ(last_report_.mounted, 1);

  absl::StatusOr<MountInfo> again = manager->MountVolume(Mount("a1", volume));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->target, old_target);
  absl::StatusOr<MountInfo> second = manager->MountVolume(Mount("a2", volume));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->source, old_staging);
  EXPECT_EQ(second->target, Target("a2", "pvc-1%23lustrefs%2310.0.0.4"));
  EXPECT_EQ(manager->UsageCount("default", volume, kRwUsage), 2);

  ASSERT_TRUE(manager->UnmountVolume(Unmount("a1", volume)).ok());
  ASSERT_TRUE(manager->UnmountVolume(Unmount("a2", volume)).ok());
  const std::string a2 = Target("a2", "pvc-1%23lustrefs%2310.0.0.4");
  EXPECT_THAT(VolumeCalls(), ElementsAre(absl::StrCat("NodePublishVolume ", a2),
                                         absl::StrCat("NodeUnpublishVolume ", old_target),
                                         absl::StrCat("NodeUnpublishVolume ", a2),
                                         absl::StrCat("NodeUnstageVolume ", old_staging)));
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(StoredStagings(), IsEmpty());
}

// Regression: an unmount without a claim computed the staging path and so
// missed a stage recorded under another layout, which then was never undone.
TEST_F(VolumeManagerTest, AClaimlessStageUnderAnotherLayoutIsUnstagedByTheNextUnmount) {
  StartPlugin(/*stage_unstage=*/true);
  const std::string old_staging = "/csi/old-layout/staging/vol-1";
  StagingRecord record;
  record.plugin = kPlugin;
  record.path = old_staging;
  record.namespace_ = "default";
  record.volume_id = "vol-1";
  record.remote_id = "remote-vol-1";
  record.usage = kRwUsage;
  record.state = StagingState::kStaged;
  ASSERT_TRUE(store_->PutStaging(record).ok());
  mounts_.SetMounted(old_staging, true);
  auto manager = NewManager();
  absl::StatusOr<UnmountResult> result = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(VolumeCalls(), ElementsAre(absl::StrCat("NodeUnstageVolume ", old_staging)));
  EXPECT_THAT(StoredStagings(), IsEmpty());
}

TEST_F(VolumeManagerTest, WithoutStagingOnlyPublishes) {
  StartPlugin(/*stage_unstage=*/false);
  auto manager = NewManager();
  absl::StatusOr<MountInfo> info = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->target, Target("a1"));
  EXPECT_EQ(info->source, "");
  EXPECT_FALSE(info->staged);
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 0);
  ASSERT_EQ(plugin_->PublishRequests().size(), 1u);
  const csi::v1::NodePublishVolumeRequest publish = plugin_->PublishRequests()[0];
  EXPECT_EQ(publish.volume_id(), "remote-vol-1");
  EXPECT_EQ(publish.staging_target_path(), "");
  EXPECT_FALSE(publish.readonly());
  EXPECT_EQ(publish.volume_capability().mount().fs_type(), "lustre");
  EXPECT_THAT(publish.volume_capability().mount().mount_flags(), ElementsAre("noatime", "flock"));
  EXPECT_EQ(publish.volume_capability().access_mode().mode(),
            csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
  EXPECT_EQ(publish.publish_context().at("device"), "/dev/x");
  EXPECT_EQ(publish.volume_context().at("fs-name"), "lustrefs");
  EXPECT_EQ(publish.secrets().at("token"), "s3cret");
  EXPECT_TRUE(mounts_.Exists(absl::StrCat(kRoot, "/per-alloc/a1/vol-1")));

  std::vector<Claim> stored = StoredClaims();
  ASSERT_THAT(stored, SizeIs(1));
  EXPECT_EQ(stored[0].state, ClaimState::kMounted);
  EXPECT_EQ(stored[0].mount, *info);
  EXPECT_EQ(stored[0].created_at, clock_.Now());

  absl::StatusOr<UnmountResult> result = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->unstaged);
  EXPECT_EQ(plugin_->Calls("NodeUnstageVolume"), 0);
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  // Empty per-alloc directories are gone; nothing above per-alloc is touched.
  EXPECT_FALSE(mounts_.Exists(absl::StrCat(kRoot, "/per-alloc/a1")));
}

TEST_F(VolumeManagerTest, StagesOnceAndUnstagesWhenTheLastUserLeaves) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  absl::StatusOr<MountInfo> a1 = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(a1.ok()) << a1.status();
  absl::StatusOr<MountInfo> a2 = manager->MountVolume(Mount("a2"));
  ASSERT_TRUE(a2.ok()) << a2.status();
  EXPECT_EQ(a1->source, Staging());
  EXPECT_TRUE(a1->staged);
  EXPECT_EQ(a2->source, Staging());
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 1);
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 2);
  EXPECT_EQ(plugin_->PublishRequests()[1].staging_target_path(), Staging());
  EXPECT_EQ(plugin_->StageRequests()[0].secrets().at("token"), "s3cret");
  EXPECT_EQ(manager->UsageCount("default", "vol-1", kRwUsage), 2);

  absl::StatusOr<UnmountResult> first = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->unstaged);
  EXPECT_EQ(plugin_->Calls("NodeUnstageVolume"), 0);
  EXPECT_EQ(manager->UsageCount("default", "vol-1", kRwUsage), 1);
  EXPECT_TRUE(mounts_.mounts().count(Staging()));

  absl::StatusOr<UnmountResult> last = manager->UnmountVolume(Unmount("a2"));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->unstaged);
  EXPECT_EQ(plugin_->Calls("NodeUnstageVolume"), 1);
  EXPECT_EQ(manager->UsageCount("default", "vol-1", kRwUsage), 0);
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_FALSE(mounts_.Exists(Staging()));
  EXPECT_THAT(plugin_->Log(),
              ::testing::IsSupersetOf(
                  {"NodeStageVolume " + Staging(), "NodePublishVolume " + Target("a1"),
                   "NodePublishVolume " + Target("a2"), "NodeUnpublishVolume " + Target("a1"),
                   "NodeUnpublishVolume " + Target("a2"), "NodeUnstageVolume " + Staging()}));
}

// The store refuses the first write of a mount: nothing is asked of the
// plugin, nothing is mounted, nothing is remembered.
TEST_F(VolumeManagerTest, MountThatCannotBeRecordedDoesNothing) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  faults_->FailNext(fakes::StoreOp::kPutClaim, absl::UnavailableError("disk full"));
  absl::StatusOr<MountInfo> info = manager->MountVolume(Mount("a1"));
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("recording"));
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("disk full"));
  EXPECT_THAT(VolumeCalls(), IsEmpty());
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_EQ(manager->UsageCount("default", "vol-1", kRwUsage), 0);
}

// The staging record cannot be written: no stage is attempted and the claim
// written before it is taken back.
TEST_F(VolumeManagerTest, StageThatCannotBeRecordedIsNotAttempted) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  faults_->FailNext(fakes::StoreOp::kPutStaging, absl::UnavailableError("disk full"));
  absl::StatusOr<MountInfo> info = manager->MountVolume(Mount("a1"));
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(VolumeCalls(), IsEmpty());
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(StoredStagings(), IsEmpty());
  // The next try goes through.
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 1);
}

// Staged and published, but "mounted" cannot be written: the call fails, the
// book still says "mounting", and a retry finishes it without staging or
// publishing again.
TEST_F(VolumeManagerTest, MountedButNotRecordedIsFinishedByARetry) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  faults_->FailNext(fakes::StoreOp::kPutClaim, absl::UnavailableError("disk full"),
                    /*skip=*/1);
  absl::StatusOr<MountInfo> first = manager->MountVolume(Mount("a1"));
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(first.status().message()), HasSubstr("recording"));
  ASSERT_THAT(StoredClaims(), SizeIs(1));
  EXPECT_EQ(StoredClaims()[0].state, ClaimState::kMounting);

  absl::StatusOr<MountInfo> retry = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_EQ(retry->target, Target("a1"));
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 1);
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 1);
  ASSERT_THAT(StoredClaims(), SizeIs(1));
  EXPECT_EQ(StoredClaims()[0].state, ClaimState::kMounted);
}

// The last user leaves but the store cannot forget the claim and the stage:
// the call fails and a retry finishes the bookkeeping.
TEST_F(VolumeManagerTest, UnmountThatCannotBeRecordedIsFinishedByARetry) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  faults_->FailNext(fakes::StoreOp::kDeleteClaimsAndStaging, absl::UnavailableError("disk full"));
  absl::StatusOr<UnmountResult> first = manager->UnmountVolume(Unmount("a1"));
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(StoredClaims(), SizeIs(1));

  absl::StatusOr<UnmountResult> retry = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(StoredStagings(), IsEmpty());
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 1);
}

// A store that cannot be read refuses the restore: the manager will not
// guess which volumes are mounted.
TEST_F(VolumeManagerTest, UnreadableStoreFailsTheRestore) {
  StartPlugin(/*stage_unstage=*/true);
  faults_->FailNext(fakes::StoreOp::kListStagings, absl::DataLossError("torn page"));
  VolumeManagerOptions options;
  options.root = kRoot;
  VolumeManager manager(
      kPlugin, options, [this] { return instance_; }, faults_.get(), mounts_.inspector(), &clock_,
      &cancel_);
  EXPECT_EQ(manager.Restore().status().code(), absl::StatusCode::kDataLoss);
}

// The book, not the staging path, says whether a volume is staged: a plugin
// that stages without leaving a mount there gets one NodeStageVolume for
// three allocations and one NodeUnstageVolume when the last one leaves.
TEST_F(VolumeManagerTest, StagesOnceForAPluginThatLeavesNoMountAtTheStagingPath) {
  StartPlugin(/*stage_unstage=*/true, /*stage_mounts=*/false);
  auto manager = NewManager();
  for (const char* alloc : {"a1", "a2", "a3"}) {
    absl::StatusOr<MountInfo> mounted = manager->MountVolume(Mount(alloc));
    ASSERT_TRUE(mounted.ok()) << alloc << ": " << mounted.status();
  }
  EXPECT_FALSE(mounts_.mounts().count(Staging()));
  ASSERT_THAT(StoredStagings(), SizeIs(1));
  EXPECT_EQ(StoredStagings()[0].state, StagingState::kStaged);
  for (const char* alloc : {"a1", "a2", "a3"}) {
    ASSERT_TRUE(manager->UnmountVolume(Unmount(alloc)).ok()) << alloc;
  }
  EXPECT_THAT(
      VolumeCalls(),
      ElementsAre("NodeStageVolume " + Staging(), "NodePublishVolume " + Target("a1"),
                  "NodePublishVolume " + Target("a2"), "NodePublishVolume " + Target("a3"),
                  "NodeUnpublishVolume " + Target("a1"), "NodeUnpublishVolume " + Target("a2"),
                  "NodeUnpublishVolume " + Target("a3"), "NodeUnstageVolume " + Staging()));
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(StoredStagings(), IsEmpty());
}

// A publish that fails after a successful stage undoes the stage, so the next
// mount of the volume starts clean and succeeds.
TEST_F(VolumeManagerTest, FailedPublishAfterStageIsUndoneAndTheNextMountSucceeds) {
  StartPlugin(/*stage_unstage=*/true, /*stage_mounts=*/false);
  auto manager = NewManager();
  plugin_->FailNext("NodePublishVolume", grpc::Status(grpc::StatusCode::INTERNAL, "no"));
  EXPECT_EQ(manager->MountVolume(Mount("a1")).status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(StoredStagings(), IsEmpty());
  absl::StatusOr<MountInfo> again = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(VolumeCalls(),
              ElementsAre("NodeStageVolume " + Staging(), "NodePublishVolume " + Target("a1"),
                          "NodeUnstageVolume " + Staging(), "NodeStageVolume " + Staging(),
                          "NodePublishVolume " + Target("a1")));
}

// A stage the plugin refuses leaves nothing to undo: no unstage, no record.
TEST_F(VolumeManagerTest, RefusedStageIsNotUndone) {
  StartPlugin(/*stage_unstage=*/true, /*stage_mounts=*/false);
  auto manager = NewManager();
  plugin_->FailNext("NodeStageVolume", grpc::Status(grpc::StatusCode::INTERNAL, "refused"));
  EXPECT_FALSE(manager->MountVolume(Mount("a1")).ok());
  EXPECT_THAT(VolumeCalls(), ElementsAre("NodeStageVolume " + Staging()));
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(StoredStagings(), IsEmpty());
}

// An unstage that fails once keeps the claim and the staging record (marked
// unstaging, also across a restart); the next unmount finishes it.
TEST_F(VolumeManagerTest, UnstageThatFailsOnceIsFinishedAfterARestart) {
  StartPlugin(/*stage_unstage=*/true, /*stage_mounts=*/false);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  plugin_->FailNext("NodeUnstageVolume", grpc::Status(grpc::StatusCode::INTERNAL, "stuck"));
  EXPECT_EQ(manager->UnmountVolume(Unmount("a1")).status().code(), absl::StatusCode::kInternal);
  ASSERT_THAT(StoredStagings(), SizeIs(1));
  EXPECT_EQ(StoredStagings()[0].state, StagingState::kUnstaging);
  ASSERT_THAT(StoredClaims(), SizeIs(1));

  manager = Restart(std::move(manager));
  EXPECT_EQ(last_report_.stagings, 1);
  EXPECT_GE(last_report_.interrupted, 1);
  absl::StatusOr<UnmountResult> again = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->unstaged);
  EXPECT_THAT(VolumeCalls(),
              ElementsAre("NodeStageVolume " + Staging(), "NodePublishVolume " + Target("a1"),
                          "NodeUnpublishVolume " + Target("a1"), "NodeUnstageVolume " + Staging(),
                          "NodeUnstageVolume " + Staging()));
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_THAT(StoredStagings(), IsEmpty());
}

// A crash between stage and publish: the book says staged, so the next
// mount only publishes; a crash before the stage was recorded as finished
// makes the next mount stage again (NodeStageVolume is idempotent).
TEST_F(VolumeManagerTest, RestartBetweenStageAndPublishFinishesTheMount) {
  StartPlugin(/*stage_unstage=*/true, /*stage_mounts=*/false);
  for (StagingState left : {StagingState::kStaged, StagingState::kStaging}) {
    store_.reset();
    OpenStore();
    Claim claim;
    claim.plugin = kPlugin;
    claim.namespace_ = "default";
    claim.volume_id = "vol-1";
    claim.remote_id = "remote-vol-1";
    claim.alloc_id = "a1";
    claim.usage = Mount("a1").usage;
    claim.mount = {Staging(), Target("a1"), true};
    claim.state = ClaimState::kMounting;
    ASSERT_TRUE(store_->PutClaim(claim).ok());
    ASSERT_TRUE(store_
                    ->PutStaging({kPlugin, Staging(), "default", "vol-1", "remote-vol-1",
                                  std::string(kRwUsage), left})
                    .ok());
    StartPlugin(/*stage_unstage=*/true, /*stage_mounts=*/false);
    auto manager = NewManager();
    // The plugin kept the stage it finished before the crash.
    if (left == StagingState::kStaged) plugin_->MarkStaged(Staging());
    absl::StatusOr<MountInfo> mounted = manager->MountVolume(Mount("a1"));
    ASSERT_TRUE(mounted.ok()) << mounted.status();
    if (left == StagingState::kStaged) {
      EXPECT_THAT(VolumeCalls(), ElementsAre("NodePublishVolume " + Target("a1")));
    } else {
      EXPECT_THAT(VolumeCalls(),
                  ElementsAre("NodeStageVolume " + Staging(), "NodePublishVolume " + Target("a1")));
    }
    ASSERT_TRUE(manager->UnmountVolume(Unmount("a1")).ok());
    EXPECT_THAT(StoredClaims(), IsEmpty());
    EXPECT_THAT(StoredStagings(), IsEmpty());
    manager.reset();
  }
}

TEST_F(VolumeManagerTest, HasMountAnswersOnlyForItsOwnTargets) {
  StartPlugin(false);
  auto manager = NewManager();
  for (const std::string& path :
       {std::string("/proc"), std::string("/"), std::string(kRoot),
        std::string("/var/lib/other/per-alloc/a/v/u"),
        absl::StrCat(kRoot, "/per-alloc/../../../proc"), absl::StrCat(kRoot, "/staging/x")}) {
    MountInfo foreign;
    foreign.target = path;
    EXPECT_EQ(manager->HasMount(foreign).status().code(), absl::StatusCode::kInvalidArgument)
        << path;
  }
  absl::StatusOr<MountInfo> mounted = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(mounted.ok()) << mounted.status();
  EXPECT_TRUE(*manager->HasMount(*mounted));
}

TEST_F(VolumeManagerTest, UsagesOfOneVolumeStageSeparately) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1", "vol-1", RwUsage())).ok());
  ASSERT_TRUE(manager->MountVolume(Mount("a2", "vol-1", RoUsage())).ok());
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 2);
  std::string ro = "ro-file-system-multi-node-reader-only";
  EXPECT_TRUE(mounts_.mounts().count(Staging("vol-1", ro)));
  EXPECT_TRUE(plugin_->PublishRequests()[1].readonly());
  absl::StatusOr<UnmountResult> result = manager->UnmountVolume(Unmount("a1", "vol-1", RwUsage()));
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->unstaged);  // the rw staging had one user
  EXPECT_TRUE(mounts_.mounts().count(Staging("vol-1", ro)));
}

TEST_F(VolumeManagerTest, MountIsIdempotentAndReusesMountPoints) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  // A mount at the staging path that the book does not explain proves
  // nothing: the manager stages (NodeStageVolume is idempotent) and records it.
  mounts_.SetMounted(Staging(), true);
  absl::StatusOr<MountInfo> first = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 1);
  absl::StatusOr<MountInfo> again = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 1);
  // The target vanished behind our back: mounting again re-publishes.
  mounts_.SetMounted(first->target, false);
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 2);
  EXPECT_EQ(manager->UsageCount("default", "vol-1", kRwUsage), 1);
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 1);
}

TEST_F(VolumeManagerTest, SameClaimWithAnotherRemoteIdIsRefused) {
  StartPlugin(false);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  MountRequest other = Mount("a1");
  other.remote_id = "something-else";
  EXPECT_EQ(manager->MountVolume(other).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(VolumeManagerTest, BadRequestsAreRejected) {
  StartPlugin(false);
  auto manager = NewManager();
  MountRequest no_alloc = Mount("");
  EXPECT_EQ(manager->MountVolume(no_alloc).status().code(), absl::StatusCode::kInvalidArgument);
  MountRequest no_remote = Mount("a1");
  no_remote.remote_id.clear();
  EXPECT_EQ(manager->MountVolume(no_remote).status().code(), absl::StatusCode::kInvalidArgument);
  MountRequest no_mode = Mount("a1");
  no_mode.usage.access_mode = AccessMode::kUnspecified;
  EXPECT_EQ(manager->MountVolume(no_mode).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 0);
}

struct RetryCase {
  std::string name;
  grpc::StatusCode code;
  int failures;
  bool ok;
  int calls;
  std::vector<absl::Duration> sleeps;
};

class VolumeManagerRetryTest : public VolumeManagerTest,
                               public ::testing::WithParamInterface<RetryCase> {};

TEST_P(VolumeManagerRetryTest, PublishRetries) {
  const RetryCase& c = GetParam();
  StartPlugin(false);
  auto manager = NewManager();
  ASSERT_TRUE(instance_->Fingerprint().ok());
  plugin_->FailNext("NodePublishVolume", grpc::Status(c.code, "injected"), c.failures);
  absl::StatusOr<MountInfo> info = manager->MountVolume(Mount("a1"));
  EXPECT_EQ(info.ok(), c.ok) << info.status();
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), c.calls);
  EXPECT_EQ(clock_.sleeps(), c.sleeps);
  if (!c.ok) {
    EXPECT_EQ(static_cast<int>(info.status().code()), static_cast<int>(c.code));
    EXPECT_THAT(std::string(info.status().message()), HasSubstr("NodePublishVolume: injected"));
    EXPECT_THAT(StoredClaims(), IsEmpty());
  } else {
    EXPECT_THAT(StoredClaims(), SizeIs(1));
  }
}

const std::vector<absl::Duration> kTwoBackoffs = {absl::Seconds(1), absl::Seconds(2)};

INSTANTIATE_TEST_SUITE_P(
    Table, VolumeManagerRetryTest,
    ::testing::Values(
        RetryCase{"UnavailableThenOk", grpc::StatusCode::UNAVAILABLE, 2, true, 3, kTwoBackoffs},
        RetryCase{"ExhaustedThenOk",
                  grpc::StatusCode::RESOURCE_EXHAUSTED,
                  1,
                  true,
                  2,
                  {absl::Seconds(1)}},
        RetryCase{
            "DeadlineThenOk", grpc::StatusCode::DEADLINE_EXCEEDED, 1, true, 2, {absl::Seconds(1)}},
        RetryCase{"AbortedThenOk", grpc::StatusCode::ABORTED, 1, true, 2, {absl::Seconds(1)}},
        RetryCase{"UnavailableGivesUp", grpc::StatusCode::UNAVAILABLE, 3, false, 3, kTwoBackoffs},
        RetryCase{"InvalidArgumentIsFinal", grpc::StatusCode::INVALID_ARGUMENT, 1, false, 1, {}},
        RetryCase{"InternalIsFinal", grpc::StatusCode::INTERNAL, 1, false, 1, {}}),
    [](const ::testing::TestParamInfo<RetryCase>& info) { return info.param.name; });

TEST_F(VolumeManagerTest, GivingUpSaysSo) {
  StartPlugin(false);
  auto manager = NewManager();
  plugin_->FailNext("NodePublishVolume", grpc::Status(grpc::StatusCode::UNAVAILABLE, "x"), 3);
  absl::Status status = manager->MountVolume(Mount("a1")).status();
  EXPECT_THAT(std::string(status.message()), HasSubstr("gave up after 3 attempts"));
}

TEST_F(VolumeManagerTest, EachAttemptHasItsOwnDeadline) {
  StartPlugin(false);
  RetryPolicy retry;
  retry.max_attempts = 2;
  retry.per_attempt_timeout = absl::Milliseconds(50);
  auto manager = NewManager(retry);
  ASSERT_TRUE(instance_->Fingerprint().ok());
  plugin_->SetHang("NodePublishVolume", true);
  absl::Status status = manager->MountVolume(Mount("a1")).status();
  plugin_->SetHang("NodePublishVolume", false);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 2);
}

// The caller's deadline: past it nothing is called; a retry whose backoff
// would end past it is not made; an attempt that would run longer (each
// has 2 min) is cut at it.
TEST_F(VolumeManagerTest, TheCallersDeadlineCutsTheAttemptAndTheRetries) {
  StartPlugin(false);
  RetryPolicy retry;
  retry.initial_backoff = absl::Seconds(30);
  auto manager = NewManager(retry);
  ASSERT_TRUE(instance_->Fingerprint().ok());
  MountRequest request = Mount("a1");

  request.answer_by = absl::Now() - absl::Seconds(1);
  absl::Status status = manager->MountVolume(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 0);

  plugin_->FailNext("NodePublishVolume", grpc::Status(grpc::StatusCode::UNAVAILABLE, "busy"), 1);
  request.answer_by = absl::Now() + absl::Seconds(10);
  status = manager->MountVolume(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("gave up after 1 attempts: the caller's deadline comes before the next"));
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 1);

  plugin_->SetHang("NodePublishVolume", true);
  const absl::Time start = absl::Now();
  request.answer_by = start + absl::Milliseconds(300);
  status = manager->MountVolume(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 2);
  EXPECT_THAT(StoredClaims(), IsEmpty()) << "the failed mount was not undone";
  // (The plugin's abandoned call may still mount the target once it goes
  // on: the next mount then finds it mounted and keeps it.)
  plugin_->SetHang("NodePublishVolume", false);
  EXPECT_TRUE(manager->MountVolume(Mount("a1")).ok());
}

// A call that finds the volume busy with an earlier operation waits for it
// only until its caller's deadline, reaching no plugin.
TEST_F(VolumeManagerTest, AWaitBehindAnEarlierOperationEndsAtTheCallersDeadline) {
  StartPlugin(false);
  auto manager = NewManager();
  ASSERT_TRUE(instance_->Fingerprint().ok());
  plugin_->SetHang("NodePublishVolume", true);
  std::thread first([&] { EXPECT_TRUE(manager->MountVolume(Mount("a1")).ok()); });
  ASSERT_TRUE(plugin_->AwaitCalls("NodePublishVolume", 1));
  MountRequest second = Mount("a2");
  second.answer_by = absl::Now() + absl::Milliseconds(200);
  absl::Status status = manager->MountVolume(second).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("still in progress"));
  UnmountRequest unmount = Unmount("a1");
  unmount.answer_by = absl::Now() + absl::Milliseconds(200);
  EXPECT_EQ(manager->UnmountVolume(unmount).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 1);
  EXPECT_EQ(manager->QueuedOperations("default", "vol-1"), 1);
  plugin_->SetHang("NodePublishVolume", false);
  first.join();
  EXPECT_TRUE(manager->MountVolume(Mount("a2")).ok());
  EXPECT_EQ(manager->QueuedOperations("default", "vol-1"), 0);
}

TEST_F(VolumeManagerTest, FailedPublishUndoesItsStage) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  plugin_->FailNext("NodePublishVolume", grpc::Status(grpc::StatusCode::INTERNAL, "no"));
  EXPECT_FALSE(manager->MountVolume(Mount("a1")).ok());
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 1);
  EXPECT_EQ(plugin_->Calls("NodeUnstageVolume"), 1);
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_THAT(StoredClaims(), IsEmpty());
}

TEST_F(VolumeManagerTest, FailedPublishKeepsAStageOthersUse) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  plugin_->FailNext("NodePublishVolume", grpc::Status(grpc::StatusCode::INTERNAL, "no"));
  EXPECT_FALSE(manager->MountVolume(Mount("a2")).ok());
  EXPECT_EQ(plugin_->Calls("NodeUnstageVolume"), 0);
  EXPECT_TRUE(mounts_.mounts().count(Staging()));
  EXPECT_THAT(StoredClaims(), SizeIs(1));
}

TEST_F(VolumeManagerTest, FailedUndoKeepsTheClaim) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  plugin_->FailNext("NodePublishVolume", grpc::Status(grpc::StatusCode::INTERNAL, "no"));
  plugin_->FailNext("NodeUnstageVolume", grpc::Status(grpc::StatusCode::INTERNAL, "stuck"));
  absl::Status status = manager->MountVolume(Mount("a1")).status();
  EXPECT_THAT(std::string(status.message()), HasSubstr("claim is kept"));
  std::vector<Claim> stored = StoredClaims();
  ASSERT_THAT(stored, SizeIs(1));
  EXPECT_EQ(stored[0].state, ClaimState::kMounting);
  // Unmounting later finishes the clean-up.
  absl::StatusOr<UnmountResult> result = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->unstaged);
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_THAT(StoredClaims(), IsEmpty());
}

TEST_F(VolumeManagerTest, NotFoundOnUnpublishAndUnstageMeansDone) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  // The volume disappeared on the plugin's side.
  mounts_.SetMounted(Target("a1"), false);
  mounts_.SetMounted(Staging(), false);
  plugin_->FailNext("NodeUnpublishVolume", grpc::Status(grpc::StatusCode::NOT_FOUND, "gone"));
  plugin_->FailNext("NodeUnstageVolume", grpc::Status(grpc::StatusCode::NOT_FOUND, "gone"));
  absl::StatusOr<UnmountResult> result = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->unstaged);
  EXPECT_EQ(plugin_->Calls("NodeUnpublishVolume"), 1);
  EXPECT_THAT(StoredClaims(), IsEmpty());
}

TEST_F(VolumeManagerTest, FailedUnstageIsFinishedByTheNextUnmount) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  plugin_->FailNext("NodeUnstageVolume", grpc::Status(grpc::StatusCode::INTERNAL, "stuck"));
  EXPECT_EQ(manager->UnmountVolume(Unmount("a1")).status().code(), absl::StatusCode::kInternal);
  std::vector<Claim> stored = StoredClaims();
  ASSERT_THAT(stored, SizeIs(1));
  EXPECT_EQ(stored[0].state, ClaimState::kUnpublished);
  EXPECT_EQ(manager->UsageCount("default", "vol-1", kRwUsage), 0);
  absl::StatusOr<UnmountResult> again = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->unstaged);
  EXPECT_EQ(plugin_->Calls("NodeUnpublishVolume"), 1);  // not repeated
  EXPECT_THAT(StoredClaims(), IsEmpty());
}

TEST_F(VolumeManagerTest, UnmountWithoutClaimIsIdempotent) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  absl::StatusOr<UnmountResult> result = manager->UnmountVolume(Unmount("never"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->unstaged);
  EXPECT_EQ(plugin_->Calls("NodeUnpublishVolume"), 0);
  // A stray mount nobody claims is cleaned up.
  mounts_.SetMounted(Target("stray"), true);
  mounts_.SetMounted(Staging(), true);
  result = manager->UnmountVolume(Unmount("stray"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->unstaged);
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
}

TEST_F(VolumeManagerTest, OperationsOnOneVolumeAreQueuedOthersRunInParallel) {
  StartPlugin(false);
  auto manager = NewManager();
  ASSERT_TRUE(instance_->Fingerprint().ok());
  plugin_->SetHang("NodePublishVolume", true);
  std::thread first([&] { EXPECT_TRUE(manager->MountVolume(Mount("a1", "vol-1")).ok()); });
  ASSERT_TRUE(plugin_->AwaitCalls("NodePublishVolume", 1));
  std::thread second([&] { EXPECT_TRUE(manager->MountVolume(Mount("a2", "vol-1")).ok()); });
  // The second waits in the queue and has not reached the plugin.
  while (manager->QueuedOperations("default", "vol-1") < 2) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(plugin_->Calls("NodePublishVolume"), 1);
  // Another volume is not held up by the hung one: its call reaches the
  // plugin while the first is still hanging.
  std::thread other([&] { EXPECT_TRUE(manager->MountVolume(Mount("b1", "vol-2")).ok()); });
  ASSERT_TRUE(plugin_->AwaitCalls("NodePublishVolume", 2));
  EXPECT_EQ(manager->QueuedOperations("default", "vol-2"), 1);
  plugin_->SetHang("NodePublishVolume", false);
  first.join();
  second.join();
  other.join();
  std::vector<std::string> publishes;
  for (const std::string& entry : plugin_->Log()) {
    if (absl::StartsWith(entry, "NodePublishVolume")) publishes.push_back(entry);
  }
  EXPECT_THAT(publishes, ElementsAre("NodePublishVolume " + Target("a1", "vol-1"),
                                     "NodePublishVolume " + Target("b1", "vol-2"),
                                     "NodePublishVolume " + Target("a2", "vol-1")));
  EXPECT_EQ(manager->QueuedOperations("default", "vol-1"), 0);
}

// Nomad keeps its usage counts in memory only: after a client restart one
// allocation's unmount can unstage a volume other allocations still use.
// Here the counts are rebuilt from the store.
TEST_F(VolumeManagerTest, RestartDoesNotForgetUsageCounts_NomadUnstageBug) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("a1")).ok());
  ASSERT_TRUE(manager->MountVolume(Mount("a2")).ok());
  ASSERT_TRUE(manager->MountVolume(Mount("b1", "vol-2")).ok());

  manager = Restart(std::move(manager));
  EXPECT_EQ(last_report_.claims, 3);
  EXPECT_EQ(last_report_.mounted, 3);
  EXPECT_EQ(last_report_.interrupted, 0);
  EXPECT_THAT(last_report_.problems, IsEmpty());
  EXPECT_EQ(last_report_.usage_counts,
            (std::map<std::string, int>{{Staging("vol-1"), 2}, {Staging("vol-2"), 1}}));
  EXPECT_EQ(manager->UsageCount("default", "vol-1", kRwUsage), 2);

  absl::StatusOr<UnmountResult> first = manager->UnmountVolume(Unmount("a1"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->unstaged);
  EXPECT_EQ(plugin_->Calls("NodeUnstageVolume"), 0);
  EXPECT_TRUE(mounts_.mounts().count(Staging("vol-1")));
  absl::StatusOr<UnmountResult> last = manager->UnmountVolume(Unmount("a2"));
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->unstaged);
}

TEST_F(VolumeManagerTest, RestoreReportsWhatNeedsAttention) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  ASSERT_TRUE(manager->MountVolume(Mount("ok")).ok());
  ASSERT_TRUE(manager->MountVolume(Mount("lost")).ok());
  ASSERT_TRUE(manager->MountVolume(Mount("u", "vol-3")).ok());
  plugin_->FailNext("NodeUnstageVolume", grpc::Status(grpc::StatusCode::INTERNAL, "stuck"));
  EXPECT_FALSE(manager->UnmountVolume(Unmount("u", "vol-3")).ok());
  mounts_.SetMounted(Target("lost"), false);
  // A crash between recording a claim and mounting it.
  Claim interrupted = StoredClaims()[0];
  interrupted.alloc_id = "crashed";
  interrupted.mount.target = Target("crashed");
  interrupted.state = ClaimState::kMounting;
  ASSERT_TRUE(store_->PutClaim(interrupted).ok());
  // Another plugin's claims are not ours.
  Claim foreign = interrupted;
  foreign.plugin = "other.csi.test";
  ASSERT_TRUE(store_->PutClaim(foreign).ok());

  manager = Restart(std::move(manager));
  EXPECT_EQ(last_report_.claims, 4);
  EXPECT_EQ(last_report_.mounted, 1);
  EXPECT_EQ(last_report_.interrupted, 2);
  ASSERT_THAT(last_report_.problems, SizeIs(3));
  EXPECT_THAT(last_report_.problems[0], HasSubstr("alloc crashed"));
  EXPECT_THAT(last_report_.problems[0], HasSubstr("interrupted"));
  EXPECT_THAT(last_report_.problems[1], HasSubstr("alloc lost"));
  EXPECT_THAT(last_report_.problems[1], HasSubstr("not mounted"));
  EXPECT_THAT(last_report_.problems[2], HasSubstr("unstage"));
  // The interrupted mount counts as a user: unmounting the others keeps the stage.
  EXPECT_EQ(last_report_.usage_counts[Staging("vol-1")], 3);
  ASSERT_TRUE(manager->UnmountVolume(Unmount("ok")).ok());
  ASSERT_TRUE(manager->UnmountVolume(Unmount("lost")).ok());
  EXPECT_TRUE(mounts_.mounts().count(Staging("vol-1")));
  // Mounting the interrupted claim again completes it without restaging.
  ASSERT_TRUE(manager->MountVolume(Mount("crashed")).ok());
  EXPECT_EQ(plugin_->Calls("NodeStageVolume"), 2);  // vol-1 and vol-3 before the restart
  EXPECT_EQ(manager->Claims()[0].state, ClaimState::kMounted);
}

TEST_F(VolumeManagerTest, UnregisteredOrUnhealthyPlugin) {
  StartPlugin(false);
  auto manager = NewManager();
  instance_.reset();
  EXPECT_EQ(manager->MountVolume(Mount("a1")).status().code(), absl::StatusCode::kUnavailable);
  StartPlugin(false);
  plugin_->Update([](fakes::FakePluginConfig& c) { c.ready = false; });
  absl::Status status = manager->MountVolume(Mount("a1")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("not ready"));
  EXPECT_THAT(StoredClaims(), IsEmpty());
}

TEST_F(VolumeManagerTest, ShutdownCancelsRetries) {
  StartPlugin(false);
  clock_.SetAutoAdvance(false);
  auto manager = NewManager();
  ASSERT_TRUE(instance_->Fingerprint().ok());
  plugin_->FailNext("NodePublishVolume", grpc::Status(grpc::StatusCode::UNAVAILABLE, "busy"), 3);
  absl::Status status;
  std::thread mount([&] { status = manager->MountVolume(Mount("a1")).status(); });
  ASSERT_TRUE(clock_.AwaitSleepers(1));
  cancel_.Cancel();
  mount.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_THAT(StoredClaims(), IsEmpty());
}

TEST_F(VolumeManagerTest, HasMountExternalIdAndDrain) {
  StartPlugin(/*stage_unstage=*/true);
  auto manager = NewManager();
  EXPECT_EQ(*manager->ExternalID(), "node-7");
  absl::StatusOr<MountInfo> info = manager->MountVolume(Mount("a1"));
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(manager->MountVolume(Mount("a2")).ok());
  ASSERT_TRUE(manager->MountVolume(Mount("b1", "vol-2")).ok());
  EXPECT_TRUE(*manager->HasMount(*info));
  EXPECT_EQ(manager->HasMount(MountInfo()).status().code(), absl::StatusCode::kInvalidArgument);
  DrainResult drained = manager->Drain();
  EXPECT_EQ(drained.unmounted, 3);
  EXPECT_THAT(drained.errors, IsEmpty());
  EXPECT_FALSE(*manager->HasMount(*info));
  EXPECT_THAT(mounts_.mounts(), IsEmpty());
  EXPECT_THAT(StoredClaims(), IsEmpty());
  EXPECT_EQ(plugin_->Calls("NodeUnstageVolume"), 2);
}

}  // namespace
}  // namespace lustre_csi::csimanager
