#include "cmd/lustre-csi/cli.h"

#include <gflags/gflags.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cmd/lustre-csi/common_flags.h"
#include "pkg/version/version.h"

namespace lustre_csi::cli {
namespace {

std::string Dashed(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

bool Contains(const std::vector<std::string>& names, absl::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

absl::StatusOr<bool> ParseBool(const std::string& name, absl::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  return absl::InvalidArgumentError(
      absl::StrFormat("invalid value '%s' for --%s: want true or false", value, Dashed(name)));
}

void PrintVersion(const ParsedArgs& parsed, Streams streams) {
  version::BuildInfo info = version::GetBuildInfo(FLAGS_drivername);
  if (parsed.yaml) {
    streams.out << version::FormatVersionYaml(info);
  } else {
    streams.out << version::FormatVersionLine(info) << "\n";
  }
}

const Subcommand* Find(const std::vector<Subcommand>& table, absl::string_view name) {
  for (const Subcommand& sub : table) {
    if (sub.name == name) return &sub;
  }
  return nullptr;
}

std::string FlagLine(const gflags::CommandLineFlagInfo& info) {
  std::string shown = info.type == "bool"
                          ? absl::StrCat("--", Dashed(info.name))
                          : absl::StrCat("--", Dashed(info.name), "=<", info.type, ">");
  std::string line = absl::StrFormat("  %-34s %s", shown, info.description);
  if (info.type == "string") {
    absl::StrAppend(&line, " (default \"", info.default_value, "\")");
  } else {
    absl::StrAppend(&line, " (default ", info.default_value, ")");
  }
  return line;
}

}  // namespace

const std::vector<std::string>& LoggingFlags() {
  static const std::vector<std::string>* const kFlags = new std::vector<std::string>{
      "v", "vmodule", "logtostderr", "alsologtostderr", "stderrthreshold", "log_dir"};
  return *kFlags;
}

absl::StatusOr<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                      const std::vector<std::string>& allowed) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      parsed.positional.insert(parsed.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    absl::string_view body = absl::StripPrefix(absl::StripPrefix(arg, "-"), "-");
    size_t eq = body.find('=');
    // Flags are spelled with dashes (--mount-mode), as the Go CSI drivers do;
    // gflags names use underscores.
    std::string name(body.substr(0, eq));
    std::replace(name.begin(), name.end(), '-', '_');
    bool has_value = eq != absl::string_view::npos;
    std::string value = has_value ? std::string(body.substr(eq + 1)) : "";

    if (name == "help" || name == "h") {
      parsed.help = true;
      continue;
    }
    if (name == "version" || name == "yaml") {
      bool on = true;
      if (has_value) {
        absl::StatusOr<bool> b = ParseBool(name, value);
        if (!b.ok()) return b.status();
        on = *b;
      }
      (name == "version" ? parsed.version : parsed.yaml) = on;
      continue;
    }

    bool negated = false;
    gflags::CommandLineFlagInfo info;
    bool known = Contains(allowed, name) && gflags::GetCommandLineFlagInfo(name.c_str(), &info);
    if (!known && absl::StartsWith(name, "no") && !has_value) {
      std::string positive = name.substr(2);
      if (Contains(allowed, positive) && gflags::GetCommandLineFlagInfo(positive.c_str(), &info) &&
          info.type == "bool") {
        name = positive;
        negated = true;
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", Dashed(name)));
    }
    if (info.type == "bool") {
      if (negated) {
        value = "false";
      } else if (!has_value) {
        value = "true";
      } else {
        absl::StatusOr<bool> b = ParseBool(name, value);
        if (!b.ok()) return b.status();
        value = *b ? "true" : "false";
      }
    } else if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", Dashed(name), " needs a value"));
      }
      value = args[++i];
    }
    if (gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("invalid value '%s' for --%s: want a %s",
                                                        value, Dashed(name), info.type));
    }
  }
  return parsed;
}

absl::StatusOr<std::map<std::string, std::string>> ParseKeyValues(absl::string_view flag,
                                                                  absl::string_view text) {
  // Items split on the commas that are not escaped: "\," is a comma inside
  // a value, "\\" a backslash.
  std::vector<std::string> items(1);
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ',' || text[i + 1] == '\\')) {
      items.back() += text[++i];
    } else if (c == ',') {
      items.emplace_back();
    } else {
      items.back() += c;
    }
  }
  std::map<std::string, std::string> out;
  for (const std::string& pair : items) {
    if (pair.empty()) continue;
    std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, ": '", pair, "' is not key=value (a comma inside a value is written \\,)"));
    }
    out[kv[0]] = kv[1];
  }
  return out;
}

