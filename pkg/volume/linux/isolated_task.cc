#include "pkg/volume/linux/isolated_task.h"

#include <glog/logging.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "absl/synchronization/mutex.h"
#include "pkg/base/worker_pool.h"

namespace lustre_csi::volume {
namespace {

// The work's own stack, above a guard page; the calling thread is suspended
// meanwhile.
constexpr size_t kStackBytes = 512 * 1024;
constexpr size_t kGuardBytes = 4096;

// Set for good once the process ends: work not started yet never starts.
std::atomic<bool> abandoned{false};

struct Job {
  const std::function<void()>* fn;
  pid_t parent;  // the process the task belongs to
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
  const Job& job = *static_cast<Job*>(arg);
  // A process killed takes its tasks with it, as it would its threads: the
  // task gets SIGKILL when the thread that waits for it dies (at once, or
  // as soon as a wait in the kernel lets it go).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != job.parent) return 0;  // it died before that
  if (abandoned.load()) return 0;         // the process ends: none of the work
  (*job.fn)();
  return 0;  // the clone(2) wrapper ends this task only (SYS_exit)
}

class Tasks : public Isolation {
 public:
  void Run(const std::function<void()>& fn) override {
    if (abandoned.load()) return;             // the process ends
    if (base::InIsolatedTask()) return fn();  // already in a task of its own
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
    Job job{&fn, getpid()};
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
    // in place, and it starts no thread (base::InIsolatedTask; set and
    // cleared here, so a task killed midway leaves it right).
    base::SetInIsolatedTask(true);
    pid_t pid =
        clone(&TaskMain, top, CLONE_VM | CLONE_FILES | CLONE_FS | CLONE_VFORK | CLONE_PARENT_SETTID,
              &job, reinterpret_cast<pid_t*>(slot));
    int err = errno;
    {
      absl::MutexLock lock(&mu_);
      running_.erase(slot);
    }
    base::SetInIsolatedTask(false);
    if (pid < 0) return Inline(fn, "clone", err);
    int status = 0;
    while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status) && !abandoned.load()) {
      // Killed from outside midway: what its work did is not known, as of
      // a thread killed, and a signal that kills a thread kills its
      // process. So does this one: a restarted driver converges from what
      // the system shows.
      LOG(ERROR) << "a task of the driver was killed by signal " << WTERMSIG(status)
                 << " in the middle of its work; the driver ends as a thread's death would end it";
      google::FlushLogFiles(google::GLOG_INFO);
      kill(getpid(), WTERMSIG(status));
      kill(getpid(), SIGKILL);  // a signal this process ignores or handles
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
