// Work a call stopped waiting for that has not ended yet.
//
// A mount helper killed at its timeout while it waits in the kernel for a
// server that does not answer stays (in uninterruptible sleep) until the
// server answers; the call that ran it answers DEADLINE_EXCEEDED long
// before. Whatever that work held for its file system must count as held
// until it ends, or every retry starts one more such helper. So whoever
// leaves work behind (RunProcess in pkg/volume/linux) registers it here and
// attaches the id to the error it returns (WithLeftBehind); whoever bounds
// the work of a file system (the node's MountSlots) reads the id off the
// error (LeftBehindOf) and is told when the work has ended (WhenEnded).
//
// ProcessLeftBehind() is the process's one registry (its children are the
// process's); tests may make their own. Thread-safe.
#ifndef LUSTRE_CSI_PKG_VOLUME_LEFT_BEHIND_H_
#define LUSTRE_CSI_PKG_VOLUME_LEFT_BEHIND_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace lustre_csi::volume {

// The payload type URL under which the id is attached (decimal text).
inline constexpr char kLeftBehindPayloadUrl[] = "type.googleapis.com/lustre_csi.volume.LeftBehind";

class LeftBehind {
 public:
  // Registers work left running; its id, never 0.
  uint64_t Add();

  // The work `id` has ended: runs what waits for it (on this thread, without
  // any lock of this registry held). Unknown ids are ignored.
  void End(uint64_t id);

  // Runs `fn` once `id` has ended: at once, on this thread, when it has
  // already (or is unknown); otherwise on the thread that calls End.
  void WhenEnded(uint64_t id, std::function<void()> fn);

  // Work registered and not ended yet.
  int Running() const;

 private:
  mutable absl::Mutex mu_;
  // What waits for each work still running.
  std::map<uint64_t, std::vector<std::function<void()>>> running_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// This process's registry.
LeftBehind& ProcessLeftBehind();

// `status` (not OK) with the id of the work it left behind attached; kept by
// Annotate like the errno.
absl::Status WithLeftBehind(absl::Status status, uint64_t id);

// The id WithLeftBehind attached, if any.
std::optional<uint64_t> LeftBehindOf(const absl::Status& status);

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_LEFT_BEHIND_H_
