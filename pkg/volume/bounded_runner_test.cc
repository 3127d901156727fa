#include "pkg/volume/bounded_runner.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace lustre_csi::volume {
namespace {

TEST(BoundedRunnerTest, SequentialTasksReuseOneWorker) {
  auto* runner = new BoundedRunner();  // outlives its workers
  for (int i = 0; i < 100; ++i) {
    absl::Notification done;
    ASSERT_TRUE(runner->Run([&] { done.Notify(); }).ok());
    done.WaitForNotification();
    // Let the worker get back to waiting before the next task.
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_LE(runner->threads_started(), 2) << "a thread per call";
}

TEST(BoundedRunnerTest, HungTaskDoesNotBlockOthers) {
  auto* runner = new BoundedRunner();
  absl::Notification release, hung_started;
  ASSERT_TRUE(runner
                  ->Run([&] {
                    hung_started.Notify();
                    release.WaitForNotification();
                  })
                  .ok());
  hung_started.WaitForNotification();
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    absl::Notification done;
    ASSERT_TRUE(runner
                    ->Run([&] {
                      ++ran;
                      done.Notify();
                    })
                    .ok());
    done.WaitForNotification();
  }
  EXPECT_EQ(ran.load(), 10);
  release.Notify();
}

TEST(BoundedRunnerTest, ConcurrentTasksGetTheirOwnWorkers) {
  auto* runner = new BoundedRunner();
  constexpr int kTasks = 6;
  absl::Notification release;
  std::atomic<int> waiting{0};
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_TRUE(runner
                    ->Run([&] {
                      ++waiting;
                      release.WaitForNotification();
                    })
                    .ok());
  }
  // All of them run at once: none waits for another to finish.
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (waiting.load() < kTasks && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(waiting.load(), kTasks);
  release.Notify();
}

}  // namespace
}  // namespace lustre_csi::volume
