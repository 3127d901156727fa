#include "pkg/csimanager/state_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "pkg/base/status_macros.h"

namespace lustre_csi::csimanager {
namespace {

constexpr char kCorruptAdvice[] =
    ". Refusing to start: the plugin manager will not guess which volumes are mounted. Move "
    "the file aside (its -wal file too) and check the mounts under the mount root by hand, "
    "or restore the store from a backup.";

constexpr char kSchemaV1[] = R"sql(
CREATE TABLE plugins (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  origin TEXT NOT NULL,
  supported_versions TEXT NOT NULL,
  registered_at_us INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE claims (
  plugin TEXT NOT NULL,
  namespace TEXT NOT NULL,
  volume_id TEXT NOT NULL,
  alloc_id TEXT NOT NULL,
  usage TEXT NOT NULL,
  remote_id TEXT NOT NULL,
  read_only INTEGER NOT NULL,
  attachment_mode TEXT NOT NULL,
  access_mode TEXT NOT NULL,
  fs_type TEXT NOT NULL,
  mount_flags TEXT NOT NULL,
  staged INTEGER NOT NULL,
  source TEXT NOT NULL,
  target TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at_us INTEGER NOT NULL,
  PRIMARY KEY (plugin, namespace, volume_id, alloc_id, usage)
) WITHOUT ROWID;
PRAGMA user_version = 1;
)sql";

// Version 1 → 2: staging records. A claim that records a staging path means
// the volume may be staged there.
constexpr char kMigrateToV2[] = R"sql(
CREATE TABLE stagings (
  plugin TEXT NOT NULL,
  path TEXT NOT NULL,
  namespace TEXT NOT NULL,
  volume_id TEXT NOT NULL,
  remote_id TEXT NOT NULL,
  usage TEXT NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (plugin, path)
) WITHOUT ROWID;
INSERT OR IGNORE INTO stagings
  SELECT plugin, source, namespace, volume_id, remote_id, usage, 'staged'
  FROM claims WHERE staged != 0 AND source != '';
PRAGMA user_version = 2;
)sql";

constexpr char kStagingColumns[] = "plugin, path, namespace, volume_id, remote_id, usage, state";

constexpr char kClaimColumns[] =
    "plugin, namespace, volume_id, alloc_id, usage, remote_id, read_only, attachment_mode, "
    "access_mode, fs_type, mount_flags, staged, source, target, state, created_at_us";

absl::Status FromSqlite(absl::string_view path, int rc, absl::string_view what,
                        absl::string_view detail) {
  std::string msg = absl::StrCat("state store ", path, ": ", what, ": ",
                                 detail.empty() ? sqlite3_errstr(rc) : detail);
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::FailedPreconditionError(absl::StrCat(
          msg, " (the file is corrupt or not a plugin-manager store)", kCorruptAdvice));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::FailedPreconditionError(
          absl::StrCat(msg, " (is another plugin manager using this store?)"));
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(msg);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::FailedPreconditionError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// A prepared statement; finalized on destruction.
class Stmt {
 public:
  Stmt(sqlite3* db, absl::string_view sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  int rc() const { return rc_; }
  std::string error() const { return sqlite3_errmsg(db_); }

  void Bind(int index, absl::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() {
    rc_ = sqlite3_step(stmt_);
    return rc_;
  }
  std::string Text(int column) {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), size);
  }
  int64_t Int(int column) { return sqlite3_column_int64(stmt_, column); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

// Lists are stored as "<length>:<bytes>" repeated, so any byte may appear.
std::string EncodeList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) absl::StrAppend(&out, item.size(), ":", item);
  return out;
}

absl::StatusOr<std::vector<std::string>> DecodeList(absl::string_view in) {
  std::vector<std::string> out;
  while (!in.empty()) {
    size_t colon = in.find(':');
    size_t length = 0;
    if (colon == absl::string_view::npos || !absl::SimpleAtoi(in.substr(0, colon), &length) ||
        length > in.size() - colon - 1) {
      return absl::FailedPreconditionError(absl::StrCat("malformed list \"", in, "\""));
    }
    out.emplace_back(in.substr(colon + 1, length));
    in.remove_prefix(colon + 1 + length);
  }
  return out;
}

absl::StatusOr<Claim> ClaimFromRow(Stmt& row) {
  Claim claim;
  claim.plugin = row.Text(0);
  claim.namespace_ = row.Text(1);
  claim.volume_id = row.Text(2);
  claim.alloc_id = row.Text(3);
  std::string usage_name = row.Text(4);
  claim.remote_id = row.Text(5);
  claim.usage.read_only = row.Int(6) != 0;
  ASSIGN_OR_RETURN(AttachmentMode attachment, ParseAttachmentMode(row.Text(7)));
  claim.usage.attachment_mode = attachment;
  ASSIGN_OR_RETURN(AccessMode access, ParseAccessMode(row.Text(8)));
  claim.usage.access_mode = access;
  claim.usage.fs_type = row.Text(9);
  absl::StatusOr<std::vector<std::string>> flags = DecodeList(row.Text(10));
  if (!flags.ok()) return flags.status();
  claim.usage.mount_flags = *std::move(flags);
  claim.mount.staged = row.Int(11) != 0;
  claim.mount.source = row.Text(12);
  claim.mount.target = row.Text(13);
  absl::StatusOr<ClaimState> state = ParseClaimState(row.Text(14));
  if (!state.ok()) return state.status();
  claim.state = *state;
  claim.created_at = absl::FromUnixMicros(row.Int(15));
  absl::StatusOr<std::string> derived = UsageName(claim.usage);
  if (!derived.ok() || *derived != usage_name) {
    return absl::FailedPreconditionError(
        absl::StrCat("usage column \"", usage_name, "\" does not match the usage fields"));
  }
  return claim;
}

void BindKey(Stmt& stmt, const ClaimKey& key) {
  stmt.Bind(1, key.plugin);
  stmt.Bind(2, key.namespace_);
  stmt.Bind(3, key.volume_id);
  stmt.Bind(4, key.alloc_id);
  stmt.Bind(5, key.usage);
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path,
                                                             const StateStoreOptions& options) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return FromSqlite(path, rc, "cannot open", detail);
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, static_cast<int>(absl::ToInt64Milliseconds(options.lock_timeout)));
  std::unique_ptr<StateStore> store(new StateStore(path, db, options));

