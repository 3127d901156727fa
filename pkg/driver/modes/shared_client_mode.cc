#include "pkg/driver/modes/shared_client_mode.h"

#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "pkg/driver/modes/mounting_mode.h"
#include "pkg/driver/mount_options.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/mounter.h"
#include "pkg/volume/safe_path.h"
#include "pkg/volume/sha256.h"

namespace lustre_csi::driver {
namespace {

using internal::MountedSpec;

// A client mount: which file system, with which client-wide options.
struct Client {
  LustreSource root;                 // sub_dir empty
  std::vector<std::string> options;  // client-wide, sorted, without duplicates
  std::string name;                  // <fs>-<16 hex digits>
};

Client ClientFor(const LustreSource& source, const std::vector<std::string>& options) {
  Client c;
  c.root = source;
  c.root.sub_dir.clear();
  for (const std::string& opt : options) {
    if (!volume::IsBindOption(opt)) c.options.push_back(opt);
  }
  std::sort(c.options.begin(), c.options.end());
  c.options.erase(std::unique(c.options.begin(), c.options.end()), c.options.end());
  std::string key = absl::StrCat(c.root.Spec(), "\n", absl::StrJoin(c.options, ","));
  c.name = absl::StrCat(source.fs_name, "-", volume::Sha256Hex(key).substr(0, 16));
  return c;
}

std::vector<std::string> BindOptionsOf(const std::vector<std::string>& options) {
  std::vector<std::string> out;
  for (const std::string& opt : options) {
    if (volume::IsBindOption(opt)) out.push_back(opt);
  }
  return out;
}

// "<fs>[/<sub-dir>]" of a mount or a spec: what follows the MGS NIDs, which
// the helper may rewrite (a host name becomes its NID, "@tcp0" "@tcp").
std::string FsPart(absl::string_view spec) {
  size_t sep = spec.find(":/");
  return std::string(sep == absl::string_view::npos ? spec : spec.substr(sep + 2));
}

bool SameDevice(const volume::MountEntry& a, const volume::MountEntry& b) {
  return a.major == b.major && a.minor == b.minor;
}

class SharedClientMode : public internal::MountingMode {
 public:
  SharedClientMode(volume::Syscalls* sys, std::unique_ptr<MountMode> clients,
                   SharedClientOptions options, server::MetricsRegistry* metrics)
      : MountingMode(sys, internal::BindUnmountOptions(options.isolation)),
        sys_(sys),
        clients_(std::move(clients)),
        options_(std::move(options)) {
    if (metrics != nullptr) {
      publishes_ = metrics->AddCounter(
          "lustre_csi_publishes_total",
          "publishes by whether the Lustre client was already mounted (existing) or mounted "
          "for it (new)",
          {"client"});
      client_gauge_ =
          metrics->AddGauge("lustre_csi_clients", "Lustre client mounts on this node", {"fs_name"});
      use_gauge_ = metrics->AddGauge(
          "lustre_csi_client_mounts_in_use",
          "mounts from each Lustre client (publishes and working mounts)", {"client"});
      metrics->AddCollector([this] { Collect(); });
    }
    Start();
  }

  Readiness CheckReady() override {
    Readiness clients = clients_->CheckReady();
    if (!clients.status.ok()) return clients;
    // Every publish is a bind with flags set before it is attached: the
    // kernel's mount API, or (before Linux 5.12) a private staging mount.
    absl::Status binds = sys_->PrepareBinds();
    if (!binds.ok()) {
      return {absl::FailedPreconditionError(absl::StrCat(
                  "shared Lustre clients cannot bind volumes on this kernel: ", binds.message(),
                  "; fix that, or use --lustre-client=per-volume")),
              "bind-mounts"};
    }
    if (options_.binds_must_propagate) return CheckBindsPropagate();
    return {};
  }

  // The binds reach the host only through a shared mount: the one holding
  // the client directory (and, in the manifests, the targets beside it).
  Readiness CheckBindsPropagate() {
    absl::StatusOr<std::vector<volume::MountEntry>> table = volume::MountChecker(sys_).List();
    if (!table.ok()) {
      return {volume::Annotate(table.status(), "reading the mount table"), "propagation"};
    }
    std::string holder;
    for (const volume::MountEntry& e : *table) {
      const std::string point = volume::CleanPath(e.mount_point);
      if (volume::IsPathBeneath(point, options_.client_dir) && point.size() > holder.size()) {
        holder = point;
      }
    }
    std::optional<volume::MountEntry> top = volume::TopMountAt(*table, holder);
    if (top.has_value()) {
      for (const std::string& field : top->optional_fields) {
        if (absl::StartsWith(field, "shared:")) return {};
      }
    }
    return {absl::FailedPreconditionError(absl::StrCat(
                "the mount holding ", options_.client_dir, " (", holder.empty() ? "?" : holder,
                ") is not shared, so the volumes bound there would not reach the host: mount "
                "the kubelet directory Bidirectional, and keep the client directory under it")),
            "propagation"};
  }

