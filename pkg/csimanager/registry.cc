#include "pkg/csimanager/registry.h"

#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "pkg/base/status_macros.h"
#include "pkg/csimanager/types.h"
#include "pkg/server/endpoint.h"

namespace lustre_csi::csimanager {
namespace {

// A "major.minor.patch" version as numbers; missing or bad parts are 0.
std::tuple<int, int, int> VersionKey(absl::string_view version) {
  absl::ConsumePrefix(&version, "v");
  std::vector<absl::string_view> parts = absl::StrSplit(version, '.');
  int numbers[3] = {0, 0, 0};
  for (size_t i = 0; i < parts.size() && i < 3; ++i) {
    if (!absl::SimpleAtoi(parts[i], &numbers[i])) numbers[i] = 0;
  }
  return {numbers[0], numbers[1], numbers[2]};
}

std::tuple<int, int, int> HighestVersion(const PluginRecord& record) {
  std::tuple<int, int, int> best{0, 0, 0};
  for (const std::string& v : record.supported_versions) best = std::max(best, VersionKey(v));
  return best;
}

}  // namespace

absl::StatusOr<PluginRecord> ParseStaticPlugin(absl::string_view spec) {
  std::vector<absl::string_view> parts = absl::StrSplit(spec, absl::MaxSplits(':', 2));
  if (parts.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "static plugin \"", spec, "\": want <name>:<node|controller|monolith>:<socket>"));
  }
  PluginRecord record;
  record.name = std::string(absl::StripAsciiWhitespace(parts[0]));
  absl::StatusOr<PluginType> type = ParsePluginType(absl::StripAsciiWhitespace(parts[1]));
  if (!type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("static plugin \"", spec, "\": ", type.status().message()));
  }
  record.type = *type;
  absl::StatusOr<std::string> socket =
      server::ParseAbsoluteUnixEndpoint(absl::StripAsciiWhitespace(parts[2]));
  if (!socket.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("static plugin \"", spec, "\": ", socket.status().message()));
  }
  record.endpoint = *socket;
  record.origin = PluginOrigin::kStatic;
  record.id = StaticPluginId(record.type, record.name);
  absl::Status valid = ValidatePluginName(record.name);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("static plugin \"", spec, "\": ", valid.message()));
  }
  return record;
}

absl::StatusOr<std::vector<PluginRecord>> ParseStaticPluginConfig(absl::string_view text) {
  std::vector<PluginRecord> out;
  std::set<std::string> ids;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    absl::StatusOr<PluginRecord> record = ParseStaticPlugin(line);
    if (!record.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": ", record.status().message()));
    }
    if (!ids.insert(record->id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": plugin ", record->name, " (",
                       PluginTypeName(record->type), ") is listed twice"));
    }
    out.push_back(*std::move(record));
  }
  return out;
}

absl::Status ValidateRecord(const PluginRecord& record) {
  if (record.id.empty()) return absl::InvalidArgumentError("plugin record has no id");
  absl::Status name = ValidatePluginName(record.name);
  if (!name.ok()) return name;
  absl::StatusOr<std::string> socket = server::ParseAbsoluteUnixEndpoint(record.endpoint);
  if (!socket.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin ", record.name, ": ", socket.status().message()));
  }
  if (*socket != record.endpoint) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin ", record.name, ": endpoint must be a plain socket path"));
  }
  return absl::OkStatus();
}

Registry::Registry(Store* store, base::Clock* clock) : store_(store), clock_(clock) {}

absl::Status Registry::Restore() {
  if (store_ == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<PluginRecord> stored, store_->ListPlugins());
  {
    absl::MutexLock lock(&mu_);
    for (PluginRecord& record : stored) {
      record.restored = true;
      std::string id = record.id;
      records_[id] = std::move(record);
    }
  }
  Notify();
  return absl::OkStatus();
}

absl::Status Registry::Upsert(PluginRecord record) {
  RETURN_IF_ERROR(ValidateRecord(record));
  record.restored = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = records_.find(record.id);
    if (it != records_.end() && it->second == record) return absl::OkStatus();
    if (store_ != nullptr) {
      RETURN_IF_ERROR(store_->PutPlugin(record));
    }
    std::string id = record.id;
    records_[id] = std::move(record);
  }
  Notify();
  return absl::OkStatus();
}

