#include "pkg/csimanager/state_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/csimanager/testing/test_util.h"

namespace lustre_csi::csimanager {
namespace {

using fakes::TempDir;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Claim SampleClaim(absl::string_view alloc) {
  Claim claim;
  claim.plugin = "hostpath.csi.k8s.io";
  claim.namespace_ = "default";
  claim.volume_id = "vol#1";
  claim.remote_id = "remote-1";
  claim.alloc_id = std::string(alloc);
  claim.usage.read_only = false;
  claim.usage.attachment_mode = AttachmentMode::kFileSystem;
  claim.usage.access_mode = AccessMode::kMultiNodeMultiWriter;
  claim.usage.fs_type = "lustre";
  claim.usage.mount_flags = {"noatime", "flock", "odd:12:flag", ""};
  claim.mount.staged = true;
  claim.mount.source = "/root/staging/default/vol%231/rw-file-system-multi-node-multi-writer";
  claim.mount.target = absl::StrCat("/root/per-alloc/", alloc, "/vol%231/rw-...");
  claim.state = ClaimState::kMounted;
  claim.created_at = absl::FromUnixMicros(1700000000123456);
  return claim;
}

PluginRecord SamplePlugin(absl::string_view id) {
  PluginRecord record;
  record.id = std::string(id);
  record.name = "hostpath.csi.k8s.io";
  record.type = PluginType::kMonolith;
  record.endpoint = "/var/lib/plugin/csi.sock";
  record.origin = PluginOrigin::kRegistrationDir;
  record.supported_versions = {"1.0.0", "1.5.0"};
  record.registered_at = absl::FromUnixMicros(1700000000000001);
  return record;
}

std::unique_ptr<StateStore> MustOpen(const std::string& path) {
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

void RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST(StateStoreTest, PluginsRoundTripAndPersist) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_THAT(*store->ListPlugins(), IsEmpty());
    ASSERT_TRUE(store->PutPlugin(SamplePlugin("/reg/b.sock")).ok());
    ASSERT_TRUE(store->PutPlugin(SamplePlugin("/reg/a.sock")).ok());
    PluginRecord changed = SamplePlugin("/reg/b.sock");
    changed.endpoint = "/elsewhere.sock";
    changed.supported_versions = {};
    ASSERT_TRUE(store->PutPlugin(changed).ok());
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  std::vector<PluginRecord> plugins = *store->ListPlugins();
  ASSERT_EQ(plugins.size(), 2u);
  EXPECT_EQ(plugins[0], SamplePlugin("/reg/a.sock"));
  EXPECT_EQ(plugins[1].endpoint, "/elsewhere.sock");
  EXPECT_THAT(plugins[1].supported_versions, IsEmpty());
  ASSERT_TRUE(store->DeletePlugin("/reg/a.sock").ok());
  ASSERT_TRUE(store->DeletePlugin("/reg/missing.sock").ok());
  EXPECT_EQ(store->ListPlugins()->size(), 1u);
}

TEST(StateStoreTest, ClaimsRoundTripReplaceAndDelete) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store->PutClaim(SampleClaim("alloc-2")).ok());
    ASSERT_TRUE(store->PutClaim(SampleClaim("alloc-1")).ok());
    Claim mounting = SampleClaim("alloc-2");
    mounting.state = ClaimState::kUnpublished;
    ASSERT_TRUE(store->PutClaim(mounting).ok());
  }
  auto store = MustOpen(path);
  std::vector<Claim> claims = *store->ListClaims();
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0], SampleClaim("alloc-1"));
  EXPECT_EQ(claims[1].state, ClaimState::kUnpublished);
  EXPECT_EQ(claims[1].usage.mount_flags, SampleClaim("x").usage.mount_flags);

  ClaimKey key = *KeyOf(SampleClaim("alloc-1"));
  std::optional<Claim> got = *store->GetClaim(key);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, SampleClaim("alloc-1"));

  ASSERT_TRUE(
      store->DeleteClaims({key, *KeyOf(SampleClaim("alloc-2")), *KeyOf(SampleClaim("never"))})
          .ok());
  EXPECT_THAT(*store->ListClaims(), IsEmpty());
  EXPECT_FALSE(store->GetClaim(key)->has_value());
}