  absl::Status WithFileSystemRoot(const LustreSource& source, const FsRootFn& fn) override {
    Client client = ClientFor(source, {});
    LockClient(client.name);
    absl::Cleanup unlock = [&] { UnlockClient(client.name); };
    bool fresh = false;
    absl::StatusOr<std::string> root = EnsureClient(client, &fresh);
    if (!root.ok()) return root.status();
    absl::Status status = fn(*sys_, *root);
    if (Users(client.name) == 0) ReleaseIfUnused(client.name, /*silent=*/false);
    return status;
  }

  // What it asks of the client's file system (is its root alive, the bind
  // from it) runs in a task of its own, one for a client this process knows.
  absl::Status Mount(const LustreSource& source, const std::string& target,
                     const std::vector<std::string>& options) override {
    Client client = ClientFor(source, options);
    LockClient(client.name);
    absl::Cleanup unlock = [&] { UnlockClient(client.name); };
    bool fresh = false;
    const std::string dir = ClientDir(client.name);
    const std::vector<std::string> bind_options = BindOptionsOf(options);
    bool alive = false;
    absl::Status status = absl::OkStatus();
    if (KnownMounted(client.name)) {
      status = Isolated([&] {
        alive = ClientAlive(dir);
        return alive ? BindFrom(dir, source, target, bind_options) : absl::OkStatus();
      });
    }
    if (!alive && status.ok()) {
      absl::StatusOr<std::string> root = EnsureClient(client, &fresh, /*known_looked_at=*/true);
      if (!root.ok()) return root.status();
      status = Isolated([&] { return BindFrom(*root, source, target, bind_options); });
    }
    if (!status.ok()) {
      if (Users(client.name) == 0) ReleaseIfUnused(client.name, /*silent=*/false);
      return status;
    }
    AddUser(client.name, target);
    if (publishes_ != nullptr) publishes_->Increment({fresh ? "new" : "existing"});
    LOG(INFO) << "bound " << source.Spec() << " at " << target << " from the "
              << (fresh ? "new" : "existing") << " client " << dir;
    return absl::OkStatus();
  }

  // Per path, without the mount table: the target is on the device of the
  // client with these client-wide options (each client mount is a
  // superblock of its own), is the volume's directory beneath that client's
  // root (device and inode), and has the per-mount flags asked for
  // (statfs(2) reports a mount's flags).
  absl::StatusOr<bool> IsMountOf(const LustreSource& source, const std::string& target,
                                 const std::vector<std::string>& options) override {
    const std::string dir = ClientDir(ClientFor(source, options).name);
    absl::StatusOr<volume::FileInfo> have = sys_->Stat(target);
    if (!have.ok()) return have.status();
    absl::StatusOr<volume::FileInfo> root = sys_->Stat(dir);
    if (absl::IsNotFound(root.status())) return false;
    if (!root.ok()) return root.status();
    if (root->dev != have->dev) return false;
    absl::StatusOr<bool> mounted = volume::MountChecker(sys_).IsMountPoint(dir, *root);
    if (!mounted.ok()) return mounted.status();
    if (!*mounted) return false;
    absl::StatusOr<volume::FileInfo> want = *root;
    if (!source.sub_dir.empty()) {
      want = volume::StatBeneath(*sys_, dir, source.sub_dir);
      if (absl::IsNotFound(want.status())) return false;
      if (!want.ok()) return want.status();
    }
    if (want->dev != have->dev || want->ino != have->ino) return false;
    absl::StatusOr<volume::FsStats> stats = sys_->Statfs(target);
    if (!stats.ok()) return stats.status();
    return PerMountFlagsMatch(volume::PerMountOptionsText(stats->mount_flags),
                              BindOptionsOf(options), true);
  }

