// The Linux Isolation: each piece of work runs in a task of its own that
// shares the process's memory but not its thread group (clone(2) with
// CLONE_VM | CLONE_VFORK, on a stack of its own), while the calling thread
// waits for it as vfork(2) waits, killably. So a wait in the kernel that
// never ends (a Lustre call in uninterruptible sleep) holds that task only:
// the process can still exit, and AbandonAll, called before it does, sends
// SIGKILL to every task still running, which then dies as soon as the
// kernel lets it go, before it runs any more of its work. The work sees the
// caller's thread-local state (errno, allocator caches), which the caller
// does not use while it waits; so the work must not start threads, and work
// run from inside a task runs on in that task. Once AbandonAll ran, no work
// starts any more. Where clone(2) fails, the work runs on the calling thread
// (logged once).
//
// A task lives and dies with its process as a thread does: it gets SIGKILL
// when the thread waiting for it dies (PR_SET_PDEATHSIG; a killed process
// takes its tasks with it as soon as the kernel lets them go), and a task
// killed by a signal from outside, not by AbandonAll, takes its process with
// it (the state its work left is not known; a restart converges).
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_ISOLATED_TASK_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_ISOLATED_TASK_H_

#include "pkg/volume/isolation.h"

namespace lustre_csi::volume {

// The process-wide one; never destroyed.
Isolation* IsolatedTasks();

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_ISOLATED_TASK_H_
