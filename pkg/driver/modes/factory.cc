#include "pkg/driver/modes/factory.h"

#include <utility>

#include "pkg/driver/modes/local_mode.h"
#include "pkg/driver/modes/mock_mode.h"

namespace lustre_csi::driver {
namespace {

absl::Status NothingToCheck(const ModeEnv&) { return absl::OkStatus(); }

ModeInstance Mounting(std::unique_ptr<internal::MountingMode> mode) {
  FileSystemAccess* file_systems = mode.get();
  return {std::move(mode), file_systems};
}

ModeInstance MakeLustre(const ModeEnv& env) {
  LustreModeOptions lustre = env.lustre;
  lustre.isolation = env.isolation;
  std::unique_ptr<internal::MountingMode> mode = NewLustreMode(env.sys, env.ns, lustre);
  if (!env.shared_clients) return Mounting(std::move(mode));
  SharedClientOptions shared = env.shared;
  shared.isolation = env.isolation;
  // Its unmounts reach `ns` (ModeEnv::sys), which bounds each.
  shared.unmounts_bounded = env.ns != nullptr;
  return Mounting(NewSharedClientMode(env.sys, std::move(mode), shared, env.metrics));
}

absl::Status CheckLocal(const ModeEnv& env) {
  if (env.local_root.empty()) {
    return absl::InvalidArgumentError("--mount-mode=local needs --local-root");
  }
  return absl::OkStatus();
}

ModeInstance MakeLocal(const ModeEnv& env) {
  return Mounting(NewLocalMode(env.sys, env.local_root, env.isolation));
}

ModeInstance MakeMock(const ModeEnv& env) { return {NewMockMode(env.sys), nullptr}; }

const ModeSpec kModes[] = {
    {"lustre", /*lustre_client=*/true, &NothingToCheck, &MakeLustre},
    {"local", /*lustre_client=*/false, &CheckLocal, &MakeLocal},
    {"mock", /*lustre_client=*/false, &NothingToCheck, &MakeMock},
};

}  // namespace

const ModeSpec* FindMode(absl::string_view name) {
  for (const ModeSpec& spec : kModes) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

std::string ModeNames() {
  std::string out;
  constexpr size_t kCount = sizeof(kModes) / sizeof(kModes[0]);
  for (size_t i = 0; i < kCount; ++i) {
    if (i > 0) out += i + 1 == kCount ? " or " : ", ";
    out += kModes[i].name;
  }
  return out;
}

}  // namespace lustre_csi::driver
