#include "pkg/csimanager/internal/keyed_queue.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
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
    KeyedQueue::Turn first = queue.Enter("vol");
    for (int i = 0; i < 5; ++i) {
      threads.emplace_back([&, i] {
        KeyedQueue::Turn turn = queue.Enter("vol");
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
  KeyedQueue::Turn held = queue.Enter("a");
  std::thread other([&] { KeyedQueue::Turn turn = queue.Enter("b"); });
  other.join();  // would hang if "b" waited for "a"
  EXPECT_EQ(queue.Queued("a"), 1);
  EXPECT_EQ(queue.Queued("b"), 0);
}

TEST(KeyedQueueTest, TurnsMove) {
  KeyedQueue queue;
  {
    KeyedQueue::Turn a = queue.Enter("k");
    KeyedQueue::Turn b = std::move(a);
    EXPECT_EQ(queue.Queued("k"), 1);
  }
  EXPECT_EQ(queue.Queued("k"), 0);
  KeyedQueue::Turn again = queue.Enter("k");
}

}  // namespace
}  // namespace lustre_csi::csimanager
