#include "pkg/volume/cleanup.h"

#include <cerrno>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "pkg/base/annotate.h"
#include "pkg/base/cancel.h"
#include "pkg/base/clock.h"
#include "pkg/base/worker_pool.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

// More stacked mounts than this at one path means something keeps mounting.
constexpr int kMaxLayers = 64;

bool IsCorruptedErrno(int err) {
  switch (err) {
    case ENOTCONN:
    case ESTALE:
    case EIO:
    case EACCES:
    case EHOSTDOWN:
    case EWOULDBLOCK:
    case ENODEV:
      return true;
    default:
      return false;
  }
}

absl::Status DidNotReturn(absl::string_view what, absl::Duration timeout) {
  return absl::DeadlineExceededError(
      absl::StrCat(what, " did not return within ", absl::FormatDuration(timeout)));
}

base::Clock* ClockOf(const UnmountOptions& opts) {
  return opts.clock != nullptr ? opts.clock : base::RealClock();
}

// A stat of the target in `opts.isolation` (null: on this thread).
absl::StatusOr<FileInfo> StatIn(const UnmountOptions& opts, Syscalls& sys,
                                const std::string& path) {
  return RunIn(opts.isolation, [&] { return sys.Stat(path); });
}

// The flags that say where the unmounts of `opts` are made (kUnmountInPlace).
int PlaceOf(const UnmountOptions& opts) { return opts.in_place ? kUnmountInPlace : 0; }

template <typename R>
struct BoundedCall {
  std::function<R()> fn;
  base::CancelToken returned;  // cancelled once `result` is set
  absl::Mutex mu;
  std::optional<R> result ABSL_GUARDED_BY(mu);
};

// Runs `fn` on a worker of the process-wide pool and waits at most `timeout`
// on `clock` for it; R is absl::Status or an absl::StatusOr. A call that
// does not return in time goes on in the background and its result is
// dropped.
template <typename R>
R RunBounded(std::function<R()> fn, absl::Duration timeout, absl::string_view what,
             base::Clock* clock) {
  if (timeout == absl::InfiniteDuration()) return fn();
  auto call = std::make_shared<BoundedCall<R>>();
  call->fn = std::move(fn);
  absl::Status started = base::WorkerPool::Default().Run([call] {
    R result = call->fn();
    {
      absl::MutexLock lock(&call->mu);
      call->result = std::move(result);
    }
    call->returned.Cancel();
  });
  if (!started.ok()) return Annotate(started, what);
  clock->SleepUntil(clock->Now() + timeout, &call->returned);
  absl::MutexLock lock(&call->mu);
  if (!call->result.has_value()) return DidNotReturn(what, timeout);
  return *call->result;
}

enum class UnmountOutcome { kUnmounted, kNotMounted };

// `plain_result`, when set, is the outcome of a plain umount already tried
// (or timed out) elsewhere; escalation goes on from there.
absl::StatusOr<UnmountOutcome> Escalate(Syscalls& sys, const std::string& target,
                                        const UnmountOptions& opts,
                                        std::optional<absl::Status> plain_result = std::nullopt) {
  struct Step {
    int flags;
    absl::Duration timeout;
    const char* name;
  };
  const Step steps[] = {{0, opts.plain_timeout, "umount"},
                        {kMntForce, opts.force_timeout, "umount -f"},
                        {kMntDetach, opts.detach_timeout, "umount -l"}};
  std::vector<std::string> failures;
  absl::Status last;
  Syscalls* s = &sys;
  bool escalating = false;
  for (const Step& step : steps) {
    if (step.flags == kMntForce && !opts.force) continue;
    int flags = step.flags | PlaceOf(opts);
    if (step.flags == 0 && plain_result.has_value()) {
      last = *std::move(plain_result);
    } else {
      last = RunBounded<absl::Status>([s, target, flags] { return s->Unmount(target, flags); },
                                      step.timeout, absl::StrCat(step.name, " ", target),
                                      ClockOf(opts));
    }
    if (last.ok()) return UnmountOutcome::kUnmounted;
    std::optional<int> err = ErrnoOf(last);
    if (err == EINVAL || err == ENOENT) return UnmountOutcome::kNotMounted;
    failures.push_back(absl::StrCat(step.name, ": ", last.message()));
    // Escalate from a busy, corrupted or hung mount; once escalating, a
    // step that cannot help (MNT_FORCE answers EPERM where the caller lacks
    // CAP_SYS_ADMIN in the initial user namespace) gives way to the next one
    // rather than ending the attempt.
    bool escalate = escalating || absl::IsDeadlineExceeded(last) ||
                    (err.has_value() && (*err == EBUSY || IsCorruptedErrno(*err)));
    if (!escalate) break;
    escalating = true;
  }
  return base::WithMessage(
      last, absl::StrCat("unmount ", target, " failed: ", absl::StrJoin(failures, "; ")));
}

}  // namespace

