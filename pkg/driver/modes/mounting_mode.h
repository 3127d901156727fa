// What the modes that make mounts (lustre, shared clients, local) share:
// their publish and unpublish written once (MountingMode), and the pieces
// of it. Used by the mode files and the factory; not an API of the driver.
#ifndef LUSTRE_CSI_PKG_DRIVER_MODES_MOUNTING_MODE_H_
#define LUSTRE_CSI_PKG_DRIVER_MODES_MOUNTING_MODE_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "pkg/driver/modes/mode.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver::internal {

// The mode of the sub-dirs a publish creates (subject to the umask).
inline constexpr uint32_t kSubDirMode = 0775;

// Creates `source.sub_dir` when missing: nothing for the root; otherwise
// volume::MkdirAllBeneath inside fs.WithFileSystemRoot (no symlink followed,
// each level made with mkdirat on the level above as opened), run in
// `where` (volume::RunIn).
absl::Status EnsureSubDirIn(FileSystemAccess& fs, const LustreSource& source,
                            volume::Isolation* where);

// Why a mount of `source` that the file system answered ENOTDIR (`status`)
// failed: a server resolves a sub-dir without following symlinks, so a
// symlink or a file at one of its components. Looked at through
// fs.WithFileSystemRoot, in `where`, to name the component; INVALID_ARGUMENT
// either way.
absl::Status ExplainNotADirectory(FileSystemAccess& fs, const LustreSource& source,
                                  const absl::Status& status, volume::Isolation* where);

// How targets that are binds of a mount others use too are unmounted (shared
// clients, local mode): never MNT_FORCE, which acts on the whole superblock
// (Lustre's umount_begin aborts every request of that client, FUSE aborts
// its connection) and so breaks every other mount of it; a plain unmount
// (or the look at the target before it) that does not return within 10 s
// is followed by a detach. A bind has no data of its own to flush, so 10 s
// is ample where its file system answers, and where it does not the
// unpublish answers well within the CO's 2 minutes. (Where the unmounts are
// made in a mount namespace, which bounds each itself, the shared clients'
// binds wait for that bound instead, on the calling thread:
// volume::UnmountOptions::unmount_bounded.) Its unmounts ask the
// file system nothing (the mount it binds stays), so they are made in place;
// a stat of a target after an unmount that did not return runs in
// `isolation` (volume::UnmountOptions).
inline volume::UnmountOptions BindUnmountOptions(volume::Isolation* isolation) {
  volume::UnmountOptions options;
  options.force = false;
  options.plain_timeout = absl::Seconds(10);
  options.isolation = isolation;
  options.in_place = true;
  return options;
}

// The publish and unpublish of every mode that makes mounts (lustre, shared
// clients, local), written once over the mode's own steps: Mount, the
// unmount options of its targets, and Release. Each of these modes is also
// the controller's way into its file systems (WithFileSystemRoot).
//
// What a publish asks of a file system that may not answer (the bind from
// a client's root, the sub-dir made there, fsGroup's walk of the volume)
// runs in the isolation of the targets' unmount options (Isolated): where a
// server stops answering, a task waits in the kernel, not a thread of the
// driver, which can then still exit.
class MountingMode : public MountMode, public FileSystemAccess {
 public:
  // `sys` (borrowed) is the driver's view; its Unmount reaches where the
  // mode mounts.
  explicit MountingMode(volume::Syscalls* sys, volume::UnmountOptions target_unmount = {})
      : sys_(sys), target_unmount_(target_unmount) {}

  // MountHoldingSlot; then fsGroup (not on a read-only volume). A failure
  // after the mount undoes it.
  absl::Status Publish(const PublishTarget& t) final;
  // volume::CleanupMountPoint, then Release (also after a failure: the
  // unmount may have worked before a later step failed).
  absl::Status Unpublish(const std::string& target) final;
  // volume::DetachMountPoint, then Release.
  absl::Status Detach(const std::string& target) final;
  // volume::UnmountWithEscalation.
  absl::Status Repair(const std::string& target) final;
  // A mount point.
  absl::StatusOr<bool> IsPublished(const std::string& path) final;

 protected:
  // Mounts `source` on the existing directory `target`, and nothing else.
  // NOT_FOUND when the file system or the sub-dir does not exist.
  virtual absl::Status Mount(const LustreSource& source, const std::string& target,
                             const std::vector<std::string>& options) = 0;

  // Called after `target` was unmounted (or an unmount was tried), so the
  // mode can let go of what no target needs any more.
  // `silent`: the file system does not answer, so nothing of it may be
  // looked at (what goes is detached).
  virtual void Release(const std::string& target, bool silent) {}

  // Runs `fn` (it returns an absl::Status or StatusOr, and starts no thread)
  // in the mode's isolation: work that touches the mode's file systems.
  template <typename Fn>
  auto Isolated(Fn&& fn) -> decltype(fn()) {
    return volume::RunIn(target_unmount_.isolation, std::forward<Fn>(fn));
  }

  // How `target` is unmounted: the mode's options for its targets, unless
  // the mode knows better of this one.
  virtual volume::UnmountOptions TargetUnmount(const std::string& target) {
    return target_unmount_;
  }

 private:
  // Mount, holding one of t.slots; on NOT_FOUND for a sub-dir, EnsureSubDirIn
  // and Mount again; ENOTDIR for a sub-dir is explained
  // (ExplainNotADirectory). A mount that left work behind (a helper killed
  // at its timeout, volume::LeftBehindOf) holds its file system up until
  // that work ends (MountSlots::HoldFileSystemUntilEnded).
  absl::Status MountHoldingSlot(const PublishTarget& t);

  volume::Syscalls* const sys_;
  const volume::UnmountOptions target_unmount_;
};

// "<source>" joined with the mount's root inside its file system, so a mount
// of <fs>/<sub> reads the same whether the kernel shows it as the source
// "<mgs>:/<fs>/<sub>" with root "/" or as "<mgs>:/<fs>" with root "/<sub>".
std::string MountedSpec(const volume::MountEntry& e);

}  // namespace lustre_csi::driver::internal

#endif  // LUSTRE_CSI_PKG_DRIVER_MODES_MOUNTING_MODE_H_
