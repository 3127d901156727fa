#include "pkg/csimanager/internal/claim_book.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/testing/failing_store.h"
#include "pkg/csimanager/testing/fake_node.h"
#include "pkg/csimanager/testing/test_util.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kPlugin[] = "p.csi.test";
constexpr char kUsage[] = "rw-file-system-multi-node-multi-writer";

Claim ClaimFor(const std::string& alloc, const std::string& staging, ClaimState state) {
  Claim claim;
  claim.plugin = kPlugin;
  claim.namespace_ = "default";
  claim.volume_id = "vol";
  claim.remote_id = "remote-vol";
  claim.alloc_id = alloc;
  claim.usage.attachment_mode = AttachmentMode::kFileSystem;
  claim.usage.access_mode = AccessMode::kMultiNodeMultiWriter;
  claim.mount = {staging, "/root/per-alloc/" + alloc + "/vol/" + kUsage, !staging.empty()};
  claim.state = state;
  return claim;
}

ClaimKey KeyFor(const std::string& alloc) {
  return ClaimKey{kPlugin, "default", "vol", alloc, kUsage};
}

class ClaimBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(dir_.Sub("state.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    faults_ = std::make_unique<fakes::FailingStore>(store_.get());
  }

  fakes::TempDir dir_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<fakes::FailingStore> faults_;
  fakes::FakeNode node_;
};

TEST_F(ClaimBookTest, UsersOfAStagingPathAreTheClaims) {
  ClaimBook book(kPlugin, faults_.get());
  const std::string staging = "/root/staging/default/vol/" + std::string(kUsage);
  ASSERT_TRUE(book.SaveClaim(ClaimFor("a1", staging, ClaimState::kMounted)).ok());
  ASSERT_TRUE(book.SaveClaim(ClaimFor("a2", staging, ClaimState::kMounting)).ok());
  ASSERT_TRUE(book.SaveClaim(ClaimFor("a3", staging, ClaimState::kUnpublished)).ok());
  EXPECT_EQ(book.OtherUsers(staging, ClaimKey()), 2);  // unpublished claims hold nothing
  EXPECT_EQ(book.OtherUsers(staging, KeyFor("a1")), 1);
  EXPECT_THAT(book.UnpublishedUsers(staging), ElementsAre(KeyFor("a3")));
  EXPECT_EQ(book.RecordedStaging("default", "vol", kUsage), staging);
  EXPECT_EQ(book.RecordedStaging("default", "other", kUsage), std::nullopt);

  ASSERT_TRUE(book.DropClaimsAndStaging({KeyFor("a1"), KeyFor("a3")}, "").ok());
  EXPECT_EQ(book.OtherUsers(staging, ClaimKey()), 1);
  EXPECT_EQ(store_->ListClaims()->size(), 1u);
}

TEST_F(ClaimBookTest, NothingChangesWhenTheStoreRefuses) {
  ClaimBook book(kPlugin, faults_.get());
  faults_->FailNext(fakes::StoreOp::kPutClaim, absl::UnavailableError("disk full"));
  EXPECT_EQ(book.SaveClaim(ClaimFor("a1", "", ClaimState::kMounting)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(book.Find(KeyFor("a1")), std::nullopt);
  ASSERT_TRUE(book.SaveClaim(ClaimFor("a1", "", ClaimState::kMounting)).ok());
  faults_->FailNext(fakes::StoreOp::kDeleteClaims, absl::UnavailableError("disk full"));
  EXPECT_FALSE(book.DropClaims({KeyFor("a1")}).ok());
  EXPECT_TRUE(book.Find(KeyFor("a1")).has_value());
}

TEST_F(ClaimBookTest, RestoreRebuildsTheBookAndReportsWhatNeedsAttention) {
  const std::string staging = "/root/staging/default/vol/" + std::string(kUsage);
  {
    ClaimBook book(kPlugin, faults_.get());
    ASSERT_TRUE(book.SaveClaim(ClaimFor("a1", staging, ClaimState::kMounted)).ok());
    ASSERT_TRUE(book.SaveClaim(ClaimFor("a2", staging, ClaimState::kMounting)).ok());
    StagingRecord record;
    record.plugin = kPlugin;
    record.path = staging;
    record.namespace_ = "default";
    record.volume_id = "vol";
    record.remote_id = "remote-vol";
    record.usage = kUsage;
    record.state = StagingState::kStaged;
    ASSERT_TRUE(book.SaveStaging(record).ok());
    Claim foreign = ClaimFor("a9", "", ClaimState::kMounted);
    foreign.plugin = "other.csi.test";
    ASSERT_TRUE(store_->PutClaim(foreign).ok());
  }
  node_.SetMounted(ClaimFor("a1", staging, ClaimState::kMounted).mount.target, true);

  ClaimBook restored(kPlugin, faults_.get());
  absl::StatusOr<RestoreReport> report = restored.Restore(*node_.inspector());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->claims, 2);  // the other plugin's claim is not this book's
  EXPECT_EQ(report->mounted, 1);
  EXPECT_EQ(report->interrupted, 1);
  EXPECT_EQ(report->stagings, 1);
  EXPECT_EQ(report->usage_counts.at(staging), 2);
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_THAT(report->problems[0], ::testing::HasSubstr("a mount was interrupted"));
  EXPECT_EQ(restored.OtherUsers(staging, ClaimKey()), 2);
  ASSERT_TRUE(restored.FindStaging(staging).has_value());
  EXPECT_EQ(restored.FindStaging(staging)->state, StagingState::kStaged);
  EXPECT_EQ(restored.last_restore().claims, 2);
}

TEST_F(ClaimBookTest, RecordedPathsWinOverComputedOnes) {
  ClaimBook book(kPlugin, faults_.get());
  ASSERT_TRUE(
      book.SaveClaim(ClaimFor("a1", "/root/staging/default/vol%5B0%5D/u", ClaimState::kMounted))
          .ok());
  std::string staging = "/computed/staging";
  std::string target = "/computed/target";
  book.UseRecordedPaths(KeyFor("a1"), &staging, &target);  // the claim's own paths
  EXPECT_EQ(staging, "/root/staging/default/vol%5B0%5D/u");
  EXPECT_EQ(target, ClaimFor("a1", "", ClaimState::kMounted).mount.target);
  staging = "/computed/staging";
  target = "/computed/target";
  book.UseRecordedPaths(KeyFor("a2"), &staging, &target);  // the volume's staging path
  EXPECT_EQ(staging, "/root/staging/default/vol%5B0%5D/u");
  EXPECT_EQ(target, "/computed/target");
  ClaimKey other = KeyFor("a2");
  other.volume_id = "another";
  staging = "/computed/staging";
  book.UseRecordedPaths(other, &staging, &target);  // nothing recorded
  EXPECT_EQ(staging, "/computed/staging");
  EXPECT_THAT(book.UnpublishedUsers("/nowhere"), IsEmpty());
}

}  // namespace
}  // namespace lustre_csi::csimanager
