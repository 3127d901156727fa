// Retries that join the call they repeat.
//
// JoinedCalls::Run(key, fn) runs `fn` on the calling thread when no call for
// `key` is in flight; a Run for a key whose call is in flight does not run
// `fn` again but waits for that call's outcome, at most until `bound` after
// that call started, and then answers UNAVAILABLE saying since when it is in
// progress. So a caller that retries (a CO whose own deadline passed) meets
// the outcome of what it asked for, or that it is still going on, never a
// second copy of the work. The first caller costs one map lookup and no
// thread.
//
// Thread-safe; `clock` (borrowed) tells the time reported and compared,
// waits are real durations.
#ifndef LUSTRE_CSI_PKG_BASE_JOINED_CALLS_H_
#define LUSTRE_CSI_PKG_BASE_JOINED_CALLS_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"

namespace lustre_csi::base {

class JoinedCalls {
 public:
  JoinedCalls(Clock* clock, absl::Duration bound) : clock_(clock), bound_(bound) {}

  absl::Status Run(const std::string& key, const std::function<absl::Status()>& fn);

  // Keys with a call in flight now, and callers waiting for one.
  int InFlight();
  int Waiting();

 private:
  struct Flight {
    absl::Time started;
    absl::Mutex mu;
    std::optional<absl::Status> result ABSL_GUARDED_BY(mu);
  };

  Clock* const clock_;
  const absl::Duration bound_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_JOINED_CALLS_H_
