// A registry of volume plugins, found by name or by the volume they support.
//
// Plugins register once under a unique, non-empty name and are owned by the
// registry for its whole life, so the pointers handed out stay valid as long
// as the registry does. FindBySpec asks every plugin whether it can support a
// volume and insists on exactly one answer: none is NOT_FOUND, more than one
// is FAILED_PRECONDITION naming them (an ambiguous set-up must be fixed, not
// resolved by registration order). Thread-safe; plugins' own methods must be
// thread-safe too, as they are called without a lock held.
#ifndef LUSTRE_CSI_PKG_VOLUME_PLUGIN_REGISTRY_H_
#define LUSTRE_CSI_PKG_VOLUME_PLUGIN_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace lustre_csi::volume {

struct VolumeSpec {
  std::string name;
  std::string driver;
  std::string volume_id;
  std::map<std::string, std::string> attributes;
};

class VolumePlugin {
 public:
  virtual ~VolumePlugin() = default;
  virtual std::string Name() const = 0;
  virtual bool CanSupport(const VolumeSpec& spec) const = 0;
};

class PluginRegistry {
 public:
  // INVALID_ARGUMENT for a null plugin or an empty name, ALREADY_EXISTS for a
  // name taken.
  absl::Status Register(std::unique_ptr<VolumePlugin> plugin);

  absl::StatusOr<VolumePlugin*> FindByName(absl::string_view name) const;
  absl::StatusOr<VolumePlugin*> FindBySpec(const VolumeSpec& spec) const;

  // Registered names, sorted.
  std::vector<std::string> Names() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<VolumePlugin>, std::less<>> plugins_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lustre_csi::volume

#endif  // LUSTRE_CSI_PKG_VOLUME_PLUGIN_REGISTRY_H_
