#include "pkg/driver/volume_locks.h"

namespace lustre_csi::driver {

bool VolumeLocks::TryAcquire(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return held_.insert(key).second;
}

void VolumeLocks::Release(const std::string& key) {
  absl::MutexLock lock(&mu_);
  held_.erase(key);
}

size_t VolumeLocks::Held() const {
  absl::MutexLock lock(&mu_);
  return held_.size();
}

}  // namespace lustre_csi::driver
