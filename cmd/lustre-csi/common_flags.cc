#include "cmd/lustre-csi/common_flags.h"

#include "pkg/version/version.h"

DEFINE_string(drivername, lustre_csi::version::kDefaultDriverName,
              "CSI driver name, reported by GetPluginInfo and the version output");
