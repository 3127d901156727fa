#include "pkg/version/version.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace lustre_csi::version {
namespace stamp {
extern const char kGitCommit[];
extern const char kBuildDate[];
extern const char kDriverVersion[];
}  // namespace stamp

namespace {

#define LUSTRE_CSI_STR2(x) #x
#define LUSTRE_CSI_STR(x) LUSTRE_CSI_STR2(x)

#if defined(__clang__)
constexpr char kCompiler[] = "clang";
constexpr char kCompilerVersion[] = LUSTRE_CSI_STR(__clang_major__) "." LUSTRE_CSI_STR(
    __clang_minor__) "." LUSTRE_CSI_STR(__clang_patchlevel__);
#elif defined(__GNUC__)
constexpr char kCompiler[] = "gcc";
constexpr char kCompilerVersion[] = LUSTRE_CSI_STR(__GNUC__) "." LUSTRE_CSI_STR(
    __GNUC_MINOR__) "." LUSTRE_CSI_STR(__GNUC_PATCHLEVEL__);
#else
constexpr char kCompiler[] = "unknown";
constexpr char kCompilerVersion[] = "unknown";
#endif

#if defined(__x86_64__)
constexpr char kArch[] = "amd64";
#elif defined(__aarch64__)
constexpr char kArch[] = "arm64";
#elif defined(__powerpc64__)
constexpr char kArch[] = "ppc64le";
#elif defined(__s390x__)
constexpr char kArch[] = "s390x";
#else
constexpr char kArch[] = "unknown";
#endif

#if defined(__linux__)
constexpr char kOs[] = "linux";
#else
constexpr char kOs[] = "unknown";
#endif

bool IsReservedWord(absl::string_view value) {
  static constexpr absl::string_view kWords[] = {"true", "false", "yes", "no",  "on",
                                                 "off",  "y",     "n",   "null"};
  for (absl::string_view word : kWords) {
    if (absl::EqualsIgnoreCase(value, word)) return true;
  }
  return false;
}

// A conservative test for a plain scalar: starts with a letter, '_' or '/',
// continues with [A-Za-z0-9_./+-], and is no word a YAML 1.1 reader turns
// into a boolean or null. Anything starting with a digit is quoted, so no
// number, date or version-like string is ever read back as something else.
bool CanBePlain(absl::string_view value) {
  if (value.empty() || IsReservedWord(value)) return false;
  char first = value.front();
  if (!absl::ascii_isalpha(first) && first != '_' && first != '/') return false;
  for (char c : value) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '/' && c != '+' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string YamlScalar(absl::string_view value, bool force_quotes) {
  if (!force_quotes && CanBePlain(value)) return std::string(value);
  std::string out = "\"";
  for (unsigned char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          absl::StrAppendFormat(&out, "\\x%02x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += "\"";
  return out;
}

BuildInfo GetBuildInfo(absl::string_view driver_name) {
  BuildInfo info;
  info.build_date = stamp::kBuildDate;
  info.compiler = kCompiler;
  info.compiler_version = kCompilerVersion;
  info.driver_name = std::string(driver_name);
  info.driver_version = stamp::kDriverVersion;
  info.git_commit = stamp::kGitCommit;
  info.platform = absl::StrCat(kOs, "/", kArch);
  return info;
}

std::string FormatVersionLine(const BuildInfo& info) {
  return absl::StrFormat("%s %s (commit %s, built %s, %s %s, %s)", info.driver_name,
                         info.driver_version, info.git_commit, info.build_date, info.compiler,
                         info.compiler_version, info.platform);
}

std::string FormatVersionYaml(const BuildInfo& info) {
  // Written in sorted key order; version_test checks that the order holds.
  const std::pair<absl::string_view, std::string> rows[] = {
      {"Build Date", YamlScalar(info.build_date, /*force_quotes=*/true)},
      {"Compiler", YamlScalar(info.compiler)},
      {"Compiler Version", YamlScalar(info.compiler_version)},
      {"Driver Name", YamlScalar(info.driver_name)},
      {"Driver Version", YamlScalar(info.driver_version)},
      {"Git Commit", YamlScalar(info.git_commit)},
      {"Platform", YamlScalar(info.platform)},
  };
  std::string out;
  for (const auto& [key, value] : rows) absl::StrAppend(&out, key, ": ", value, "\n");
  return out;
}

std::string UserAgent(const BuildInfo& info, absl::string_view suffix) {
  std::vector<absl::string_view> platform = absl::StrSplit(info.platform, '/');
  absl::string_view os = platform.empty() ? "unknown" : platform[0];
  absl::string_view arch = platform.size() > 1 ? platform[1] : "unknown";
  std::string agent = absl::StrCat(info.driver_name, "/", info.driver_version, " ", info.compiler,
                                   "/", info.compiler_version, " (", arch, "-", os, ")");
  if (!suffix.empty()) absl::StrAppend(&agent, " ", suffix);
  return agent;
}

}  // namespace lustre_csi::version
