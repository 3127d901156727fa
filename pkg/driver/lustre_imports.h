// What the host's Lustre client says of its connections to the servers.
//
// Every Lustre client mount has one device per metadata target (mdc) and
// one per object storage target (osc), named
// "<fsname>-<MDT|OST><index>-<mdc|osc>-<instance>", the instance being the
// mount's own 16 hex digits. Each reports its connection ("import") in a
// file `import` of the client's parameter tree, the one `lctl get_param
// mdc.*.import osc.*.import` reads: /proc/fs/lustre/{mdc,osc}/<device>/import
// (Lustre 2.12 to 2.16), or /sys/kernel/debug/lustre/... (later releases).
// Its line "    state: <STATE>" is FULL while the target answers; IDLE is an
// osc that let an unused connection go and reconnects when asked. Anything
// else (DISCONN, CONNECTING, REPLAY*, RECOVER, EVICTED, CLOSED, NEW) means
// calls to that target wait or fail.
//
// LustreImports reads those files for the node (NodeGetVolumeStats reports a
// file system whose client is not connected as an abnormal volume condition;
// /metrics shows every import's state). Reading them never reaches a server,
// but the client holds a lock while it connects, so a read is bounded too and
// the last snapshot stands in when one does not return. Thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_LUSTRE_IMPORTS_H_
#define LUSTRE_CSI_PKG_DRIVER_LUSTRE_IMPORTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/base/bounded_calls.h"
#include "pkg/base/clock.h"
#include "pkg/server/metrics.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

struct ClientImport {
  std::string fs;      // "lustrefs"
  std::string target;  // "lustrefs-OST0001"
  std::string device;  // "lustrefs-OST0001-osc-ffff8f2a3c1b5000"
  std::string state;   // "FULL", "DISCONN", ...

  bool operator==(const ClientImport& other) const;
};

// FULL or IDLE.
bool IsHealthyImportState(absl::string_view state);

// The parts of a device name; nullopt for a name of another form.
std::optional<ClientImport> ParseImportDevice(absl::string_view device);

// The value of the `state:` key of an import file's text.
absl::StatusOr<std::string> ParseImportState(absl::string_view text);

// The parameter directories of a client whose root is `root` ("/" on the
// host; the host's root as a container sees it, e.g. /proc/1/root).
std::vector<std::string> LustreParamDirs(const std::string& root);

class LustreImports {
 public:
  // `sys` and `clock` are borrowed. Reads happen at most every `max_age`,
  // each bounded by `read_timeout`.
  LustreImports(volume::Syscalls* sys, std::vector<std::string> param_dirs, base::Clock* clock,
                absl::Duration max_age = absl::Seconds(5),
                absl::Duration read_timeout = absl::Seconds(1));

  // Every import of every client mount on the host, sorted by device.
  std::vector<ClientImport> All();

  // The imports of file system `fs` that are not healthy.
  std::vector<ClientImport> Unhealthy(const std::string& fs);

  // "lustrefs-OST0001 DISCONN, lustrefs-MDT0000 EVICTED" (each target once,
  // whatever the number of client mounts), or "" when all are healthy.
  std::string Describe(const std::string& fs);

  // Exports lustre_csi_client_state{fs,target,state}: the number of client
  // devices of each target in each state, refreshed on each scrape.
  void Export(server::MetricsRegistry* metrics);

 private:
  absl::StatusOr<std::vector<ClientImport>> Read();

  volume::Syscalls* const sys_;
  const std::vector<std::string> param_dirs_;
  base::Clock* const clock_;
  const absl::Duration max_age_;
  base::BoundedCalls<std::vector<ClientImport>> reads_;
  absl::Mutex mu_;
  std::vector<ClientImport> last_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> read_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_LUSTRE_IMPORTS_H_
