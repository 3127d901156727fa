// Watching one directory for entries that come and go.
//
// Syscalls::WatchDir starts a DirWatch: inotify in the Linux implementation
// (linux/inotify_dir_watch.h), the in-memory tree's own changes in
// FakeSyscalls, or events a test pushes into a FakeDirWatch (fake_dir_watch.h)
// that a SyscallsWrapper hands out. Only the directory itself is watched, not
// subdirectories.
//
// One thread calls Wait; Wake may be called from any thread.
#ifndef LUSTRE_CSI_PKG_VOLUME_DIR_WATCH_H_
#define LUSTRE_CSI_PKG_VOLUME_DIR_WATCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lustre_csi::volume {

struct DirEvent {
  enum class Kind {
    kAdded,          // `name` was created or moved in
    kRemoved,        // `name` was deleted or moved out
    kOverflow,       // events were lost: list the directory again
    kDirectoryGone,  // the directory itself was removed or moved away
  };
  Kind kind = Kind::kAdded;
  std::string name;  // the entry, for kAdded and kRemoved

  bool operator==(const DirEvent& other) const { return kind == other.kind && name == other.name; }
};

class DirWatch {
 public:
  virtual ~DirWatch() = default;

  // Blocks until something happened in the directory or Wake() was called,
  // and returns the events since the last call in order (empty when only
  // woken). An error means the watch is broken.
  virtual absl::StatusOr<std::vector<DirEvent>> Wait() = 0;

  // Makes the Wait in progress, or the next one, return.
  virtual void Wake() = 0;
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_DIR_WATCH_H_
