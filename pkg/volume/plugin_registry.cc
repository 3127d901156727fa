#include "pkg/volume/plugin_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lustre_csi::volume {

absl::Status PluginRegistry::Register(std::unique_ptr<VolumePlugin> plugin) {
  if (plugin == nullptr) return absl::InvalidArgumentError("volume plugin is null");
  std::string name = plugin->Name();
  if (name.empty()) return absl::InvalidArgumentError("volume plugin has an empty name");
  absl::MutexLock lock(&mu_);
  if (plugins_.count(name) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("volume plugin \"", name, "\" is already registered"));
  }
  plugins_.emplace(std::move(name), std::move(plugin));
  return absl::OkStatus();
}

absl::StatusOr<VolumePlugin*> PluginRegistry::FindByName(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = plugins_.find(name);
  if (it == plugins_.end()) {
    return absl::NotFoundError(absl::StrCat("no volume plugin named \"", name, "\""));
  }
  return it->second.get();
}

absl::StatusOr<VolumePlugin*> PluginRegistry::FindBySpec(const VolumeSpec& spec) const {
  std::vector<VolumePlugin*> all;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, plugin] : plugins_) all.push_back(plugin.get());
  }
  std::vector<VolumePlugin*> matches;
  for (VolumePlugin* plugin : all) {
    if (plugin->CanSupport(spec)) matches.push_back(plugin);
  }
  std::string what = absl::StrCat("volume \"", spec.name, "\" (driver \"", spec.driver, "\", id \"",
                                  spec.volume_id, "\")");
  if (matches.empty()) return absl::NotFoundError(absl::StrCat("no volume plugin supports ", what));
  if (matches.size() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "more than one volume plugin supports ", what, ": ",
        absl::StrJoin(matches, ", ",
                      [](std::string* out, VolumePlugin* p) { absl::StrAppend(out, p->Name()); })));
  }
  return matches[0];
}

std::vector<std::string> PluginRegistry::Names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, plugin] : plugins_) names.push_back(name);
  return names;
}

}  // namespace lustre_csi::volume
