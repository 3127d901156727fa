#include "absl/time/clock.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"
#include "pkg/base/cancel.h"
#include "pkg/base/clock.h"
#include "pkg/base/fake_clock.h"

namespace lustre_csi::base {
namespace {

TEST(CancelTokenTest, CallbacksRunOnceAndLateOnesRunAtOnce) {
  CancelToken token;
  int runs = 0;
  CancelToken::CallbackId id = token.AddCallback([&] { ++runs; });
  EXPECT_NE(id, 0u);
  token.Cancel();
  token.Cancel();
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(token.cancelled());
  EXPECT_EQ(token.AddCallback([&] { ++runs; }), 0u);
  EXPECT_EQ(runs, 2);
  token.RemoveCallback(id);  // harmless after it ran
}

TEST(CancelTokenTest, RemovedCallbacksDoNotRun) {
  CancelToken token;
  bool ran = false;
  {
    ScopedCancelCallback scoped(&token, [&] { ran = true; });
  }
  token.Cancel();
  EXPECT_FALSE(ran);
}

TEST(CancelTokenTest, WaitUntilReturnsOnCancel) {
  CancelToken token;
  std::thread canceller([&] { token.Cancel(); });
  EXPECT_TRUE(token.WaitUntil(absl::InfiniteFuture()));
  canceller.join();
  CancelToken idle;
  EXPECT_FALSE(idle.WaitUntil(absl::InfinitePast()));
}

TEST(RealClockTest, CancelledSleepReturnsFalse) {
  CancelToken token;
  token.Cancel();
  EXPECT_FALSE(RealClock()->SleepFor(absl::Hours(1), &token));
  EXPECT_TRUE(RealClock()->SleepFor(absl::ZeroDuration(), nullptr));
}

TEST(FakeClockTest, SleepersWakeWhenTimeAdvances) {
  FakeClock clock;
  absl::Time start = clock.Now();
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    EXPECT_TRUE(clock.SleepFor(absl::Seconds(30), nullptr));
    woke = true;
  });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  clock.Advance(absl::Seconds(29));
  EXPECT_FALSE(woke);
  clock.Advance(absl::Seconds(1));
  sleeper.join();
  EXPECT_TRUE(woke);
  EXPECT_EQ(clock.Now() - start, absl::Seconds(30));
  EXPECT_EQ(clock.sleeps(), std::vector<absl::Duration>{absl::Seconds(30)});
}

TEST(FakeClockTest, CancelWakesSleeper) {
  FakeClock clock;
  CancelToken token;
  bool result = true;
  std::thread sleeper([&] { result = clock.SleepFor(absl::Hours(1), &token); });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  token.Cancel();
  sleeper.join();
  EXPECT_FALSE(result);
  EXPECT_EQ(clock.sleepers(), 0);
}

TEST(FakeClockTest, AutoAdvance) {
  FakeClock clock;
  clock.SetAutoAdvance(true);
  absl::Time start = clock.Now();
  EXPECT_TRUE(clock.SleepFor(absl::Seconds(2), nullptr));
  EXPECT_TRUE(clock.SleepFor(absl::Seconds(4), nullptr));
  EXPECT_EQ(clock.Now() - start, absl::Seconds(6));
  CancelToken token;
  token.Cancel();
  EXPECT_FALSE(clock.SleepFor(absl::Seconds(1), &token));
}

}  // namespace
}  // namespace lustre_csi::base
