#include "pkg/volume/linux/isolated_task.h"

#include <glog/logging.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "absl/synchronization/mutex.h"

namespace lustre_csi::volume {
namespace {

// The work's own stack, above a guard page; the calling thread is suspended
// meanwhile.
constexpr size_t kStackBytes = 512 * 1024;
constexpr size_t kGuardBytes = 4096;

// Set for good once the process ends: work not started yet never starts.
std::atomic<bool> abandoned{false};
// Set on the calling thread's storage while its task runs (the task shares
// it): work inside a task runs on, never in a task of its own.
thread_local bool in_task = false;

struct Job {
  const std::function<void()>* fn;
};

// The stack of the calling thread's tasks, unmapped when the thread ends (it
// cannot end while a task of its runs: it waits for it).
struct TaskStack {
  void* base = nullptr;  // the guard page, then the stack
  ~TaskStack() {
    if (base != nullptr) munmap(base, kGuardBytes + kStackBytes);
  }
};

int TaskMain(void* arg) {
  if (abandoned.load()) return 0;  // the process ends: none of the work
  (*static_cast<Job*>(arg)->fn)();
  return 0;  // the clone(2) wrapper ends this task only (SYS_exit)
}

class Tasks : public Isolation {
 public:
  void Run(const std::function<void()>& fn) override {
    if (abandoned.load()) return;  // the process ends
    if (in_task) return fn();      // already in a task of its own
    // One stack per calling thread: a thread runs one task at a time, and a
    // task that never ends keeps its thread waiting too.
    thread_local TaskStack stack;
    if (stack.base == nullptr) {
      void* mapped = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
      if (mapped == MAP_FAILED) return Inline(fn, "mmap", errno);
      if (mprotect(mapped, kGuardBytes, PROT_NONE) != 0) {
        int err = errno;
        munmap(mapped, kGuardBytes + kStackBytes);
        return Inline(fn, "mprotect", err);
      }
      stack.base = mapped;
    }
    Job job{&fn};
    // The kernel writes the task's id here before the task runs (the caller
    // is suspended until it ends, so AbandonAll reads it from the set).
    auto tid = std::make_unique<std::atomic<pid_t>>(0);
    std::atomic<pid_t>* slot = tid.get();
    {
      absl::MutexLock lock(&mu_);
      running_.insert(slot);
    }
    char* top = static_cast<char*>(stack.base) + kGuardBytes + kStackBytes;
    // The descriptor table and the file-system context are shared as a
    // thread shares them: a descriptor the process closes is closed for the
    // task too (a pipe's end it held would keep its reader waiting). Its end
    // signals nothing (waitpid with __WALL reaps it): a SIGCHLD to the
    // process per task cost a third of the task's price. The task sees this
    // thread's storage: work it runs that would isolate itself again runs on
    // in place (set and cleared here, so a task killed midway leaves it
    // right).
    in_task = true;
    pid_t pid =
        clone(&TaskMain, top, CLONE_VM | CLONE_FILES | CLONE_FS | CLONE_VFORK | CLONE_PARENT_SETTID,
              &job, reinterpret_cast<pid_t*>(slot));
    int err = errno;
    {
      absl::MutexLock lock(&mu_);
      running_.erase(slot);
    }
    in_task = false;
    if (pid < 0) return Inline(fn, "clone", err);
    while (waitpid(pid, nullptr, __WALL) < 0 && errno == EINTR) {
    }
  }

  void AbandonAll() override {
    abandoned.store(true);  // a task not started yet never runs its work
    absl::MutexLock lock(&mu_);
    for (std::atomic<pid_t>* slot : running_) {
      pid_t pid = slot->load();
      if (pid > 0) kill(pid, SIGKILL);
    }
  }

 private:
  void Inline(const std::function<void()>& fn, const char* what, int err) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) {
      LOG(WARNING) << "work that may wait on a file system runs on the calling thread: " << what
                   << ": " << strerror(err);
    }
    fn();
  }

  absl::Mutex mu_;
  std::set<std::atomic<pid_t>*> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

Isolation* IsolatedTasks() {
  static Isolation* tasks = new Tasks();
  return tasks;
}

}  // namespace lustre_csi::volume
