#include "cmd/lustre-csi/cli.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

DEFINE_string(test_endpoint, "unix:///tmp/csi.sock", "endpoint for the test subcommand");
DEFINE_int32(test_count, 3, "a number");
DEFINE_bool(test_switch, false, "a switch");
DEFINE_string(other_flag, "", "belongs to another subcommand");

namespace lustre_csi::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class DispatchTest : public testing::Test {
 protected:
  DispatchTest() {
    Subcommand serve;
    serve.name = "serve";
    serve.summary = "serve things";
    serve.usage = "[flags]";
    serve.flags = {"test_endpoint", "test_count", "test_switch"};
    serve.run = [this](const std::vector<std::string>& args, Streams) {
      ran_ = true;
      args_ = args;
      return 7;
    };
    Subcommand other;
    other.name = "other";
    other.summary = "other things";
    other.flags = {"other_flag"};
    other.run = [](const std::vector<std::string>&, Streams) { return 0; };
    table_ = {serve, other};
  }

  int Run(std::vector<std::string> argv) {
    out_.str("");
    err_.str("");
    return Dispatch("prog", argv, table_, {out_, err_});
  }

  gflags::FlagSaver saver_;
  std::vector<Subcommand> table_;
  std::ostringstream out_, err_;
  bool ran_ = false;
  std::vector<std::string> args_;
};

