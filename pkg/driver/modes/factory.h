// The mount modes by name: the one place --mount-mode (and, in lustre mode,
// --lustre-client) picks one. Adding a mode means a file pair in this folder
// and one entry in the table in factory.cc.
#ifndef LUSTRE_CSI_PKG_DRIVER_MODES_FACTORY_H_
#define LUSTRE_CSI_PKG_DRIVER_MODES_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pkg/driver/modes/lustre_mode.h"
#include "pkg/driver/modes/mode.h"
#include "pkg/driver/modes/shared_client_mode.h"
#include "pkg/server/metrics.h"
#include "pkg/volume/isolation.h"
#include "pkg/volume/mount_namespace.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

// What a mode is made from: the flags' values and the system, borrowed.
struct ModeEnv {
  // The driver's view; where a mode mounts in `ns`, its unmounts reach there
  // (volume::UnmountingIn).
  volume::Syscalls* sys = nullptr;
  // Where the host's Lustre helper runs (modes with `lustre_client`).
  volume::MountNamespace* ns = nullptr;
  LustreModeOptions lustre;
  // Lustre: one client mount per file system (`shared`), or one per publish.
  bool shared_clients = false;
  SharedClientOptions shared;
  std::string local_root;
  server::MetricsRegistry* metrics = nullptr;  // may be null
  // Where the looks at targets an unmount makes run (volume::UnmountOptions);
  // null: the calling thread.
  volume::Isolation* isolation = nullptr;
};

struct ModeInstance {
  std::unique_ptr<MountMode> mode;
  // The controller's way into the mode's file systems (sub-dir
  // provisioning); null for a mode that has none (mock).
  FileSystemAccess* file_systems = nullptr;
};

struct ModeSpec {
  const char* name;
  // Mounts through the host's Lustre client (its helper in a mount
  // namespace; its lfs and import states apply): ModeEnv::ns must be set.
  bool lustre_client;
  // The flags' values this mode needs, checked before anything starts:
  // INVALID_ARGUMENT saying which.
  absl::Status (*check)(const ModeEnv& env);
  ModeInstance (*make)(const ModeEnv& env);
};

// The mode called `name`; null when there is none.
const ModeSpec* FindMode(absl::string_view name);

// Every mode's name, "lustre, local or mock", for help and errors.
std::string ModeNames();

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MODES_FACTORY_H_
