// Mock mode (--mount-mode=mock, or the Go driver's
// --enable-azurelustre-mock-mount): the conformance suites' mode. A publish
// leaves the target a plain directory and an unpublish removes it; there is
// no file system to work in, so the controller gets none.
#ifndef LUSTRE_CSI_PKG_DRIVER_MODES_MOCK_MODE_H_
#define LUSTRE_CSI_PKG_DRIVER_MODES_MOCK_MODE_H_

#include <memory>

#include "pkg/driver/modes/mode.h"
#include "pkg/volume/syscalls.h"

namespace lustre_csi::driver {

// Checks targets through `sys` (borrowed).
std::unique_ptr<MountMode> NewMockMode(volume::Syscalls* sys);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_MODES_MOCK_MODE_H_
