#include "pkg/csimanager/fake_mount_inspector.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace lustre_csi::csimanager::fakes {

absl::Status FakeMountInspector::Injected(const std::string& op) {
  auto it = failures_.find(op);
  if (it == failures_.end() || it->second.empty()) return absl::OkStatus();
  absl::Status status = it->second.front();
  it->second.pop_front();
  return status;
}

void FakeMountInspector::AddDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    dirs_.insert(path.substr(0, slash));
  }
  dirs_.insert(path);
}

absl::StatusOr<bool> FakeMountInspector::IsMountPoint(const std::string& path) {
  absl::MutexLock lock(&mu_);
  absl::Status injected = Injected("IsMountPoint");
  if (!injected.ok()) return injected;
  return mounts_.count(path) > 0;
}

absl::Status FakeMountInspector::MkdirAll(const std::string& path, uint32_t) {
  absl::MutexLock lock(&mu_);
  absl::Status injected = Injected("MkdirAll");
  if (!injected.ok()) return injected;
  AddDirs(path);
  return absl::OkStatus();
}

absl::Status FakeMountInspector::RemoveDir(const std::string& path) {
  absl::MutexLock lock(&mu_);
  absl::Status injected = Injected("RemoveDir");
  if (!injected.ok()) return injected;
  if (mounts_.count(path)) {
    return absl::FailedPreconditionError(absl::StrCat("rmdir ", path, ": device busy"));
  }
  auto it = dirs_.upper_bound(path);
  if (it != dirs_.end() && absl::StartsWith(*it, path + "/")) {
    return absl::FailedPreconditionError(absl::StrCat("rmdir ", path, ": not empty"));
  }
  dirs_.erase(path);
  return absl::OkStatus();
}

void FakeMountInspector::SetMounted(const std::string& path, bool mounted) {
  absl::MutexLock lock(&mu_);
  if (mounted) {
    AddDirs(path);
    mounts_.insert(path);
  } else {
    mounts_.erase(path);
  }
}

void FakeMountInspector::FailNext(const std::string& op, absl::Status status) {
  absl::MutexLock lock(&mu_);
  failures_[op].push_back(std::move(status));
}

std::set<std::string> FakeMountInspector::mounts() {
  absl::MutexLock lock(&mu_);
  return mounts_;
}

std::set<std::string> FakeMountInspector::dirs() {
  absl::MutexLock lock(&mu_);
  return dirs_;
}

}  // namespace lustre_csi::csimanager::fakes
