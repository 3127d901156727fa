#include "pkg/driver/parameters.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;

TEST(ParseLustreParamsTest, KeysAreCaseInsensitive) {
  auto p = ParseLustreParams({{"MGS-IP-Address", "10.0.0.4"},
                              {"FS-Name", "lustrefs"},
                              {"Sub-Dir", "a/${pv.metadata.name}"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->mgs_address, "10.0.0.4");
  EXPECT_EQ(p->fs_name, "lustrefs");
  EXPECT_EQ(p->sub_dir, "a/${pv.metadata.name}");
  EXPECT_FALSE(p->provisioning.enabled);
}

TEST(ParseLustreParamsTest, KubernetesKeysAreKeptOthersNamed) {
  auto p = ParseLustreParams({{"mgs-ip-address", "10.0.0.4"},
                              {"fs-name", "fs"},
                              {kPvcName, "data"},
                              {"storage.kubernetes.io/csiProvisionerIdentity", "x"},
                              {kParamCreatedByDynamicProvisioning, "f"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kubernetes.at(kPvcName), "data");

  auto bad = ParseLustreParams(
      {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "fs"}, {"skuname", "x"}, {"zonez", "1"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("skuname"));
  EXPECT_THAT(bad.status().message(), HasSubstr("zonez"));
}

// Volume contexts as the Go driver's examples and provisioner write them.
TEST(ParseLustreParamsTest, WhatTheGoDriverAcceptsIsAccepted) {
  struct Case {
    std::map<std::string, std::string> context;
    std::string fs_name, sub_dir;
  };
  const Case cases[] = {
      {{{"mgs-ip-address", "10.0.0.4"}}, "lustrefs", ""},
      {{{"MGS-IP-ADDRESS", "10.0.0.4"}, {"Sub-Dir", "/abc"}}, "lustrefs", "abc"},
      {{{"mgs-ip-address", "10.0.0.4"}, {"sub-dir", "//team/a//"}}, "lustrefs", "team/a"},
      {{{"mgs-ip-address", "10.0.0.4"}, {"sub-dir", "/${pvc.metadata.name}/"}},
       "lustrefs",
       "${pvc.metadata.name}"},
      // What the Go driver's dynamic provisioning writes into a PV.
      {{{"mgs-ip-address", "10.1.0.5"},
        {"created-by-dynamic-provisioning", "t"},
        {"resource-group-name", "rg"},
        {"sku-name", "AMLFS-Durable-Premium-125"},
        {"zone", "1"},
        {"zones", "1"},
        {"maintenance-day-of-week", "Sunday"},
        {"maintenance-time-of-day-utc", "22:00"},
        {"location", "eastus"},
        {"vnet-name", "v"},
        {"vnet-resource-group", "vrg"},
        {"subnet-name", "s"},
        {"tags", "a=b"},
        {"identities", "/subscriptions/x"}},
       "lustrefs",
       ""},
      // fs-name is honoured where given.
      {{{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "other"}}, "other", ""},
  };
  for (const Case& c : cases) {
    auto p = ParseLustreParams(c.context);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->fs_name, c.fs_name);
    EXPECT_EQ(p->sub_dir, c.sub_dir);
  }
  // The trim keeps the escape checks: what is left must still stay inside.
  auto up = ParseLustreParams({{"mgs-ip-address", "10.0.0.4"}, {"sub-dir", "/../etc/"}});
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(FillSubDir(up->sub_dir, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseLustreParamsTest, ASubDirOfOnlySlashesIsRefused) {
  for (const char* root : {"/", "//", "///"}) {
    auto p = ParseLustreParams({{"mgs-ip-address", "10.0.0.4"}, {"sub-dir", root}});
    ASSERT_FALSE(p.ok()) << root;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(p.status().message(), HasSubstr("file system root"));
  }
}

// Where the context is silent, the id speaks: its fs-name as its sub-dir.
TEST(VolumeParamsTest, TheIdsFsNameWhereTheContextHasNone) {
  auto p = VolumeParams("pv#scratch#10.0.0.4#team#f", {{"mgs-ip-address", "10.0.0.4"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->fs_name, "scratch");
  EXPECT_EQ(p->sub_dir, "team");
  auto context_wins =
      VolumeParams("pv#scratch#10.0.0.4##f", {{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "fs2"}});
  ASSERT_TRUE(context_wins.ok());
  EXPECT_EQ(context_wins->fs_name, "fs2");
  // An opaque handle: the default.
  auto opaque = VolumeParams("my-volume", {{"mgs-ip-address", "10.0.0.4"}});
  ASSERT_TRUE(opaque.ok());
  EXPECT_EQ(opaque->fs_name, "lustrefs");
}

TEST(ParseLustreParamsTest, AClusterToCreateIsRefusedSayingSo) {
  auto p = ParseLustreParams({{"sku-name", "AMLFS-Durable-Premium-40"},
                              {"zone", "1"},
                              {"maintenance-day-of-week", "Monday"},
                              {"maintenance-time-of-day-utc", "01:00"}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("does not create Azure Managed Lustre clusters"));
  EXPECT_THAT(p.status().message(), HasSubstr("sku-name"));
}

TEST(ParseLustreParamsTest, SubDirProvisioning) {
  auto p = ParseLustreParams({{"mgs-ip-address", "10.0.0.4"},
                              {"fs-name", "fs"},
                              {"create-sub-dir", "TRUE"},
                              {"sub-dir-mode", "2770"},
                              {"sub-dir-uid", "1000"},
                              {"sub-dir-gid", "2000"},
                              {"sub-dir-on-delete", "Delete"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->provisioning.enabled);
  EXPECT_EQ(p->provisioning.mode, 02770u);
  EXPECT_EQ(p->provisioning.uid, 1000u);
  EXPECT_EQ(p->provisioning.gid, 2000u);
  EXPECT_TRUE(p->provisioning.delete_on_delete);
}

struct BadParams {
  std::map<std::string, std::string> params;
  const char* message;
};

class BadParamsTest : public testing::TestWithParam<BadParams> {};

TEST_P(BadParamsTest, InvalidArgumentNamingTheProblem) {
  auto p = ParseLustreParams(GetParam().params);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadParamsTest,
    testing::Values(
        BadParams{{{"fs-name", "fs"}}, "mgs-ip-address must be provided"},
        BadParams{{{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "toolongname"}}, "1 to 8"},
        BadParams{{{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "a/b"}}, "1 to 8"},
        BadParams{{{"mgs-ip-address", "10.0.0.4:/other"}, {"fs-name", "fs"}}, "character"},
        BadParams{{{"mgs-ip-address", "1.2.3.4 -o x"}, {"fs-name", "fs"}}, "character"},
        BadParams{{{"mgs-ip-address", "m"}, {"fs-name", "fs"}, {"sub-dir-mode", "9"}},
                  "sub-dir-mode"},
        BadParams{{{"mgs-ip-address", "m"}, {"fs-name", "fs"}, {"sub-dir-uid", "-1"}},
                  "sub-dir-uid"},
        BadParams{{{"mgs-ip-address", "m"}, {"fs-name", "fs"}, {"create-sub-dir", "yes"}},
                  "true or false"},
        BadParams{{{"mgs-ip-address", "m"}, {"fs-name", "fs"}, {"sub-dir-on-delete", "wipe"}},
                  "delete or retain"},
        // Nothing a mount helper could read as an option, in any mode.
        BadParams{{{"mgs-ip-address", "-oremount"}, {"fs-name", "fs"}}, "mgs-ip-address"},
        BadParams{{{"mgs-ip-address", "10.0.0.4:-o"}, {"fs-name", "fs"}}, "'-o' is not one"},
        BadParams{{{"mgs-ip-address", "10.0.0.4,-v"}, {"fs-name", "fs"}}, "'-v' is not one"},
        BadParams{{{"mgs-ip-address", "10.0.0.4::10.0.0.5"}, {"fs-name", "fs"}}, "mgs-ip-address"},
        BadParams{{{"mgs-ip-address", "@tcp"}, {"fs-name", "fs"}}, "mgs-ip-address"},
        BadParams{{{"mgs-ip-address", "10.0.0.4,"}, {"fs-name", "fs"}}, "mgs-ip-address"},
        BadParams{{{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "-orw"}},
                  "fs-name '-orw' cannot start with '-'"},
        BadParams{{{"mgs-ip-address", "10.0.0.4"}, {"fs-name", "fs"}, {"sub-dir", "-x"}},
                  "sub-dir '-x' cannot start with '-'"}));

TEST(ParseLustreParamsTest, FailoverAndNidListsStayValid) {
  for (const char* mgs : {"10.0.0.4@tcp:10.0.0.5@tcp", "10.0.0.4,10.0.0.6", "a@o2ib,b@o2ib:c@o2ib",
                          "mgs-1.example.com", "10.0.0.4@tcp1"}) {
    auto p = ParseLustreParams({{"mgs-ip-address", mgs}, {"fs-name", "fs-1"}, {"sub-dir", "a-b"}});
    EXPECT_TRUE(p.ok()) << mgs << ": " << p.status();
  }
}

const std::map<std::string, std::string> kPodContext = {
    {kPodName, "web-0"},    {kPodNamespace, "team"},
    {kPodUid, "1234-abcd"}, {kServiceAccountName, "sa"},
    {kPvcName, "data"},     {kPvcNamespace, "team"},
    {kPvName, "pv-9"}};

struct FillCase {
  std::string sub_dir;
  std::string want;  // empty with ok=false: error
  bool ok;
};

class FillSubDirTest : public testing::TestWithParam<FillCase> {};

TEST_P(FillSubDirTest, Table) {
  auto got = FillSubDir(GetParam().sub_dir, kPodContext);
  ASSERT_EQ(got.ok(), GetParam().ok) << GetParam().sub_dir << ": " << got.status();
  if (got.ok()) {
    EXPECT_EQ(*got, GetParam().want);
  } else {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, FillSubDirTest,
    testing::Values(
        FillCase{"", "", true}, FillCase{"plain", "plain", true}, FillCase{"a//b/", "a/b", true},
        FillCase{"${pvc.metadata.namespace}/${pvc.metadata.name}_${pod.metadata.name}",
                 "team/data_web-0", true},
        FillCase{"${pod.metadata.uid}-${serviceAccount.metadata.name}-${pv.metadata.name}",
                 "1234-abcd-sa-pv-9", true},
        FillCase{"x/${pod.metadata.namespace}", "x/team", true}, FillCase{"/abs", "", false},
        FillCase{"../escape", "", false}, FillCase{"a/../../b", "", false},
        FillCase{"a/./b", "", false}, FillCase{"..", "", false},
        FillCase{"${pod.metadata.labels}", "", false}, FillCase{"${pod.metadata.name", "", false},
        FillCase{std::string("a\0b", 3), "", false}, FillCase{std::string(5000, 'x'), "", false}));

TEST(FillSubDirTest, MissingContextKeyExplains) {
  auto got = FillSubDir("${pod.metadata.name}", {});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("podInfoOnMount"));
}

TEST(FillSubDirTest, HostileValuesCannotEscape) {
  for (const char* value : {"..", ".", "a/../..", "x/y"}) {
    auto got = FillSubDir("${pod.metadata.name}", {{kPodName, value}});
    EXPECT_FALSE(got.ok()) << value;
  }
}

TEST(MountSourceTest, Table) {
  EXPECT_EQ(MountSource("10.0.0.4", "lustrefs", ""), "10.0.0.4@tcp:/lustrefs");
  EXPECT_EQ(MountSource("10.0.0.4", "fs", "a/b"), "10.0.0.4@tcp:/fs/a/b");
  EXPECT_EQ(MountSource("10.0.0.4@o2ib", "fs", ""), "10.0.0.4@o2ib:/fs");
  EXPECT_EQ(MountSource("10.0.0.4@tcp:10.0.0.5@tcp", "fs", "d"), "10.0.0.4@tcp:10.0.0.5@tcp:/fs/d");
  EXPECT_EQ(MountSource("10.0.0.4:10.0.0.5", "fs", ""), "10.0.0.4@tcp:10.0.0.5@tcp:/fs");
  EXPECT_EQ(MountSource("10.0.0.4,10.0.0.6", "fs", ""), "10.0.0.4@tcp,10.0.0.6@tcp:/fs");
}

}  // namespace
}  // namespace lustre_csi::driver

namespace lustre_csi::driver {
namespace {

std::map<std::string, std::string> Provisioned(std::map<std::string, std::string> extra) {
  std::map<std::string, std::string> p = {{"mgs-ip-address", "10.0.0.4"},
                                          {"sub-dir", "v/${pvc.metadata.name}"},
                                          {"create-sub-dir", "true"}};
  p.insert(extra.begin(), extra.end());
  return p;
}

TEST(CapacityParamsTest, QuotaInodesAndLayoutAreParsed) {
  auto p = ParseLustreParams(Provisioned({{"sub-dir-quota", "true"},
                                          {"Sub-Dir-Inode-Limit", "100000"},
                                          {"sub-dir-stripe-count", "-1"},
                                          {"sub-dir-stripe-size", "4M"},
                                          {"sub-dir-stripe-pool", "flash_1"}}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->provisioning.quota);
  EXPECT_EQ(p->provisioning.inode_limit, 100000u);
  EXPECT_EQ(p->provisioning.stripe_count, -1);
  EXPECT_EQ(p->provisioning.stripe_size, uint64_t{4} << 20);
  EXPECT_EQ(p->provisioning.stripe_pool, "flash_1");

  auto plain = ParseLustreParams(Provisioned({}));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->provisioning.quota);
  EXPECT_FALSE(plain->provisioning.has_layout());
  // Sizes in bytes and with each suffix.
  for (const auto& [text, bytes] :
       std::vector<std::pair<std::string, uint64_t>>{{"65536", 65536},
                                                     {"64k", 65536},
                                                     {"64K", 65536},
                                                     {"1m", 1 << 20},
                                                     {"1G", 1 << 30},
                                                     {"4194240K", (uint64_t{4} << 30) - 65536}}) {
    auto s = ParseLustreParams(Provisioned({{"sub-dir-stripe-size", text}}));
    ASSERT_TRUE(s.ok()) << text << ": " << s.status();
    EXPECT_EQ(s->provisioning.stripe_size, bytes) << text;
  }
}

// Each refusal is INVALID_ARGUMENT naming the key.
TEST(CapacityParamsTest, RefusalsNameTheKey) {
  struct Case {
    std::map<std::string, std::string> params;
    const char* names;
  };
  const std::vector<Case> cases = {
      {Provisioned({{"sub-dir-quota", "yes"}}), "sub-dir-quota"},
      {Provisioned({{"sub-dir-quota", "true"}, {"sub-dir-inode-limit", "0"}}),
       "sub-dir-inode-limit"},
      {Provisioned({{"sub-dir-quota", "true"}, {"sub-dir-inode-limit", "-5"}}),
       "sub-dir-inode-limit"},
      {Provisioned({{"sub-dir-inode-limit", "10"}}), "sub-dir-inode-limit"},
      {Provisioned({{"sub-dir-stripe-count", "-2"}}), "sub-dir-stripe-count"},
      {Provisioned({{"sub-dir-stripe-count", "2001"}}), "sub-dir-stripe-count"},
      {Provisioned({{"sub-dir-stripe-count", "two"}}), "sub-dir-stripe-count"},
      {Provisioned({{"sub-dir-stripe-size", "1000"}}), "sub-dir-stripe-size"},
      {Provisioned({{"sub-dir-stripe-size", "0"}}), "sub-dir-stripe-size"},
      {Provisioned({{"sub-dir-stripe-size", "4G"}}), "sub-dir-stripe-size"},
      {Provisioned({{"sub-dir-stripe-size", "1T"}}), "sub-dir-stripe-size"},
      {Provisioned({{"sub-dir-stripe-size", "-64k"}}), "sub-dir-stripe-size"},
      {Provisioned({{"sub-dir-stripe-size", "99999999999999999999k"}}), "sub-dir-stripe-size"},
      {Provisioned({{"sub-dir-stripe-pool", ""}}), "sub-dir-stripe-pool"},
      {Provisioned({{"sub-dir-stripe-pool", "a-pool-name-too-long"}}), "sub-dir-stripe-pool"},
      {Provisioned({{"sub-dir-stripe-pool", "fs.pool"}}), "sub-dir-stripe-pool"},
      {Provisioned({{"sub-dir-stripe-pool", "-p"}}), "sub-dir-stripe-pool"},
      // Only provisioned sub-dirs get a quota or a layout.
      {{{"mgs-ip-address", "10.0.0.4"}, {"sub-dir", "a"}, {"sub-dir-quota", "true"}},
       "create-sub-dir"},
      {{{"mgs-ip-address", "10.0.0.4"}, {"sub-dir", "a"}, {"sub-dir-stripe-count", "2"}},
       "create-sub-dir"},
  };
  for (const Case& c : cases) {
    auto p = ParseLustreParams(c.params);
    ASSERT_FALSE(p.ok()) << c.names;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
    EXPECT_THAT(p.status().message(), HasSubstr(c.names)) << p.status();
  }
}

}  // namespace
}  // namespace lustre_csi::driver
