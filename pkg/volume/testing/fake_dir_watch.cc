#include "pkg/volume/testing/fake_dir_watch.h"

#include <utility>

#include "absl/time/time.h"

namespace lustre_csi::volume {

void FakeDirEvents::Push(DirEvent event) {
  absl::MutexLock lock(&mu_);
  events_.push_back(std::move(event));
}

void FakeDirEvents::Wake() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

void FakeDirEvents::Break(absl::Status status) {
  absl::MutexLock lock(&mu_);
  broken_ = std::move(status);
}

absl::StatusOr<std::vector<DirEvent>> FakeDirEvents::Wait() {
  absl::MutexLock lock(&mu_);
  ++wait_calls_;
  ++waiters_;
  mu_.Await(absl::Condition(
      +[](FakeDirEvents* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return !self->events_.empty() || self->woken_ || !self->broken_.ok();
      },
      this));
  --waiters_;
  if (!broken_.ok()) return broken_;
  woken_ = false;
  std::vector<DirEvent> out;
  out.swap(events_);
  return out;
}

int FakeDirEvents::WaitCalls() {
  absl::MutexLock lock(&mu_);
  return wait_calls_;
}

bool FakeDirEvents::AwaitDrained() {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](FakeDirEvents* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                    return self->events_.empty() && self->waiters_ > 0;
                                  },
                                  this),
                              absl::Seconds(30));
}

}  // namespace lustre_csi::volume
