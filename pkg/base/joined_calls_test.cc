#include "pkg/base/joined_calls.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/base/wait_until.h"

namespace lustre_csi::base {
namespace {

// A retry while the call runs joins it: it gets the call's own outcome and
// the work is done once.
TEST(JoinedCallsTest, ARetryGetsTheOutcomeOfTheCallInFlight) {
  FakeClock clock;
  JoinedCalls calls(&clock, absl::Seconds(30));
  absl::Notification release;
  std::atomic<int> runs{0};
  auto work = [&] {
    runs.fetch_add(1);
    release.WaitForNotification();
    return absl::NotFoundError("the outcome");
  };
  absl::Status first;
  std::thread owner([&] { first = calls.Run("k", work); });
  ASSERT_TRUE(WaitUntil([&] { return runs.load() == 1; }));
  absl::Status joined;
  std::thread retry([&] { joined = calls.Run("k", work); });
  ASSERT_TRUE(WaitUntil([&] { return calls.Waiting() == 1; }));
  release.Notify();
  owner.join();
  retry.join();
  EXPECT_EQ(first.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(joined.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(first.message(), joined.message());
  EXPECT_EQ(runs.load(), 1) << "the retry ran the work again";
  EXPECT_EQ(calls.InFlight(), 0);
  EXPECT_TRUE(calls.Run("k", [] { return absl::OkStatus(); }).ok()) << "a later call runs anew";
}

// A call in flight past the bound: a retry says so at once, without waiting
// and without running the work; other keys are not held up.
TEST(JoinedCallsTest, ARetryOfAStuckCallIsUnavailableAtOnce) {
  FakeClock clock;
  JoinedCalls calls(&clock, absl::Seconds(30));
  absl::Notification release;
  std::atomic<int> runs{0};
  std::thread owner([&] {
    calls
        .Run("k",
             [&] {
               runs.fetch_add(1);
               release.WaitForNotification();
               return absl::OkStatus();
             })
        .IgnoreError();
  });
  ASSERT_TRUE(WaitUntil([&] { return runs.load() == 1; }));
  clock.Advance(absl::Seconds(31));
  absl::Status retry = calls.Run("k", [&] {
    runs.fetch_add(1);
    return absl::OkStatus();
  });
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(retry.message().find("still in progress since"), std::string::npos) << retry;
  EXPECT_TRUE(calls.Run("other", [] { return absl::OkStatus(); }).ok());
  EXPECT_EQ(runs.load(), 1);
  release.Notify();
  owner.join();
}

}  // namespace
}  // namespace lustre_csi::base
