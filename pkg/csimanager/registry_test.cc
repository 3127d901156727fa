#include "pkg/csimanager/registry.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/testing/test_util.h"

namespace lustre_csi::csimanager {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

PluginRecord DirRecord(absl::string_view socket, absl::string_view name, int64_t seconds,
                       std::vector<std::string> versions = {"1.0.0"}) {
  PluginRecord record;
  record.id = std::string(socket);
  record.name = std::string(name);
  record.type = PluginType::kNode;
  record.endpoint = absl::StrCat("/run/", name, "/", socket.substr(socket.rfind('/') + 1));
  record.origin = PluginOrigin::kRegistrationDir;
  record.supported_versions = std::move(versions);
  record.registered_at = absl::FromUnixSeconds(seconds);
  return record;
}

std::vector<std::string> Ids(const std::vector<PluginRecord>& records) {
  std::vector<std::string> ids;
  for (const PluginRecord& r : records) ids.push_back(r.id);
  return ids;
}

struct SpecCase {
  std::string spec;
  bool ok;
  std::string name;
  PluginType type;
  std::string endpoint;
};

class ParseStaticPluginTest : public ::testing::TestWithParam<SpecCase> {};

TEST_P(ParseStaticPluginTest, Parses) {
  absl::StatusOr<PluginRecord> record = ParseStaticPlugin(GetParam().spec);
  ASSERT_EQ(record.ok(), GetParam().ok) << record.status();
  if (!record.ok()) {
    EXPECT_EQ(record.status().code(), absl::StatusCode::kInvalidArgument);
    return;
  }
  EXPECT_EQ(record->name, GetParam().name);
  EXPECT_EQ(record->type, GetParam().type);
  EXPECT_EQ(record->endpoint, GetParam().endpoint);
  EXPECT_EQ(record->origin, PluginOrigin::kStatic);
  EXPECT_EQ(record->id, StaticPluginId(GetParam().type, GetParam().name));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseStaticPluginTest,
    ::testing::Values(SpecCase{"hostpath.csi.k8s.io:node:/var/lib/hp/csi.sock", true,
                               "hostpath.csi.k8s.io", PluginType::kNode, "/var/lib/hp/csi.sock"},
                      SpecCase{"ebs:Controller:unix:///run/ebs.sock", true, "ebs",
                               PluginType::kController, "/run/ebs.sock"},
                      SpecCase{"m:monolith:unix:/run/m.sock", true, "m", PluginType::kMonolith,
                               "/run/m.sock"},
                      SpecCase{"x:node", false}, SpecCase{"x:both:/a.sock", false},
                      SpecCase{"x:node:relative.sock", false}, SpecCase{"-x:node:/a.sock", false},
                      SpecCase{":node:/a.sock", false}, SpecCase{"x:node:tcp://host:1", false}));

TEST(ParseStaticPluginConfigTest, CommentsBlankLinesAndErrors) {
  absl::StatusOr<std::vector<PluginRecord>> records = ParseStaticPluginConfig(
      "# static plugins\n\n  a:node:/a.sock\nb:controller:/b.sock  \n# done\n");
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(Ids(*records), ElementsAre("static:node:a", "static:controller:b"));

  absl::StatusOr<std::vector<PluginRecord>> bad =
      ParseStaticPluginConfig("a:node:/a.sock\n\nbogus\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("line 3"));

  absl::StatusOr<std::vector<PluginRecord>> twice =
      ParseStaticPluginConfig("a:node:/a.sock\na:node:/b.sock\na:controller:/c.sock\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("line 2"));
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("twice"));
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(dir_.Sub("state.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    registry_ = std::make_unique<Registry>(store_.get(), &clock_);
  }

  // Simulates a restart: a new registry over a reopened store.
  void Restart() {
    registry_.reset();
    store_.reset();
    SetUp();
    ASSERT_TRUE(registry_->Restore().ok());
  }

  fakes::TempDir dir_;
  base::FakeClock clock_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<Registry> registry_;
};

TEST_F(RegistryTest, UpgradeOverlapResolvesToNewest) {
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/old.sock", "p", 100)).ok());
  EXPECT_EQ(registry_->Active("p", PluginType::kNode)->id, "/reg/old.sock");
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/new.sock", "p", 200)).ok());
  EXPECT_EQ(registry_->Active("p", PluginType::kNode)->id, "/reg/new.sock");
  EXPECT_THAT(Ids(registry_->ActiveSet()), ElementsAre("/reg/new.sock"));
  // The new one goes away: the old one (still running) takes over.
  ASSERT_TRUE(registry_->Remove("/reg/new.sock").ok());
  EXPECT_EQ(registry_->Active("p", PluginType::kNode)->id, "/reg/old.sock");
  ASSERT_TRUE(registry_->Remove("/reg/old.sock").ok());
  EXPECT_FALSE(registry_->Active("p", PluginType::kNode).has_value());
  EXPECT_TRUE(registry_->Remove("/reg/old.sock").ok());
}

TEST_F(RegistryTest, SameTimeResolvesToHighestVersion) {
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/z.sock", "p", 100, {"1.2.0"})).ok());
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/a.sock", "p", 100, {"1.0.0", "1.10.0"})).ok());
  EXPECT_EQ(registry_->Active("p", PluginType::kNode)->id, "/reg/a.sock");
}

TEST_F(RegistryTest, StaticBeatsDiscovered) {
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/p.sock", "p", 500)).ok());
  ASSERT_TRUE(registry_->ReplaceStatic({*ParseStaticPlugin("p:node:/static/p.sock")}).ok());
  EXPECT_EQ(registry_->Active("p", PluginType::kNode)->id, "static:node:p");
}

TEST_F(RegistryTest, RolesAndMonoliths) {
  ASSERT_TRUE(registry_
                  ->ReplaceStatic({*ParseStaticPlugin("m:monolith:/m.sock"),
                                   *ParseStaticPlugin("c:controller:/c.sock"),
                                   *ParseStaticPlugin("c:node:/cn.sock")})
                  .ok());
  EXPECT_EQ(registry_->Active("m", PluginType::kNode)->id, "static:monolith:m");
  EXPECT_EQ(registry_->Active("m", PluginType::kController)->id, "static:monolith:m");
  EXPECT_EQ(registry_->Active("m", PluginType::kMonolith)->id, "static:monolith:m");
  EXPECT_EQ(registry_->Active("c", PluginType::kController)->id, "static:controller:c");
  EXPECT_EQ(registry_->Active("c", PluginType::kNode)->id, "static:node:c");
  EXPECT_FALSE(registry_->Active("c", PluginType::kMonolith).has_value());
  EXPECT_THAT(Ids(registry_->ActiveSet()),
              ElementsAre("static:controller:c", "static:monolith:m", "static:node:c"));
}

TEST_F(RegistryTest, InvalidRecordsAreRefused) {
  PluginRecord bad_name = DirRecord("/reg/x.sock", "bad name", 1);
  EXPECT_EQ(registry_->Upsert(bad_name).code(), absl::StatusCode::kInvalidArgument);
  PluginRecord relative = DirRecord("/reg/x.sock", "ok", 1);
  relative.endpoint = "csi.sock";
  EXPECT_EQ(registry_->Upsert(relative).code(), absl::StatusCode::kInvalidArgument);
  PluginRecord no_id = DirRecord("", "ok", 1);
  EXPECT_EQ(registry_->Upsert(no_id).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(registry_->List(), IsEmpty());
}

TEST_F(RegistryTest, PersistedAndRestored) {
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/a.sock", "a", 100)).ok());
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/b.sock", "b", 100)).ok());
  ASSERT_TRUE(registry_->ReplaceStatic({*ParseStaticPlugin("s:node:/s.sock")}).ok());
  ASSERT_TRUE(registry_->Remove("/reg/b.sock").ok());
  Restart();
  std::vector<PluginRecord> records = registry_->List();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].id, "/reg/a.sock");
  EXPECT_TRUE(records[0].restored);
  EXPECT_EQ(records[0].registered_at, absl::FromUnixSeconds(100));
  EXPECT_EQ(records[1].id, "static:node:s");
  EXPECT_TRUE(records[1].restored);
  // Restored records are active until something replaces them.
  EXPECT_EQ(registry_->Active("a", PluginType::kNode)->id, "/reg/a.sock");
}

TEST_F(RegistryTest, ForgetMissingRegistrationsOnlyDropsRestoredDirRecords) {
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/gone.sock", "g", 1)).ok());
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/here.sock", "h", 1)).ok());
  ASSERT_TRUE(registry_->ReplaceStatic({*ParseStaticPlugin("s:node:/s.sock")}).ok());
  Restart();
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/fresh.sock", "f", 2)).ok());
  ASSERT_TRUE(registry_->ForgetMissingRegistrations({"/reg/here.sock"}).ok());
  EXPECT_THAT(Ids(registry_->List()),
              ElementsAre("/reg/fresh.sock", "/reg/here.sock", "static:node:s"));
  Restart();
  EXPECT_EQ(registry_->List().size(), 3u);
}

TEST_F(RegistryTest, ReplaceStaticKeepsUnchangedTimesAndDropsOthers) {
  absl::Time t0 = clock_.Now();
  ASSERT_TRUE(registry_
                  ->ReplaceStatic(
                      {*ParseStaticPlugin("a:node:/a.sock"), *ParseStaticPlugin("b:node:/b.sock")})
                  .ok());
  clock_.Advance(absl::Minutes(1));
  ASSERT_TRUE(registry_
                  ->ReplaceStatic(
                      {*ParseStaticPlugin("a:node:/a.sock"), *ParseStaticPlugin("c:node:/c.sock")})
                  .ok());
  EXPECT_THAT(Ids(registry_->List()), ElementsAre("static:node:a", "static:node:c"));
  EXPECT_EQ(registry_->Get("static:node:a")->registered_at, t0);
  EXPECT_EQ(registry_->Get("static:node:c")->registered_at, t0 + absl::Minutes(1));
  EXPECT_EQ(registry_
                ->ReplaceStatic(
                    {*ParseStaticPlugin("a:node:/a.sock"), *ParseStaticPlugin("a:node:/b.sock")})
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(RegistryTest, ListenerSeesChanges) {
  int calls = 0;
  registry_->SetListener([&] {
    ++calls;
    registry_->ActiveSet();  // calling back in is allowed
  });
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/a.sock", "a", 1)).ok());
  ASSERT_TRUE(registry_->Upsert(DirRecord("/reg/a.sock", "a", 1)).ok());  // no change
  ASSERT_TRUE(registry_->Remove("/reg/a.sock").ok());
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace lustre_csi::csimanager