  // The target stops counting as a user of its client; a client left
  // without users may be idle, which the mount table then decides: a target
  // whose unmount failed is still there and becomes a user again
  // (ReleaseIfUnused). Nothing here looks at the target itself, which may be
  // a hung mount. (A target is the user of one client; the table shows it as
  // the user of several only where clients share a device, which separate
  // Lustre client mounts never do: it is let go of by each.)
  void Release(const std::string& target, bool silent) override {
    std::vector<std::string> names;
    {
      absl::MutexLock lock(&users_mu_);
      in_place_.erase(target);  // its unmount no longer counts on its client
      for (const auto& [name, users] : users_) {
        if (users.count(target) > 0) names.push_back(name);
      }
    }
    for (const std::string& name : names) {
      if (RemoveUser(name, target) == 0) ReleaseWhenFree(name, silent);
    }
  }

  // A bind of a client mounted now (the target is among the users known of
  // a client, from this process's publishes or the mount table) drops one
  // reference and asks the file system nothing: in place. Any other target
  // may be the last mount of its client, whose unmount ends it and may wait
  // for the servers: a bind of a client detached as dead (before a restart
  // too: the table then shows no client of its device), or a mount this
  // mode did not make. Those are unmounted in a task. An unmount in place
  // counts on its client staying mounted until the target's Release: a
  // publish that finds the client dead waits for it before detaching the
  // client (AwaitNoUnmountInPlaceOf), so it is never the last reference.
  volume::UnmountOptions TargetUnmount(const std::string& target) override {
    volume::UnmountOptions options = MountingMode::TargetUnmount(target);
    options.in_place = false;
    options.unmount_bounded = options_.unmounts_bounded;
    absl::MutexLock lock(&users_mu_);
    for (const auto& [name, users] : users_) {
      if (users.count(target) == 0) continue;
      options.in_place = true;
      in_place_.emplace(target, name);
    }
    return options;
  }

 private:
  std::string ClientDir(const std::string& name) const {
    return absl::StrCat(options_.client_dir, "/", name);
  }
  // Whether `e` backs a target from `client`: of the same device, and neither
  // a client root nor a copy of one that a recursive bind of a directory
  // above the client directory made elsewhere (a container's volume of the
  // plugin directory, mounted after the client was), which ends in the same
  // "<clients>/<name>". `names` are the clients' names.
  bool IsUserOf(const volume::MountEntry& e, const volume::MountEntry& client,
                const std::set<std::string>& names) const {
    if (!SameDevice(e, client) || absl::StartsWith(e.mount_point, options_.client_dir + "/")) {
      return false;
    }
    const std::string base = options_.client_dir.substr(options_.client_dir.rfind('/') + 1);
    size_t last = e.mount_point.rfind('/');
    size_t before = last == std::string::npos || last == 0 ? std::string::npos
                                                           : e.mount_point.rfind('/', last - 1);
    if (before != std::string::npos &&
        e.mount_point.compare(before + 1, last - before - 1, base) == 0 &&
        names.count(e.mount_point.substr(last + 1)) > 0) {
      return false;
    }
    return true;
  }

  std::set<std::string> ClientNames(const std::vector<volume::MountEntry>& table) const {
    std::set<std::string> names;
    for (const volume::MountEntry& e : table) {
      if (IsClientRoot(e.mount_point)) {
        names.insert(e.mount_point.substr(options_.client_dir.size() + 1));
      }
    }
    return names;
  }

  bool IsClientRoot(const std::string& path) const {
    return absl::StartsWith(path, options_.client_dir + "/") &&
           path.find('/', options_.client_dir.size() + 1) == std::string::npos;
  }

  // The targets `table` shows bound from the client `name` (empty when it
  // is not mounted).
  std::set<std::string> UsersIn(const std::vector<volume::MountEntry>& table,
                                const std::string& name) const {
    std::set<std::string> users;
    std::optional<volume::MountEntry> client = volume::TopMountAt(table, ClientDir(name));
    if (!client.has_value()) return users;
    std::set<std::string> names = ClientNames(table);
    for (const volume::MountEntry& e : table) {
      if (IsUserOf(e, *client, names)) users.insert(e.mount_point);
    }
    return users;
  }

