// CancelToken: a one-shot "stop now" signal shared between the code that
// decides to stop (shutdown, Stop()) and the code that waits or calls out
// (sleeps between retries, gRPC calls in flight).
//
// Waiters either poll cancelled(), wait with WaitUntil(), or register a
// callback that runs once when Cancel() is called (gRPC calls register
// ClientContext::TryCancel). Thread-safe. The token must outlive every
// callback registration on it.
#ifndef LUSTRE_CSI_PKG_BASE_CANCEL_H_
#define LUSTRE_CSI_PKG_BASE_CANCEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace lustre_csi::base {

class CancelToken {
 public:
  using CallbackId = uint64_t;

  CancelToken() = default;
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Cancels once: later calls do nothing. Runs the registered callbacks on
  // this thread, without holding the token's lock.
  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Blocks until cancelled or until the real time `deadline`; returns
  // whether the token was cancelled.
  bool WaitUntil(absl::Time deadline);

  // Registers `fn` to run when Cancel() is called. When the token is already
  // cancelled `fn` runs now, on this thread, and 0 is returned.
  CallbackId AddCallback(std::function<void()> fn);
  // Unregisters; once it returns, the callback is not running and never
  // will. Must not be called from inside a callback.
  void RemoveCallback(CallbackId id);

 private:
  std::atomic<bool> cancelled_{false};
  absl::Mutex mu_;
  bool running_callbacks_ ABSL_GUARDED_BY(mu_) = false;
  CallbackId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<CallbackId, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
};

// Registers a callback for the lifetime of this object. `token` may be null.
class ScopedCancelCallback {
 public:
  ScopedCancelCallback(CancelToken* token, std::function<void()> fn);
  ~ScopedCancelCallback();
  ScopedCancelCallback(const ScopedCancelCallback&) = delete;
  ScopedCancelCallback& operator=(const ScopedCancelCallback&) = delete;

 private:
  CancelToken* token_;
  CancelToken::CallbackId id_ = 0;
};

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_CANCEL_H_