// Records the size of every commit; the first commit holds until `hold_for`
// further writes wait behind it, so they are sure to form one group.
class CommitLog {
 public:
  explicit CommitLog(int hold_for) : hold_for_(hold_for) {}
  StateStoreOptions Options() {
    StateStoreOptions options;
    options.before_commit = [this](int mutations) { OnCommit(mutations); };
    return options;
  }
  void set_store(StateStore* store) { store_ = store; }
  std::vector<int> sizes() {
    absl::MutexLock lock(&mu_);
    return sizes_;
  }
  // Blocks until the first commit has begun.
  void AwaitFirst() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](std::vector<int>* sizes) { return !sizes->empty(); }, &sizes_));
  }

 private:
  void OnCommit(int mutations) {
    bool first;
    {
      absl::MutexLock lock(&mu_);
      first = sizes_.empty();
      sizes_.push_back(mutations);
    }
    if (!first) return;
    absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (store_->waiting_writes() < hold_for_ && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  const int hold_for_;
  StateStore* store_ = nullptr;
  absl::Mutex mu_;
  std::vector<int> sizes_ ABSL_GUARDED_BY(mu_);
};

TEST(StateStoreTest, ConcurrentWritesShareOneCommit) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  {
    CommitLog log(/*hold_for=*/15);
    auto opened = StateStore::Open(path, log.Options());
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<StateStore> store = *std::move(opened);
    log.set_store(store.get());
    std::vector<std::thread> writers;
    writers.emplace_back([&] { EXPECT_TRUE(store->PutClaim(SampleClaim("alloc-0")).ok()); });
    log.AwaitFirst();
    for (int i = 1; i < 16; ++i) {
      writers.emplace_back(
          [&, i] { EXPECT_TRUE(store->PutClaim(SampleClaim(absl::StrCat("alloc-", i))).ok()); });
    }
    for (std::thread& t : writers) t.join();
    EXPECT_EQ(log.sizes(), (std::vector<int>{1, 15}));
  }
  EXPECT_EQ(MustOpen(path)->ListClaims()->size(), 16u);
}

TEST(StateStoreTest, FailedWriteInAGroupIsUndoneAlone) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  ASSERT_NE(MustOpen(path), nullptr);
  RawSql(path,
         "CREATE TRIGGER refuse BEFORE INSERT ON claims WHEN NEW.alloc_id = 'bad' "
         "BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END;");
  {
    CommitLog log(/*hold_for=*/2);
    auto opened = StateStore::Open(path, log.Options());
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<StateStore> store = *std::move(opened);
    log.set_store(store.get());
    std::thread first([&] { EXPECT_TRUE(store->PutClaim(SampleClaim("alloc-0")).ok()); });
    log.AwaitFirst();
    absl::Status bad, good;
    std::thread t1([&] { bad = store->PutClaim(SampleClaim("bad")); });
    std::thread t2([&] { good = store->PutClaim(SampleClaim("alloc-2")); });
    first.join();
    t1.join();
    t2.join();
    EXPECT_THAT(bad.message(), HasSubstr("refused by trigger"));
    EXPECT_TRUE(good.ok()) << good;
    // The second commit carried one write: the failed one was rolled back.
    EXPECT_EQ(log.sizes(), (std::vector<int>{1, 1}));
  }
  std::vector<Claim> claims = *MustOpen(path)->ListClaims();
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].alloc_id, "alloc-0");
  EXPECT_EQ(claims[1].alloc_id, "alloc-2");
}

// A write that makes the database roll the whole transaction back takes its
// group with it: none of them may be reported OK, and none may land.
TEST(StateStoreTest, WriteThatRollsBackTheTransactionFailsItsWholeGroup) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  ASSERT_NE(MustOpen(path), nullptr);
  RawSql(path,
         "CREATE TRIGGER refuse BEFORE INSERT ON claims WHEN NEW.alloc_id = 'bad' "
         "BEGIN SELECT RAISE(ROLLBACK, 'rolled back by trigger'); END;");
  {
    CommitLog log(/*hold_for=*/3);
    auto opened = StateStore::Open(path, log.Options());
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<StateStore> store = *std::move(opened);
    log.set_store(store.get());
    std::thread first([&] { EXPECT_TRUE(store->PutClaim(SampleClaim("alloc-0")).ok()); });
    log.AwaitFirst();
    absl::Status results[3];
    const char* allocs[3] = {"alloc-1", "bad", "alloc-3"};
    std::vector<std::thread> group;
    for (int i = 0; i < 3; ++i) {
      group.emplace_back([&, i] { results[i] = store->PutClaim(SampleClaim(allocs[i])); });
    }
    first.join();
    for (std::thread& t : group) t.join();
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(results[i].ok()) << allocs[i];
    EXPECT_THAT(results[1].message(), HasSubstr("rolled back by trigger"));
  }
  std::vector<Claim> claims = *MustOpen(path)->ListClaims();
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].alloc_id, "alloc-0");
}

