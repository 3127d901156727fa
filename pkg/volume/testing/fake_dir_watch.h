// A DirWatch whose events come from whoever holds it: a test, or
// FakeSyscalls when its in-memory tree changes. Thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_DIR_WATCH_H_
#define LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_DIR_WATCH_H_

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "pkg/volume/dir_watch.h"

namespace lustre_csi::volume {

// The queue behind a FakeDirWatch; shared, so events can be pushed after the
// watch is gone (they are dropped).
class FakeDirEvents {
 public:
  void Push(DirEvent event);
  void Wake();
  absl::StatusOr<std::vector<DirEvent>> Wait();
  // Waits until every pushed event was taken and a Wait blocks again (the
  // holder has handled them), bounded by 30 s of real time, a guard against
  // a hung test. Returns whether that happened.
  bool AwaitDrained();
  // Makes every later Wait fail with `status` (a broken watch).
  void Break(absl::Status status);
  // Calls of Wait so far.
  int WaitCalls();

 private:
  absl::Mutex mu_;
  std::vector<DirEvent> events_ ABSL_GUARDED_BY(mu_);
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  int wait_calls_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
};

class FakeDirWatch : public DirWatch {
 public:
  explicit FakeDirWatch(std::shared_ptr<FakeDirEvents> events) : events_(std::move(events)) {}
  absl::StatusOr<std::vector<DirEvent>> Wait() override { return events_->Wait(); }
  void Wake() override { events_->Wake(); }

 private:
  const std::shared_ptr<FakeDirEvents> events_;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_TESTING_FAKE_DIR_WATCH_H_
