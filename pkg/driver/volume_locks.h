// Try-locks keyed by string, for "one operation per volume (and target) at a
// time": a second caller gets false at once and answers ABORTED, as the CSI
// spec asks. Thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_VOLUME_LOCKS_H_
#define LUSTRE_CSI_PKG_DRIVER_VOLUME_LOCKS_H_

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace lustre_csi::driver {

class VolumeLocks {
 public:
  bool TryAcquire(const std::string& key);
  void Release(const std::string& key);
  size_t Held() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> held_ ABSL_GUARDED_BY(mu_);
};

// Holds a key for its scope; check ok() before proceeding.
class ScopedVolumeLock {
 public:
  ScopedVolumeLock(VolumeLocks* locks, std::string key)
      : locks_(locks), key_(std::move(key)), ok_(locks_->TryAcquire(key_)) {}
  ~ScopedVolumeLock() {
    if (ok_) locks_->Release(key_);
  }
  ScopedVolumeLock(const ScopedVolumeLock&) = delete;
  ScopedVolumeLock& operator=(const ScopedVolumeLock&) = delete;
  bool ok() const { return ok_; }

 private:
  VolumeLocks* locks_;
  std::string key_;
  bool ok_;
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_VOLUME_LOCKS_H_
