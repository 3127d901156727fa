#include "pkg/volume/linux/namespace_threads.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "pkg/base/worker_pool.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {

// What the pool and its threads share; lives until the last of them ends.
// Lock order: Shared::mu before Worker::mu.
struct NamespaceThreads::Shared {
  Shared(int fd, Options opts) : ns_fd(fd), options(opts) {}
  ~Shared() {
    if (ns_fd >= 0) close(ns_fd);
  }
  const int ns_fd;
  const Options options;
  mutable absl::Mutex mu;
  std::vector<std::shared_ptr<Worker>> idle ABSL_GUARDED_BY(mu);
  int stuck ABSL_GUARDED_BY(mu) = 0;
  int threads ABSL_GUARDED_BY(mu) = 0;
  bool closing ABSL_GUARDED_BY(mu) = false;
};

// One thread's mailbox: a call in, a reply out.
struct NamespaceThreads::Worker {
  absl::Mutex mu;
  bool started ABSL_GUARDED_BY(mu) = false;
  int enter_err ABSL_GUARDED_BY(mu) = 0;  // why it could not enter; 0 once in
  std::optional<Call> call ABSL_GUARDED_BY(mu);
  bool isolate ABSL_GUARDED_BY(mu) = true;  // the call's, in Options::isolation
  std::optional<CallReply> reply ABSL_GUARDED_BY(mu);
  bool abandoned ABSL_GUARDED_BY(mu) = false;  // its caller stopped waiting
  bool exit ABSL_GUARDED_BY(mu) = false;       // end when idle
};

namespace {

struct ThreadArg {
  std::shared_ptr<void> shared;  // type-erased: keeps Shared alive
  std::shared_ptr<void> worker;
};

}  // namespace

NamespaceThreads::NamespaceThreads(int ns_fd, Options options)
    : shared_(std::make_shared<Shared>(ns_fd, options)) {}

NamespaceThreads::~NamespaceThreads() {
  std::vector<std::shared_ptr<Worker>> idle;
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->closing = true;
    idle.swap(shared_->idle);
    for (const std::shared_ptr<Worker>& w : idle) {
      absl::MutexLock wl(&w->mu);
      w->exit = true;
    }
  }
}

void* NamespaceThreads::Main(void* raw) {
  std::unique_ptr<ThreadArg> arg(static_cast<ThreadArg*>(raw));
  std::shared_ptr<Shared> s = std::static_pointer_cast<Shared>(arg->shared);
  std::shared_ptr<Worker> w = std::static_pointer_cast<Worker>(arg->worker);
  arg.reset();
  int err = 0;
  if (unshare(CLONE_FS) != 0) {
    err = errno;
  } else if (s->ns_fd >= 0 && setns(s->ns_fd, CLONE_NEWNS) != 0) {
    err = errno;
  }
  {
    absl::MutexLock lock(&w->mu);
    w->started = true;
    w->enter_err = err;
  }
  while (err == 0) {
    Call call;
    bool isolate = true;
    {
      absl::MutexLock lock(&w->mu);
      auto ready = [&w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu) {
        return w->call.has_value() || w->exit;
      };
      w->mu.Await(absl::Condition(&ready));
      if (!w->call.has_value()) break;
      call = std::move(*w->call);
      isolate = w->isolate;
      w->call.reset();
    }
    CallReply reply;
    reply.err = ECANCELED;  // what stays when the process ends before the call ran
    Isolation* where =
        isolate && s->options.isolation != nullptr ? s->options.isolation : OnTheCallingThread();
    where->Run([&] { reply.err = call(&reply.data); });
    call = nullptr;  // what it owns goes now, not at the next call
    absl::MutexLock lock(&s->mu);
    absl::MutexLock wl(&w->mu);
    if (w->abandoned) {
      --s->stuck;
      break;
    }
    w->reply = std::move(reply);
  }
  absl::MutexLock lock(&s->mu);
  --s->threads;
  return nullptr;
}

absl::StatusOr<CallReply> NamespaceThreads::Run(absl::string_view what, absl::Duration timeout,
                                                Call call, bool isolate) {
  Shared& s = *shared_;
  std::shared_ptr<Worker> w;
  {
    absl::MutexLock lock(&s.mu);
    if (s.stuck >= s.options.max_stuck) {
      return absl::UnavailableError(
          absl::StrCat(what, ": ", s.stuck,
                       " earlier calls in this mount namespace are still stuck in the kernel "
                       "(a file system that does not answer); retry later"));
    }
    if (!s.idle.empty()) {
      w = std::move(s.idle.back());
      s.idle.pop_back();
    } else {
      ++s.threads;
    }
  }
  if (w == nullptr) {
    w = std::make_shared<Worker>();
    auto* arg = new ThreadArg{shared_, w};
    // Each thread only makes one system call at a time: a small stack.
    int err = base::WorkerPool::StartDetachedThread(&NamespaceThreads::Main, arg, 256 * 1024);
    if (err != 0) {
      delete arg;
      absl::MutexLock lock(&s.mu);
      --s.threads;
      return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, err,
                                absl::StrCat(what, ": starting a thread"));
    }
    absl::MutexLock lock(&w->mu);
    auto started = [&w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu) { return w->started; };
    w->mu.Await(absl::Condition(&started));
    if (w->enter_err != 0) {
      return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, w->enter_err,
                                absl::StrCat(what, ": entering the mount namespace"));
    }
  }
  bool answered;
  {
    absl::MutexLock lock(&w->mu);
    w->call = std::move(call);
    w->isolate = isolate;
    auto replied = [&w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu) { return w->reply.has_value(); };
    answered = w->mu.AwaitWithTimeout(absl::Condition(&replied), timeout);
  }
  CallReply reply;
  absl::MutexLock lock(&s.mu);
  {
    absl::MutexLock wl(&w->mu);
    if (!answered && !w->reply.has_value()) {
      w->abandoned = true;
      ++s.stuck;
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": no answer within ", absl::FormatDuration(timeout)));
    }
    reply = std::move(*w->reply);
    w->reply.reset();
  }
  if (s.closing || static_cast<int>(s.idle.size()) >= s.options.max_idle) {
    absl::MutexLock wl(&w->mu);
    w->exit = true;
  } else {
    s.idle.push_back(std::move(w));
  }
  return reply;
}

int NamespaceThreads::Stuck() const {
  absl::MutexLock lock(&shared_->mu);
  return shared_->stuck;
}

int NamespaceThreads::Threads() const {
  absl::MutexLock lock(&shared_->mu);
  return shared_->threads;
}

}  // namespace lustre_csi::volume
