#include "pkg/csimanager/types.h"

#include "gtest/gtest.h"

namespace lustre_csi::csimanager {
namespace {

struct UsageCase {
  bool read_only;
  AttachmentMode attachment;
  AccessMode access;
  const char* name;
};

class UsageNameTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(UsageNameTest, MatchesTheLayout) {
  VolumeUsage usage;
  usage.read_only = GetParam().read_only;
  usage.attachment_mode = GetParam().attachment;
  usage.access_mode = GetParam().access;
  absl::StatusOr<std::string> name = UsageName(usage);
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(*name, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    Table, UsageNameTest,
    ::testing::Values(
        UsageCase{false, AttachmentMode::kFileSystem, AccessMode::kMultiNodeMultiWriter,
                  "rw-file-system-multi-node-multi-writer"},
        UsageCase{true, AttachmentMode::kFileSystem, AccessMode::kMultiNodeReaderOnly,
                  "ro-file-system-multi-node-reader-only"},
        UsageCase{false, AttachmentMode::kBlockDevice, AccessMode::kSingleNodeWriter,
                  "rw-block-device-single-node-writer"},
        UsageCase{true, AttachmentMode::kBlockDevice, AccessMode::kSingleNodeReaderOnly,
                  "ro-block-device-single-node-reader-only"},
        UsageCase{false, AttachmentMode::kFileSystem, AccessMode::kMultiNodeSingleWriter,
                  "rw-file-system-multi-node-single-writer"}));

TEST(UsageNameTest, UnspecifiedModesAreRejected) {
  VolumeUsage usage;
  usage.access_mode = AccessMode::kSingleNodeWriter;
  EXPECT_EQ(UsageName(usage).status().code(), absl::StatusCode::kInvalidArgument);
  usage.attachment_mode = AttachmentMode::kFileSystem;
  usage.access_mode = AccessMode::kUnspecified;
  EXPECT_EQ(UsageName(usage).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TypesTest, NamesRoundTrip) {
  for (PluginType t : {PluginType::kNode, PluginType::kController, PluginType::kMonolith}) {
    EXPECT_EQ(*ParsePluginType(PluginTypeName(t)), t);
  }
  EXPECT_EQ(*ParsePluginType("Monolith"), PluginType::kMonolith);
  EXPECT_FALSE(ParsePluginType("both").ok());
  for (ClaimState s : {ClaimState::kMounting, ClaimState::kMounted, ClaimState::kUnpublished}) {
    EXPECT_EQ(*ParseClaimState(ClaimStateName(s)), s);
  }
  for (AccessMode m : {AccessMode::kSingleNodeReaderOnly, AccessMode::kSingleNodeWriter,
                       AccessMode::kMultiNodeReaderOnly, AccessMode::kMultiNodeSingleWriter,
                       AccessMode::kMultiNodeMultiWriter}) {
    EXPECT_EQ(*ParseAccessMode(AccessModeName(m)), m);
    EXPECT_EQ(*ParseAccessModeSpecName(AccessModeSpecName(m)), m);
  }
  EXPECT_EQ(AccessModeSpecName(AccessMode::kMultiNodeSingleWriter), "MULTI_NODE_SINGLE_WRITER");
  EXPECT_EQ(AccessModeSpecName(AccessMode::kUnspecified), "");
  EXPECT_FALSE(ParseAccessModeSpecName("").ok());
  EXPECT_FALSE(ParseAccessModeSpecName("multi_node_multi_writer").ok());
  EXPECT_FALSE(ParseAccessModeSpecName("SINGLE_NODE_MULTI_WRITER").ok());
  EXPECT_TRUE(ServesNode(PluginType::kMonolith));
  EXPECT_TRUE(ServesController(PluginType::kMonolith));
  EXPECT_FALSE(ServesNode(PluginType::kController));
  EXPECT_FALSE(ServesController(PluginType::kNode));
  EXPECT_EQ(StaticPluginId(PluginType::kNode, "x.csi.io"), "static:node:x.csi.io");
}

struct NameCase {
  std::string name;
  bool ok;
};

class ValidatePluginNameTest : public ::testing::TestWithParam<NameCase> {};

TEST_P(ValidatePluginNameTest, FollowsCsiRules) {
  EXPECT_EQ(ValidatePluginName(GetParam().name).ok(), GetParam().ok) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ValidatePluginNameTest,
    ::testing::Values(NameCase{"azurelustre.csi.azure.com", true}, NameCase{"a", true},
                      NameCase{"hostpath.csi.k8s.io", true}, NameCase{"my_plugin-2", true},
                      NameCase{std::string(63, 'x'), true}, NameCase{std::string(64, 'x'), false},
                      NameCase{"", false}, NameCase{".hidden", false}, NameCase{"trail-", false},
                      NameCase{"a/b", false}, NameCase{"..", false}, NameCase{"sp ace", false},
                      NameCase{std::string("a\0b", 3), false}));

}  // namespace
}  // namespace lustre_csi::csimanager
