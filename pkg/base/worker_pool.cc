#include "pkg/base/worker_pool.h"

#include <pthread.h>
#include <string.h>

#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace lustre_csi::base {

struct WorkerPool::State {
  State(int max_idle, absl::Duration idle_timeout, size_t stack_bytes)
      : max_idle(max_idle), idle_timeout(idle_timeout), stack_bytes(stack_bytes) {}

  const int max_idle;
  const absl::Duration idle_timeout;
  const size_t stack_bytes;
  absl::Mutex mu;
  std::deque<std::function<void()>> queue ABSL_GUARDED_BY(mu);
  int idle ABSL_GUARDED_BY(mu) = 0;  // workers waiting for a task
  int alive ABSL_GUARDED_BY(mu) = 0;
  int started ABSL_GUARDED_BY(mu) = 0;
  bool closed ABSL_GUARDED_BY(mu) = false;  // the pool is gone
};

namespace {

using State = WorkerPool::State;

void Work(State& s) {
  absl::MutexLock lock(&s.mu);
  while (true) {
    ++s.idle;
    auto ready = [&s]() ABSL_SHARED_LOCKS_REQUIRED(s.mu) { return !s.queue.empty() || s.closed; };
    bool got = s.mu.AwaitWithTimeout(absl::Condition(&ready), s.idle_timeout);
    --s.idle;
    if (!got || s.queue.empty()) break;  // idle too long, or the pool is gone
    std::function<void()> task = std::move(s.queue.front());
    s.queue.pop_front();
    s.mu.Unlock();
    task();
    task = nullptr;  // what it holds goes before the worker waits again
    s.mu.Lock();
    if (s.idle >= s.max_idle) break;  // enough idle workers already
  }
  --s.alive;
}

void* WorkerMain(void* arg) {
  auto* state = static_cast<std::shared_ptr<State>*>(arg);
  Work(**state);
  delete state;
  return nullptr;
}

}  // namespace

WorkerPool::WorkerPool(int max_idle, absl::Duration idle_timeout, size_t stack_bytes)
    : state_(std::make_shared<State>(max_idle, idle_timeout, stack_bytes)) {}

WorkerPool::~WorkerPool() {
  absl::MutexLock lock(&state_->mu);
  state_->closed = true;
}

WorkerPool& WorkerPool::Default() {
  static WorkerPool* const pool = new WorkerPool();
  return *pool;
}

int WorkerPool::threads_started() const {
  absl::MutexLock lock(&state_->mu);
  return state_->started;
}

int WorkerPool::threads_alive() const {
  absl::MutexLock lock(&state_->mu);
  return state_->alive;
}

absl::Status WorkerPool::Run(std::function<void()> task) {
  State& s = *state_;
  {
    absl::MutexLock lock(&s.mu);
    s.queue.push_back(std::move(task));
    // Enough idle workers for everything queued: one of them takes it.
    if (static_cast<int>(s.queue.size()) <= s.idle) return absl::OkStatus();
    ++s.started;
    ++s.alive;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, s.stack_bytes);
  auto* arg = new std::shared_ptr<State>(state_);
  pthread_t thread;
  int err = pthread_create(&thread, &attr, &WorkerMain, arg);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    delete arg;
    absl::MutexLock lock(&s.mu);
    --s.started;
    --s.alive;
    // Leave the task queued only if an idle worker will still take it.
    if (static_cast<int>(s.queue.size()) > s.idle) s.queue.pop_back();
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start a worker thread: ", strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::base
