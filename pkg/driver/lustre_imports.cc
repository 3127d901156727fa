#include "pkg/driver/lustre_imports.h"

#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lustre_csi::driver {
namespace {

// An import file is a few hundred bytes; more is not one.
constexpr size_t kMaxImportBytes = 64 * 1024;
// Devices per kind listed at most (one per target and client mount).
constexpr size_t kMaxDevices = 1 << 16;

bool IsTargetIndex(absl::string_view s) {
  if (s.size() != 4) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(c)) return false;
  }
  return true;
}

}  // namespace

bool ClientImport::operator==(const ClientImport& other) const {
  return fs == other.fs && target == other.target && device == other.device && state == other.state;
}

bool IsHealthyImportState(absl::string_view state) { return state == "FULL" || state == "IDLE"; }

std::optional<ClientImport> ParseImportDevice(absl::string_view device) {
  // <fsname>-<MDT|OST><4 hex>-<mdc|osc>-<16 hex>; the fsname may hold '-'.
  std::vector<absl::string_view> parts = absl::StrSplit(device, '-');
  if (parts.size() < 4) return std::nullopt;
  absl::string_view instance = parts[parts.size() - 1];
  absl::string_view kind = parts[parts.size() - 2];
  absl::string_view target = parts[parts.size() - 3];
  if (instance.empty() || !std::all_of(instance.begin(), instance.end(),
                                       [](char c) { return absl::ascii_isxdigit(c); })) {
    return std::nullopt;
  }
  bool mdc = kind == "mdc" && absl::StartsWith(target, "MDT");
  bool osc = kind == "osc" && absl::StartsWith(target, "OST");
  if ((!mdc && !osc) || !IsTargetIndex(target.substr(3))) return std::nullopt;
  size_t fs_end = device.size() - instance.size() - kind.size() - target.size() - 3;
  if (fs_end == 0) return std::nullopt;
  ClientImport out;
  out.fs = std::string(device.substr(0, fs_end));
  out.target = absl::StrCat(out.fs, "-", target);
  out.device = std::string(device);
  return out;
}

absl::StatusOr<std::string> ParseImportState(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view stripped = absl::StripLeadingAsciiWhitespace(line);
    // The top-level keys of "import:" are indented; a key of a nested map
    // ("connection:", "rpcs:") is indented further but none is "state".
    if (stripped.size() != line.size() && absl::ConsumePrefix(&stripped, "state:")) {
      absl::string_view state = absl::StripAsciiWhitespace(stripped);
      if (state.empty()) break;
      return std::string(state);
    }
  }
  return absl::InvalidArgumentError("no 'state:' line in the import file");
}

std::vector<std::string> LustreParamDirs(const std::string& root) {
  std::string base = root == "/" ? "" : std::string(absl::StripSuffix(root, "/"));
  return {base + "/proc/fs/lustre", base + "/sys/kernel/debug/lustre"};
}

LustreImports::LustreImports(volume::Syscalls* sys, std::vector<std::string> param_dirs,
                             base::Clock* clock, absl::Duration max_age,
                             absl::Duration read_timeout)
    : sys_(sys),
      param_dirs_(std::move(param_dirs)),
      clock_(clock),
      max_age_(max_age),
      reads_(clock, read_timeout, /*max_in_flight=*/1) {}

absl::StatusOr<std::vector<ClientImport>> LustreImports::Read() {
  std::vector<ClientImport> out;
  volume::OpenHow dir_how;
  dir_how.access = volume::OpenAccess::kRead;
  dir_how.directory = true;
  volume::OpenHow file_how;
  file_how.access = volume::OpenAccess::kRead;
  file_how.nofollow = true;
  for (const std::string& dir : param_dirs_) {
    for (const char* kind : {"mdc", "osc"}) {
      absl::StatusOr<volume::ScopedFd> kind_fd =
          volume::Open(*sys_, volume::kAtCwd, absl::StrCat(dir, "/", kind), dir_how);
      if (absl::IsNotFound(kind_fd.status())) continue;
      if (!kind_fd.ok()) return kind_fd.status();
      absl::StatusOr<std::vector<std::string>> names = sys_->ReadDir(kind_fd->get(), kMaxDevices);
      if (!names.ok()) return names.status();
      for (const std::string& name : *names) {
        std::optional<ClientImport> device = ParseImportDevice(name);
        if (!device.has_value()) continue;
        absl::StatusOr<volume::ScopedFd> file =
            volume::Open(*sys_, kind_fd->get(), name + "/import", file_how);
        if (absl::IsNotFound(file.status())) continue;  // the mount went meanwhile
        if (!file.ok()) return file.status();
        absl::StatusOr<std::string> text = sys_->Read(file->get(), kMaxImportBytes);
        if (!text.ok()) return text.status();
        absl::StatusOr<std::string> state = ParseImportState(*text);
        if (!state.ok()) {
          LOG(WARNING) << dir << "/" << kind << "/" << name << "/import: " << state.status();
          continue;
        }
        device->state = *state;
        out.push_back(std::move(*device));
      }
    }
    // One tree holds the devices: the first that has any.
    if (!out.empty()) break;
  }
  std::sort(out.begin(), out.end(),
            [](const ClientImport& a, const ClientImport& b) { return a.device < b.device; });
  return out;
}

std::vector<ClientImport> LustreImports::All() {
  {
    absl::MutexLock lock(&mu_);
    if (read_at_.has_value() && clock_->Now() - *read_at_ < max_age_) return last_;
  }
  absl::StatusOr<std::vector<ClientImport>> read =
      reads_.Call("imports", [this] { return Read(); });
  absl::MutexLock lock(&mu_);
  if (read.ok()) {
    last_ = std::move(*read);
    read_at_ = clock_->Now();
  } else {
    LOG_EVERY_N(WARNING, 100) << "reading the Lustre client's import states: " << read.status()
                              << "; the last ones read stand";
  }
  return last_;
}

std::vector<ClientImport> LustreImports::Unhealthy(const std::string& fs) {
  std::vector<ClientImport> out;
  for (ClientImport& i : All()) {
    if (i.fs == fs && !IsHealthyImportState(i.state)) out.push_back(std::move(i));
  }
  return out;
}

std::string LustreImports::Describe(const std::string& fs) {
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<std::string> parts;
  for (const ClientImport& i : Unhealthy(fs)) {
    if (seen.insert({i.target, i.state}).second) parts.push_back(i.target + " " + i.state);
  }
  return absl::StrJoin(parts, ", ");
}

void LustreImports::Export(server::MetricsRegistry* metrics) {
  server::Gauge* gauge = metrics->AddGauge(
      "lustre_csi_client_state",
      "Lustre client devices (one per target and client mount) by the state of their connection "
      "to the target: FULL (or IDLE) is connected",
      {"fs", "target", "state"});
  metrics->AddCollector([this, gauge] {
    std::map<server::LabelValues, double> series;
    for (const ClientImport& i : All()) series[{i.fs, i.target, i.state}] += 1;
    gauge->Reset(std::move(series));
  });
}

}  // namespace lustre_csi::driver
