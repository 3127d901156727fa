// The work runs in a task of its own that shares the process's memory: what
// it writes is seen by the caller, which waits for it; it is not one of the
// process's threads; and a task that does not end is killed by AbandonAll.
#include "pkg/volume/linux/isolated_task.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "pkg/base/worker_pool.h"

namespace lustre_csi::volume {
namespace {

// Whether the process `pid` is gone (reaped, or a zombie) within 10 s.
bool AwaitGone(pid_t pid) {
  auto gone = [pid] {
    std::string stat;
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    if (!std::getline(in, stat)) return true;
    size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() &&
           (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
  };
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!gone() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  return gone();
}

// The thread ids of this process's thread group.
std::vector<pid_t> Threads() {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    int tid = 0;
    if (absl::SimpleAtoi(entry.path().filename().string(), &tid)) out.push_back(tid);
  }
  return out;
}

TEST(IsolatedTaskTest, RunsInATaskOfItsOwnSharingMemory) {
  std::string written;
  pid_t task_pid = 0;
  pid_t task_tid = 0;
  std::vector<pid_t> threads_seen;
  IsolatedTasks()->Run([&] {
    written = std::string(1000, 'x');  // allocates, as real work does
    task_pid = getpid();
    task_tid = static_cast<pid_t>(syscall(SYS_gettid));
  });
  EXPECT_EQ(written.size(), 1000u) << "the caller does not see what the task wrote";
  EXPECT_NE(task_pid, getpid()) << "ran as this process";
  EXPECT_NE(task_tid, static_cast<pid_t>(syscall(SYS_gettid)));
  std::vector<pid_t> threads = Threads();
  ASSERT_FALSE(threads.empty());
  for (pid_t tid : threads) EXPECT_NE(tid, task_tid) << "the task is one of our threads";
  // Many in a row and from several threads, each on its own stack.
  std::atomic<int> runs{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) IsolatedTasks()->Run([&] { runs.fetch_add(1); });
    });
  }
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(runs.load(), 200);
}

// Work run from inside a task runs on in that task (a nested task would
// take the stack the outer one runs on); a descriptor the process opens or
// closes meanwhile is the task's too (one table, as a thread has).
TEST(IsolatedTaskTest, NestedWorkAndDescriptorsAreSharedAsByAThread) {
  pid_t outer = 0, inner = 0;
  int fds[2] = {-1, -1};
  ASSERT_EQ(pipe(fds), 0);
  bool closed_in_task = false;
  IsolatedTasks()->Run([&] {
    outer = getpid();
    IsolatedTasks()->Run([&] { inner = getpid(); });
    closed_in_task = close(fds[1]) == 0;
  });
  EXPECT_EQ(inner, outer);
  EXPECT_TRUE(closed_in_task);
  char c;
  EXPECT_EQ(read(fds[0], &c, 1), 0) << "the write end is still open somewhere";
  close(fds[0]);
}

// A thread started from inside a task would belong to the task, which could
// then not be reaped before that thread ended: none starts there (EPERM),
// and the calling thread may start threads again once the task is over.
TEST(IsolatedTaskTest, NoThreadStartsInsideATask) {
  auto main = +[](void* arg) -> void* {
    static_cast<std::atomic<bool>*>(arg)->store(true);
    return nullptr;
  };
  std::atomic<bool> ran{false};
  int inside = -1;
  bool marked = false;
  IsolatedTasks()->Run([&] {
    marked = base::InIsolatedTask();
    inside = base::WorkerPool::StartDetachedThread(main, &ran, 64 * 1024);
  });
  EXPECT_TRUE(marked);
  EXPECT_EQ(inside, EPERM);
  EXPECT_FALSE(base::InIsolatedTask());
  ASSERT_EQ(base::WorkerPool::StartDetachedThread(main, &ran, 64 * 1024), 0);
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!ran.load() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(ran.load());
}

