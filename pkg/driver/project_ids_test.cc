// On the in-memory file system; e2e races real controllers on a real one.
#include "pkg/driver/project_ids.h"

#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/volume/fake_syscalls.h"
#include "pkg/volume/owned_dir.h"

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
  void SetUp() override {
    sys_ = std::make_unique<volume::FakeSyscalls>();
    root_ = "/fs";
    ASSERT_TRUE(static_cast<volume::FakeSyscalls*>(sys_.get())->AddDir(root_).ok());
  }

  absl::StatusOr<uint32_t> Claim(const std::string& volume, ProjectIdRange range = {100, 199}) {
    return ClaimProjectId(*sys_, root_, range, volume);
  }

  std::unique_ptr<volume::Syscalls> sys_;
  std::string root_;
};

TEST_F(ProjectIdsTest, AClaimIsTheVolumesAndARetryFindsIt) {
  absl::StatusOr<uint32_t> id = Claim("pvc-a");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_GE(*id, 100u);
  EXPECT_LE(*id, 199u);
  absl::StatusOr<uint32_t> again = Claim("pvc-a");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *id);
  absl::StatusOr<std::optional<volume::DirOwner>> owner =
      volume::ReadDirOwner(*sys_, root_, absl::StrCat(kProjectClaimDir, "/", *id));
  ASSERT_TRUE(owner.ok() && owner->has_value()) << owner.status();
  EXPECT_EQ((*owner)->volume, "pvc-a");
  absl::StatusOr<std::optional<uint32_t>> found = FindProjectClaim(*sys_, root_, "pvc-a");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, *id);
  EXPECT_FALSE(FindProjectClaim(*sys_, root_, "pvc-none")->has_value());
}

TEST_F(ProjectIdsTest, VolumesNeverShareAnIdAndARangeRunsOut) {
  std::set<uint32_t> seen;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<uint32_t> id = Claim(absl::StrCat("pvc-", i), {4294967292u, 4294967294u});
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(seen.insert(*id).second) << *id << " handed out twice";
  }
  EXPECT_EQ(seen, (std::set<uint32_t>{4294967292u, 4294967293u, 4294967294u}));
  absl::StatusOr<uint32_t> full = Claim("pvc-3", {4294967292u, 4294967294u});
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.status().message(), HasSubstr("--project-id-range"));

  // Released, the ID is free for another volume; someone else's release of
  // it changes nothing.
  uint32_t freed = *seen.begin();
  std::string holder;
  for (int i = 0; i < 3; ++i) {
    std::string v = absl::StrCat("pvc-", i);
    if (*FindProjectClaim(*sys_, root_, v) == freed) holder = v;
  }
  ASSERT_FALSE(holder.empty());
  ASSERT_TRUE(ReleaseProjectId(*sys_, root_, freed, "pvc-other").ok());
  EXPECT_EQ(Claim("pvc-3", {4294967292u, 4294967294u}).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(ReleaseProjectId(*sys_, root_, freed, holder).ok());
  absl::StatusOr<uint32_t> reused = Claim("pvc-3", {4294967292u, 4294967294u});
  ASSERT_TRUE(reused.ok()) << reused.status();
  EXPECT_EQ(*reused, freed);
}

// An unmarked claim (a controller that died between mkdir and marker) is
// never taken: it may be in use.
TEST_F(ProjectIdsTest, AnUnmarkedClaimIsSkipped) {
  ASSERT_TRUE(sys_->MkdirBeneath(root_, kProjectClaimDir, 0755).ok());
  for (uint32_t id = 10; id <= 11; ++id) {
    ASSERT_TRUE(sys_->MkdirBeneath(root_, absl::StrCat(kProjectClaimDir, "/", id), 0755).ok());
  }
  absl::StatusOr<uint32_t> id = Claim("pvc-a", {10, 12});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 12u);
}

TEST_F(ProjectIdsTest, ClaimsRacingFromManyThreadsAreDistinct) {
  constexpr int kVolumes = 24;
  absl::Mutex mu;
  std::vector<uint32_t> ids;
  std::vector<std::thread> threads;
  for (int i = 0; i < kVolumes; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<uint32_t> id = Claim(absl::StrCat("pvc-", i), {1, kVolumes});
      absl::MutexLock l(&mu);
      ids.push_back(id.ok() ? *id : 0);
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint32_t> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kVolumes));
  EXPECT_EQ(distinct.count(0), 0u) << "a claim failed";
}

TEST_F(ProjectIdsTest, TheLargestRecordedLimitsWin) {
  absl::StatusOr<uint32_t> id = Claim("pvc-a");
  ASSERT_TRUE(id.ok());
  RecordedLimits none = *ReadRecordedLimits(*sys_, root_, *id);
  EXPECT_EQ(none.bytes, 0u);
  ASSERT_TRUE(RecordLimits(*sys_, root_, *id, {10 << 20, 500}).ok());
  ASSERT_TRUE(RecordLimits(*sys_, root_, *id, {30 << 20, 500}).ok());
  ASSERT_TRUE(RecordLimits(*sys_, root_, *id, {20 << 20, 500}).ok());
  ASSERT_TRUE(RecordLimits(*sys_, root_, *id, {30 << 20, 500}).ok());  // again: OK
  RecordedLimits got = *ReadRecordedLimits(*sys_, root_, *id);
  EXPECT_EQ(got.bytes, uint64_t{30} << 20);
  EXPECT_EQ(got.inodes, 500u);
  // Released with its records.
  ASSERT_TRUE(ReleaseProjectId(*sys_, root_, *id, "pvc-a").ok());
  EXPECT_EQ(ReadRecordedLimits(*sys_, root_, *id).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace lustre_csi::driver
