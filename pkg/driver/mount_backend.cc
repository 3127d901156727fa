#include "pkg/driver/mount_backend.h"

#include <glog/logging.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pkg/driver/parameters.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::driver {
namespace {

// Whether the per-mount options of `entry` say read-only.
bool MountIsReadOnly(const volume::MountEntry& entry) {
  for (absl::string_view opt : absl::StrSplit(entry.options, ',')) {
    if (opt == "ro") return true;
  }
  return false;
}

// Creates `sub_dir` beneath `root` and proves, resolving symlinks, that it
// stays beneath it.
absl::Status MakeSubDir(volume::Syscalls& sys, const std::string& root,
                        const std::string& sub_dir) {
  absl::StatusOr<std::string> dir = volume::JoinBeneath(root, sub_dir);
  if (!dir.ok()) return dir.status();
  if (absl::Status s = volume::MkdirAll(sys, *dir, 0775); !s.ok()) return s;
  return sys.ResolveBeneath(root, sub_dir).status();
}

class LustreBackend : public MountBackend {
 public:
  LustreBackend(volume::Syscalls* sys, std::unique_ptr<volume::Mounter> mounter,
                LustreBackendOptions options)
      : sys_(sys), mounter_(std::move(mounter)), options_(std::move(options)) {
    if (!options_.exists) {
      options_.exists = [](const std::string& path) { return access(path.c_str(), X_OK) == 0; };
    }
  }

  absl::string_view Mode() const override { return "lustre"; }
  bool MakesMounts() const override { return true; }

  absl::Status Ready() const override {
    for (const std::string& helper : options_.mount_helpers) {
      if (options_.exists(helper)) return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "no Lustre client on this node: none of ", absl::StrJoin(options_.mount_helpers, ", "),
        " exists (install the Lustre client and load its kernel module)"));
  }

  absl::Status EnsureSubDir(const LustreSource& source) override {
    if (source.sub_dir.empty()) return absl::OkStatus();
    return WithFileSystemRoot(
        source, [&](const std::string& root) { return MakeSubDir(*sys_, root, source.sub_dir); });
  }

  absl::Status WithFileSystemRoot(
      const LustreSource& source,
      const std::function<absl::Status(const std::string&)>& fn) override {
    // Mount the file system root in a private directory, run `fn`, and
    // unmount again whatever happens.
    std::string tmpl = absl::StrCat(options_.working_mount_dir, "/lustre-csi-XXXXXX");
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create a directory in working mount dir ", options_.working_mount_dir));
    }
    std::string root_mount = buf.data();
    LustreSource root = source;
    root.sub_dir.clear();
    absl::Status status = mounter_->Mount(root.Spec(), root_mount, "lustre", {});
    if (status.ok()) status = fn(root_mount);
    absl::Status cleanup = volume::CleanupMountPoint(*sys_, root_mount);
    if (!cleanup.ok()) LOG(ERROR) << "cleaning up " << root_mount << ": " << cleanup;
    return status;
  }

  absl::Status Mount(const LustreSource& source, const std::string& target,
                     const std::vector<std::string>& options) override {
    return mounter_->Mount(source.Spec(), target, "lustre", options);
  }

  absl::StatusOr<bool> IsMountOf(const LustreSource& source, const std::string& target,
                                 bool read_only) override {
    volume::MountChecker checker(sys_);
    absl::StatusOr<std::optional<volume::MountEntry>> entry = checker.FindMountAt(target);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) return false;
    const volume::MountEntry& e = **entry;
    return e.fs_type == "lustre" && e.source == source.Spec() && MountIsReadOnly(e) == read_only;
  }

 private:
  volume::Syscalls* const sys_;
  std::unique_ptr<volume::Mounter> mounter_;
  LustreBackendOptions options_;
};

class MockBackend : public MountBackend {
 public:
  absl::string_view Mode() const override { return "mock"; }
  bool MakesMounts() const override { return false; }
  absl::Status Ready() const override { return absl::OkStatus(); }
  absl::Status EnsureSubDir(const LustreSource&) override { return absl::OkStatus(); }
  absl::Status WithFileSystemRoot(const LustreSource&,
                                  const std::function<absl::Status(const std::string&)>&) override {
    return absl::FailedPreconditionError("mock mount mode has no file system to work in");
  }
  absl::Status Mount(const LustreSource& source, const std::string& target,
                     const std::vector<std::string>& options) override {
    VLOG(1) << "mock mount " << source.Spec() << " on " << target << " -o "
            << absl::StrJoin(options, ",");
    return absl::OkStatus();
  }
  absl::StatusOr<bool> IsMountOf(const LustreSource&, const std::string&, bool) override {
    return false;
  }
};