  // Once at start: who uses which client, from the mount table; then every
  // client nothing uses goes (one a crash left behind too).
  void Start() {
    absl::StatusOr<std::vector<volume::MountEntry>> table = volume::MountChecker(sys_).List();
    if (!table.ok()) {
      LOG(WARNING) << "cannot read the mount table to find the Lustre clients in use: "
                   << table.status();
      return;
    }
    std::vector<std::string> idle;
    for (const std::string& name : ClientNames(*table)) {
      std::set<std::string> users = UsersIn(*table, name);
      if (users.empty()) idle.push_back(name);
      SetUsers(name, users);
    }
    for (const std::string& name : idle) {
      LockClient(name);
      ReleaseIfUnused(name, /*silent=*/false);
      UnlockClient(name);
    }
  }

  // Takes the client's lock, which a publish holds while it mounts or binds
  // from the client (and the controller while it works in the client's
  // root). Where the holder waits on a file system that does not answer,
  // the node's mount slots bound who waits behind it (MountSlots).
  void LockClient(const std::string& name) { LockFor(name)->Lock(); }
  // Lets go of the client's lock; a release of the client asked for while
  // it was held (ReleaseWhenFree) is made now.
  void UnlockClient(const std::string& name) {
    LockFor(name)->Unlock();
    ReleaseIfAsked(name);
  }

  // Releases the client `name`, which no target uses any more, once its lock
  // is free: now, or by the call that holds it when it lets go (the
  // unpublish of another target never waits for a publish stuck there).
  void ReleaseWhenFree(const std::string& name, bool silent) {
    {
      absl::MutexLock lock(&users_mu_);
      bool& asked_silent = release_asked_[name];
      asked_silent = asked_silent || silent;  // nothing of it may be looked at
    }
    ReleaseIfAsked(name);
  }
  void ReleaseIfAsked(const std::string& name) {
    while (true) {
      {
        absl::MutexLock lock(&users_mu_);
        if (release_asked_.count(name) == 0) return;
      }
      absl::Mutex* mu = LockFor(name);
      if (!mu->TryLock()) return;  // its holder does it when it lets go
      std::optional<bool> silent;
      {
        absl::MutexLock lock(&users_mu_);
        auto it = release_asked_.find(name);
        if (it != release_asked_.end()) {
          silent = it->second;
          release_asked_.erase(it);
        }
      }
      if (silent.has_value() && Users(name) == 0) ReleaseIfUnused(name, *silent);
      mu->Unlock();
      // Asked again while this held the lock? Then the loop takes it.
    }
  }

  absl::Mutex* LockFor(const std::string& name) {
    absl::MutexLock lock(&locks_mu_);
    std::unique_ptr<absl::Mutex>& mu = locks_[name];
    if (mu == nullptr) mu = std::make_unique<absl::Mutex>();
    return mu.get();
  }

  // The users of each client this process knows mounted, in memory: a
  // client is known exactly while it has an entry. Changed with the
  // client's lock held (LockFor), which is taken before users_mu_.
  int Users(const std::string& name) {
    absl::MutexLock lock(&users_mu_);
    auto it = users_.find(name);
    return it == users_.end() ? 0 : static_cast<int>(it->second.size());
  }
  void AddUser(const std::string& name, const std::string& target) {
    absl::MutexLock lock(&users_mu_);
    users_[name].insert(target);
  }
  // The users left.
  int RemoveUser(const std::string& name, const std::string& target) {
    absl::MutexLock lock(&users_mu_);
    auto it = users_.find(name);
    if (it == users_.end()) return 0;
    it->second.erase(target);
    return static_cast<int>(it->second.size());
  }
  // Replaces what is known of the client `name` (mounted, with these users)
  // with what the mount table showed.
  void SetUsers(const std::string& name, const std::set<std::string>& users) {
    absl::MutexLock lock(&users_mu_);
    users_[name] = users;
  }
  void Forget(const std::string& name) {
    absl::MutexLock lock(&users_mu_);
    users_.erase(name);
  }
  bool KnownMounted(const std::string& name) {
    absl::MutexLock lock(&users_mu_);
    return users_.count(name) > 0;
  }
  // Waits, at most options_.in_place_unmount_wait, until no unmount in
  // place of a bind of the client `name` is under way; whether none is.
  bool AwaitNoUnmountInPlaceOf(const std::string& name) {
    absl::MutexLock lock(&users_mu_);
    auto none = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(users_mu_) {
      for (const auto& [target, of] : in_place_) {
        if (of == name) return false;
      }
      return true;
    };
    return users_mu_.AwaitWithTimeout(absl::Condition(&none), options_.in_place_unmount_wait);
  }