TEST(StateStoreTest, StagingsRoundTripAndGoWithTheirClaims) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  StagingRecord staging{"hostpath.csi.k8s.io",
                        SampleClaim("a").mount.source,
                        "default",
                        "vol#1",
                        "remote-1",
                        "rw-file-system-multi-node-multi-writer",
                        StagingState::kStaging};
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store->PutClaim(SampleClaim("alloc-1")).ok());
    ASSERT_TRUE(store->PutStaging(staging).ok());
    staging.state = StagingState::kStaged;
    ASSERT_TRUE(store->PutStaging(staging).ok());
  }
  auto store = MustOpen(path);
  std::vector<StagingRecord> stagings = *store->ListStagings();
  ASSERT_EQ(stagings.size(), 1u);
  EXPECT_EQ(stagings[0], staging);
  ASSERT_TRUE(
      store->DeleteClaimsAndStaging({*KeyOf(SampleClaim("alloc-1"))}, staging.plugin, staging.path)
          .ok());
  EXPECT_THAT(*store->ListStagings(), IsEmpty());
  EXPECT_THAT(*store->ListClaims(), IsEmpty());
}

// A store written before staging records existed (schema version 1) is
// migrated at open: every staging path a claim records becomes "staged".
TEST(StateStoreTest, VersionOneStoreIsMigrated) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store->PutClaim(SampleClaim("alloc-1")).ok());
    ASSERT_TRUE(store->PutClaim(SampleClaim("alloc-2")).ok());
    Claim unstaged = SampleClaim("alloc-3");
    unstaged.volume_id = "plain";
    unstaged.mount.staged = false;
    unstaged.mount.source = "";
    ASSERT_TRUE(store->PutClaim(unstaged).ok());
  }
  RawSql(path, "DROP TABLE stagings; PRAGMA user_version = 1;");
  auto store = MustOpen(path);
  std::vector<StagingRecord> stagings = *store->ListStagings();
  ASSERT_EQ(stagings.size(), 1u);
  EXPECT_EQ(stagings[0].path, SampleClaim("x").mount.source);
  EXPECT_EQ(stagings[0].volume_id, "vol#1");
  EXPECT_EQ(stagings[0].remote_id, "remote-1");
  EXPECT_EQ(stagings[0].state, StagingState::kStaged);
  EXPECT_EQ(store->ListClaims()->size(), 3u);
}

TEST(StateStoreTest, ClaimWithoutUsageIsRejected) {
  TempDir dir;
  auto store = MustOpen(dir.Sub("state.db"));
  Claim claim = SampleClaim("a");
  claim.usage.access_mode = AccessMode::kUnspecified;
  EXPECT_EQ(store->PutClaim(claim).code(), absl::StatusCode::kInvalidArgument);
}

TEST(StateStoreTest, SchemaVersionIsRecorded) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  MustOpen(path).reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), StateStore::kSchemaVersion);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

struct BadStoreCase {
  std::string name;
  // Prepares the file at the path.
  std::function<void(const std::string&)> prepare;
  std::string message;
};

class BadStoreTest : public ::testing::TestWithParam<BadStoreCase> {};

TEST_P(BadStoreTest, OpenRefusesClearly) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  GetParam().prepare(path);
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(GetParam().message));
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(path));
}

void Garbage(const std::string& path) {
  ASSERT_TRUE(fakes::WriteFile(path, std::string(8192, 'x') + "this is not a database").ok());
}

void CorruptPages(const std::string& path) {
  {
    auto store = MustOpen(path);
    for (int i = 0; i < 400; ++i) {
      ASSERT_TRUE(store->PutClaim(SampleClaim(absl::StrCat("alloc-", i))).ok());
    }
  }  // closing checkpoints the WAL into the main file
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file.good());
  // Keep the 100-byte header intact; smash the rest of the first pages.
  file.seekp(4096 + 16);
  std::string junk(3 * 4096, '\xa5');
  file.write(junk.data(), junk.size());
}

void NewerSchema(const std::string& path) {
  MustOpen(path).reset();
  RawSql(path, "PRAGMA user_version = 7");
}

void ForeignDatabase(const std::string& path) { RawSql(path, "CREATE TABLE recipes (name TEXT)"); }

