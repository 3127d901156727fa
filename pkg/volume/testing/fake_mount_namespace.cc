#include "pkg/volume/testing/fake_mount_namespace.h"

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::volume {

void FakeMountNamespace::AddProgram(const std::string& path, Program program) {
  absl::MutexLock lock(&mu_);
  programs_[path] = std::move(program);
}

void FakeMountNamespace::RemoveProgram(const std::string& path) {
  absl::MutexLock lock(&mu_);
  programs_.erase(path);
}

void FakeMountNamespace::SetFile(const std::string& path, std::string content) {
  absl::MutexLock lock(&mu_);
  files_[path] = std::move(content);
}

void FakeMountNamespace::RemoveFile(const std::string& path) {
  absl::MutexLock lock(&mu_);
  files_.erase(path);
}

void FakeMountNamespace::SetOwn(bool own) {
  absl::MutexLock lock(&mu_);
  own_ = own;
}

void FakeMountNamespace::SetUnreachable(bool unreachable) {
  absl::MutexLock lock(&mu_);
  unreachable_ = unreachable;
}

std::vector<std::vector<std::string>> FakeMountNamespace::Runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

std::vector<std::string> FakeMountNamespace::Unmounts() const {
  absl::MutexLock lock(&mu_);
  return unmounts_;
}

absl::Status FakeMountNamespace::Reachable() const {
  if (!unreachable_) return absl::OkStatus();
  return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, EPERM,
                            absl::StrCat("entering ", name_));
}

absl::StatusOr<bool> FakeMountNamespace::IsOwn() const {
  absl::MutexLock lock(&mu_);
  return own_;
}

absl::StatusOr<ProcessResult> FakeMountNamespace::Run(const std::vector<std::string>& argv,
                                                      const std::vector<std::string>& env,
                                                      absl::Duration timeout) {
  Program program;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Reachable(); !s.ok()) return s;
    if (argv.empty()) return absl::InvalidArgumentError("empty argv");
    auto it = programs_.find(argv[0]);
    if (it == programs_.end()) {
      return ErrnoErrorWithCode(absl::StatusCode::kFailedPrecondition, ENOENT,
                                absl::StrCat("run ", argv[0], " in ", name_));
    }
    runs_.push_back(argv);
    program = it->second;
  }
  return program(argv);
}

absl::Status FakeMountNamespace::Unmount(const std::string& target, int flags) {
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Reachable(); !s.ok()) return s;
    unmounts_.push_back(target);
  }
  if (sys_ == nullptr) return absl::InternalError("fake namespace has no syscalls for unmount");
  return sys_->Unmount(target, flags);
}

absl::StatusOr<std::string> FakeMountNamespace::ReadFile(const std::string& path,
                                                         size_t max_bytes) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Reachable(); !s.ok()) return s;
  auto it = files_.find(path);
  if (it == files_.end()) return ErrnoError(ENOENT, absl::StrCat("read ", path, " in ", name_));
  return it->second.substr(0, max_bytes);
}

absl::StatusOr<bool> FakeMountNamespace::Exists(const std::string& path) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Reachable(); !s.ok()) return s;
  if (files_.count(path) > 0 || programs_.count(path) > 0) return true;
  if (sys_ == nullptr) return false;
  for (const std::string& prefix : not_shared_) {
    if (path == prefix || absl::StartsWith(path, prefix + "/")) return false;
  }
  return sys_->Stat(path).ok();
}

void FakeMountNamespace::SetNotShared(const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  not_shared_.push_back(prefix);
}

}  // namespace lustre_csi::volume
