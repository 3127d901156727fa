// lustre-csi: one binary for every role of the Lustre CSI driver.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cmd/lustre-csi/cli.h"
#include "cmd/lustre-csi/driver_cmd.h"
#include "cmd/lustre-csi/manager_cmd.h"

namespace lustre_csi {
namespace {

std::vector<cli::Subcommand> Subcommands() {
  return {
      NodeSubcommand(),
      ControllerSubcommand(),
      MonolithSubcommand(),
      PluginManagerSubcommand(),
  };
}

}  // namespace
}  // namespace lustre_csi

int main(int argc, char** argv) {
  // Without TZ, glibc re-reads /etc/localtime on every localtime() call, and
  // glog calls it for every log line. The same zone, read once (UTC when the
  // file is missing, as in a scratch image):
  setenv("TZ", ":/etc/localtime", /*overwrite=*/0);
  // Debian's abseil checks every mutex acquisition for lock-order cycles,
  // which costs about a tenth of a simple RPC; tests keep the check.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Logs go to stderr unless --log_dir or --logtostderr=false says otherwise:
  // every role runs under a supervisor that collects stderr.
  // Set as the default so that --help reports it truthfully.
  gflags::SetCommandLineOptionWithMode("logtostderr", "true", gflags::SET_FLAGS_DEFAULT);
  google::InitGoogleLogging("lustre-csi");
  std::vector<std::string> args(argv + 1, argv + argc);
  return lustre_csi::cli::Dispatch("lustre-csi", args, lustre_csi::Subcommands(),
                                   {std::cout, std::cerr});
}
