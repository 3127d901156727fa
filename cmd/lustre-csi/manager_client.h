// The plugin manager's CLI verbs (`lustre-csi plugin-manager <verb>`): each
// builds a request of the manager API from its arguments and options, calls
// the daemon, and prints the answer as a table (or JSON). A library apart
// from the daemon so the verbs and their printers are tested in-process.
#ifndef LUSTRE_CSI_CMD_LUSTRE_CSI_MANAGER_CLIENT_H_
#define LUSTRE_CSI_CMD_LUSTRE_CSI_MANAGER_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cmd/lustre-csi/cli.h"

namespace lustre_csi::manager_client {

// The verbs' options, as the flags of the same names set them.
struct Options {
  bool json = false;
  std::optional<std::string> type;  // plugins: filter; wait: "node" when unset
  int timeout_seconds = 60;
  std::string volume_namespace = "default";
  std::string remote_id;  // the volume id when empty
  bool read_only = false;
  std::string access_mode = "multi-node-multi-writer";
  std::string attachment_mode = "file-system";
  std::string volume_context;   // key=value[,key=value]
  std::string publish_context;  // key=value[,key=value]
  std::string mount_flags;      // comma-separated
  std::string staging_path;
};

// Prints "lustre-csi plugin-manager[ <what>]: CODE: message" to streams.err
// and returns kExitFailure: how the daemon and the verbs report a failure.
int Fail(cli::Streams streams, const std::string& what, const absl::Status& status);

// The verbs' names and one-line descriptions, for --help.
std::string VerbHelp();

// Runs `verb` with `args` against the manager API on `channel`; prints to
// `streams`. Exit codes as in cli.h: 2 for an unknown verb or bad arguments,
// 1 when the call fails (printed as "CODE: message") or drain leaves errors.
int RunVerb(const std::string& verb, const std::vector<std::string>& args, const Options& options,
            std::shared_ptr<grpc::ChannelInterface> channel, cli::Streams streams);

}  // namespace lustre_csi::manager_client

#endif  // LUSTRE_CSI_CMD_LUSTRE_CSI_MANAGER_CLIENT_H_
