// RegistrationWatcher: discovers node plugins the way the kubelet does, by
// watching a plugin-registration directory.
//
// Each `*.sock` unix socket in the directory is expected to serve
// pluginregistration.Registration. The watcher calls GetInfo, checks the
// answer (type "CSIPlugin", a valid driver name, a unix endpoint - the
// registration socket itself when empty - and a 1.x version among
// supported_versions), adds a node record with id = the socket's path and
// registered_at = the socket's modification time to the registry, and
// tells the plugin the outcome with NotifyRegistrationStatus. GetInfo waits
// (up to call_timeout) for a socket that exists but does not accept
// connections yet; a socket whose registrar fails or does not answer is
// tried again every retry_interval while it exists; a rejected one is not
// tried again until it is re-created. Removing a socket
// removes its record.
//
// Start() watches first (Syscalls::WatchDir), then lists the sockets already
// there and forgets restored registrations whose socket disappeared while
// the manager was down. Only the directory itself is watched, not
// subdirectories.
//
// The file system is reached only through pkg/volume's Syscalls (stat, list,
// watch) and time only through the Clock: a test drives the watcher with a
// FakeDirWatch and a FakeClock. Each registration runs on its own
// short-lived thread with a per-call deadline, so a registrar that hangs
// delays only its own registration; a socket that did not answer is asked
// again by the same thread after retry_interval on the clock.
//
// Thread-safe. `registry`, `sys` and `clock` are not owned and must outlive
// the watcher; the registry's listener is called with the watcher's lock
// held and must not call back into the watcher.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_REGISTRATION_WATCHER_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_REGISTRATION_WATCHER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/cancel.h"
#include "pkg/base/clock.h"
#include "pkg/csimanager/manager_types.h"
#include "pkg/csimanager/registry.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::csimanager {

class RegistrationWatcher {
 public:
  // What the watcher knows of one socket.
  struct SocketState {
    enum class Phase { kPending, kRegistering, kRegistered, kRejected };
    Phase phase = Phase::kPending;
    int attempts = 0;
    std::string error;   // why the last attempt failed or was rejected
    std::string plugin;  // name, once known
  };

  RegistrationWatcher(Registry* registry, volume::Syscalls* sys, base::Clock* clock,
                      RegistrationWatcherOptions options);
  ~RegistrationWatcher();
  RegistrationWatcher(const RegistrationWatcher&) = delete;
  RegistrationWatcher& operator=(const RegistrationWatcher&) = delete;

  // FAILED_PRECONDITION when the directory does not exist or cannot be
  // watched. Call once.
  absl::Status Start();
  // Stops watching and cancels registrations in flight. Records stay in
  // the registry. Idempotent.
  void Stop();

  // Every socket seen, by path.
  std::map<std::string, SocketState> Sockets();

 private:
  struct Socket {
    uint64_t generation = 0;
    SocketState state;
    bool running = false;  // a worker for this generation is registering it
  };
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  enum class Outcome { kRegistered, kRejected, kRetry };

  void Run();
  void Scan() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Added(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Removed(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Handle(const std::vector<volume::DirEvent>& events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LaunchNew() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Reap();
  // Whether `path` is a unix socket (not followed if a symlink), and its
  // modification time.
  bool IsSocket(const std::string& path, absl::Time* mtime = nullptr);
  // Registers one socket, asking again after retry_interval while it does
  // not answer; runs on a worker thread.
  void Register(const std::string& path, uint64_t generation);
  Outcome Attempt(const std::string& path, uint64_t generation, std::string* plugin,
                  std::string* error);
  // Records the outcome; false when the socket is gone or re-created.
  bool Finish(const std::string& path, uint64_t generation, Outcome outcome,
              const std::string& plugin, const std::string& error);

  Registry* const registry_;
  volume::Syscalls* const sys_;
  base::Clock* const clock_;
  const RegistrationWatcherOptions options_;
  base::CancelToken stop_;
  std::unique_ptr<volume::DirWatch> watch_;  // set by Start()
  std::thread thread_;

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, Socket> sockets_ ABSL_GUARDED_BY(mu_);
  std::vector<Worker> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_INTERNAL_REGISTRATION_WATCHER_H_