  // Runs `sql`, returns its first column's values.
  auto query = [&](absl::string_view sql,
                   absl::string_view what) -> absl::StatusOr<std::vector<std::string>> {
    Stmt stmt(db, sql);
    if (!stmt.ok()) return FromSqlite(path, stmt.rc(), what, stmt.error());
    std::vector<std::string> rows;
    int step;
    while ((step = stmt.Step()) == SQLITE_ROW) rows.push_back(stmt.Text(0));
    if (step != SQLITE_DONE) return FromSqlite(path, step, what, stmt.error());
    return rows;
  };

  absl::StatusOr<std::vector<std::string>> rows =
      query("PRAGMA locking_mode=EXCLUSIVE", "setting exclusive locking");
  if (!rows.ok()) return rows.status();
  rows = query("PRAGMA journal_mode=WAL", "switching to WAL");
  if (!rows.ok()) return rows.status();
  if (rows->empty() || (*rows)[0] != "wal") {
    return absl::FailedPreconditionError(absl::StrCat(
        "state store ", path, ": the file system does not support SQLite's WAL journal"));
  }
  rows = query("PRAGMA synchronous=FULL", "setting synchronous=FULL");
  if (!rows.ok()) return rows.status();
  {
    // Take the exclusive lock now, so a second manager fails here.
    absl::MutexLock lock(&store->mu_);
    RETURN_IF_ERROR(store->Exec("BEGIN EXCLUSIVE; COMMIT;"));
  }