std::string Usage(absl::string_view program, const std::vector<Subcommand>& table) {
  std::string text = absl::StrFormat(
      "Usage: %s <subcommand> [flags] [args]\n       %s --version [--yaml]\n\nSubcommands:\n",
      program, program);
  for (const Subcommand& sub : table) {
    absl::StrAppendFormat(&text, "  %-16s %s\n", sub.name, sub.summary);
  }
  absl::StrAppendFormat(&text, "  %-16s %s\n", "version",
                        "print the build identity (--yaml for YAML, --drivername to rename)");
  for (const Subcommand& sub : table) {
    if (sub.implicit) {
      absl::StrAppendFormat(&text, "\nWith flags and no subcommand, %s runs %s.\n", program,
                            sub.name);
    }
  }
  absl::StrAppendFormat(&text, "\nRun '%s <subcommand> --help' for its flags.\n", program);
  return text;
}

std::string SubcommandHelp(absl::string_view program, const Subcommand& sub) {
  std::string text =
      absl::StrFormat("Usage: %s %s %s\n\n%s\n", program, sub.name, sub.usage, sub.summary);
  if (!sub.description.empty()) absl::StrAppend(&text, "\n", sub.description, "\n");
  auto append_flags = [&text](absl::string_view title, const std::vector<std::string>& names) {
    std::vector<std::string> lines;
    for (const std::string& name : names) {
      gflags::CommandLineFlagInfo info;
      if (gflags::GetCommandLineFlagInfo(name.c_str(), &info)) lines.push_back(FlagLine(info));
    }
    if (lines.empty()) return;
    absl::StrAppend(&text, "\n", title, ":\n", absl::StrJoin(lines, "\n"), "\n");
  };
  append_flags("Flags", sub.flags);
  append_flags("Logging flags", LoggingFlags());
  absl::StrAppend(&text,
                  "\nEvery subcommand also takes --help and --version [--yaml]. Boolean flags "
                  "take --name, --noname or --name=true|false.\n");
  return text;
}

int Dispatch(absl::string_view program, const std::vector<std::string>& argv,
             const std::vector<Subcommand>& table, Streams streams) {
  if (argv.empty()) {
    streams.err << Usage(program, table);
    return kExitUsage;
  }
  const std::string& first = argv[0];
  const Subcommand* sub = nullptr;
  const Subcommand* implicit = nullptr;  // run when no subcommand is named
  std::vector<std::string> rest;
  std::vector<std::string> allowed = LoggingFlags();
  bool version_subcommand = first == "version";
  if (version_subcommand) {
    rest.assign(argv.begin() + 1, argv.end());
    allowed.push_back("drivername");
  } else if (first.empty() || first[0] != '-') {
    sub = Find(table, first);
    if (sub == nullptr) {
      streams.err << program << ": unknown subcommand '" << first << "'\n\n"
                  << Usage(program, table);
      return kExitUsage;
    }
    rest.assign(argv.begin() + 1, argv.end());
    allowed.insert(allowed.end(), sub->flags.begin(), sub->flags.end());
  } else {
    rest = argv;
    allowed.push_back("drivername");
    for (const Subcommand& candidate : table) {
      if (candidate.implicit) implicit = &candidate;
    }
    if (implicit != nullptr) {
      allowed.insert(allowed.end(), implicit->flags.begin(), implicit->flags.end());
    }
  }

  absl::StatusOr<ParsedArgs> parsed = ParseFlags(rest, allowed);
  if (!parsed.ok()) {
    streams.err << program << (sub ? absl::StrCat(" ", sub->name) : "") << ": "
                << parsed.status().message() << "\nRun '" << program
                << (sub ? absl::StrCat(" ", sub->name) : "") << " --help' for usage.\n";
    return kExitUsage;
  }
  if (parsed->help) {
    streams.out << (sub ? SubcommandHelp(program, *sub) : Usage(program, table));
    return kExitOk;
  }
  if (version_subcommand || parsed->version) {
    if (!parsed->positional.empty()) {
      streams.err << program << ": the version output takes no arguments\n";
      return kExitUsage;
    }
    PrintVersion(*parsed, streams);
    return kExitOk;
  }
  if (parsed->yaml) {
    streams.err << program << ": --yaml goes with --version\n";
    return kExitUsage;
  }
  if (sub == nullptr && implicit != nullptr) return implicit->run(parsed->positional, streams);
  if (sub == nullptr) {
    streams.err << program << ": no subcommand given\n\n" << Usage(program, table);
    return kExitUsage;
  }
  return sub->run(parsed->positional, streams);
}

}  // namespace lustre_csi::cli
