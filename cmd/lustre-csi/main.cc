// lustre-csi: one binary for every role of the Lustre CSI driver.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cmd/lustre-csi/cli.h"
#include "cmd/lustre-csi/driver_cmd.h"

namespace lustre_csi {
namespace {

// A role that this build does not contain yet: says so and fails.
cli::Subcommand NotBuilt(std::string name, std::string summary) {
  cli::Subcommand sub;
  sub.name = name;
  sub.summary = summary + " (not available in this build yet)";
  sub.usage = "[flags]";
  sub.run = [name](const std::vector<std::string>&, cli::Streams streams) {
    streams.err << "lustre-csi " << name << ": not available in this build yet\n";
    return cli::kExitFailure;
  };
  return sub;
}

std::vector<cli::Subcommand> Subcommands() {
  return {
      NodeSubcommand(),
      ControllerSubcommand(),
      NotBuilt("plugin-manager", "discover, health-check and mount through local CSI plugins"),
  };
}

}  // namespace
}  // namespace lustre_csi

int main(int argc, char** argv) {
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