// A thread's work goes to one task, made at its first work and kept while
// the thread lives (no clone per piece of work); the thread's end ends it.
TEST(IsolatedTaskTest, AThreadKeepsItsTaskAndTakesItAlong) {
  pid_t first = 0, second = 0;
  std::thread caller([&] {
    IsolatedTasks()->Run([&] { first = getpid(); });
    IsolatedTasks()->Run([&] { second = getpid(); });
  });
  caller.join();
  EXPECT_NE(first, getpid());
  EXPECT_EQ(first, second) << "a task per piece of work";
  // Gone with its thread: not even a zombie is left of it.
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (std::filesystem::exists(absl::StrCat("/proc/", first)) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_FALSE(std::filesystem::exists(absl::StrCat("/proc/", first)))
      << "the task of a thread that ended is still there";
}

// A thread's task killed while idle (no work of it in flight) is reaped and
// replaced at the thread's next work.
TEST(IsolatedTaskTest, AnIdleTaskKilledIsReplaced) {
  pid_t first = 0, second = 0;
  bool zombie = false;
  std::thread caller([&] {
    IsolatedTasks()->Run([&] { first = getpid(); });
    kill(first, SIGKILL);
    absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!zombie && absl::Now() < deadline) {
      std::string stat;
      std::ifstream in(absl::StrCat("/proc/", first, "/stat"));
      std::getline(in, stat);
      size_t close = stat.rfind(')');
      zombie = close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
      absl::SleepFor(absl::Milliseconds(2));
    }
    IsolatedTasks()->Run([&] { second = getpid(); });
  });
  caller.join();
  ASSERT_TRUE(zombie);
  EXPECT_NE(second, 0);
  EXPECT_NE(second, first);
  EXPECT_FALSE(std::filesystem::exists(absl::StrCat("/proc/", first))) << "not reaped";
}

// A task lives and dies with its process as a thread does: a task killed
// from outside takes the process with it (a child process here, so the
// test's own goes on), and a process killed takes its waiting task with it.
TEST(IsolatedTaskTest, ATaskAndItsProcessDieTogether) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    IsolatedTasks()->Run([] { kill(getpid(), SIGKILL); });  // the task's own pid
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the process went on after its task was killed";
  if (WIFSIGNALED(status)) EXPECT_EQ(WTERMSIG(status), SIGKILL);

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    IsolatedTasks()->Run([&] {
      pid_t task = getpid();
      (void)!write(fds[1], &task, sizeof(task));
      pause();  // until killed
    });
    _exit(0);
  }
  close(fds[1]);
  pid_t task = 0;
  ASSERT_EQ(read(fds[0], &task, sizeof(task)), static_cast<ssize_t>(sizeof(task)));
  close(fds[0]);
  ASSERT_NE(task, child);
  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, &status, 0), child);
  // The task, reparented, dies and is reaped (or shows as a zombie).
  EXPECT_TRUE(AwaitGone(task)) << "task " << task << " outlived its process";
}

// A task that would wait for ever is killed by AbandonAll, before it runs
// any more of its work; its caller, whose storage the task may have left
// half changed, waits for the process to end; and no work starts any more.
// In a child process of its own, which makes tasks of its own, so the other
// tests keep theirs whatever their order; what it saw is its exit code.
TEST(IsolatedTaskTest, AbandonAllKillsWhatStillRuns) {
  enum : int { kTaskLives = 1, kWentOn = 2, kCallerReturned = 4, kWorkRanAfter = 8 };
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<pid_t> task{0};
    std::atomic<bool> went_on{false};
    std::atomic<bool> returned{false};
    std::thread caller([&] {
      IsolatedTasks()->Run([&] {
        task = getpid();
        pause();  // waits for a signal that never comes
        went_on = true;
      });
      returned = true;
    });
    caller.detach();
    while (task.load() == 0) absl::SleepFor(absl::Milliseconds(1));
    absl::SleepFor(absl::Milliseconds(20));
    IsolatedTasks()->AbandonAll();
    int seen = AwaitGone(task.load()) ? 0 : kTaskLives;
    absl::SleepFor(absl::Milliseconds(50));
    if (went_on.load()) seen |= kWentOn;
    if (returned.load()) seen |= kCallerReturned;
    bool ran = false;
    IsolatedTasks()->Run([&] { ran = true; });
    if (ran) seen |= kWorkRanAfter;
    _exit(seen);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << WTERMSIG(status);
  const int seen = WEXITSTATUS(status);
  EXPECT_EQ(seen & kTaskLives, 0) << "the task was not killed";
  EXPECT_EQ(seen & kWentOn, 0) << "the task went on with its work";
  EXPECT_EQ(seen & kCallerReturned, 0) << "the caller went on with its storage in an unknown state";
  EXPECT_EQ(seen & kWorkRanAfter, 0) << "work started after AbandonAll";
}

}  // namespace
}  // namespace lustre_csi::volume
