#include "pkg/driver/mount_options.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lustre_csi::driver {
namespace {

constexpr size_t kMaxFlagLength = 256;
constexpr size_t kMaxFlags = 64;

// Options that change what is mounted, where, or how mounts propagate.
constexpr const char* kForbidden[] = {
    "bind",        "rbind",         "remount",      "move",
    "shared",      "rshared",       "slave",        "rslave",
    "private",     "rprivate",      "unbindable",   "runbindable",
    "make-shared", "make-slave",    "make-private", "make-unbindable",
    "loop",        "x-mount.mkdir",
};

absl::Status CheckFlag(const std::string& flag) {
  if (flag.empty()) return absl::InvalidArgumentError("empty mount flag");
  if (flag.size() > kMaxFlagLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("mount flag of ", flag.size(), " bytes; at most ", kMaxFlagLength));
  }
  if (flag[0] == '-') {
    return absl::InvalidArgumentError(
        absl::StrCat("mount flag '", absl::CHexEscape(flag), "' starts with '-'"));
  }
  for (unsigned char c : flag) {
    if (c == ',' || c <= ' ' || c == 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mount flag '", absl::CHexEscape(flag),
          "' holds a comma, space or control character; give each option as its own flag"));
    }
  }
  std::string name = absl::AsciiStrToLower(flag.substr(0, flag.find('=')));
  for (const char* bad : kForbidden) {
    if (name == bad) {
      return absl::InvalidArgumentError(
          absl::StrCat("mount flag '", absl::CHexEscape(flag), "' is not allowed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> BuildMountOptions(const std::vector<std::string>& flags,
                                                           bool read_only) {
  if (flags.size() > kMaxFlags) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.size(), " mount flags; at most ", kMaxFlags));
  }
  std::vector<std::string> out;
  if (read_only) out.push_back("ro");
  for (const std::string& flag : flags) {
    if (absl::Status s = CheckFlag(flag); !s.ok()) return s;
    if (flag == "rw" && read_only) continue;  // read-only wins
    if (std::find(out.begin(), out.end(), flag) != out.end()) continue;
    out.push_back(flag);
  }
  return out;
}

bool PerMountFlagsMatch(absl::string_view mounted, const std::vector<std::string>& options,
                        bool exact) {
  std::vector<absl::string_view> have = absl::StrSplit(mounted, ',');
  auto has = [](const auto& list, absl::string_view flag) {
    return std::find(list.begin(), list.end(), flag) != list.end();
  };
  if (has(have, "ro") != has(options, "ro")) return false;
  for (absl::string_view flag : {"nosuid", "nodev", "noexec", "nodiratime", "nosymfollow"}) {
    bool asked = has(options, flag);
    if (asked && !has(have, flag)) return false;
    if (exact && !asked && has(have, flag)) return false;
  }
  // Access-time updates: one mode per mount; strictatime shows as neither.
  bool noatime = has(have, "noatime");
  bool relatime = has(have, "relatime");
  if (has(options, "noatime")) return noatime;
  if (has(options, "relatime")) return relatime;
  if (has(options, "strictatime")) return !noatime && !relatime;
  return !exact || !noatime;
}

}  // namespace lustre_csi::driver
