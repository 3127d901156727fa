#include "pkg/csimanager/path_segment.h"

#include <string>

#include "gtest/gtest.h"

namespace lustre_csi::csimanager {
namespace {

struct EscapeCase {
  std::string in;
  std::string out;
};

class EscapeSegmentTest : public ::testing::TestWithParam<EscapeCase> {};

TEST_P(EscapeSegmentTest, EscapesAndRoundTrips) {
  absl::StatusOr<std::string> escaped = EscapeSegment(GetParam().in, "volume id");
  ASSERT_TRUE(escaped.ok()) << escaped.status();
  EXPECT_EQ(*escaped, GetParam().out);
  EXPECT_EQ(escaped->find('/'), std::string::npos);
  EXPECT_NE(*escaped, ".");
  EXPECT_NE(*escaped, "..");
  absl::StatusOr<std::string> back = UnescapeSegment(*escaped);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, GetParam().in);
}

INSTANTIATE_TEST_SUITE_P(
    Table, EscapeSegmentTest,
    ::testing::Values(
        EscapeCase{"vol-1", "vol-1"}, EscapeCase{"a.b_c-D9", "a.b_c-D9"}, EscapeCase{".", "%2E"},
        EscapeCase{"..", "%2E%2E"}, EscapeCase{"...", "..."}, EscapeCase{"../etc", "..%2Fetc"},
        EscapeCase{"/abs", "%2Fabs"}, EscapeCase{"a/b", "a%2Fb"}, EscapeCase{"a%2Fb", "a%252Fb"},
        EscapeCase{"sp ace", "sp%20ace"}, EscapeCase{std::string("nul\0x", 5), "nul%00x"},
        EscapeCase{"new\nline", "new%0Aline"}, EscapeCase{"vol#fs#10.0.0.1", "vol%23fs%2310.0.0.1"},
        EscapeCase{"\xc3\xa9", "%C3%A9"}));

TEST(EscapeSegmentTest, EmptyAndTooLongAreRejected) {
  EXPECT_EQ(EscapeSegment("", "alloc id").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(EscapeSegment("", "alloc id").status().message().find("alloc id"), std::string::npos);
  EXPECT_TRUE(EscapeSegment(std::string(255, 'a'), "x").ok());
  EXPECT_FALSE(EscapeSegment(std::string(256, 'a'), "x").ok());
  // 100 slashes escape to 300 bytes.
  EXPECT_FALSE(EscapeSegment(std::string(100, '/'), "x").ok());
}

TEST(EscapeSegmentTest, DistinctIdsGiveDistinctSegments) {
  EXPECT_NE(*EscapeSegment("a/b", "x"), *EscapeSegment("a%2Fb", "x"));
  EXPECT_NE(*EscapeSegment(".", "x"), *EscapeSegment("%2E", "x"));
}

TEST(UnescapeSegmentTest, MalformedEscapes) {
  for (const char* bad : {"%", "%2", "%zz", "a%2", "%2g"}) {
    EXPECT_FALSE(UnescapeSegment(bad).ok()) << bad;
  }
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
                      NameCase{"a/b", false}, NameCase{"..", false}, NameCase{"sp ace", false}));

}  // namespace
}  // namespace lustre_csi::csimanager
