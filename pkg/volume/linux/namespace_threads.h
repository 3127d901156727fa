// Threads that have entered one mount namespace and make short system calls
// there (an unmount, a read, an access check), so such a call costs a
// hand-over to a waiting thread instead of a child process.
//
// A thread of a multithreaded process can enter another mount namespace once
// it no longer shares its file-system information (root, working directory)
// with the others: unshare(CLONE_FS), then setns(CLONE_NEWNS). Both exist
// since Linux 3.0 (need CAP_SYS_ADMIN and CAP_SYS_CHROOT, as a child process
// entering the namespace does). The thread stays there for its lifetime; its
// root and working directory are the namespace's root.
//
// A call waits at most its timeout. A thread whose call does not return in
// time (an unmount of a dead server can block in the kernel for as long as
// the server is away; no signal ends it) is given up: it finishes the call on
// its own and ends, and later calls get other threads. Once `max_stuck` such
// threads are stuck, new calls are refused (UNAVAILABLE) rather than piling
// up threads in the kernel (calls already running may still add to them). Up to `max_idle`
// threads wait for work between calls; more are started when calls overlap
// and end when they are done.
//
// Thread-safe. The pool may be destroyed while threads are still stuck; they
// end when their call returns.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_NAMESPACE_THREADS_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_NAMESPACE_THREADS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pkg/volume/isolation.h"

namespace lustre_csi::volume {

// What one call answered: its errno (0 for success) and the bytes it gave.
struct CallReply {
  int err = 0;
  std::string data;
};

class NamespaceThreads {
 public:
  // Runs on a thread in the namespace; returns an errno (0 for success) and
  // may fill `data`. It must own what it uses (capture by value): after a
  // timeout it runs on while its caller has returned.
  using Call = std::function<int(std::string* data)>;

  struct Options {
    int max_idle = 4;
    int max_stuck = 32;
    // Where each call runs (borrowed; null: on the thread itself). With a
    // task of its own (linux/isolated_task.h), a call stuck in the kernel
    // holds that task, not a thread of the process, so the process can still
    // exit. The calls must then start no thread.
    Isolation* isolation = nullptr;
  };

  // `ns_fd` is an open mount namespace file (e.g. of /proc/1/ns/mnt), owned
  // from now on and closed when the last thread has ended; -1 keeps the
  // threads in the caller's own namespace (for the same time bounds).
  explicit NamespaceThreads(int ns_fd) : NamespaceThreads(ns_fd, Options()) {}
  NamespaceThreads(int ns_fd, Options options);
  ~NamespaceThreads();
  NamespaceThreads(const NamespaceThreads&) = delete;
  NamespaceThreads& operator=(const NamespaceThreads&) = delete;

  // Runs `call` there and waits for at most `timeout`.
  //   OK with the call's reply, whatever its errno.
  //   FAILED_PRECONDITION (errno attached): a new thread could not enter the
  //     namespace (or be started).
  //   DEADLINE_EXCEEDED: the call did not return within `timeout` ("<what>:
  //     no answer within ..."); its thread is given up.
  //   UNAVAILABLE: max_stuck calls are still stuck in the kernel.
  // `isolate`: false runs the call on the thread even with an isolation (one
  // that cannot wait on a file system).
  absl::StatusOr<CallReply> Run(absl::string_view what, absl::Duration timeout, Call call,
                                bool isolate = true);

  // Calls given up and not yet returned.
  int Stuck() const;
  // Threads alive: waiting, working or stuck.
  int Threads() const;

 private:
  struct Shared;
  struct Worker;
  static void* Main(void* arg);
  std::shared_ptr<Shared> shared_;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_NAMESPACE_THREADS_H_
