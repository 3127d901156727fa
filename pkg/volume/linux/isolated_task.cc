#include "pkg/volume/linux/isolated_task.h"

#include <glog/logging.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>

#include "absl/synchronization/mutex.h"
#include "pkg/base/worker_pool.h"

namespace lustre_csi::volume {
namespace {

// The task's own stack, above a guard page.
constexpr size_t kStackBytes = 512 * 1024;
constexpr size_t kGuardBytes = 4096;

// Set for good once the process ends: work not started yet never starts.
std::atomic<bool> abandoned{false};

// A system call that writes no errno. The task and the thread it works for
// share one thread-local storage (errno, the allocator's caches) and take
// turns using it; what each runs while the other does must leave it alone.
long RawSyscall(long n, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0,
                long a6 = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = a4;
  register long r8 asm("r8") = a5;
  register long r9 asm("r9") = a6;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 asm("x8") = n;
  register long x0 asm("x0") = a1;
  register long x1 asm("x1") = a2;
  register long x2 asm("x2") = a3;
  register long x3 asm("x3") = a4;
  register long x4 asm("x4") = a5;
  register long x5 asm("x5") = a6;
  asm volatile("svc 0"
               : "+r"(x0)
               : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
               : "memory");
  return x0;
#else
#error "raw system calls are written for x86_64 and aarch64 only"
#endif
}

// The turns of a task and its thread, in one futex word. The kernel writes
// kGone there when the task ends (CLONE_CHILD_CLEARTID) and wakes the
// thread, so a thread waiting for work that will never be done learns it.
enum : uint32_t { kGone = 0, kIdle = 1, kPosted = 2, kDone = 3, kQuit = 4 };

void Wait(std::atomic<uint32_t>* word, uint32_t while_is) {
  RawSyscall(SYS_futex, reinterpret_cast<long>(word), FUTEX_WAIT, while_is, 0, 0, 0);
}
void Wake(std::atomic<uint32_t>* word) {
  RawSyscall(SYS_futex, reinterpret_cast<long>(word), FUTEX_WAKE, 1, 0, 0, 0);
}

// A task that runs the work of one thread, one piece at a time, for the
// thread's lifetime. Made at the thread's first work; ended with the thread
// (the thread-local destructor), or killed with the process.
struct Resident {
  std::atomic<uint32_t> turn{kGone};
  const std::function<void()>* work = nullptr;
  pid_t parent = 0;           // the process
  std::atomic<pid_t> pid{0};  // the task's (CLONE_PARENT_SETTID)
  void* stack = nullptr;      // the guard page, then the stack
  bool destroyed = false;     // the thread ends: no task any more
  ~Resident();
};

// The task's life: it touches the shared thread-local storage only while
// the thread waits for its work (between kPosted and kDone).
int ResidentMain(void* arg) {
  Resident& r = *static_cast<Resident*>(arg);
  // A process killed takes its tasks with it, as it would its threads: the
  // task gets SIGKILL when its thread dies.
  RawSyscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (RawSyscall(SYS_getppid) != r.parent) return 0;  // it died before that
  while (true) {
    uint32_t turn = r.turn.load(std::memory_order_acquire);
    if (turn == kQuit) return 0;
    if (turn != kPosted) {
      Wait(&r.turn, turn);
      continue;
    }
    if (!abandoned.load()) (*r.work)();
    r.turn.store(kDone, std::memory_order_release);
    Wake(&r.turn);
  }
}

class Tasks : public Isolation {
 public:
  void Run(const std::function<void()>& fn) override {
    if (abandoned.load()) return;             // the process ends
    if (base::InIsolatedTask()) return fn();  // already in a task of its own
    thread_local Resident resident;
    if (resident.destroyed) return Inline(fn, "the thread ends", 0);
    if (resident.turn.load() != kGone && resident.parent != getpid()) {
      // A child of fork(2): the task belongs to the parent.
      resident.turn.store(kGone);
      resident.pid.store(0);
    }
    resident.work = &fn;
    // The work sees this thread's storage: work it runs that would isolate
    // itself again runs on in place, and it starts no thread
    // (base::InIsolatedTask). Set before the task may run.
    base::SetInIsolatedTask(true);
    // Posted only to a live, idle task: the kernel's kGone (the task died,
    // idle) is never overwritten.
    uint32_t idle = kIdle;
    while (!resident.turn.compare_exchange_strong(idle, kPosted, std::memory_order_acq_rel)) {
      Reap(resident);  // a task that died idle, if any
      if (const char* failed = Start(resident); failed != nullptr) {
        int err = errno;
        base::SetInIsolatedTask(false);
        return Inline(fn, failed, err);
      }
      idle = kIdle;
    }
    Wake(&resident.turn);
    uint32_t turn;
    while ((turn = resident.turn.load(std::memory_order_acquire)) == kPosted) {
      Wait(&resident.turn, kPosted);  // killably: the process can still end
    }
    if (turn == kDone) {
      uint32_t done = kDone;  // else it died since: the next Run replaces it
      resident.turn.compare_exchange_strong(done, kIdle, std::memory_order_acq_rel);
      base::SetInIsolatedTask(false);
      return;
    }
    Ended(resident);  // killed midway: does not return
  }

