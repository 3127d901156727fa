// Calls that may never return (a statfs of a file system whose server has
// stopped answering), made so that no caller waits past a bound and the
// threads they hold stay few.
//
// BoundedCalls<T>::Call(key, fn) runs `fn` on a worker of a WorkerPool, or
// joins the call already in flight for `key`, and waits at most `bound` for
// it. At most one call per key is in flight: callers that find one join it
// instead of starting another, so a retrying caller never adds a thread. A
// call still in flight `bound` after it started answers at once, without
// waiting again, DEADLINE_EXCEEDED saying since when it has not returned
// (StuckSince); it goes on in the background, and once it returns the next
// Call for its key starts afresh. A caller that gives up sooner (its own
// deadline: `caller_wait`) is answered the same way when its wait is over.
// At most `max_in_flight` keys may have a call in flight: a Call for another
// key then answers UNAVAILABLE at once.
//
// StopWaiting() (a process that ends) makes every caller waiting now
// answer UNAVAILABLE at once, and every later Call too.
//
// Thread-safe. The object may be destroyed while calls are in flight: they
// finish on their workers and their results are dropped. What `fn` borrows
// must outlive it. T must not be a Status: StatusOr<Status> takes a Status
// for its error.
#ifndef LUSTRE_CSI_PKG_BASE_BOUNDED_CALLS_H_
#define LUSTRE_CSI_PKG_BASE_BOUNDED_CALLS_H_

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/clock.h"
#include "pkg/base/worker_pool.h"

namespace lustre_csi::base {

template <typename T>
class BoundedCalls {
 public:
  // `clock` tells the time reported and compared (borrowed); waits are real
  // durations. `pool` (borrowed) runs the calls.
  BoundedCalls(Clock* clock, absl::Duration bound, int max_in_flight,
               WorkerPool* pool = &WorkerPool::Default())
      : state_(std::make_shared<State>()),
        clock_(clock),
        bound_(bound),
        max_in_flight_(max_in_flight),
        pool_(pool) {}

  absl::StatusOr<T> Call(const std::string& key, std::function<absl::StatusOr<T>()> fn,
                         absl::Duration caller_wait = absl::InfiniteDuration()) {
    std::shared_ptr<Flight> flight;
    bool start = false;
    {
      absl::MutexLock lock(&state_->mu);
      if (state_->stopped) return Stopped(key);
      auto it = state_->flights.find(key);
      if (it != state_->flights.end()) {
        flight = it->second;
      } else {
        if (static_cast<int>(state_->flights.size()) >= max_in_flight_) {
          return absl::UnavailableError(absl::StrCat(
              max_in_flight_,
              " calls are already in flight and not returned; not starting one for ", key));
        }
        flight = std::make_shared<Flight>();
        flight->started = clock_->Now();
        state_->flights[key] = flight;
        start = true;
      }
    }
    if (start) {
      std::shared_ptr<State> state = state_;
      absl::Status run = pool_->Run([state, flight, key, fn = std::move(fn)] {
        absl::StatusOr<T> result = fn();
        // Out of the table first: whoever sees the result may start anew.
        state->Forget(key, flight);
        absl::MutexLock lock(&flight->mu);
        flight->result = std::move(result);
      });
      if (!run.ok()) {
        state_->Forget(key, flight);
        absl::MutexLock lock(&flight->mu);
        flight->result = run;  // callers that joined it meanwhile see why
        return run;
      }
    }
    absl::Duration wait = bound_;
    if (!start) {
      // A call that has already had its bound is not waited for again.
      absl::Duration age = clock_->Now() - flight->started;
      wait = age >= bound_ ? absl::ZeroDuration() : bound_ - age;
    }
    wait = std::min(wait, std::max(caller_wait, absl::ZeroDuration()));
    absl::MutexLock lock(&flight->mu);
    if (!flight->mu.AwaitWithTimeout(absl::Condition(&Answered, flight.get()), wait)) {
      return absl::DeadlineExceededError(
          absl::StrCat(key, ": the call has not returned since ",
                       absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", flight->started, absl::UTCTimeZone()),
                       " (", absl::FormatDuration(clock_->Now() - flight->started), ")"));
    }
    if (!flight->result.has_value()) return Stopped(key);
    return *flight->result;
  }

  // Ends every wait now and refuses every later call.
  void StopWaiting() {
    absl::MutexLock lock(&state_->mu);
    state_->stopped = true;
    for (auto& [key, flight] : state_->flights) {
      absl::MutexLock flight_lock(&flight->mu);
      flight->stop = true;
    }
  }

  // When the call in flight for `key` started, if one is.
  std::optional<absl::Time> StuckSince(const std::string& key) {
    absl::MutexLock lock(&state_->mu);
    auto it = state_->flights.find(key);
    if (it == state_->flights.end()) return std::nullopt;
    return it->second->started;
  }

  // Keys with a call in flight now.
  int InFlight() {
    absl::MutexLock lock(&state_->mu);
    return static_cast<int>(state_->flights.size());
  }

 private:
  struct Flight {
    absl::Time started;
    absl::Mutex mu;
    std::optional<absl::StatusOr<T>> result ABSL_GUARDED_BY(mu);
    bool stop ABSL_GUARDED_BY(mu) = false;
  };
  static bool Answered(Flight* flight) ABSL_EXCLUSIVE_LOCKS_REQUIRED(flight->mu) {
    return flight->result.has_value() || flight->stop;
  }
  static absl::Status Stopped(const std::string& key) {
    return absl::UnavailableError(absl::StrCat(key, ": no longer waited for (shutting down)"));
  }
  struct State {
    absl::Mutex mu;
    bool stopped ABSL_GUARDED_BY(mu) = false;
    std::map<std::string, std::shared_ptr<Flight>> flights ABSL_GUARDED_BY(mu);
    void Forget(const std::string& key, const std::shared_ptr<Flight>& flight) {
      absl::MutexLock lock(&mu);
      auto it = flights.find(key);
      if (it != flights.end() && it->second == flight) flights.erase(it);
    }
  };

  const std::shared_ptr<State> state_;
  Clock* const clock_;
  const absl::Duration bound_;
  const int max_in_flight_;
  WorkerPool* const pool_;
};

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_BOUNDED_CALLS_H_
