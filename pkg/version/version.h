// Build identity of the lustre-csi binary.
//
// The commit, its time and the driver version are stamped at build time (see
// build_info.bzl); the compiler and platform come from the compiler itself.
// Everything here is immutable after start-up and safe to call from any thread.
#ifndef LUSTRE_CSI_PKG_VERSION_VERSION_H_
#define LUSTRE_CSI_PKG_VERSION_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace lustre_csi::version {

// The driver name used when none is configured; the same as the Azure Lustre
// CSI driver, so existing PersistentVolumes keep working.
inline constexpr char kDefaultDriverName[] = "azurelustre.csi.azure.com";

struct BuildInfo {
  std::string build_date;        // RFC 3339, UTC, the commit's time.
  std::string compiler;          // "gcc" or "clang".
  std::string compiler_version;  // e.g. "12.2.0".
  std::string driver_name;
  std::string driver_version;  // from the VERSION file, e.g. "v0.1.0".
  std::string git_commit;      // full commit id, "-dirty" appended for a dirty tree.
  std::string platform;        // "<os>/<arch>", e.g. "linux/amd64".
};

// The identity of this binary, reported under `driver_name`.
BuildInfo GetBuildInfo(absl::string_view driver_name = kDefaultDriverName);

// "<driver-name> <version> (commit <id>, built <date>, <compiler> <version>, <platform>)".
std::string FormatVersionLine(const BuildInfo& info);

// YAML mapping with the keys sorted alphabetically, one per line:
// Build Date (always quoted), Compiler, Compiler Version, Driver Name,
// Driver Version, Git Commit, Platform. Other values are quoted only where a
// YAML reader would not otherwise read them back as the same string.
std::string FormatVersionYaml(const BuildInfo& info);

// "<driver-name>/<version> <compiler>/<compiler-version> (<arch>-<os>)", with
// " <suffix>" appended when `suffix` is not empty.
std::string UserAgent(const BuildInfo& info, absl::string_view suffix = "");

// `value` as a YAML scalar: plain when that reads back as the same string,
// double-quoted (with escapes) otherwise, or when `force_quotes` is set.
std::string YamlScalar(absl::string_view value, bool force_quotes = false);

}  // namespace lustre_csi::version

#endif  // LUSTRE_CSI_PKG_VERSION_VERSION_H_
