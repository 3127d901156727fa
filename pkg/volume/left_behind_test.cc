#include "pkg/volume/left_behind.h"

#include <thread>

#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {
namespace {

TEST(LeftBehindTest, WhatWaitsRunsWhenTheWorkEnds) {
  LeftBehind left;
  uint64_t a = left.Add();
  uint64_t b = left.Add();
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(left.Running(), 2);
  int ran = 0;
  left.WhenEnded(a, [&] { ++ran; });
  left.WhenEnded(a, [&] { ran += 10; });
  EXPECT_EQ(ran, 0) << "ran before the work ended";
  left.End(b);
  EXPECT_EQ(ran, 0) << "ran when other work ended";
  left.End(a);
  EXPECT_EQ(ran, 11);
  EXPECT_EQ(left.Running(), 0);
  left.End(a);  // once only
  EXPECT_EQ(ran, 11);
}

TEST(LeftBehindTest, WorkEndedOrUnknownRunsAtOnce) {
  LeftBehind left;
  uint64_t a = left.Add();
  left.End(a);
  bool ran = false;
  left.WhenEnded(a, [&] { ran = true; });
  EXPECT_TRUE(ran);
  ran = false;
  left.WhenEnded(12345, [&] { ran = true; });
  EXPECT_TRUE(ran);
}

// What waits may take locks of its own, and runs on the thread that ends
// the work, with no lock of the registry held: it may use the registry.
TEST(LeftBehindTest, WhatWaitsMayUseTheRegistry) {
  LeftBehind left;
  uint64_t a = left.Add();
  int running_then = -1;
  left.WhenEnded(a, [&] { running_then = left.Running(); });
  std::thread([&] { left.End(a); }).join();
  EXPECT_EQ(running_then, 0);
}

TEST(LeftBehindTest, TheIdTravelsWithTheStatus) {
  absl::Status s = WithLeftBehind(absl::DeadlineExceededError("helper killed"), 7);
  ASSERT_TRUE(LeftBehindOf(s).has_value());
  EXPECT_EQ(*LeftBehindOf(s), 7u);
  absl::Status annotated = Annotate(s, "mounting");
  EXPECT_EQ(LeftBehindOf(annotated), std::optional<uint64_t>(7));
  EXPECT_FALSE(LeftBehindOf(absl::DeadlineExceededError("x")).has_value());
  EXPECT_FALSE(LeftBehindOf(WithLeftBehind(absl::OkStatus(), 7)).has_value());
}

TEST(LeftBehindTest, TheProcessHasOneRegistry) {
  EXPECT_EQ(&ProcessLeftBehind(), &ProcessLeftBehind());
}

}  // namespace
}  // namespace lustre_csi::volume