  rows = query(options.full_integrity_check ? "PRAGMA integrity_check" : "PRAGMA quick_check",
               "integrity check");
  if (!rows.ok()) return rows.status();
  if (rows->size() != 1 || (*rows)[0] != "ok") {
    std::vector<std::string> first(rows->begin(),
                                   rows->begin() + std::min<size_t>(rows->size(), 5));
    return absl::FailedPreconditionError(
        absl::StrCat("state store ", path,
                     " failed the integrity check: ", absl::StrJoin(first, "; "), kCorruptAdvice));
  }

  rows = query("PRAGMA user_version", "reading the schema version");
  if (!rows.ok()) return rows.status();
  int version = 0;
  if (rows->size() != 1 || !absl::SimpleAtoi((*rows)[0], &version)) {
    return absl::FailedPreconditionError(
        absl::StrCat("state store ", path, ": unreadable schema version", kCorruptAdvice));
  }
  absl::StatusOr<std::vector<std::string>> tables =
      query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", "listing tables");
  if (!tables.ok()) return tables.status();
  if (version == 0) {
    if (!tables->empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("state store ", path, " is an SQLite database of something else (tables: ",
                       absl::StrJoin(*tables, ", "), ")", kCorruptAdvice));
    }
    absl::MutexLock lock(&store->mu_);
    absl::Status created =
        store->Exec(absl::StrCat("BEGIN IMMEDIATE;", kSchemaV1, kMigrateToV2, "COMMIT;"));
    if (!created.ok()) {
      store->Exec("ROLLBACK;").IgnoreError();
      return created;
    }
  } else if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state store ", path, " has schema version ", version, ", newer than this binary's ",
        kSchemaVersion, ": it was written by a newer lustre-csi; run that version or a newer one"));
  } else {
    std::vector<std::string> want = {"claims", "plugins"};
    if (version >= 2) want.push_back("stagings");
    if (*tables != want) {
      return absl::FailedPreconditionError(absl::StrCat(
          "state store ", path, " has schema version ", version, " but unexpected tables (",
          absl::StrJoin(*tables, ", "), ")", kCorruptAdvice));
    }
    if (version == 1) {
      absl::MutexLock lock(&store->mu_);
      absl::Status migrated =
          store->Exec(absl::StrCat("BEGIN IMMEDIATE;", kMigrateToV2, "COMMIT;"));
      if (!migrated.ok()) {
        store->Exec("ROLLBACK;").IgnoreError();
        return migrated;
      }
      LOG(INFO) << "state store " << path << ": migrated from schema version 1 to 2";
    }
  }
  return store;
}

StateStore::StateStore(std::string path, sqlite3* db, StateStoreOptions options)
    : path_(std::move(path)), options_(std::move(options)), db_(db) {}

struct StateStore::PendingWrite {
  std::function<absl::Status()> apply;
  absl::Status result;
  bool done = false;  // guarded by write_mu_
};

int StateStore::waiting_writes() const {
  absl::MutexLock lock(&write_mu_);
  return static_cast<int>(waiting_.size());
}

absl::Status StateStore::Write(std::function<absl::Status()> apply) {
  PendingWrite me;
  me.apply = std::move(apply);
  std::vector<PendingWrite*> batch;
  {
    absl::MutexLock lock(&write_mu_);
    waiting_.push_back(&me);
    // Either a committing thread takes this write along, or, once no commit
    // is in progress, this thread commits everything that waits.
    auto done_or_free = [this, &me]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) {
      return me.done || !committing_;
    };
    write_mu_.Await(absl::Condition(&done_or_free));
    if (me.done) return me.result;
    committing_ = true;
    batch.swap(waiting_);
  }
  CommitBatch(batch);
  absl::MutexLock lock(&write_mu_);
  for (PendingWrite* write : batch) write->done = true;
  committing_ = false;
  return me.result;
}