bool IsCorruptedError(const absl::Status& status) {
  std::optional<int> err = ErrnoOf(status);
  return err.has_value() && IsCorruptedErrno(*err);
}

absl::StatusOr<bool> IsCorruptedDir(Syscalls& sys, const std::string& path) {
  absl::StatusOr<FileInfo> info = sys.Stat(path);
  if (info.ok()) return false;
  if (IsCorruptedError(info.status())) return true;
  return info.status();
}

absl::Status UnmountWithEscalation(Syscalls& sys, const std::string& target,
                                   const UnmountOptions& opts) {
  absl::StatusOr<UnmountOutcome> outcome = Escalate(sys, target, opts);
  return outcome.status();
}

namespace {

// Removes the target once nothing is mounted there: rmdir only.
absl::Status RemoveTarget(Syscalls& sys, const std::string& path, const FileInfo& info) {
  if (!IsDirectoryMode(info.mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("clean up ", path, ": not a directory; left in place"));
  }
  absl::Status removed = sys.Rmdir(path);
  if (removed.ok() || absl::IsNotFound(removed)) return absl::OkStatus();
  std::optional<int> err = ErrnoOf(removed);
  if (err == ENOTEMPTY || err == EEXIST) {
    absl::Status out = absl::FailedPreconditionError(
        absl::StrCat("clean up ", path, ": directory is not empty; nothing deleted"));
    out.SetPayload(kErrnoPayloadUrl, absl::Cord(absl::StrCat(*err)));
    return out;
  }
  return removed;
}

// Where the quick pass stopped: finished, or the first observation the
// careful pass must go on from (a failed look, or a mount whose plain
// umount failed or hung), so that no system call is repeated.
struct QuickOutcome {
  bool done = false;
  absl::Status status;  // when done
  std::optional<absl::StatusOr<FileInfo>> stat;
  std::optional<absl::Status> unmount;
};

// The state a quick pass shares with the caller that waits for it.
struct QuickPass {
  enum Stage { kStat, kUnmount, kRemove, kDone };
  absl::Mutex mu;
  QuickPass(absl::Duration step_timeout, base::Clock* clock)
      : step_timeout(step_timeout), clock(clock), step_deadline(clock->Now() + step_timeout) {}

  const absl::Duration step_timeout;  // each stage's own (plain_timeout)
  base::Clock* const clock;
  Stage stage ABSL_GUARDED_BY(mu) = kStat;
  absl::Time step_deadline ABSL_GUARDED_BY(mu);  // when the current stage times out
  // The caller's wait, cancelled when the stage changes.
  std::shared_ptr<base::CancelToken> moved ABSL_GUARDED_BY(mu);
  bool abandoned ABSL_GUARDED_BY(mu) = false;
  QuickOutcome outcome ABSL_GUARDED_BY(mu);

