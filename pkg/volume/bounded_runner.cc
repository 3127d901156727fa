#include "pkg/volume/bounded_runner.h"

#include <pthread.h>

#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {
namespace {

void* WorkerMain(void* arg) {
  auto* work = static_cast<std::function<void()>*>(arg);
  (*work)();
  delete work;
  return nullptr;
}

}  // namespace

BoundedRunner::BoundedRunner(int max_idle, absl::Duration idle_timeout)
    : max_idle_(max_idle), idle_timeout_(idle_timeout) {}

BoundedRunner& BoundedRunner::Default() {
  static BoundedRunner* const runner = new BoundedRunner();
  return *runner;
}

int BoundedRunner::threads_started() const {
  absl::MutexLock lock(&mu_);
  return started_;
}

absl::Status BoundedRunner::Run(std::function<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(task));
    // Enough idle workers for everything queued: one of them takes it.
    if (static_cast<int>(queue_.size()) <= idle_) return absl::OkStatus();
    ++started_;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  auto* work = new std::function<void()>([this] { Work(); });
  pthread_t thread;
  int err = pthread_create(&thread, &attr, &WorkerMain, work);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    delete work;
    absl::MutexLock lock(&mu_);
    --started_;
    // Leave the task queued only if an idle worker will still take it.
    if (static_cast<int>(queue_.size()) > idle_) queue_.pop_back();
    return ErrnoError(err, "start a worker thread");
  }
  return absl::OkStatus();
}

void BoundedRunner::Work() {
  absl::MutexLock lock(&mu_);
  while (true) {
    ++idle_;
    bool got = mu_.AwaitWithTimeout(
        absl::Condition(
            +[](std::deque<std::function<void()>>* q) { return !q->empty(); }, &queue_),
        idle_timeout_);
    --idle_;
    if (!got) return;  // idle too long
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    task();
    mu_.Lock();
    if (idle_ >= max_idle_) return;  // enough idle workers already
  }
}

}  // namespace lustre_csi::volume
