// Work that may wait in the kernel for a file system that does not answer
// (a statfs of a Lustre mount whose servers are gone sleeps uninterruptibly
// until they answer), run where that wait can be left behind.
//
// A thread of the process in uninterruptible sleep keeps the whole process
// from exiting. An Isolation runs such work in a task of its own outside the
// process's thread group: the caller waits for it (killably), and if the
// process has to end meanwhile, it ends, and the task is killed as the
// kernel lets it go (linux/isolated_task.h). Nothing the work touches may be
// freed while it runs: callers wait for it as for a call on their thread.
#ifndef LUSTRE_CSI_PKG_VOLUME_ISOLATION_H_
#define LUSTRE_CSI_PKG_VOLUME_ISOLATION_H_

#include <functional>
#include <optional>
#include <utility>

#include "absl/status/status.h"

namespace lustre_csi::volume {

class Isolation {
 public:
  virtual ~Isolation() = default;

  // Runs `fn` to its end; returns when it has returned.
  virtual void Run(const std::function<void()>& fn) = 0;

  // Kills what still runs, for a process that ends: each task dies as soon
  // as the kernel lets it go, never running more of its work.
  virtual void AbandonAll() {}
};

// Runs the work on the calling thread (tests, the fake file system).
Isolation* OnTheCallingThread();

// What `fn` returns (an absl::Status or StatusOr), run in `where` (null: on
// the calling thread); UNAVAILABLE when it was not run because the process
// ends. `fn` must start no thread (base::InIsolatedTask).
template <typename Fn>
auto RunIn(Isolation* where, Fn&& fn) -> decltype(fn()) {
  std::optional<decltype(fn())> out;
  (where != nullptr ? where : OnTheCallingThread())->Run([&] { out.emplace(fn()); });
  if (!out.has_value()) return absl::UnavailableError("not run: the driver is exiting");
  return *std::move(out);
}

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_ISOLATION_H_
