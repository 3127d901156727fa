#include "pkg/base/worker_pool.h"

#include <pthread.h>
#include <string.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace lustre_csi::base {

struct WorkerPool::State {
  State(int max_idle, absl::Duration idle_timeout, size_t stack_bytes)
      : max_idle(max_idle), idle_timeout(idle_timeout), stack_bytes(stack_bytes) {}

  struct Task {
    uint64_t id;
    std::function<void()> run;
  };

  const int max_idle;
  const absl::Duration idle_timeout;
  const size_t stack_bytes;
  absl::Mutex mu;
  std::deque<Task> queue ABSL_GUARDED_BY(mu);
  uint64_t next_id ABSL_GUARDED_BY(mu) = 0;
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
    std::function<void()> task = std::move(s.queue.front().run);
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

namespace {
thread_local bool in_isolated_task = false;
}  // namespace

bool InIsolatedTask() { return in_isolated_task; }
void SetInIsolatedTask(bool in_task) { in_isolated_task = in_task; }

int WorkerPool::StartDetachedThread(void* (*main)(void*), void* arg, size_t stack_bytes) {
  if (in_isolated_task) return EPERM;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // A size the system refuses (below its minimum) leaves the default.
  (void)pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  int err = pthread_create(&thread, &attr, main, arg);
  pthread_attr_destroy(&attr);
  return err;
}

WorkerPool::WorkerPool(int max_idle, absl::Duration idle_timeout, size_t stack_bytes,
                       ThreadStarter start_thread)
    : state_(std::make_shared<State>(max_idle, idle_timeout, stack_bytes)),
      start_thread_(std::move(start_thread)) {}

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

int WorkerPool::threads_idle() const {
  absl::MutexLock lock(&state_->mu);
  return state_->idle;
}

absl::Status WorkerPool::Run(std::function<void()> task) {
  State& s = *state_;
  uint64_t id;
  {
    absl::MutexLock lock(&s.mu);
    id = s.next_id++;
    s.queue.push_back(State::Task{id, std::move(task)});
    // Enough idle workers for everything queued: one of them takes it.
    if (static_cast<int>(s.queue.size()) <= s.idle) return absl::OkStatus();
    ++s.started;
    ++s.alive;
  }
  auto* arg = new std::shared_ptr<State>(state_);
  int err = start_thread_(&WorkerMain, arg, s.stack_bytes);
  if (err == 0) return absl::OkStatus();
  delete arg;
  absl::MutexLock lock(&s.mu);
  --s.started;
  --s.alive;
  // A worker that came free meanwhile may have taken the task: then it runs.
  auto queued = std::find_if(s.queue.begin(), s.queue.end(),
                             [id](const State::Task& t) { return t.id == id; });
  if (queued == s.queue.end()) return absl::OkStatus();
  s.queue.erase(queued);
  return absl::ResourceExhaustedError(
      absl::StrCat("cannot start a worker thread: ", strerror(err)));
}

}  // namespace lustre_csi::base
