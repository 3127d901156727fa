#include "pkg/base/worker_pool.h"

#include <dirent.h>

#include <atomic>
#include <memory>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "pkg/base/wait_until.h"

namespace lustre_csi::base {
namespace {

int ThreadsInProcess() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

TEST(WorkerPoolTest, SequentialTasksReuseOneWorker) {
  auto runner = std::make_unique<WorkerPool>();
  for (int i = 0; i < 100; ++i) {
    absl::Notification done;
    ASSERT_TRUE(runner->Run([&] { done.Notify(); }).ok());
    done.WaitForNotification();
    // The worker is back to waiting before the next task.
    ASSERT_TRUE(WaitUntil([&] { return runner->threads_idle() == 1; }, absl::Seconds(10)));
  }
  EXPECT_EQ(runner->threads_started(), 1) << "a thread per call";
}

TEST(WorkerPoolTest, HungTaskDoesNotBlockOthers) {
  auto runner = std::make_unique<WorkerPool>();
  // Shared: the hung task may still be waking when the test returns.
  auto release = std::make_shared<absl::Notification>();
  absl::Notification hung_started;
  ASSERT_TRUE(runner
                  ->Run([&hung_started, release] {
                    hung_started.Notify();
                    release->WaitForNotification();
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
  release->Notify();
}

TEST(WorkerPoolTest, ConcurrentTasksGetTheirOwnWorkers) {
  auto runner = std::make_unique<WorkerPool>();
  constexpr int kTasks = 6;
  // Shared: the tasks may still be waking when the test returns.
  auto release = std::make_shared<absl::Notification>();
  auto waiting = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_TRUE(runner
                    ->Run([release, waiting] {
                      ++*waiting;
                      release->WaitForNotification();
                    })
                    .ok());
  }
  // All of them run at once: none waits for another to finish.
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (waiting->load() < kTasks && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(waiting->load(), kTasks);
  release->Notify();
}

// The pool can go while a task still runs: the task finishes on its worker,
// and every worker exits.
TEST(WorkerPoolTest, DestroyedPoolLetsTheRunningTaskFinishAndItsWorkersExit) {
  // Only the main thread once the workers of the pools before have gone.
  ASSERT_TRUE(WaitUntil([] { return ThreadsInProcess() == 1; }, absl::Seconds(10)))
      << ThreadsInProcess();
  const int threads_before = 1;
  auto runner = std::make_unique<WorkerPool>();
  absl::Notification release, started;
  auto finished = std::make_shared<std::atomic<bool>>(false);
  ASSERT_TRUE(runner
                  ->Run([&, finished] {
                    started.Notify();
                    release.WaitForNotification();
                    *finished = true;
                  })
                  .ok());
  absl::Notification idle_done;
  ASSERT_TRUE(runner->Run([&] { idle_done.Notify(); }).ok());
  idle_done.WaitForNotification();
  started.WaitForNotification();
  EXPECT_EQ(runner->threads_alive(), 2);
  runner.reset();
  release.Notify();
  EXPECT_TRUE(WaitUntil([&] { return finished->load(); }, absl::Seconds(10)));
  // Both workers are gone: the process is back to the threads it had.
  EXPECT_TRUE(WaitUntil([&] { return ThreadsInProcess() == threads_before; }, absl::Seconds(10)))
      << ThreadsInProcess() << " threads, " << threads_before << " before";
}

// A thread that cannot start: the task is not run and the caller is told.
TEST(WorkerPoolTest, ThreadThatCannotStartFailsTheTaskWhichNeverRuns) {
  std::atomic<int> attempts{0};
  WorkerPool pool(4, absl::Seconds(30), 256 * 1024, [&](void* (*)(void*), void*, size_t) {
    ++attempts;
    return EAGAIN;
  });
  auto ran = std::make_shared<std::atomic<bool>>(false);
  absl::Status status = pool.Run([ran] { *ran = true; });
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_EQ(attempts.load(), 1);
  EXPECT_EQ(pool.threads_alive(), 0);
  EXPECT_FALSE(ran->load());
}

// The thread for a task cannot start, but a busy worker comes free and takes
// the task meanwhile: then the task runs, and Run says OK (a caller told
// otherwise would answer twice).
TEST(WorkerPoolTest, TaskTakenByAFreedWorkerWhileAThreadFailsIsReportedAsRunning) {
  auto release_busy = std::make_shared<absl::Notification>();
  auto second_started = std::make_shared<absl::Notification>();
  std::atomic<int> starts{0};
  WorkerPool pool(4, absl::Seconds(30), 256 * 1024,
                  [&](void* (*main)(void*), void* arg, size_t stack) {
                    if (starts++ == 0) return WorkerPool::StartDetachedThread(main, arg, stack);
                    // The second thread "fails" only once the busy worker has
                    // taken the second task.
                    release_busy->Notify();
                    second_started->WaitForNotification();
                    return EAGAIN;
                  });
  absl::Notification busy_started;
  ASSERT_TRUE(pool.Run([&busy_started, release_busy] {
                    busy_started.Notify();
                    release_busy->WaitForNotification();
                  })
                  .ok());
  busy_started.WaitForNotification();
  absl::Status status = pool.Run([second_started] { second_started->Notify(); });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(second_started->HasBeenNotified());
}

}  // namespace
}  // namespace lustre_csi::base
