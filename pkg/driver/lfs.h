// What a provisioned sub-dir gets beyond a directory, through the host's
// Lustre user tool `lfs`: a project ID with the inherit flag, a project quota
// and a default file layout. The tool runs like the mount helper (host_tool.h):
// in the mount namespace, no shell, bounded by a timeout, so it always matches
// the host's Lustre modules. Paths are those of a file system root mounted by
// FileSystemAccess::WithFileSystemRoot (the same path in both views).
#ifndef LUSTRE_CSI_PKG_DRIVER_LFS_H_
#define LUSTRE_CSI_PKG_DRIVER_LFS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "pkg/volume/mount_namespace.h"

namespace lustre_csi::driver {

// A directory's default layout for new files (`lfs setstripe` on it). Unset
// fields keep the file system's defaults.
struct StripeLayout {
  std::optional<int64_t> count;  // -1: every OST
  std::optional<uint64_t> size;  // bytes, a multiple of 64 KiB
  std::string pool;              // an OST pool; empty: none

  bool empty() const { return !count.has_value() && !size.has_value() && pool.empty(); }
  bool operator==(const StripeLayout& o) const {
    return count == o.count && size == o.size && pool == o.pool;
  }
};

// Hard limits of a project quota; 0 means no limit.
struct QuotaLimits {
  uint64_t block_kib = 0;
  uint64_t inodes = 0;
};

class LustreTool {
 public:
  virtual ~LustreTool() = default;

  // `lfs project -p <id> -s <dir>`: the directory's project ID, and the
  // inherit flag, so everything created beneath it gets the ID.
  virtual absl::Status SetProject(const std::string& dir, uint32_t id) = 0;

  // `lfs setquota -p <id> -B <kib>k -I <inodes> <mount>`: the project's hard
  // limits on the file system mounted at `mount` (zeros remove them).
  virtual absl::Status SetProjectQuota(const std::string& mount, uint32_t id,
                                       const QuotaLimits& limits) = 0;

  // `lfs setstripe [-c <count>] [-S <size>] [-p <pool>] <dir>`.
  virtual absl::Status SetDefaultLayout(const std::string& dir, const StripeLayout& layout) = 0;
};

struct LfsOptions {
  std::string path = "/usr/bin/lfs";  // in the mount namespace
  absl::Duration timeout = absl::Minutes(2);
};

// Failures are the tool's status (HelperFailure), with what to do added:
// EOPNOTSUPP (no project quotas on the file system), EPERM/EACCES from
// setquota (the servers squash this node's root) and a tool that cannot run
// are FAILED_PRECONDITION. Paths that are empty, hold a NUL or start with '-'
// never run (INVALID_ARGUMENT). `ns` is borrowed.
std::unique_ptr<LustreTool> NewLfsTool(volume::MountNamespace* ns, LfsOptions options);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_LFS_H_
