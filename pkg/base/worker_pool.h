// A pool of worker threads for work that may block for long or never return
// (a system call on a dead network file system, a gRPC handler that mounts),
// so that the thread handing it over stays free.
//
// Run() hands a task to an idle worker, or starts a new worker when none is
// idle; a worker that finishes goes back to the idle set (at most `max_idle`
// are kept, and idle workers exit after `idle_timeout`). A task that never
// returns keeps its worker forever and never blocks other tasks. In steady
// state no thread is created per call. Thread-safe.
//
// Workers share the pool's state, so the pool may be destroyed at any time:
// idle workers then exit, and tasks already handed over (queued or running)
// still run to their end on their workers.
#ifndef LUSTRE_CSI_PKG_BASE_WORKER_POOL_H_
#define LUSTRE_CSI_PKG_BASE_WORKER_POOL_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace lustre_csi::base {

// Whether the calling thread's work runs in an isolated task now
// (volume::IsolatedTasks: a task that shares this thread's memory and
// storage while the thread waits for it). A thread started there would
// belong to the task, not to the process, and the task could not be reaped
// before that thread ended: StartDetachedThread refuses (EPERM) meanwhile.
// The task's starter sets and clears it around the task.
bool InIsolatedTask();
void SetInIsolatedTask(bool in_task);

class WorkerPool {
 public:
  // Starts a detached thread running `main(arg)` with a stack of
  // `stack_bytes`; returns 0 or an errno value (EPERM in an isolated task).
  // Tests replace it.
  using ThreadStarter = std::function<int(void* (*main)(void*), void* arg, size_t stack_bytes)>;
  static int StartDetachedThread(void* (*main)(void*), void* arg, size_t stack_bytes);

  explicit WorkerPool(int max_idle = 4, absl::Duration idle_timeout = absl::Seconds(30),
                      size_t stack_bytes = 256 * 1024,
                      ThreadStarter start_thread = &StartDetachedThread);
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // The process-wide pool; never destroyed.
  static WorkerPool& Default();

  // Runs `task` on a worker: OK means it runs (or already has). Fails with
  // RESOURCE_EXHAUSTED only when a needed thread cannot start; the task is
  // then not run.
  absl::Status Run(std::function<void()> task);

  // Threads started so far, alive now, and waiting for a task now (for tests
  // and benchmarks).
  int threads_started() const;
  int threads_alive() const;
  int threads_idle() const;

  struct State;  // worker_pool.cc

 private:
  std::shared_ptr<State> state_;
  ThreadStarter start_thread_;
};

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_WORKER_POOL_H_