  // Whether the client root `dir` is a live mount: a stat of it (it asks the
  // client's file system; run it isolated), then a mount-point check.
  bool ClientAlive(const std::string& dir) {
    absl::StatusOr<volume::FileInfo> alive = sys_->Stat(dir);
    if (!alive.ok()) return false;
    absl::StatusOr<bool> mounted = volume::MountChecker(sys_).IsMountPoint(dir, *alive);
    return mounted.ok() && *mounted;
  }

  // The client's root, mounted (by this call when `fresh`). A client this
  // process knows is checked at its path alone (ClientAlive, isolated),
  // unless the caller just did (`known_looked_at`); the mount table is read
  // only for one it does not know, or that is dead. Call with the client's
  // lock held.
  absl::StatusOr<std::string> EnsureClient(const Client& client, bool* fresh,
                                           bool known_looked_at = false) {
    const std::string dir = ClientDir(client.name);
    if (!known_looked_at && KnownMounted(client.name)) {
      absl::StatusOr<bool> alive =
          Isolated([&]() -> absl::StatusOr<bool> { return ClientAlive(dir); });
      if (alive.ok() && *alive) return dir;
      // Dead, or unmounted behind this process's back: the table decides.
    }
    if (absl::Status s = volume::MkdirAll(*sys_, options_.client_dir, 0750); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "client mount directory ", options_.client_dir, " is not usable: ", s.message()));
    }
    absl::StatusOr<std::vector<volume::MountEntry>> table = volume::MountChecker(sys_).List();
    if (!table.ok()) return table.status();
    std::optional<volume::MountEntry> entry = volume::TopMountAt(*table, dir);
    if (entry.has_value()) {
      // Only this mode mounts in its directories: a mount there of the
      // file system is the client of this key, whatever form the helper gave
      // the MGS NIDs in the mount table.
      absl::StatusOr<volume::FileInfo> alive = Isolated([&] { return sys_->Stat(dir); });
      std::optional<int> err = volume::ErrnoOf(alive.status());
      bool dead = !alive.ok() && err.has_value() && (*err == ENOTCONN || *err == ESTALE);
      if (alive.ok() && FsPart(MountedSpec(*entry)) == client.root.fs_name) {
        SetUsers(client.name, UsersIn(*table, client.name));
        return dir;
      }
      if (!alive.ok() && !dead) return alive.status();
      if (alive.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(dir, " holds ", MountedSpec(*entry),
                                                          ", not a client of ", client.root.Spec(),
                                                          "; unmount it by hand"));
      }
      // A dead client: detach it (its binds stay as dead as they are) and
      // mount a new one.
      LOG(WARNING) << "Lustre client " << dir << " is dead (" << alive.status()
                   << "); mounting a new one";
      // Its binds left are not its users from now on: not unmounted in
      // place. One already being unmounted in place would end the client if
      // it were detached first (its put_super, which may wait for the
      // servers, on the unmounting thread): it goes first.
      Forget(client.name);
      if (!AwaitNoUnmountInPlaceOf(client.name)) {
        return absl::UnavailableError(absl::StrCat(
            "the Lustre client ", dir, " is dead (", alive.status().message(),
            ") and an unpublish of a target bound from it is still unmounting it; retry"));
      }
      if (absl::Status s = sys_->Unmount(dir, volume::kMntDetach); !s.ok()) {
        return volume::Annotate(s, absl::StrCat("detaching the dead client ", dir));
      }
    }
    absl::Status made = sys_->Mkdir(dir, 0750);
    if (!made.ok() && made.code() != absl::StatusCode::kAlreadyExists) {
      return volume::Annotate(made, absl::StrCat("creating client directory ", dir));
    }
    // The client's root through the lustre mode: no sub-dir, no group.
    absl::Status mounted = clients_->Publish({client.root, dir, client.options});
    if (!mounted.ok()) return mounted;
    SetUsers(client.name, {});
    *fresh = true;
    LOG(INFO) << "mounted Lustre client " << client.root.Spec()
              << (client.options.empty() ? "" : " -o " + absl::StrJoin(client.options, ","))
              << " at " << dir;
    return dir;
  }

  // Binds `source.sub_dir` beneath `root` (created when missing, one level at
  // a time) at `target`, from the directory resolved strictly beneath the
  // root (volume::BindDirBeneath): no symlink is followed, and a writer of
  // the file system cannot swap one in after the check.
  absl::Status BindFrom(const std::string& root, const LustreSource& source,
                        const std::string& target, const std::vector<std::string>& bind_options) {
    absl::StatusOr<volume::BindOptions> flags = volume::ParseBindOptions(bind_options);
    if (!flags.ok()) return flags.status();
    absl::Status bound = volume::BindDirBeneath(*sys_, root, source.sub_dir, target, flags->flags);
    if (bound.code() == absl::StatusCode::kNotFound && !source.sub_dir.empty()) {
      LOG(INFO) << "creating sub-dir " << source.sub_dir << " in the client " << root;
      if (absl::Status s =
              volume::MkdirAllBeneath(*sys_, root, source.sub_dir, internal::kSubDirMode);
          !s.ok()) {
        return s;
      }
      bound = volume::BindDirBeneath(*sys_, root, source.sub_dir, target, flags->flags);
    }
    if (bound.code() == absl::StatusCode::kUnimplemented) {
      return absl::FailedPreconditionError(
          absl::StrCat("bind mount of ", source.Spec(), " on ", target, ": ", bound.message(),
                       "; shared Lustre clients need binds with flags set before they are "
                       "attached; use --lustre-client=per-volume"));
    }
    return bound;
  }

  // Unmounts the client `name` when the mount table shows no mount of it
  // left outside the client directory; otherwise takes the users the table
  // shows. Call with the client's lock held.
  // `silent`: the client's file system does not answer; an unused client
  // is detached without being looked at.
  void ReleaseIfUnused(const std::string& name, bool silent) {
    const std::string root = ClientDir(name);
    absl::StatusOr<std::vector<volume::MountEntry>> table = volume::MountChecker(sys_).List();
    if (!table.ok()) {
      LOG(WARNING) << "keeping client " << root << ": " << table.status();
      return;
    }
    if (!volume::TopMountAt(*table, root).has_value()) {
      Forget(name);
      return;
    }
    std::set<std::string> users = UsersIn(*table, name);
    if (!users.empty()) {
      SetUsers(name, users);  // still backs targets this process did not know of
      return;
    }
    volume::UnmountOptions unmount;
    unmount.isolation = options_.isolation;
    absl::Status cleaned = silent ? volume::DetachMountPoint(*sys_, root, unmount)
                                  : volume::CleanupMountPoint(*sys_, root, unmount);
    if (cleaned.ok()) {
      Forget(name);
      LOG(INFO) << "unmounted Lustre client " << root << ": nothing uses it";
    } else {
      LOG(WARNING) << "unmounting unused Lustre client " << root << ": " << cleaned;
    }
  }

  // From memory: the clients this process knows mounted and their users.
  void Collect() {
    std::map<server::LabelValues, double> clients, uses;
    absl::MutexLock lock(&users_mu_);
    for (const auto& [name, users] : users_) {
      clients[{name.substr(0, name.rfind('-'))}] += 1;
      uses[{name}] = static_cast<double>(users.size());
    }
    client_gauge_->Reset(std::move(clients));
    use_gauge_->Reset(std::move(uses));
  }

  volume::Syscalls* const sys_;
  const std::unique_ptr<MountMode> clients_;
  const SharedClientOptions options_;
  server::Counter* publishes_ = nullptr;
  server::Gauge* client_gauge_ = nullptr;
  server::Gauge* use_gauge_ = nullptr;
  absl::Mutex locks_mu_;
  std::map<std::string, std::unique_ptr<absl::Mutex>> locks_ ABSL_GUARDED_BY(locks_mu_);
  absl::Mutex users_mu_;
  std::map<std::string, std::set<std::string>> users_ ABSL_GUARDED_BY(users_mu_);
  // Clients whose release waits for their lock (ReleaseWhenFree), and
  // whether silently (nothing of the client may be looked at).
  std::map<std::string, bool> release_asked_ ABSL_GUARDED_BY(users_mu_);
  // Targets being unmounted in place (from TargetUnmount to Release), and
  // the client each counts on.
  std::multimap<std::string, std::string> in_place_ ABSL_GUARDED_BY(users_mu_);
};

}  // namespace

std::unique_ptr<internal::MountingMode> NewSharedClientMode(volume::Syscalls* sys,
                                                            std::unique_ptr<MountMode> clients,
                                                            SharedClientOptions options,
                                                            server::MetricsRegistry* metrics) {
  return std::make_unique<SharedClientMode>(sys, std::move(clients), std::move(options), metrics);
}

}  // namespace lustre_csi::driver
