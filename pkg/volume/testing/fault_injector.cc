#include "pkg/volume/testing/fault_injector.h"

#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {
namespace {

int Index(SyscallOp op) { return static_cast<int>(op); }

thread_local bool in_marked_isolation = false;

}  // namespace

void MarkingIsolation::Run(const std::function<void()>& fn) {
  runs_.fetch_add(1);
  bool outer = in_marked_isolation;
  in_marked_isolation = true;
  fn();
  in_marked_isolation = outer;
}

bool InMarkedIsolation() { return in_marked_isolation; }

FaultInjector::Call::~Call() {
  if (injector_ != nullptr) injector_->Leave();
}

FaultInjector::Call FaultInjector::Enter(Op op, absl::string_view what) {
  absl::MutexLock lock(&mu_);
  int i = Index(op);
  ++calls_[i];
  if (in_marked_isolation) ++isolated_calls_[i];
  ++in_flight_;
  if (fail_times_[i] > 0) {
    --fail_times_[i];
    return Call(
        this, ErrnoError(fail_errno_[i], absl::StrCat("injected: ", SyscallOpName(op), " ", what)));
  }
  bool hang = hung_[i];
  if (!hang && hang_next_[i] > 0) {
    --hang_next_[i];
    hang = true;
  }
  if (hang && !shutting_down_) {
    ++waiting_[i];
    struct Args {
      const FaultInjector* self;
      int i;
      int gen;
    } args{this, i, release_gen_[i]};
    mu_.Await(absl::Condition(
        +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return a->self->release_gen_[a->i] != a->gen || a->self->shutting_down_;
        },
        &args));
    --waiting_[i];
  }
  return Call(this, absl::OkStatus());
}

void FaultInjector::Leave() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

void FaultInjector::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  mu_.Await(absl::Condition(
      +[](int* n) { return *n == 0; }, &in_flight_));
}

void FaultInjector::FailNext(Op op, int err, int times) {
  absl::MutexLock lock(&mu_);
  fail_errno_[Index(op)] = err;
  fail_times_[Index(op)] = times;
}

void FaultInjector::Hang(Op op) {
  absl::MutexLock lock(&mu_);
  hung_[Index(op)] = true;
}

void FaultInjector::HangNext(Op op, int times) {
  absl::MutexLock lock(&mu_);
  hang_next_[Index(op)] = times;
}

void FaultInjector::Release(Op op) {
  absl::MutexLock lock(&mu_);
  hung_[Index(op)] = false;
  hang_next_[Index(op)] = 0;
  ++release_gen_[Index(op)];
}

int FaultInjector::CallCount(Op op) const {
  absl::MutexLock lock(&mu_);
  return calls_[Index(op)];
}

int FaultInjector::IsolatedCallCount(Op op) const {
  absl::MutexLock lock(&mu_);
  return isolated_calls_[Index(op)];
}

int FaultInjector::HungCount(Op op) const {
  absl::MutexLock lock(&mu_);
  return waiting_[Index(op)];
}

bool FaultInjector::AwaitHung(Op op, int n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  struct Args {
    const FaultInjector* self;
    int i;
    int n;
  } args{this, Index(op), n};
  return mu_.AwaitWithTimeout(
      absl::Condition(
          +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS { return a->self->waiting_[a->i] >= a->n; },
          &args),
      timeout);
}

void FaultInjector::ResetCalls() {
  absl::MutexLock lock(&mu_);
  calls_ = {};
  isolated_calls_ = {};
}

}  // namespace lustre_csi::volume