void WrongTables(const std::string& path) {
  RawSql(path, "CREATE TABLE plugins (id TEXT); PRAGMA user_version = 1");
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadStoreTest,
    ::testing::Values(BadStoreCase{"Garbage", Garbage, "corrupt or not a plugin-manager store"},
                      BadStoreCase{"CorruptPages", CorruptPages, "Refusing to start"},
                      BadStoreCase{"NewerSchema", NewerSchema, "schema version 7, newer"},
                      BadStoreCase{"ForeignDatabase", ForeignDatabase, "something else"},
                      BadStoreCase{"WrongTables", WrongTables, "unexpected tables"}),
    [](const ::testing::TestParamInfo<BadStoreCase>& info) { return info.param.name; });

TEST(StateStoreTest, MissingDirectoryIsReported) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      StateStore::Open(dir.Sub("no/such/dir/state.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
}

TEST(StateStoreTest, SecondOpenerIsRefused) {
  TempDir dir;
  std::string path = dir.Sub("state.db");
  auto first = MustOpen(path);
  ASSERT_NE(first, nullptr);
  StateStoreOptions options;
  options.lock_timeout = absl::ZeroDuration();
  absl::StatusOr<std::unique_ptr<StateStore>> second = StateStore::Open(path, options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("another plugin manager"));
  // The first keeps working.
  EXPECT_TRUE(first->PutClaim(SampleClaim("a")).ok());
}

// A child process writes claims and deletes them in groups, acknowledging
// each finished call on a pipe; the parent kills it with SIGKILL at varying
// points. Whatever the point, the store opens cleanly, every acknowledged
// change is there, and each group delete is all or nothing.
TEST(StateStoreTest, KillNineLeavesOldOrNewState) {
  constexpr int kClaims = 60;
  constexpr int kGroup = 10;
  for (int kill_after : {1, 7, 30, 59, 61, 63, 65}) {
    SCOPED_TRACE(absl::StrCat("kill after ack ", kill_after));
    TempDir dir;
    std::string path = dir.Sub("state.db");
    int acks[2];
    ASSERT_EQ(::pipe(acks), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(acks[0]);
      absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(path);
      if (!store.ok()) ::_exit(3);
      char ack = 'a';
      for (int i = 0; i < kClaims; ++i) {
        if (!(*store)->PutClaim(SampleClaim(absl::StrCat("alloc-", i))).ok()) ::_exit(4);
        if (::write(acks[1], &ack, 1) != 1) ::_exit(5);
      }
      for (int g = 0; g < kClaims / kGroup; ++g) {
        std::vector<ClaimKey> keys;
        for (int i = g * kGroup; i < (g + 1) * kGroup; ++i) {
          keys.push_back(*KeyOf(SampleClaim(absl::StrCat("alloc-", i))));
        }
        if (!(*store)->DeleteClaims(keys).ok()) ::_exit(6);
        if (::write(acks[1], &ack, 1) != 1) ::_exit(7);
      }
      ::_exit(0);
    }
    ::close(acks[1]);
    int acked = 0;
    char buf;
    while (acked < kill_after && ::read(acks[0], &buf, 1) == 1) ++acked;
    ::kill(child, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
    ::close(acks[0]);
    ASSERT_TRUE(WIFSIGNALED(wstatus) || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0))
        << "child failed with " << wstatus;

    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    std::set<std::string> allocs;
    absl::StatusOr<std::vector<Claim>> claims = store->ListClaims();
    ASSERT_TRUE(claims.ok()) << claims.status();
    for (const Claim& claim : *claims) {
      EXPECT_EQ(claim.remote_id, "remote-1");
      allocs.insert(claim.alloc_id);
    }
    // The store must hold exactly the state after some number of finished
    // calls, at least as many as were acknowledged.
    auto state_after = [&](int calls) {
      std::set<std::string> expected;
      int first = calls <= kClaims ? 0 : (calls - kClaims) * kGroup;
      int end = std::min(calls, kClaims);
      for (int i = first; i < end; ++i) expected.insert(absl::StrCat("alloc-", i));
      return expected;
    };
    bool matched = false;
    for (int calls = acked; calls <= kClaims + kClaims / kGroup && !matched; ++calls) {
      matched = allocs == state_after(calls);
    }
    EXPECT_TRUE(matched) << "the store holds " << allocs.size()
                         << " claims, which is no state the writer passed through after " << acked
                         << " acknowledged calls";
  }
}

}  // namespace
}  // namespace lustre_csi::csimanager
