// Fault switches for a Syscalls, by SyscallOp.
//
// FailNext(op, errno, n) fails the next n calls of op with that errno;
// Hang(op) blocks every call of op until Release(op); HangNext(op, n) blocks
// only the next n calls (also until Release). Every call is counted
// (CallCount). FakeSyscalls has these switches built in; FaultSyscalls
// (fault_syscalls.h) puts them in front of any implementation, the real one
// included.
//
// An implementation opens a Call at the start of each method and keeps it
// for the whole method; Shutdown() (called first by the implementation's
// destructor) releases every hung call and waits until every Call has
// ended, so no call touches the implementation after it is gone.
// Thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_TESTING_FAULT_INJECTOR_H_
#define LUSTRE_CSI_PKG_VOLUME_TESTING_FAULT_INJECTOR_H_

#include <array>
#include <atomic>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::volume {

// An Isolation for tests: runs the work in place, on the calling thread,
// marked as isolated meanwhile (InMarkedIsolation; FaultInjector counts the
// calls made there), and counts its runs.
class MarkingIsolation : public Isolation {
 public:
  void Run(const std::function<void()>& fn) override;
  int runs() const { return runs_.load(); }

 private:
  std::atomic<int> runs_{0};
};

// Whether the calling thread runs a MarkingIsolation's work now.
bool InMarkedIsolation();

class FaultInjector {
 public:
  using Op = SyscallOp;

  FaultInjector() = default;
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  void FailNext(Op op, int err, int times = 1);
  void Hang(Op op);
  void HangNext(Op op, int times = 1);
  // Lets every blocked call of `op` go on and stops Hang(op).
  void Release(Op op);
  int CallCount(Op op) const;
  // Of those, the calls made inside a MarkingIsolation's work.
  int IsolatedCallCount(Op op) const;
  // Calls of `op` blocked by Hang right now, and a bounded wait (real time,
  // a guard for hung tests) for `n` of them.
  int HungCount(Op op) const;
  bool AwaitHung(Op op, int n, absl::Duration timeout) const;
  // Zeroes the call counts.
  void ResetCalls();

  // One call of the implementation, from Enter() to the end of the method.
  class Call {
   public:
    Call(Call&& other) noexcept : injector_(other.injector_), status_(std::move(other.status_)) {
      other.injector_ = nullptr;
    }
    Call& operator=(Call&&) = delete;
    ~Call();
    // The error FailNext asked for; OK otherwise.
    const absl::Status& status() const { return status_; }

   private:
    friend class FaultInjector;
    Call(FaultInjector* injector, absl::Status status)
        : injector_(injector), status_(std::move(status)) {}
    FaultInjector* injector_;
    absl::Status status_;
  };

  // Counts a call of `op` (`what` names it in an injected error), waits
  // while Hang/HangNext hold it, and returns it with FailNext's error, if any.
  Call Enter(Op op, absl::string_view what);

  // See the class comment. Idempotent.
  void Shutdown();

 private:
  void Leave();

  mutable absl::Mutex mu_;
  std::array<int, kNumSyscallOps> calls_ ABSL_GUARDED_BY(mu_) = {};
  std::array<int, kNumSyscallOps> isolated_calls_ ABSL_GUARDED_BY(mu_) = {};
  std::array<int, kNumSyscallOps> fail_errno_ ABSL_GUARDED_BY(mu_) = {};
  std::array<int, kNumSyscallOps> fail_times_ ABSL_GUARDED_BY(mu_) = {};
  std::array<bool, kNumSyscallOps> hung_ ABSL_GUARDED_BY(mu_) = {};
  std::array<int, kNumSyscallOps> hang_next_ ABSL_GUARDED_BY(mu_) = {};
  std::array<int, kNumSyscallOps> release_gen_ ABSL_GUARDED_BY(mu_) = {};
  std::array<int, kNumSyscallOps> waiting_ ABSL_GUARDED_BY(mu_) = {};
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_TESTING_FAULT_INJECTOR_H_
