// On the in-memory file system; e2e races real controllers on a real one.
#include "pkg/driver/project_ids.h"

#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/volume/owned_dir.h"
#include "pkg/volume/sha256.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;

TEST(ProjectIdRangeTest, EdgesOfLustresIds) {
  absl::StatusOr<ProjectIdRange> whole = ParseProjectIdRange("1-4294967294");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->first, 1u);
  EXPECT_EQ(whole->last, 4294967294u);
  absl::StatusOr<ProjectIdRange> one = ParseProjectIdRange("7-7");
  ASSERT_TRUE(one.ok());
  for (const char* bad : {"0-5", "5-4", "1-4294967295", "1-99999999999", "", "5", "a-b", "1-2-3",
                          "-1-5", "+1-5", "1--5"}) {
    absl::StatusOr<ProjectIdRange> r = ParseProjectIdRange(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

class ProjectIdsTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(sys_.AddDir(root_).ok()); }

  absl::StatusOr<ProjectClaim> Claim(const std::string& volume, ProjectIdRange range = {100, 199}) {
    return ClaimProjectId(sys_, root_, range, volume);
  }
  std::optional<uint32_t> Held(const std::string& volume) {
    absl::StatusOr<std::optional<uint32_t>> found = FindProjectClaim(sys_, root_, volume);
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? *found : std::nullopt;
  }
  void Take(uint32_t id, const std::string& volume) {
    ASSERT_TRUE(volume::CreateOwnedDir(sys_, root_, absl::StrCat(kProjectClaimDir, "/", id), {},
                                       {volume, true, ""})
                    .ok());
  }

  volume::FakeSyscalls sys_;
  const std::string root_ = "/fs";
};

TEST_F(ProjectIdsTest, AClaimIsTheVolumesAndARetryFindsIt) {
  absl::StatusOr<ProjectClaim> claim = Claim("pvc-a");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_TRUE(claim->made);
  EXPECT_GE(claim->id, 100u);
  EXPECT_LE(claim->id, 199u);
  absl::StatusOr<ProjectClaim> again = Claim("pvc-a");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, claim->id);
  EXPECT_FALSE(again->made);  // found, not made: not this call's to take back
  absl::StatusOr<std::optional<volume::DirOwner>> owner =
      volume::ReadDirOwner(sys_, root_, absl::StrCat(kProjectClaimDir, "/", claim->id));
  ASSERT_TRUE(owner.ok() && owner->has_value()) << owner.status();
  EXPECT_EQ((*owner)->volume, "pvc-a");
  EXPECT_EQ(Held("pvc-a"), claim->id);
  EXPECT_FALSE(Held("pvc-none").has_value());
}

TEST_F(ProjectIdsTest, VolumesNeverShareAnIdAndARangeRunsOut) {
  std::set<uint32_t> seen;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<ProjectClaim> c = Claim(absl::StrCat("pvc-", i), {4294967292u, 4294967294u});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(seen.insert(c->id).second) << c->id << " handed out twice";
  }
  EXPECT_EQ(seen, (std::set<uint32_t>{4294967292u, 4294967293u, 4294967294u}));
  absl::StatusOr<ProjectClaim> full = Claim("pvc-3", {4294967292u, 4294967294u});
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.status().message(), HasSubstr("--project-id-range"));

  // Released, the ID is free for another volume; a release by a volume that
  // holds none changes nothing.
  uint32_t freed = *Held("pvc-1");
  ASSERT_TRUE(ReleaseProjectId(sys_, root_, "pvc-other").ok());
  EXPECT_EQ(Claim("pvc-3", {4294967292u, 4294967294u}).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(ReleaseProjectId(sys_, root_, "pvc-1").ok());
  EXPECT_FALSE(Held("pvc-1").has_value());
  absl::StatusOr<ProjectClaim> reused = Claim("pvc-3", {4294967292u, 4294967294u});
  ASSERT_TRUE(reused.ok()) << reused.status();
  EXPECT_EQ(reused->id, freed);
}

// A claim without a marker, or with one that cannot be read (a controller
// stopped between mkdir and the marker, or while writing it), may be in
// use: it is skipped, never taken, and does not stop the search.
TEST_F(ProjectIdsTest, UnmarkedAndUnreadableClaimsAreSkipped) {
  ASSERT_TRUE(sys_.AddDir(absl::StrCat(root_, "/", kProjectClaimDir, "/10")).ok());
  ASSERT_TRUE(sys_.AddDir(absl::StrCat(root_, "/", kProjectClaimDir, "/11")).ok());
  ASSERT_TRUE(
      sys_.AddFile(absl::StrCat(root_, "/", kProjectClaimDir, "/11/", volume::kOwnerMarkerName),
                   0444, "")
          .ok());
  absl::StatusOr<ProjectClaim> c = Claim("pvc-a", {10, 12});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->id, 12u);
}

// Past the first 64 taken IDs the free ones come from one listing.
TEST_F(ProjectIdsTest, ACrowdedRangeStillFindsItsFreeIds) {
  for (uint32_t id = 1; id <= 300; ++id) {
    if (id != 17 && id != 250) Take(id, absl::StrCat("other-", id));
  }
  std::set<uint32_t> got;
  for (const char* v : {"pvc-a", "pvc-b"}) {
    absl::StatusOr<ProjectClaim> c = Claim(v, {1, 300});
    ASSERT_TRUE(c.ok()) << c.status();
    got.insert(c->id);
  }
  EXPECT_EQ(got, (std::set<uint32_t>{17, 250}));
  EXPECT_EQ(Claim("pvc-c", {1, 300}).status().code(), absl::StatusCode::kResourceExhausted);
}

