// DirWatch with inotify(7): creates, deletes and moves in one directory, and
// the directory itself going away; an eventfd wakes a Wait in progress.
#ifndef LUSTRE_CSI_PKG_VOLUME_LINUX_INOTIFY_DIR_WATCH_H_
#define LUSTRE_CSI_PKG_VOLUME_LINUX_INOTIFY_DIR_WATCH_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "pkg/volume/dir_watch.h"

namespace lustre_csi::volume::os {

// FAILED_PRECONDITION (errno attached) when `dir` cannot be watched.
absl::StatusOr<std::unique_ptr<DirWatch>> NewInotifyDirWatch(const std::string& dir);

}  // namespace lustre_csi::volume::os

#endif  // LUSTRE_CSI_PKG_VOLUME_LINUX_INOTIFY_DIR_WATCH_H_