  // Moves to `next` unless the caller stopped waiting.
  bool Enter(Stage next) {
    absl::MutexLock lock(&mu);
    if (abandoned) return false;
    stage = next;
    step_deadline = clock->Now() + step_timeout;
    if (moved != nullptr) moved->Cancel();
    return true;
  }
  // False once the caller stopped waiting: the pass must do nothing more.
  bool Alive() {
    absl::MutexLock lock(&mu);
    return !abandoned;
  }
  void Finish(QuickOutcome out) {
    absl::MutexLock lock(&mu);
    if (abandoned) return;
    outcome = std::move(out);
    stage = kDone;
    if (moved != nullptr) moved->Cancel();
  }
};

// The common case of a cleanup in one go, without escalation: a look, plain
// umount for every layer, rmdir. Anything unusual (a failed look, a failed
// umount) ends the pass with what it saw.
void RunQuickPass(Syscalls& sys, const std::string& path, int unmount_flags, QuickPass& pass) {
  // The parent's mount id, found by the first look and kept for the next
  // ones (unmounts at the target do not move it).
  std::optional<uint64_t> parent_id;
  MountChecker checker(&sys);
  for (int layer = 0; layer <= kMaxLayers; ++layer) {
    if (!pass.Enter(QuickPass::kStat)) return;
    absl::StatusOr<MountChecker::Look> look = checker.LookAt(path, &parent_id);
    if (!pass.Alive()) return;
    if (!look.ok()) return pass.Finish({false, {}, look.status(), std::nullopt});
    if (!look->exists) return pass.Finish({true, absl::OkStatus()});
    if (!look->mounted) {
      if (!pass.Enter(QuickPass::kRemove)) return;
      return pass.Finish({true, RemoveTarget(sys, path, look->info)});
    }
    if (!pass.Enter(QuickPass::kUnmount)) return;
    absl::Status unmounted = sys.Unmount(path, unmount_flags);
    if (!unmounted.ok()) return pass.Finish({false, {}, std::nullopt, unmounted});
  }
  pass.Finish({true, absl::FailedPreconditionError(absl::StrCat("clean up ", path, ": more than ",
                                                                kMaxLayers, " mounts stacked"))});
}

// Every step bounded by its own timeout, with escalation; starts from what
// the quick pass saw.
absl::Status CarefulCleanup(Syscalls& sys, const std::string& path, const UnmountOptions& opts,
                            QuickOutcome first) {
  MountChecker checker(&sys);
  for (int layer = 0; layer <= kMaxLayers; ++layer) {
    // A stat of a hung mount can block like an unmount; bound it the same way
    // and treat a timeout like a corrupted mount.
    // After the quick pass's plain umount of a mount it found, nothing needs
    // looking at: the escalation goes on from that umount.
    std::optional<absl::Status> plain_result = layer == 0 ? std::move(first.unmount) : std::nullopt;
    Syscalls* s = &sys;
    absl::StatusOr<FileInfo> info = FileInfo();
    if (layer == 0 && first.stat.has_value()) {
      info = *first.stat;
    } else if (!plain_result.has_value()) {
      info = RunBounded<absl::StatusOr<FileInfo>>(
          [s, opts, path] { return StatIn(opts, *s, path); }, opts.plain_timeout,
          absl::StrCat("statx ", path), ClockOf(opts));
    }
    bool mounted = false;
    if (plain_result.has_value()) {
      mounted = true;  // the quick pass found a mount here
    } else if (info.ok()) {
      absl::StatusOr<bool> is_mount = checker.IsMountPoint(path, *info);
      if (!is_mount.ok()) return is_mount.status();
      mounted = *is_mount;
    } else if (absl::IsNotFound(info.status())) {
      return absl::OkStatus();
    } else if (IsCorruptedError(info.status()) || absl::IsDeadlineExceeded(info.status())) {
      absl::StatusOr<std::optional<MountEntry>> entry = checker.FindMountAt(path);
      if (!entry.ok()) return entry.status();
      if (!entry->has_value()) {
        return Annotate(info.status(),
                        absl::StrCat("clean up ", path, ": corrupted, but not a mount point"));
      }
      mounted = true;
    } else {
      return info.status();
    }

    if (mounted) {
      // Resumed after a plain umount that hung: it may have finished since.
      const bool resumed = plain_result.has_value() && absl::IsDeadlineExceeded(*plain_result);
      absl::StatusOr<UnmountOutcome> outcome = Escalate(sys, path, opts, std::move(plain_result));
      if (!outcome.ok()) return outcome.status();
      // After a plain umount that hung, "not mounted" may just mean it
      // finished meanwhile: look again.
      if (*outcome == UnmountOutcome::kNotMounted && !resumed) {
        return absl::FailedPreconditionError(
            absl::StrCat("clean up ", path, ": looks mounted, but umount says it is not"));
      }
      continue;
    }
    return RemoveTarget(sys, path, *info);
  }
  return absl::FailedPreconditionError(
      absl::StrCat("clean up ", path, ": more than ", kMaxLayers, " mounts stacked"));
}

}  // namespace

