#include "pkg/version/version.h"

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace lustre_csi::version {
namespace {

BuildInfo Sample() {
  BuildInfo info;
  info.build_date = "2026-11-22T03:04:05Z";
  info.compiler = "gcc";
  info.compiler_version = "12.2.0";
  info.driver_name = "azurelustre.csi.azure.com";
  info.driver_version = "v0.1.0";
  info.git_commit = "0123456789abcdef0123456789abcdef01234567";
  info.platform = "linux/amd64";
  return info;
}

TEST(VersionYamlTest, ExactOutput) {
  EXPECT_EQ(FormatVersionYaml(Sample()),
            "Build Date: \"2026-11-22T03:04:05Z\"\n"
            "Compiler: gcc\n"
            "Compiler Version: \"12.2.0\"\n"
            "Driver Name: azurelustre.csi.azure.com\n"
            "Driver Version: v0.1.0\n"
            "Git Commit: \"0123456789abcdef0123456789abcdef01234567\"\n"
            "Platform: linux/amd64\n");
}

TEST(VersionYamlTest, KeysAreSortedOnePerLine) {
  std::vector<std::string> keys;
  for (absl::string_view line : absl::StrSplit(FormatVersionYaml(GetBuildInfo()), '\n')) {
    if (line.empty()) continue;
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(": ", 1));
    ASSERT_EQ(parts.size(), 2u) << line;
    keys.push_back(parts[0]);
  }
  EXPECT_EQ(keys,
            (std::vector<std::string>{"Build Date", "Compiler", "Compiler Version", "Driver Name",
                                      "Driver Version", "Git Commit", "Platform"}));
}

TEST(VersionYamlTest, HostileDriverNameIsQuoted) {
  BuildInfo info = Sample();
  info.driver_name = "x: y\n#z\"";
  EXPECT_NE(FormatVersionYaml(info).find("Driver Name: \"x: y\\n#z\\\"\"\n"), std::string::npos);
}

struct ScalarCase {
  const char* in;
  const char* out;
};

class YamlScalarTest : public testing::TestWithParam<ScalarCase> {};

TEST_P(YamlScalarTest, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(YamlScalar(GetParam().in), GetParam().out);
}

INSTANTIATE_TEST_SUITE_P(
    Table, YamlScalarTest,
    testing::Values(ScalarCase{"gcc", "gcc"}, ScalarCase{"linux/amd64", "linux/amd64"},
                    ScalarCase{"v0.1.0", "v0.1.0"}, ScalarCase{"a.b-c_d+e", "a.b-c_d+e"},
                    ScalarCase{"", "\"\""}, ScalarCase{"true", "\"true\""},
                    ScalarCase{"No", "\"No\""}, ScalarCase{"null", "\"null\""},
                    ScalarCase{"12.2.0", "\"12.2.0\""}, ScalarCase{"1e10", "\"1e10\""},
                    ScalarCase{"-x", "\"-x\""}, ScalarCase{"a b", "\"a b\""},
                    ScalarCase{"a:b", "\"a:b\""}, ScalarCase{"a#b", "\"a#b\""},
                    ScalarCase{"back\\slash", "\"back\\\\slash\""},
                    ScalarCase{"tab\there", "\"tab\\there\""},
                    ScalarCase{"bell\a", "\"bell\\x07\""}));

TEST(YamlScalarTest, ForcedQuotes) { EXPECT_EQ(YamlScalar("abc", true), "\"abc\""); }

TEST(UserAgentTest, Format) {
  EXPECT_EQ(UserAgent(Sample()), "azurelustre.csi.azure.com/v0.1.0 gcc/12.2.0 (amd64-linux)");
  EXPECT_EQ(UserAgent(Sample(), "e2e"),
            "azurelustre.csi.azure.com/v0.1.0 gcc/12.2.0 (amd64-linux) e2e");
}

TEST(VersionLineTest, Format) {
  EXPECT_EQ(FormatVersionLine(Sample()),
            "azurelustre.csi.azure.com v0.1.0 (commit "
            "0123456789abcdef0123456789abcdef01234567, built 2026-11-22T03:04:05Z, gcc 12.2.0, "
            "linux/amd64)");
}

// The stamped values come from the build: check their shape and that the
// driver version is the one in the VERSION file.
TEST(BuildInfoTest, StampedValues) {
  BuildInfo info = GetBuildInfo("example.csi.io");
  EXPECT_EQ(info.driver_name, "example.csi.io");
  EXPECT_TRUE(std::regex_match(info.git_commit, std::regex("[0-9a-f]{40}(-dirty)?|unknown")))
      << info.git_commit;
  EXPECT_TRUE(std::regex_match(
      info.build_date, std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")))
      << info.build_date;
  EXPECT_TRUE(info.compiler == "gcc" || info.compiler == "clang") << info.compiler;
  EXPECT_TRUE(std::regex_match(info.compiler_version, std::regex("[0-9]+\\.[0-9]+\\.[0-9]+")));
  EXPECT_EQ(info.platform, "linux/amd64");

  const char* srcdir = std::getenv("TEST_SRCDIR");
  ASSERT_NE(srcdir, nullptr);
  std::ifstream version_file(std::string(srcdir) + "/lustre_csi/VERSION");
  ASSERT_TRUE(version_file.good());
  std::string version;
  std::getline(version_file, version);
  EXPECT_EQ(info.driver_version, absl::StripAsciiWhitespace(version));
}

}  // namespace
}  // namespace lustre_csi::version