TEST_F(DispatchTest, NoArgumentsIsUsageError) {
  EXPECT_EQ(Run({}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("Usage: prog <subcommand>"));
  EXPECT_THAT(err_.str(), HasSubstr("serve"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(DispatchTest, UnknownSubcommandIsUsageErrorOnStderr) {
  EXPECT_EQ(Run({"bogus"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown subcommand 'bogus'"));
  EXPECT_THAT(err_.str(), HasSubstr("Usage:"));
  EXPECT_FALSE(ran_);
}

TEST_F(DispatchTest, TopLevelHelpListsSubcommandsOnStdout) {
  EXPECT_EQ(Run({"--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("serve"));
  EXPECT_THAT(out_.str(), HasSubstr("other"));
  EXPECT_THAT(out_.str(), HasSubstr("version"));
}

TEST_F(DispatchTest, SubcommandHelpListsOnlyItsFlags) {
  EXPECT_EQ(Run({"serve", "--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("Usage: prog serve [flags]"));
  EXPECT_THAT(out_.str(), HasSubstr("--test-endpoint=<string>"));
  EXPECT_THAT(out_.str(), HasSubstr("(default \"unix:///tmp/csi.sock\")"));
  EXPECT_THAT(out_.str(), HasSubstr("--test-count=<int32>"));
  EXPECT_THAT(out_.str(), HasSubstr("--v=<int32>"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("other-flag")));
  EXPECT_FALSE(ran_);
}

TEST_F(DispatchTest, RunsWithFlagsAndPositionals) {
  EXPECT_EQ(Run({"serve", "--test_endpoint=unix:///a.sock", "--test_count", "9", "pos1",
                 "--test_switch", "--", "--not-a-flag"}),
            7);
  EXPECT_TRUE(ran_);
  EXPECT_EQ(FLAGS_test_endpoint, "unix:///a.sock");
  EXPECT_EQ(FLAGS_test_count, 9);
  EXPECT_TRUE(FLAGS_test_switch);
  EXPECT_THAT(args_, ElementsAre("pos1", "--not-a-flag"));
}

TEST_F(DispatchTest, DashesAndUnderscoresAreOneName) {
  EXPECT_EQ(Run({"serve", "--test-endpoint=unix:///b.sock", "--test_count=5", "--notest-switch"}),
            7);
  EXPECT_EQ(FLAGS_test_endpoint, "unix:///b.sock");
  EXPECT_EQ(FLAGS_test_count, 5);
  EXPECT_FALSE(FLAGS_test_switch);
}

TEST_F(DispatchTest, NegatedBooleanAndSingleDash) {
  FLAGS_test_switch = true;
  EXPECT_EQ(Run({"serve", "--notest_switch", "-v=3"}), 7);
  EXPECT_FALSE(FLAGS_test_switch);
  EXPECT_EQ(FLAGS_v, 3);
}

TEST_F(DispatchTest, FlagsWithoutSubcommandRunTheImplicitOne) {
  // Without an implicit subcommand: a usage error.
  EXPECT_EQ(Run({"--test_count=2"}), kExitUsage);
  EXPECT_FALSE(ran_);

  table_[0].implicit = true;
  EXPECT_EQ(Run({"-v=2", "--test-endpoint=unix:///c.sock", "--test_count=3"}), 7);
  EXPECT_TRUE(ran_);
  EXPECT_EQ(FLAGS_test_endpoint, "unix:///c.sock");
  EXPECT_EQ(FLAGS_test_count, 3);
  EXPECT_EQ(FLAGS_v, 2);
  // Its flags only, not another subcommand's.
  ran_ = false;
  EXPECT_EQ(Run({"--other_flag=x"}), kExitUsage);
  EXPECT_FALSE(ran_);
  EXPECT_THAT(err_.str(), HasSubstr("unknown flag --other-flag"));
  // --help and --version keep their meaning.
  EXPECT_EQ(Run({"--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("With flags and no subcommand, prog runs serve."));
  EXPECT_EQ(Run({"--version"}), kExitOk);
  EXPECT_FALSE(ran_);
}

struct BadUse {
  std::vector<std::string> argv;
  const char* message;
};

class BadUseTest : public DispatchTest, public testing::WithParamInterface<BadUse> {};

TEST_P(BadUseTest, ExitsTwoWithMessage) {
  EXPECT_EQ(Run(GetParam().argv), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr(GetParam().message));
  EXPECT_FALSE(ran_);
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadUseTest,
    testing::Values(BadUse{{"serve", "--other_flag=x"}, "unknown flag --other-flag"},
                    BadUse{{"serve", "--nosuch"}, "unknown flag --nosuch"},
                    BadUse{{"serve", "--test_count=many"}, "invalid value 'many' for --test-count"},
                    BadUse{{"serve", "--test_count"}, "flag --test-count needs a value"},
                    BadUse{{"serve", "--test_switch=maybe"},
                           "invalid value 'maybe' for --test-switch"},
                    BadUse{{"serve", "--notest_count"}, "unknown flag --notest-count"},
                    BadUse{{"serve", "--yaml"}, "--yaml goes with --version"},
                    BadUse{{"--yaml"}, "--yaml goes with --version"},
                    BadUse{{"--test_endpoint=x"}, "unknown flag --test-endpoint"},
                    BadUse{{"version", "extra"}, "takes no arguments"},
                    BadUse{{"--v=3"}, "no subcommand given"}));

TEST_F(DispatchTest, VersionLine) {
  EXPECT_EQ(Run({"--version"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("azurelustre.csi.azure.com v"));
  EXPECT_EQ(out_.str().back(), '\n');
  EXPECT_EQ(Run({"version"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("azurelustre.csi.azure.com v"));
}

TEST_F(DispatchTest, VersionYamlWithDriverName) {
  EXPECT_EQ(Run({"--version", "--yaml", "--drivername=example.csi.io"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\nDriver Name: example.csi.io\n"));
  EXPECT_THAT(out_.str(), HasSubstr("Build Date: \""));
  EXPECT_EQ(Run({"version", "--yaml"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("Git Commit: "));
}

TEST_F(DispatchTest, SubcommandVersionDoesNotRun) {
  EXPECT_EQ(Run({"serve", "--version"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("azurelustre.csi.azure.com"));
  EXPECT_FALSE(ran_);
}

TEST(ParseKeyValuesTest, Table) {
  auto ok = ParseKeyValues("topology", "zone=z1,rack=r=2,,");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, (std::map<std::string, std::string>{{"zone", "z1"}, {"rack", "r=2"}}));
  EXPECT_TRUE(ParseKeyValues("x", "")->empty());
  // A comma inside a value, escaped: an MGS given as a NID list.
  auto nids = ParseKeyValues("volume-context", R"(mgs-ip-address=a@o2ib\,b@o2ib,fs-name=x)");
  ASSERT_TRUE(nids.ok()) << nids.status();
  EXPECT_EQ(*nids, (std::map<std::string, std::string>{{"mgs-ip-address", "a@o2ib,b@o2ib"},
                                                       {"fs-name", "x"}}));
  auto backslash = ParseKeyValues("x", R"(a=c:\\,b=\d)");
  ASSERT_TRUE(backslash.ok()) << backslash.status();
  EXPECT_EQ(*backslash, (std::map<std::string, std::string>{{"a", R"(c:\)"}, {"b", R"(\d)"}}));
  for (const char* bad : {"novalue", "=v", "a=1,b"}) {
    auto got = ParseKeyValues("volume-context", bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_THAT(got.status().message(), HasSubstr("--volume-context"));
  }
}

TEST(ParseFlagsTest, RejectsFlagsNotAllowedEvenIfRegistered) {
  gflags::FlagSaver saver;
  absl::StatusOr<ParsedArgs> parsed = ParseFlags({"--test_count=4"}, {"test_endpoint"});
  EXPECT_FALSE(parsed.ok());
  EXPECT_EQ(FLAGS_test_count, 3);
}

}  // namespace
}  // namespace lustre_csi::cli