// The volume's entry points at a claim that went (a release that stopped
// halfway): the entry goes, and the next claim starts afresh.
TEST_F(ProjectIdsTest, AnEntryWhoseClaimWentIsDropped) {
  absl::StatusOr<ProjectClaim> c = Claim("pvc-a");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(
      volume::ReleaseOwnedDir(sys_, root_, absl::StrCat(kProjectClaimDir, "/", c->id), "pvc-a")
          .ok());
  EXPECT_FALSE(Held("pvc-a").has_value());
  absl::StatusOr<ProjectClaim> again = Claim("pvc-a");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->made);
  EXPECT_EQ(Held("pvc-a"), again->id);
}

TEST_F(ProjectIdsTest, ClaimsRacingFromManyThreadsAreDistinct) {
  constexpr int kVolumes = 24;
  absl::Mutex mu;
  std::vector<uint32_t> ids;
  std::vector<std::thread> threads;
  for (int i = 0; i < kVolumes; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<ProjectClaim> c = Claim(absl::StrCat("pvc-", i), {1, kVolumes});
      absl::MutexLock l(&mu);
      ids.push_back(c.ok() ? c->id : 0);
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint32_t> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kVolumes));
  EXPECT_EQ(distinct.count(0), 0u) << "a claim failed";
}

// Two calls for the same volume at once: one ID, one of them made it.
TEST_F(ProjectIdsTest, TwinCallsForOneVolumeGetOneId) {
  std::vector<ProjectClaim> claims(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<ProjectClaim> c = Claim("pvc-twin");
      claims[i] = c.ok() ? *c : ProjectClaim{};
    });
  }
  for (std::thread& t : threads) t.join();
  int made = 0;
  for (const ProjectClaim& c : claims) {
    EXPECT_EQ(c.id, claims[0].id);
    made += c.made ? 1 : 0;
  }
  EXPECT_NE(claims[0].id, 0u);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(Held("pvc-twin"), claims[0].id);
}

// Another controller creating the same volume, between making the volume's
// entry and marking it: the entry is read again until the marker is there,
// and both end with one ID.
TEST_F(ProjectIdsTest, ATwinsUnmarkedEntryIsWaitedFor) {
  absl::StatusOr<ProjectClaim> first = Claim("pvc-twin");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string marker =
      absl::StrCat(root_, "/", kProjectClaimDir, "/by-volume/", volume::Sha256Hex("pvc-twin"), "/",
                   volume::kOwnerMarkerName);
  absl::StatusOr<std::string> content = sys_.PeekContent(marker);
  ASSERT_TRUE(content.ok());
  ASSERT_TRUE(sys_.UnlinkAt(volume::kAtCwd, marker, false).ok());  // not written yet

  base::FakeClock clock;
  absl::StatusOr<ProjectClaim> twin;
  std::thread call([&] { twin = ClaimProjectId(sys_, root_, {100, 199}, "pvc-twin", &clock); });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  ASSERT_TRUE(sys_.AddFile(marker, 0444, *content).ok());  // now it is
  clock.Advance(absl::Seconds(1));
  call.join();
  ASSERT_TRUE(twin.ok()) << twin.status();
  EXPECT_EQ(twin->id, first->id);
  EXPECT_FALSE(twin->made);
}

// An entry that stays unmarked (its maker stopped) is an error after the
// wait, which is bounded.
TEST_F(ProjectIdsTest, AnEntryNeverMarkedIsAnErrorAfterABoundedWait) {
  ASSERT_TRUE(Claim("pvc-stopped").ok());
  const std::string marker =
      absl::StrCat(root_, "/", kProjectClaimDir, "/by-volume/", volume::Sha256Hex("pvc-stopped"),
                   "/", volume::kOwnerMarkerName);
  ASSERT_TRUE(sys_.UnlinkAt(volume::kAtCwd, marker, false).ok());
  base::FakeClock clock;
  clock.SetAutoAdvance(true);
  absl::StatusOr<std::optional<uint32_t>> found =
      FindProjectClaim(sys_, root_, "pvc-stopped", &clock);
  EXPECT_EQ(found.status().code(), absl::StatusCode::kDataLoss) << found.status();
  absl::Duration waited;
  for (absl::Duration d : clock.sleeps()) waited += d;
  EXPECT_GT(waited, absl::ZeroDuration());
  EXPECT_LE(waited, absl::Seconds(2));
}

TEST_F(ProjectIdsTest, TheLargestRecordedLimitsWin) {
  absl::StatusOr<ProjectClaim> c = Claim("pvc-a");
  ASSERT_TRUE(c.ok());
  RecordedLimits none = *ReadRecordedLimits(sys_, root_, c->id);
  EXPECT_EQ(none.bytes, 0u);
  ASSERT_TRUE(RecordLimits(sys_, root_, c->id, {10 << 20, 500}).ok());
  ASSERT_TRUE(RecordLimits(sys_, root_, c->id, {30 << 20, 500}).ok());
  ASSERT_TRUE(RecordLimits(sys_, root_, c->id, {20 << 20, 500}).ok());
  ASSERT_TRUE(RecordLimits(sys_, root_, c->id, {30 << 20, 500}).ok());  // again: OK
  RecordedLimits got = *ReadRecordedLimits(sys_, root_, c->id);
  EXPECT_EQ(got.bytes, uint64_t{30} << 20);
  EXPECT_EQ(got.inodes, 500u);
  // Released with its records.
  ASSERT_TRUE(ReleaseProjectId(sys_, root_, "pvc-a").ok());
  EXPECT_EQ(ReadRecordedLimits(sys_, root_, c->id).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace lustre_csi::driver
