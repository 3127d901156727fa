// Flags shared by several subcommands.
#ifndef LUSTRE_CSI_CMD_LUSTRE_CSI_COMMON_FLAGS_H_
#define LUSTRE_CSI_CMD_LUSTRE_CSI_COMMON_FLAGS_H_

#include <gflags/gflags.h>

DECLARE_string(drivername);

#endif  // LUSTRE_CSI_CMD_LUSTRE_CSI_COMMON_FLAGS_H_
