// The `plugin-manager` subcommand: the daemon (no verb) and its CLI verbs.
#ifndef LUSTRE_CSI_CMD_LUSTRE_CSI_MANAGER_CMD_H_
#define LUSTRE_CSI_CMD_LUSTRE_CSI_MANAGER_CMD_H_

#include "cmd/lustre-csi/cli.h"

namespace lustre_csi {

cli::Subcommand PluginManagerSubcommand();

}  // namespace lustre_csi

#endif  // LUSTRE_CSI_CMD_LUSTRE_CSI_MANAGER_CMD_H_
