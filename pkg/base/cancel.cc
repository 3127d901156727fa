#include "pkg/base/cancel.h"

#include <utility>
#include <vector>

namespace lustre_csi::base {

void CancelToken::Cancel() {
  std::map<CallbackId, std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_.load(std::memory_order_relaxed)) return;
    cancelled_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
    running_callbacks_ = true;
  }
  for (auto& [id, fn] : callbacks) fn();
  absl::MutexLock lock(&mu_);
  running_callbacks_ = false;
}

bool CancelToken::WaitUntil(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithDeadline(
      absl::Condition(
          +[](std::atomic<bool>* c) { return c->load(std::memory_order_acquire); }, &cancelled_),
      deadline);
  return cancelled();
}

CancelToken::CallbackId CancelToken::AddCallback(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_.load(std::memory_order_relaxed)) {
      CallbackId id = next_id_++;
      callbacks_.emplace(id, std::move(fn));
      return id;
    }
  }
  fn();
  return 0;
}

void CancelToken::RemoveCallback(CallbackId id) {
  if (id == 0) return;
  absl::MutexLock lock(&mu_);
  callbacks_.erase(id);
  mu_.Await(absl::Condition(
      +[](bool* running) { return !*running; }, &running_callbacks_));
}

ScopedCancelCallback::ScopedCancelCallback(CancelToken* token, std::function<void()> fn)
    : token_(token) {
  if (token_ != nullptr) id_ = token_->AddCallback(std::move(fn));
}

ScopedCancelCallback::~ScopedCancelCallback() {
  if (token_ != nullptr) token_->RemoveCallback(id_);
}

}  // namespace lustre_csi::base