class LocalBackend : public MountBackend {
 public:
  LocalBackend(volume::Syscalls* sys, std::string local_root)
      : sys_(sys), root_(std::move(local_root)), bind_(volume::NewBindMounter(sys)) {}

  absl::string_view Mode() const override { return "local"; }
  bool MakesMounts() const override { return true; }

  absl::Status Ready() const override {
    absl::StatusOr<volume::FileInfo> info = sys_->Stat(root_);
    if (!info.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("local root ", root_, " is not usable: ", info.status().message()));
    }
    return absl::OkStatus();
  }

  absl::Status EnsureSubDir(const LustreSource& source) override {
    // Nothing to create for the root; Mount() reports a missing file system.
    if (source.sub_dir.empty()) return absl::OkStatus();
    return WithFileSystemRoot(
        source, [&](const std::string& root) { return MakeSubDir(*sys_, root, source.sub_dir); });
  }

  absl::Status WithFileSystemRoot(
      const LustreSource& source,
      const std::function<absl::Status(const std::string&)>& fn) override {
    absl::StatusOr<std::string> fs_root = FsRoot(source);
    if (!fs_root.ok()) return fs_root.status();
    return fn(*fs_root);
  }

  absl::Status Mount(const LustreSource& source, const std::string& target,
                     const std::vector<std::string>& options) override {
    absl::StatusOr<std::string> dir = Resolve(source);
    if (!dir.ok()) return dir.status();
    return bind_->Mount(*dir, target, "", options);
  }

  absl::StatusOr<bool> IsMountOf(const LustreSource& source, const std::string& target,
                                 bool read_only) override {
    absl::StatusOr<std::string> dir = Resolve(source);
    if (!dir.ok()) return dir.status();
    absl::StatusOr<volume::FileInfo> want = sys_->Stat(*dir);
    if (!want.ok()) return want.status();
    absl::StatusOr<volume::FileInfo> have = sys_->Stat(target);
    if (!have.ok()) return have.status();
    if (want->dev != have->dev || want->ino != have->ino) return false;
    volume::MountChecker checker(sys_);
    absl::StatusOr<std::optional<volume::MountEntry>> entry = checker.FindMountAt(target);
    if (!entry.ok()) return entry.status();
    return entry->has_value() && MountIsReadOnly(**entry) == read_only;
  }

 private:
  // <local-root>/<fs>, which must exist: it stands for the file system.
  absl::StatusOr<std::string> FsRoot(const LustreSource& source) {
    absl::StatusOr<std::string> fs_root = sys_->ResolveBeneath(root_, source.fs_name);
    if (!fs_root.ok() && fs_root.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("file system ", source.fs_name,
                                              " does not exist (no directory ", root_, "/",
                                              source.fs_name, ")"));
    }
    return fs_root;
  }

  absl::StatusOr<std::string> Resolve(const LustreSource& source) {
    absl::StatusOr<std::string> fs_root = FsRoot(source);
    if (!fs_root.ok() || source.sub_dir.empty()) return fs_root;
    return sys_->ResolveBeneath(*fs_root, source.sub_dir);
  }

  volume::Syscalls* const sys_;
  const std::string root_;
  std::unique_ptr<volume::Mounter> bind_;
};

}  // namespace

std::string LustreSource::Spec() const { return MountSource(mgs_address, fs_name, sub_dir); }

std::unique_ptr<MountBackend> NewLustreBackend(volume::Syscalls* sys,
                                               std::unique_ptr<volume::Mounter> mounter,
                                               LustreBackendOptions options) {
  return std::make_unique<LustreBackend>(sys, std::move(mounter), std::move(options));
}

std::unique_ptr<MountBackend> NewMockBackend() { return std::make_unique<MockBackend>(); }

std::unique_ptr<MountBackend> NewLocalBackend(volume::Syscalls* sys, std::string local_root) {
  return std::make_unique<LocalBackend>(sys, std::move(local_root));
}

}  // namespace lustre_csi::driver
