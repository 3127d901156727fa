// Registry: every known plugin instance and, for each plugin name and role,
// the one instance that is active.
//
// Records come from the registration directory (RegistrationWatcher), from
// static configuration (ReplaceStatic) and from the state store at start
// (Restore). Each change is written to the store before the call returns.
//
// Several records may share a name, e.g. while a new version of a plugin
// starts before the old one has gone. For a name and role the active record
// is chosen by, in order: static over registration-directory records; the
// newest registered_at; the highest supported version; the greatest id. When
// the winner goes away the next one takes over.
//
// Thread-safe. The listener runs after each change, on the thread that made
// it, with no registry lock held; it may call back into the registry.
// `store` (may be null: nothing is persisted) and `clock` are not owned and
// must outlive the registry.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_REGISTRY_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_REGISTRY_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "pkg/base/clock.h"
#include "pkg/csimanager/store.h"
#include "pkg/csimanager/types.h"

namespace lustre_csi::csimanager {

// Parses one static plugin, "<name>:<type>:<socket>", e.g.
// "hostpath.csi.k8s.io:node:/var/lib/hostpath/csi.sock". The socket may be
// written as "unix:///path". The record's registered_at is left unset.
absl::StatusOr<PluginRecord> ParseStaticPlugin(absl::string_view spec);

// Parses a static plugin file: one "<name>:<type>:<socket>" per line; blank
// lines and lines starting with '#' are ignored. Errors name the line. A
// name listed twice for one type is an error.
absl::StatusOr<std::vector<PluginRecord>> ParseStaticPluginConfig(absl::string_view text);

// Checks a record before it enters the registry: id, valid plugin name, an
// absolute unix socket endpoint.
absl::Status ValidateRecord(const PluginRecord& record);

class Registry {
 public:
  using Listener = std::function<void()>;

  Registry(Store* store, base::Clock* clock);
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Loads the stored records, marked `restored`. Call once, before the
  // watcher and static configuration add theirs.
  absl::Status Restore();

  // Adds or replaces the record with `record.id`; clears `restored`.
  absl::Status Upsert(PluginRecord record);
  // Removes the record; removing an unknown id is not an error.
  absl::Status Remove(absl::string_view id);
  // Makes the static records exactly `records`. A record that already exists
  // with the same endpoint keeps its registered_at; others get Now().
  absl::Status ReplaceStatic(std::vector<PluginRecord> records);
  // Removes restored registration-directory records whose id is not in
  // `present` (their socket disappeared while the manager was down).
  absl::Status ForgetMissingRegistrations(const absl::flat_hash_set<std::string>& present);

  // Every record, ordered by name, then id.
  std::vector<PluginRecord> List() const;
  std::optional<PluginRecord> Get(absl::string_view id) const;
  // The active record for `name` that serves `type`'s role: kNode and
  // kController match monoliths too; kMonolith matches only monoliths.
  std::optional<PluginRecord> Active(absl::string_view name, PluginType type) const;
  // Every record that is active for some name and role, ordered by id.
  std::vector<PluginRecord> ActiveSet() const;

  void SetListener(Listener listener);

 private:
  void Notify();
  bool Better(const PluginRecord& a, const PluginRecord& b) const;
  std::optional<PluginRecord> ActiveLocked(absl::string_view name, PluginType type) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  Store* const store_;
  base::Clock* const clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, PluginRecord> records_ ABSL_GUARDED_BY(mu_);  // by id
  absl::Mutex listener_mu_;
  Listener listener_ ABSL_GUARDED_BY(listener_mu_);
};

}  // namespace lustre_csi::csimanager

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_REGISTRY_H_
