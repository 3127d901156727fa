// Termination signals for long-running roles.
//
// BlockTerminationSignals() must run in main() before any thread starts, so
// that SIGTERM and SIGINT are never delivered asynchronously to a random
// thread; WaitForTerminationSignal() then receives them synchronously.
#ifndef LUSTRE_CSI_PKG_SERVER_SIGNALS_H_
#define LUSTRE_CSI_PKG_SERVER_SIGNALS_H_

namespace lustre_csi::server {

// Blocks SIGTERM and SIGINT in the calling thread (and so in every thread it
// creates afterwards).
void BlockTerminationSignals();

// Waits until SIGTERM or SIGINT arrives and returns its number.
int WaitForTerminationSignal();

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_SIGNALS_H_