absl::Status CleanupMountPoint(Syscalls& sys, const std::string& target,
                               const UnmountOptions& opts) {
  std::string path = CleanPath(target);
  // The quick pass runs on one worker, waited for at most plain_timeout: one
  // hand-over per cleanup in the common case instead of one per step. Where
  // none of its steps can wait for a file system (unmounts in place, which
  // the Syscalls bound themselves), it runs here: no hand-over at all.
  auto pass = std::make_shared<QuickPass>(opts.plain_timeout, ClockOf(opts));
  const int flags = PlaceOf(opts);
  if (opts.plain_timeout == absl::InfiniteDuration() || (opts.in_place && opts.unmount_bounded)) {
    RunQuickPass(sys, path, flags, *pass);
  } else {
    Syscalls* s = &sys;
    absl::Status started = base::WorkerPool::Default().Run(
        [s, path, flags, pass] { RunQuickPass(*s, path, flags, *pass); });
    if (!started.ok()) return Annotate(started, absl::StrCat("clean up ", path));
  }
  QuickOutcome first;
  {
    // Each stage (a stat, a plain umount, the rmdir) has plain_timeout of
    // its own, as when each ran on a worker of its own. The caller wakes
    // when the stage changes, at the end, or at the stage's deadline.
    absl::MutexLock lock(&pass->mu);
    bool finished = false;
    while (true) {
      if (pass->stage == QuickPass::kDone) {
        finished = true;
        break;
      }
      const absl::Time deadline = pass->step_deadline;
      auto moved = std::make_shared<base::CancelToken>();
      pass->moved = moved;
      pass->mu.Unlock();
      bool reached = pass->clock->SleepUntil(deadline, moved.get());
      pass->mu.Lock();
      if (reached && pass->stage != QuickPass::kDone && pass->step_deadline == deadline) {
        break;  // this stage hung past its deadline
      }
    }
    if (finished) {
      first = std::move(pass->outcome);
    } else {
      // Hung: the pass may not go on; the careful pass resumes where it hangs.
      pass->abandoned = true;
      switch (pass->stage) {
        case QuickPass::kStat:
          first.stat = DidNotReturn(absl::StrCat("statx ", path), opts.plain_timeout);
          break;
        case QuickPass::kUnmount:
          first.unmount = DidNotReturn(absl::StrCat("umount ", path), opts.plain_timeout);
          break;
        case QuickPass::kRemove:
          return DidNotReturn(absl::StrCat("rmdir ", path), opts.plain_timeout);
        case QuickPass::kDone:
          break;  // not reached: the condition held
      }
    }
  }
  if (first.done) return first.status;
  return CarefulCleanup(sys, path, opts, std::move(first));
}

absl::Status DetachMountPoint(Syscalls& sys, const std::string& target,
                              const UnmountOptions& opts) {
  std::string path = CleanPath(target);
  const int flags = kMntDetach | PlaceOf(opts);
  MountChecker checker(&sys);
  Syscalls* s = &sys;
  for (int layer = 0; layer <= kMaxLayers; ++layer) {
    absl::StatusOr<std::optional<MountEntry>> entry = checker.FindMountAt(path);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) {
      // Nothing is mounted there any more: a directory of the file system
      // above, which answers.
      absl::StatusOr<FileInfo> info = sys.Stat(path);
      if (absl::IsNotFound(info.status())) return absl::OkStatus();
      if (!info.ok()) return Annotate(info.status(), absl::StrCat("clean up ", path));
      return RemoveTarget(sys, path, *info);
    }
    absl::Status detached = RunBounded<absl::Status>(
        [s, path, flags] { return s->Unmount(path, flags); }, opts.detach_timeout,
        absl::StrCat("umount -l ", path), ClockOf(opts));
    std::optional<int> err = ErrnoOf(detached);
    if (!detached.ok() && err != EINVAL && err != ENOENT) {
      return Annotate(detached, absl::StrCat("detach ", path));
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("clean up ", path, ": more than ", kMaxLayers, " mounts stacked"));
}

}  // namespace lustre_csi::volume