void StateStore::CommitBatch(const std::vector<PendingWrite*>& batch) {
  absl::MutexLock lock(&mu_);
  absl::Status begun = Exec("BEGIN IMMEDIATE;");
  if (!begun.ok()) {
    for (PendingWrite* write : batch) write->result = begun;
    return;
  }
  // A lone write needs no savepoint: when it fails, the transaction is
  // rolled back whole.
  const bool savepoints = batch.size() > 1;
  int applied = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingWrite* write = batch[i];
    if (savepoints) write->result = Exec("SAVEPOINT write;");
    if (write->result.ok()) write->result = write->apply();
    if (write->result.ok() && savepoints) write->result = Exec("RELEASE write;");
    if (write->result.ok()) {
      ++applied;
      continue;
    }
    if (sqlite3_get_autocommit(db_) != 0) {
      // The database rolled the whole transaction back (SQLITE_FULL, an I/O
      // error): the writes applied so far are gone, and the rest must not
      // run outside a transaction.
      absl::Status gone = absl::Status(
          write->result.code(),
          absl::StrCat("the write was rolled back with its group: ", write->result.message()));
      for (size_t j = 0; j < batch.size(); ++j) {
        if (j != i) batch[j]->result = gone;
      }
      return;
    }
    if (savepoints) Exec("ROLLBACK TO write; RELEASE write;").IgnoreError();
  }
  if (applied == 0) {
    Exec("ROLLBACK;").IgnoreError();
    return;
  }
  if (options_.before_commit) options_.before_commit(applied);
  absl::Status committed = Exec("COMMIT;");
  if (committed.ok()) return;
  Exec("ROLLBACK;").IgnoreError();
  for (PendingWrite* write : batch) {
    if (write->result.ok()) write->result = committed;
  }
}

StateStore::~StateStore() { sqlite3_close(db_); }

absl::Status StateStore::Exec(absl::string_view sql) {
  char* error = nullptr;
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string detail = error != nullptr ? error : "";
  sqlite3_free(error);
  return FromSqlite(path_, rc, "executing statement", detail);
}

absl::Status StateStore::PutPlugin(const PluginRecord& record) {
  return Write([this, &record]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    Stmt stmt(db_,
              "INSERT OR REPLACE INTO plugins (id, name, type, endpoint, origin, "
              "supported_versions, registered_at_us) VALUES (?, ?, ?, ?, ?, ?, ?)");
    if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing plugin write", stmt.error());
    stmt.Bind(1, record.id);
    stmt.Bind(2, record.name);
    stmt.Bind(3, PluginTypeName(record.type));
    stmt.Bind(4, record.endpoint);
    stmt.Bind(5, PluginOriginName(record.origin));
    stmt.Bind(6, EncodeList(record.supported_versions));
    stmt.Bind(7, absl::ToUnixMicros(record.registered_at));
    if (stmt.Step() != SQLITE_DONE) {
      return FromSqlite(path_, stmt.rc(), "writing plugin " + record.id, stmt.error());
    }
    return absl::OkStatus();
  });
}

