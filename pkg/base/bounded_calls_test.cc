#include "pkg/base/bounded_calls.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/base/wait_until.h"

namespace lustre_csi::base {
namespace {

class BoundedCallsTest : public testing::Test {
 protected:
  // A call that returns `value` once `release` is notified.
  std::function<absl::StatusOr<int>()> Blocking(int value) {
    return [this, value]() -> absl::StatusOr<int> {
      started_.fetch_add(1);
      release_.WaitForNotification();
      return value;
    };
  }

  FakeClock clock_;
  WorkerPool pool_;
  absl::Notification release_;
  std::atomic<int> started_{0};
};

TEST_F(BoundedCallsTest, AReturningCallAnswersItsResult) {
  BoundedCalls<int> calls(&clock_, absl::Seconds(30), 4, &pool_);
  absl::StatusOr<int> got = calls.Call("a", [] { return absl::StatusOr<int>(7); });
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 7);
  EXPECT_TRUE(WaitUntil([&] { return calls.InFlight() == 0; }));
  absl::StatusOr<int> failed =
      calls.Call("a", [] { return absl::StatusOr<int>(absl::NotFoundError("gone")); });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
}

// A caller that gives up before the bound (its deadline) is answered when
// its own wait is over, and the call goes on: a caller that waits longer
// joins it and gets its result; none starts a second call.
TEST_F(BoundedCallsTest, ACallerWithAShorterWaitIsAnsweredAtItsEnd) {
  BoundedCalls<int> calls(&clock_, absl::Seconds(60), 4, &pool_);
  absl::Time start = absl::Now();
  absl::StatusOr<int> first = calls.Call("a", Blocking(1), absl::Milliseconds(30));
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(first.status().code(), absl::StatusCode::kDeadlineExceeded) << first.status();
  EXPECT_GE(took, absl::Milliseconds(30));
  EXPECT_LT(took, absl::Seconds(30)) << "waited for the bound, not the caller";
  // Past its deadline already: answered at once.
  absl::StatusOr<int> late = calls.Call("a", Blocking(2), -absl::Seconds(1));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(calls.InFlight(), 1);
  std::thread release([this] {
    absl::SleepFor(absl::Milliseconds(30));
    release_.Notify();
  });
  absl::StatusOr<int> patient = calls.Call("a", Blocking(3));
  release.join();
  ASSERT_TRUE(patient.ok()) << patient.status();
  EXPECT_EQ(*patient, 1);
  EXPECT_EQ(started_.load(), 1) << "a caller started a second call";
}

// A stuck call answers DEADLINE_EXCEEDED after its bound; callers that come
// later join it (no second call, no second thread) and, once its bound is
// past, answer at once; when it returns, the next caller starts afresh.
TEST_F(BoundedCallsTest, AStuckCallIsJoinedNotRepeated) {
  BoundedCalls<int> calls(&clock_, absl::Milliseconds(20), 4, &pool_);
  absl::StatusOr<int> first = calls.Call("a", Blocking(1));
  EXPECT_EQ(first.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(first.status().message().find("has not returned since"), std::string::npos)
      << first.status();
  clock_.Advance(absl::Seconds(5));
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<int> again = calls.Call("a", Blocking(2));
    EXPECT_EQ(again.status().code(), absl::StatusCode::kDeadlineExceeded);
  }
  EXPECT_EQ(started_.load(), 1) << "a retry started a second call";
  ASSERT_TRUE(calls.StuckSince("a").has_value());
  EXPECT_EQ(*calls.StuckSince("a"), clock_.Now() - absl::Seconds(5));
  release_.Notify();
  EXPECT_TRUE(WaitUntil([&] { return calls.InFlight() == 0; }));
  absl::StatusOr<int> fresh = calls.Call("a", [] { return absl::StatusOr<int>(3); });
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(*fresh, 3);
}

// Other keys go on while one is stuck; past `max_in_flight` stuck keys, a
// new key is UNAVAILABLE at once, and the threads held stay that many.
TEST_F(BoundedCallsTest, StuckKeysAreBounded) {
  BoundedCalls<int> calls(&clock_, absl::Milliseconds(10), 2, &pool_);
  EXPECT_EQ(calls.Call("a", Blocking(1)).status().code(), absl::StatusCode::kDeadlineExceeded);
  absl::StatusOr<int> b = calls.Call("b", [] { return absl::StatusOr<int>(5); });
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(calls.Call("c", Blocking(1)).status().code(), absl::StatusCode::kDeadlineExceeded);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(calls.Call("d" + std::to_string(i), Blocking(1)).status().code(),
              absl::StatusCode::kUnavailable);
  }
  EXPECT_EQ(started_.load(), 2);
  EXPECT_LE(pool_.threads_alive(), 3);
  release_.Notify();
  EXPECT_TRUE(WaitUntil([&] { return calls.InFlight() == 0; }));
}

// A process that ends stops waiting: a caller waiting now answers at once,
// and so does every later one, without starting anything.
TEST_F(BoundedCallsTest, StopWaitingEndsEveryWait) {
  BoundedCalls<int> calls(&clock_, absl::Seconds(60), 4, &pool_);
  absl::StatusOr<int> waited;
  std::thread caller([&] { waited = calls.Call("a", Blocking(1)); });
  ASSERT_TRUE(WaitUntil([&] { return started_.load() == 1; }));
  absl::SleepFor(absl::Milliseconds(20));  // let the caller wait
  const absl::Time stop = absl::Now();
  calls.StopWaiting();
  caller.join();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(10));
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kUnavailable) << waited.status();
  EXPECT_NE(waited.status().message().find("shutting down"), std::string::npos);
  EXPECT_EQ(calls.Call("b", Blocking(2)).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(started_.load(), 1) << "a call started after StopWaiting";
  release_.Notify();
  EXPECT_TRUE(WaitUntil([&] { return calls.InFlight() == 0; }));
}

// The object may go while a call is stuck; the call ends on its worker.
TEST_F(BoundedCallsTest, DestroyedWhileACallIsStuck) {
  {
    BoundedCalls<int> calls(&clock_, absl::Milliseconds(5), 2, &pool_);
    EXPECT_FALSE(calls.Call("a", Blocking(1)).ok());
  }
  release_.Notify();
  EXPECT_TRUE(WaitUntil([&] { return pool_.threads_idle() == pool_.threads_alive(); }));
}

}  // namespace
}  // namespace lustre_csi::base
