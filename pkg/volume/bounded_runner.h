// A pool of worker threads for system calls that may hang (umount2 or stat on
// a dead network file system), so that a caller can stop waiting after a
// timeout while the call itself goes on elsewhere.
//
// Run() hands a task to an idle worker, or starts a new worker when none is
// idle; a worker that finishes goes back to the idle set (at most
// `max_idle` are kept, and idle workers exit after `idle_timeout`). A task
// that never returns keeps its worker forever and never blocks other tasks.
// In steady state no thread is created per call. Thread-safe. Workers hold
// a pointer to their runner, which must therefore outlive them: Default()
// lives forever, and tests leak the runners they make.
#ifndef LUSTRE_CSI_PKG_VOLUME_BOUNDED_RUNNER_H_
#define LUSTRE_CSI_PKG_VOLUME_BOUNDED_RUNNER_H_

#include <deque>
#include <functional>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lustre_csi::volume {

class BoundedRunner {
 public:
  explicit BoundedRunner(int max_idle = 4, absl::Duration idle_timeout = absl::Seconds(30));

  // The process-wide runner; never destroyed.
  static BoundedRunner& Default();

  // Runs `task` on a worker. Fails only when a needed thread cannot start.
  absl::Status Run(std::function<void()> task);

  // Threads started so far (for tests and benchmarks).
  int threads_started() const;

 private:
  void Work();

  const int max_idle_;
  const absl::Duration idle_timeout_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;  // workers waiting for a task
  int started_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_BOUNDED_RUNNER_H_
