// The `node`, `controller` and `monolith` subcommands: flags and wiring of the Lustre
// CSI driver.
#ifndef LUSTRE_CSI_CMD_LUSTRE_CSI_DRIVER_CMD_H_
#define LUSTRE_CSI_CMD_LUSTRE_CSI_DRIVER_CMD_H_

#include "cmd/lustre-csi/cli.h"

namespace lustre_csi {

cli::Subcommand NodeSubcommand();
cli::Subcommand ControllerSubcommand();
// Identity + Controller + Node on one socket; also what a command line
// without a subcommand runs (the Go driver's invocation).
cli::Subcommand MonolithSubcommand();

}  // namespace lustre_csi

#endif  // LUSTRE_CSI_CMD_LUSTRE_CSI_DRIVER_CMD_H_
