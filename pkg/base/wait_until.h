// WaitUntil: polls a condition until it holds, for tests that wait for
// something another thread or process does and have no event to wait on.
// The timeout is a guard against a hung test, never a measurement.
#ifndef LUSTRE_CSI_PKG_BASE_WAIT_UNTIL_H_
#define LUSTRE_CSI_PKG_BASE_WAIT_UNTIL_H_

#include <functional>

#include "absl/time/time.h"

namespace lustre_csi::base {

// True once `done` returns true (checked every 2 ms of real time); false
// when `timeout` passes first.
bool WaitUntil(const std::function<bool()>& done, absl::Duration timeout = absl::Seconds(30));

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_WAIT_UNTIL_H_
