// The Linux Isolation: work runs in a task that shares the process's memory
// but not its thread group, while the calling thread waits for it,
// killably. So a wait in the kernel that never ends (a Lustre call in
// uninterruptible sleep) holds that task only: the process can still exit,
// and AbandonAll, called before it does, sends SIGKILL to every task, which
// then dies as soon as the kernel lets it go, before it runs any more of
// its work.
//
// Each calling thread has one such task, made at its first work (clone(2)
// with CLONE_VM, on a stack of its own) and kept for the thread's lifetime:
// handing it work costs two futex wake-ups, not a clone and a reap. The task
// runs with the caller's thread-local state (errno, allocator caches); the
// two take turns, the thread waiting in a raw futex call while the task
// works, and the task waiting the same way otherwise, so neither touches
// that state while the other may. So the work must not start threads (a
// thread started there would join the task's thread group, and
// WorkerPool::StartDetachedThread refuses: base::InIsolatedTask), and work
// run from inside a task runs on in that task. Once AbandonAll ran, no work
// starts any more. Where a task cannot be made, the work runs on the calling
// thread (logged once).
//
// A task lives and dies with its process as a thread does: it gets SIGKILL
// when its thread dies (PR_SET_PDEATHSIG; a killed process takes its tasks
// with it as soon as the kernel lets them go), it ends with its thread, and
// a task killed by a signal from outside, not by AbandonAll, takes its
// process with it (the state its work left is not known; a restart
// converges). A child of fork(2) makes tasks of its own.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_ISOLATED_TASK_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_ISOLATED_TASK_H_

#include "pkg/volume/isolation.h"

namespace lustre_csi::volume {

// The process-wide one; never destroyed.
Isolation* IsolatedTasks();

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_ISOLATED_TASK_H_
