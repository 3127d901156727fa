#include "pkg/csimanager/internal/keyed_queue.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace lustre_csi::csimanager {
namespace {

constexpr absl::Duration kGuard = absl::Seconds(30);  // hang guard, not a measurement

TEST(KeyedQueueTest, OneKeyRunsInArrivalOrder) {
  KeyedQueue queue;
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  {
    KeyedQueue::Turn first = *queue.Enter("vol");
    for (int i = 0; i < 5; ++i) {
      threads.emplace_back([&, i] {
        KeyedQueue::Turn turn = *queue.Enter("vol");
        absl::MutexLock lock(&mu);
        order.push_back(i);
      });
      // Thread i is queued before thread i+1 starts.
      ASSERT_TRUE(queue.AwaitQueued("vol", i + 2, kGuard));
    }
    EXPECT_EQ(queue.Queued("vol"), 6);
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(order.empty());
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(queue.Queued("vol"), 0);
}

TEST(KeyedQueueTest, OtherKeysDoNotWait) {
  KeyedQueue queue;
  KeyedQueue::Turn held = *queue.Enter("a");
  std::thread other([&] { KeyedQueue::Turn turn = *queue.Enter("b"); });
  other.join();  // would hang if "b" waited for "a"
  EXPECT_EQ(queue.Queued("a"), 1);
  EXPECT_EQ(queue.Queued("b"), 0);
}

// A caller that gives up at its deadline leaves the line: the ones behind
// it are served in order without it, and a later caller is not held up by
// its place.
TEST(KeyedQueueTest, ACallerThatGivesUpLeavesItsPlace) {
  KeyedQueue queue;
  std::vector<std::string> order;
  absl::Mutex mu;
  std::thread after;
  {
    KeyedQueue::Turn held = *queue.Enter("vol");
    absl::Time start = absl::Now();
    absl::StatusOr<KeyedQueue::Turn> late =
        queue.Enter("vol", absl::Now() + absl::Milliseconds(100));
    EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded) << late.status();
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));
    EXPECT_EQ(queue.Queued("vol"), 1);
    // Two more give up behind the holder, one waits; then one more gives up
    // behind the waiter.
    for (int i = 0; i < 2; ++i) {
      EXPECT_FALSE(queue.Enter("vol", absl::Now() + absl::Milliseconds(10)).ok());
    }
    after = std::thread([&] {
      KeyedQueue::Turn turn = *queue.Enter("vol");
      absl::MutexLock lock(&mu);
      order.push_back("waiter");
    });
    ASSERT_TRUE(queue.AwaitQueued("vol", 2, kGuard));
    EXPECT_FALSE(queue.Enter("vol", absl::Now() + absl::Milliseconds(10)).ok());
    EXPECT_EQ(queue.Queued("vol"), 2);
  }
  after.join();  // would hang if the line waited for a place given up
  EXPECT_EQ(order, std::vector<std::string>{"waiter"});
  EXPECT_EQ(queue.Queued("vol"), 0);
  absl::StatusOr<KeyedQueue::Turn> now = queue.Enter("vol", absl::Now() + kGuard);
  EXPECT_TRUE(now.ok()) << now.status();
}

TEST(KeyedQueueTest, TurnsMove) {
  KeyedQueue queue;
  {
    KeyedQueue::Turn a = *queue.Enter("k");
    KeyedQueue::Turn b = std::move(a);
    EXPECT_EQ(queue.Queued("k"), 1);
  }
  EXPECT_EQ(queue.Queued("k"), 0);
  KeyedQueue::Turn again = *queue.Enter("k");
}

}  // namespace
}  // namespace lustre_csi::csimanager
