// The subcommand table behind `lustre-csi <subcommand> [flags] [args]`.
//
// Flags are defined with gflags next to the code that reads them; each
// subcommand names the flags it accepts, so `lustre-csi node --help` lists
// exactly those and a flag of another subcommand is refused. Parsing is done
// here rather than by gflags so that bad use gets one clear message and exit
// code 2 instead of a process exit from inside a library.
//
// Exit codes: 0 success, 1 the subcommand failed, 2 bad use.
// Not thread-safe: it sets process-wide flags; call it once, from main().
#ifndef LUSTRE_CSI_CMD_LUSTRE_CSI_CLI_H_
#define LUSTRE_CSI_CMD_LUSTRE_CSI_CLI_H_

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Where a subcommand writes; stdout and stderr in the binary, buffers in tests.
struct Streams {
  std::ostream& out;
  std::ostream& err;
};

struct Subcommand {
  std::string name;
  std::string summary;      // one line, shown in the subcommand list.
  std::string usage;        // e.g. "[flags]" or "<verb> [flags] [args]".
  std::string description;  // paragraphs shown by `<name> --help`.
  // gflags names this subcommand accepts, besides the logging flags.
  std::vector<std::string> flags;
  // Runs when the command line starts with a flag instead of a subcommand
  // (at most one subcommand of a table).
  bool implicit = false;
  // Runs with the positional arguments once flags are set. Returns the exit code.
  std::function<int(const std::vector<std::string>& args, Streams streams)> run;
};

// Flags every subcommand accepts: glog's verbosity and destinations.
const std::vector<std::string>& LoggingFlags();

// What the command line asked for besides flag values.
struct ParsedArgs {
  bool help = false;
  bool version = false;
  bool yaml = false;
  std::vector<std::string> positional;
};

// Dashes and underscores in flag names are the same (`--mount-mode` sets
// gflags' mount_mode); help and errors print dashes.
// Sets each `--name=value`, `--name value`, `--name` / `--noname` (booleans)
// among `args` whose name is in `allowed`, through gflags, and returns the
// rest. `--help`, `-h`, `--version` and `--yaml` are understood everywhere.
// Everything after `--` is positional. Errors name the offending flag.
absl::StatusOr<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                      const std::vector<std::string>& allowed);

// Parses the value of flag `--flag`, "key=value[,key=value]" (a value may
// hold '='; a comma inside a value is written "\,", a backslash before a
// comma "\\"); INVALID_ARGUMENT names the flag and the bad item.
absl::StatusOr<std::map<std::string, std::string>> ParseKeyValues(absl::string_view flag,
                                                                  absl::string_view text);

// Runs `argv` (without the program name) against `table`.
int Dispatch(absl::string_view program, const std::vector<std::string>& argv,
             const std::vector<Subcommand>& table, Streams streams);

// The top-level usage text listing `table`.
std::string Usage(absl::string_view program, const std::vector<Subcommand>& table);

// The `--help` text of one subcommand, with its flags, types and defaults.
std::string SubcommandHelp(absl::string_view program, const Subcommand& sub);

}  // namespace lustre_csi::cli

#endif  // LUSTRE_CSI_CMD_LUSTRE_CSI_CLI_H_
