#include "pkg/base/joined_calls.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace lustre_csi::base {
namespace {

bool HasResult(std::optional<absl::Status>* result) { return result->has_value(); }

}  // namespace

absl::Status JoinedCalls::Run(const std::string& key, const std::function<absl::Status()>& fn) {
  std::shared_ptr<Flight> flight;
  bool owner = false;
  {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<Flight>& slot = flights_[key];
    if (slot == nullptr) {
      slot = std::make_shared<Flight>();
      slot->started = clock_->Now();
      owner = true;
    } else {
      ++waiting_;
    }
    flight = slot;
  }
  if (owner) {
    absl::Status status = fn();
    {
      // Out of the table first: whoever sees the result may start anew.
      absl::MutexLock lock(&mu_);
      flights_.erase(key);
    }
    absl::MutexLock lock(&flight->mu);
    flight->result = status;
    return status;
  }
  absl::Duration age = clock_->Now() - flight->started;
  absl::Duration wait = age >= bound_ ? absl::ZeroDuration() : bound_ - age;
  std::optional<absl::Status> result;
  {
    absl::MutexLock lock(&flight->mu);
    if (flight->mu.AwaitWithTimeout(absl::Condition(&HasResult, &flight->result), wait)) {
      result = flight->result;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    --waiting_;
  }
  if (result.has_value()) return *result;
  return absl::UnavailableError(
      absl::StrCat("the same call is still in progress since ",
                   absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", flight->started, absl::UTCTimeZone()),
                   " (", absl::FormatDuration(clock_->Now() - flight->started), "); retry later"));
}

int JoinedCalls::Waiting() {
  absl::MutexLock lock(&mu_);
  return waiting_;
}

int JoinedCalls::InFlight() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(flights_.size());
}

}  // namespace lustre_csi::base