  void AbandonAll() override {
    abandoned.store(true);  // work not started yet never runs
    const pid_t self = getpid();
    absl::MutexLock lock(&mu_);
    for (Resident* r : tasks_) {
      pid_t pid = r->pid.load();
      if (pid > 0 && r->parent == self) kill(pid, SIGKILL);  // not a parent's, after fork
    }
  }

  void Forget(Resident& r) {
    absl::MutexLock lock(&mu_);
    tasks_.erase(&r);
  }

  // Reaps the thread's task that died (its word says kGone), if any: out of
  // the list first, so AbandonAll never kills a pid reaped and reused.
  void Reap(Resident& r) {
    pid_t pid = r.pid.load();
    if (pid <= 0) return;
    Forget(r);
    while (waitpid(pid, nullptr, __WALL) < 0 && errno == EINTR) {
    }
    r.pid.store(0);
  }

 private:
  // Makes the thread's task; the name of what failed, or null.
  const char* Start(Resident& r) {
    if (r.stack == nullptr) {
      void* mapped = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
      if (mapped == MAP_FAILED) return "mmap";
      if (mprotect(mapped, kGuardBytes, PROT_NONE) != 0) {
        int err = errno;
        munmap(mapped, kGuardBytes + kStackBytes);
        errno = err;
        return "mprotect";
      }
      r.stack = mapped;
    }
    r.parent = getpid();
    r.turn.store(kIdle);
    {
      absl::MutexLock lock(&mu_);
      tasks_.insert(&r);
    }
    char* top = static_cast<char*>(r.stack) + kGuardBytes + kStackBytes;
    // The descriptor table and the file-system context are shared as a
    // thread shares them: a descriptor the process closes is closed for the
    // task too. Its end signals nothing (reaped with __WALL): a SIGCHLD to
    // the process per task would cost more than the hand-over.
    pid_t pid =
        clone(&ResidentMain, top,
              CLONE_VM | CLONE_FILES | CLONE_FS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID, &r,
              reinterpret_cast<pid_t*>(&r.pid), nullptr, reinterpret_cast<pid_t*>(&r.turn));
    if (pid < 0) {
      int err = errno;
      r.turn.store(kGone);
      Forget(r);
      errno = err;
      return "clone";
    }
    return nullptr;
  }

  // The task ended without finishing its work. It may have left this
  // thread's storage, or a lock this thread uses (an allocator arena, the
  // logger's), half changed, so this thread touches neither again. Killed
  // from outside midway, what its work did is not known, as of a thread
  // killed, and a signal that kills a thread kills its process: so does this
  // one (a restarted driver converges from what the system shows). Where
  // the process ends anyway (AbandonAll), this thread waits for that.
  [[noreturn]] void Ended(Resident& r) {
    if (!abandoned.load()) {
      static const char kMessage[] =
          "lustre-csi: a task of the driver was killed in the middle of its work; the driver "
          "ends as a thread's death would end it\n";
      RawSyscall(SYS_write, 2, reinterpret_cast<long>(kMessage), sizeof(kMessage) - 1);
      int status = 0;
      pid_t pid = r.pid.load();
      long reaped =
          pid > 0 ? RawSyscall(SYS_wait4, pid, reinterpret_cast<long>(&status), __WALL, 0) : -1;
      int sig = reaped > 0 && WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
      RawSyscall(SYS_kill, RawSyscall(SYS_getpid), sig);
      RawSyscall(SYS_kill, RawSyscall(SYS_getpid), SIGKILL);  // one it ignores or handles
    }
    while (true) RawSyscall(SYS_ppoll, 0, 0, 0, 0, 0);  // for ever
  }

  void Inline(const std::function<void()>& fn, const char* what, int err) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) {
      LOG(WARNING) << "work that may wait on a file system runs on the calling thread: " << what
                   << ": " << strerror(err);
    }
    fn();
  }

  absl::Mutex mu_;
  // The threads' tasks alive.
  std::set<Resident*> tasks_ ABSL_GUARDED_BY(mu_);
};

Tasks* TheTasks() {
  static Tasks* tasks = new Tasks();
  return tasks;
}

// The thread ends: its task (idle, since the thread is not waiting for it)
// ends first, then its stack goes.
Resident::~Resident() {
  destroyed = true;
  if (parent == getpid()) {
    uint32_t idle = kIdle;
    if (turn.compare_exchange_strong(idle, kQuit, std::memory_order_acq_rel)) {
      Wake(&turn);
      uint32_t now;
      while ((now = turn.load(std::memory_order_acquire)) != kGone) Wait(&turn, now);
    }
    pid_t task = pid.load();
    if (task > 0) {
      TheTasks()->Forget(*this);
      while (waitpid(task, nullptr, __WALL) < 0 && errno == EINTR) {
      }
      pid.store(0);
    }
  }
  if (stack != nullptr) munmap(stack, kGuardBytes + kStackBytes);
  stack = nullptr;
}

}  // namespace

Isolation* IsolatedTasks() { return TheTasks(); }

}  // namespace lustre_csi::volume