absl::Status StateStore::DeletePlugin(absl::string_view id) {
  return Write([this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    Stmt stmt(db_, "DELETE FROM plugins WHERE id = ?");
    if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing plugin delete", stmt.error());
    stmt.Bind(1, id);
    if (stmt.Step() != SQLITE_DONE) {
      return FromSqlite(path_, stmt.rc(), absl::StrCat("deleting plugin ", id), stmt.error());
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<PluginRecord>> StateStore::ListPlugins() {
  absl::MutexLock lock(&mu_);
  Stmt stmt(db_,
            "SELECT id, name, type, endpoint, origin, supported_versions, registered_at_us "
            "FROM plugins ORDER BY id");
  if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing plugin list", stmt.error());
  std::vector<PluginRecord> out;
  int step;
  while ((step = stmt.Step()) == SQLITE_ROW) {
    PluginRecord record;
    record.id = stmt.Text(0);
    record.name = stmt.Text(1);
    absl::StatusOr<PluginType> type = ParsePluginType(stmt.Text(2));
    absl::StatusOr<PluginOrigin> origin = ParsePluginOrigin(stmt.Text(4));
    absl::StatusOr<std::vector<std::string>> versions = DecodeList(stmt.Text(5));
    for (const absl::Status& s : {type.status(), origin.status(), versions.status()}) {
      if (!s.ok()) {
        return absl::FailedPreconditionError(absl::StrCat("state store ", path_, ": plugin row ",
                                                          record.id, " is invalid: ", s.message(),
                                                          kCorruptAdvice));
      }
    }
    record.type = *type;
    record.endpoint = stmt.Text(3);
    record.origin = *origin;
    record.supported_versions = *std::move(versions);
    record.registered_at = absl::FromUnixMicros(stmt.Int(6));
    out.push_back(std::move(record));
  }
  if (step != SQLITE_DONE) return FromSqlite(path_, step, "listing plugins", stmt.error());
  return out;
}

absl::Status StateStore::PutClaim(const Claim& claim) {
  absl::StatusOr<ClaimKey> key = KeyOf(claim);
  if (!key.ok()) return key.status();
  return Write([this, &claim, &key]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    Stmt stmt(db_, absl::StrCat("INSERT OR REPLACE INTO claims (", kClaimColumns,
                                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing claim write", stmt.error());
    BindKey(stmt, *key);
    stmt.Bind(6, claim.remote_id);
    stmt.Bind(7, int64_t{claim.usage.read_only});
    stmt.Bind(8, AttachmentModeName(claim.usage.attachment_mode));
    stmt.Bind(9, AccessModeName(claim.usage.access_mode));
    stmt.Bind(10, claim.usage.fs_type);
    stmt.Bind(11, EncodeList(claim.usage.mount_flags));
    stmt.Bind(12, int64_t{claim.mount.staged});
    stmt.Bind(13, claim.mount.source);
    stmt.Bind(14, claim.mount.target);
    stmt.Bind(15, ClaimStateName(claim.state));
    stmt.Bind(16, absl::ToUnixMicros(claim.created_at));
    if (stmt.Step() != SQLITE_DONE) {
      return FromSqlite(path_, stmt.rc(), "writing claim", stmt.error());
    }
    return absl::OkStatus();
  });
}

absl::Status StateStore::DeleteClaims(const std::vector<ClaimKey>& keys) {
  return Write([this, &keys]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return DeleteClaimsLocked(keys); });
}

absl::Status StateStore::DeleteClaimsLocked(const std::vector<ClaimKey>& keys) {
  for (const ClaimKey& key : keys) {
    Stmt stmt(db_,
              "DELETE FROM claims WHERE plugin = ? AND namespace = ? AND volume_id = ? AND "
              "alloc_id = ? AND usage = ?");
    if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing claim delete", stmt.error());
    BindKey(stmt, key);
    if (stmt.Step() != SQLITE_DONE) {
      return FromSqlite(path_, stmt.rc(), "deleting claim", stmt.error());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Claim>> StateStore::GetClaim(const ClaimKey& key) {
  absl::MutexLock lock(&mu_);
  Stmt stmt(db_, absl::StrCat("SELECT ", kClaimColumns,
                              " FROM claims WHERE plugin = ? AND namespace = ? AND volume_id = ? "
                              "AND alloc_id = ? AND usage = ?"));
  if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing claim read", stmt.error());
  BindKey(stmt, key);
  int step = stmt.Step();
  if (step == SQLITE_DONE) return std::optional<Claim>();
  if (step != SQLITE_ROW) return FromSqlite(path_, step, "reading claim", stmt.error());
  absl::StatusOr<Claim> claim = ClaimFromRow(stmt);
  if (!claim.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("state store ", path_, ": claim row is invalid: ", claim.status().message(),
                     kCorruptAdvice));
  }
  return std::optional<Claim>(*std::move(claim));
}

absl::StatusOr<std::vector<Claim>> StateStore::ListClaims() {
  absl::MutexLock lock(&mu_);
  Stmt stmt(db_, absl::StrCat("SELECT ", kClaimColumns,
                              " FROM claims ORDER BY plugin, namespace, volume_id, alloc_id, "
                              "usage"));
  if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing claim list", stmt.error());
  std::vector<Claim> out;
  int step;
  while ((step = stmt.Step()) == SQLITE_ROW) {
    absl::StatusOr<Claim> claim = ClaimFromRow(stmt);
    if (!claim.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("state store ", path_, ": claim row is invalid: ", claim.status().message(),
                       kCorruptAdvice));
    }
    out.push_back(*std::move(claim));
  }
  if (step != SQLITE_DONE) return FromSqlite(path_, step, "listing claims", stmt.error());
  return out;
}

absl::Status StateStore::PutStaging(const StagingRecord& record) {
  if (record.plugin.empty() || record.path.empty()) {
    return absl::InvalidArgumentError("staging record without plugin or path");
  }
  return Write([this, &record]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    Stmt stmt(db_, absl::StrCat("INSERT OR REPLACE INTO stagings (", kStagingColumns,
                                ") VALUES (?, ?, ?, ?, ?, ?, ?)"));
    if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing staging write", stmt.error());
    stmt.Bind(1, record.plugin);
    stmt.Bind(2, record.path);
    stmt.Bind(3, record.namespace_);
    stmt.Bind(4, record.volume_id);
    stmt.Bind(5, record.remote_id);
    stmt.Bind(6, record.usage);
    stmt.Bind(7, StagingStateName(record.state));
    if (stmt.Step() != SQLITE_DONE) {
      return FromSqlite(path_, stmt.rc(), "writing staging record", stmt.error());
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<StagingRecord>> StateStore::ListStagings() {
  absl::MutexLock lock(&mu_);
  Stmt stmt(db_, absl::StrCat("SELECT ", kStagingColumns, " FROM stagings ORDER BY plugin, path"));
  if (!stmt.ok()) return FromSqlite(path_, stmt.rc(), "preparing staging list", stmt.error());
  std::vector<StagingRecord> out;
  int step;
  while ((step = stmt.Step()) == SQLITE_ROW) {
    StagingRecord record;
    record.plugin = stmt.Text(0);
    record.path = stmt.Text(1);
    record.namespace_ = stmt.Text(2);
    record.volume_id = stmt.Text(3);
    record.remote_id = stmt.Text(4);
    record.usage = stmt.Text(5);
    absl::StatusOr<StagingState> state = ParseStagingState(stmt.Text(6));
    if (!state.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("state store ", path_, ": staging row ", record.path,
                       " is invalid: ", state.status().message(), kCorruptAdvice));
    }
    record.state = *state;
    out.push_back(std::move(record));
  }
  if (step != SQLITE_DONE) return FromSqlite(path_, step, "listing stagings", stmt.error());
  return out;
}

absl::Status StateStore::DeleteClaimsAndStaging(const std::vector<ClaimKey>& keys,
                                                const std::string& plugin,
                                                const std::string& staging_path) {
  return Write(
      [this, &keys, &plugin, &staging_path]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::Status status = DeleteClaimsLocked(keys);
        if (!status.ok() || staging_path.empty()) return status;
        Stmt stmt(db_, "DELETE FROM stagings WHERE plugin = ? AND path = ?");
        if (!stmt.ok()) {
          return FromSqlite(path_, stmt.rc(), "preparing staging delete", stmt.error());
        }
        stmt.Bind(1, plugin);
        stmt.Bind(2, staging_path);
        if (stmt.Step() != SQLITE_DONE) {
          return FromSqlite(path_, stmt.rc(), "deleting staging record", stmt.error());
        }
        return absl::OkStatus();
      });
}

}  // namespace lustre_csi::csimanager