absl::Status Registry::Remove(absl::string_view id) {
  {
    absl::MutexLock lock(&mu_);
    auto it = records_.find(std::string(id));
    if (it == records_.end()) return absl::OkStatus();
    if (store_ != nullptr) {
      RETURN_IF_ERROR(store_->DeletePlugin(id));
    }
    records_.erase(it);
  }
  Notify();
  return absl::OkStatus();
}

absl::Status Registry::ReplaceStatic(std::vector<PluginRecord> records) {
  std::set<std::string> wanted;
  for (PluginRecord& record : records) {
    record.origin = PluginOrigin::kStatic;
    record.id = StaticPluginId(record.type, record.name);
    record.restored = false;
    RETURN_IF_ERROR(ValidateRecord(record));
    if (!wanted.insert(record.id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("static plugin ", record.name, " is listed twice"));
    }
  }
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = records_.begin(); it != records_.end();) {
      if (it->second.origin == PluginOrigin::kStatic && wanted.count(it->first) == 0) {
        if (store_ != nullptr) status.Update(store_->DeletePlugin(it->first));
        if (!status.ok()) break;
        it = records_.erase(it);
      } else {
        ++it;
      }
    }
    for (PluginRecord& record : records) {
      if (!status.ok()) break;
      auto it = records_.find(record.id);
      if (it != records_.end() && it->second.endpoint == record.endpoint &&
          it->second.type == record.type) {
        record.registered_at = it->second.registered_at;
      } else {
        record.registered_at = clock_->Now();
      }
      if (it != records_.end() && it->second == record) continue;
      if (store_ != nullptr) status.Update(store_->PutPlugin(record));
      if (!status.ok()) break;
      std::string id = record.id;
      records_[id] = std::move(record);
    }
  }
  Notify();
  return status;
}

absl::Status Registry::ForgetMissingRegistrations(const absl::flat_hash_set<std::string>& present) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = records_.begin(); it != records_.end();) {
      const PluginRecord& record = it->second;
      if (record.restored && record.origin == PluginOrigin::kRegistrationDir &&
          !present.contains(record.id)) {
        if (store_ != nullptr) status.Update(store_->DeletePlugin(record.id));
        if (!status.ok()) break;
        it = records_.erase(it);
      } else {
        ++it;
      }
    }
  }
  Notify();
  return status;
}

std::vector<PluginRecord> Registry::List() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<PluginRecord> out;
  for (const auto& [id, record] : records_) out.push_back(record);
  std::stable_sort(out.begin(), out.end(),
                   [](const PluginRecord& a, const PluginRecord& b) { return a.name < b.name; });
  return out;
}

std::optional<PluginRecord> Registry::Get(absl::string_view id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = records_.find(std::string(id));
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

bool Registry::Better(const PluginRecord& a, const PluginRecord& b) const {
  bool a_static = a.origin == PluginOrigin::kStatic;
  bool b_static = b.origin == PluginOrigin::kStatic;
  if (a_static != b_static) return a_static;
  if (a.registered_at != b.registered_at) return a.registered_at > b.registered_at;
  auto va = HighestVersion(a), vb = HighestVersion(b);
  if (va != vb) return va > vb;
  return a.id > b.id;
}

std::optional<PluginRecord> Registry::ActiveLocked(absl::string_view name, PluginType type) const {
  const PluginRecord* best = nullptr;
  for (const auto& [id, record] : records_) {
    if (record.name != name || !Serves(record.type, type)) continue;
    if (best == nullptr || Better(record, *best)) best = &record;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::optional<PluginRecord> Registry::Active(absl::string_view name, PluginType type) const {
  absl::ReaderMutexLock lock(&mu_);
  return ActiveLocked(name, type);
}

std::vector<PluginRecord> Registry::ActiveSet() const {
  absl::ReaderMutexLock lock(&mu_);
  std::set<std::string> names;
  for (const auto& [id, record] : records_) names.insert(record.name);
  std::map<std::string, PluginRecord> active;
  for (const std::string& name : names) {
    for (PluginType role : {PluginType::kNode, PluginType::kController}) {
      std::optional<PluginRecord> winner = ActiveLocked(name, role);
      if (winner.has_value()) active.emplace(winner->id, *winner);
    }
  }
  std::vector<PluginRecord> out;
  for (auto& [id, record] : active) out.push_back(std::move(record));
  return out;
}

void Registry::SetListener(Listener listener) {
  absl::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
}

void Registry::Notify() {
  Listener listener;
  {
    absl::MutexLock lock(&listener_mu_);
    listener = listener_;
  }
  if (listener) listener();
}

}  // namespace lustre_csi::csimanager
