#include "pkg/volume/safe_path.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/sha256.h"

namespace lustre_csi::volume {
namespace {

using std::string_literals::operator""s;

// --- ValidatePathSegment -----------------------------------------------------

struct SegmentCase {
  std::string id;
  bool ok;
  const char* problem;  // part of the message when !ok
};

class ValidatePathSegmentTest : public testing::TestWithParam<SegmentCase> {};

TEST_P(ValidatePathSegmentTest, Table) {
  absl::Status s = ValidatePathSegment(GetParam().id);
  if (GetParam().ok) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(GetParam().problem), std::string::npos) << s;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ValidatePathSegmentTest,
    testing::Values(SegmentCase{"pvc-1234", true, ""},
                    SegmentCase{"vol#lustrefs#10.0.0.1#sub#t#rg", true, ""},
                    SegmentCase{"...", true, ""}, SegmentCase{".hidden", true, ""},
                    SegmentCase{"a b", true, ""}, SegmentCase{std::string(255, 'x'), true, ""},
                    SegmentCase{"", false, "empty"}, SegmentCase{".", false, "\".\""},
                    SegmentCase{"..", false, "\"..\""}, SegmentCase{"a/b", false, "'/'"},
                    SegmentCase{"/", false, "'/'"}, SegmentCase{"a\0b"s, false, "NUL"},
                    SegmentCase{std::string(256, 'x'), false, "256 bytes"}));

TEST(ValidatePathSegmentTest, CustomLimit) {
  EXPECT_TRUE(ValidatePathSegment("abcd", 4).ok());
  EXPECT_EQ(ValidatePathSegment("abcde", 4).code(), absl::StatusCode::kInvalidArgument);
}

// --- EscapePathSegment -------------------------------------------------------

struct EscapeCase {
  std::string in;
  std::string out;
};

class EscapePathSegmentTest : public testing::TestWithParam<EscapeCase> {};

TEST_P(EscapePathSegmentTest, Table) {
  EXPECT_EQ(EscapePathSegment(GetParam().in), GetParam().out);
  absl::StatusOr<std::string> back = UnescapePathSegment(GetParam().out);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, GetParam().in);
}

INSTANTIATE_TEST_SUITE_P(Table, EscapePathSegmentTest,
                         testing::Values(EscapeCase{"pvc-1", "pvc-1"}, EscapeCase{"", "%"},
                                         EscapeCase{".", "%2E"}, EscapeCase{"..", "%2E%2E"},
                                         EscapeCase{"...", "..."}, EscapeCase{"a/b", "a%2Fb"},
                                         EscapeCase{"50%", "50%25"}, EscapeCase{"a b", "a%20b"},
                                         EscapeCase{"a\0b"s, "a%00b"}, EscapeCase{"x\ny", "x%0Ay"},
                                         EscapeCase{"~", "%7E"}, EscapeCase{"a\\b", "a%5Cb"},
                                         EscapeCase{"\xff", "%FF"},
                                         EscapeCase{"v#fs#1.2.3.4#s#t#rg", "v#fs#1.2.3.4#s#t#rg"}));

TEST(EscapePathSegmentTest, RandomInputsRoundTripAndStayDistinct) {
  std::mt19937 rng(42);
  std::set<std::string> inputs, outputs;
  for (int i = 0; i < 5000; ++i) {
    std::string in(rng() % 90, '\0');
    for (char& c : in) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : "./%~a"[rng() % 5]);
    if (!inputs.insert(in).second) continue;
    std::string out = EscapePathSegment(in);
    EXPECT_TRUE(ValidatePathSegment(out).ok()) << out;
    EXPECT_TRUE(outputs.insert(out).second) << out;
    absl::StatusOr<std::string> back = UnescapePathSegment(out);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, in);
  }
}

TEST(EscapePathSegmentTest, LongInputsAreHashedAndStillValid) {
  std::string a(300, 'a');
  std::string b = a + "b";
  std::string ea = EscapePathSegment(a);
  std::string eb = EscapePathSegment(b);
  EXPECT_TRUE(ValidatePathSegment(ea).ok());
  EXPECT_TRUE(ValidatePathSegment(eb).ok());
  EXPECT_NE(ea, eb);
  EXPECT_NE(ea.find('~'), std::string::npos);
  EXPECT_EQ(UnescapePathSegment(ea).status().code(), absl::StatusCode::kInvalidArgument);
  // A prefix cut must not split an escape.
  std::string spaces(200, ' ');
  std::string es = EscapePathSegment(spaces);
  EXPECT_TRUE(ValidatePathSegment(es).ok());
  EXPECT_EQ(es.substr(es.find('~') - 3, 3), "%20");
  // Exactly 255 plain bytes fit without hashing.
  EXPECT_EQ(EscapePathSegment(std::string(255, 'z')), std::string(255, 'z'));
}

TEST(UnescapePathSegmentTest, RejectsWhatEscapeNeverProduces) {
  for (const char* bad : {"", "a/b", "%2", "%zz", "%2e", "%41", "a b", "%2Ea", "x~y"}) {
    EXPECT_EQ(UnescapePathSegment(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// --- CleanPath, ParentPath, IsPathBeneath ------------------------------------

TEST(CleanPathTest, Table) {
  const std::pair<const char*, const char*> cases[] = {{"", "."},
                                                       {"/", "/"},
                                                       {"//a//b/", "/a/b"},
                                                       {"/a/./b/.", "/a/b"},
                                                       {"/a/../b", "/b"},
                                                       {"/../a", "/a"},
                                                       {"a/..", "."},
                                                       {"../a", "../a"},
                                                       {"a/../../b", "../b"},
                                                       {"/a/b/../../..", "/"},
                                                       {".", "."},
                                                       {"a//b", "a/b"}};
  for (const auto& [in, out] : cases) EXPECT_EQ(CleanPath(in), out) << in;
}

TEST(ParentPathTest, Table) {
  EXPECT_EQ(ParentPath("/"), "/");
  EXPECT_EQ(ParentPath("/a"), "/");
  EXPECT_EQ(ParentPath("/a/b"), "/a");
  EXPECT_EQ(ParentPath("a"), ".");
}

TEST(IsPathBeneathTest, Table) {
  EXPECT_TRUE(IsPathBeneath("/a", "/a"));
  EXPECT_TRUE(IsPathBeneath("/a", "/a/b"));
  EXPECT_TRUE(IsPathBeneath("/a/", "/a/b/"));
  EXPECT_FALSE(IsPathBeneath("/a", "/ab"));
  EXPECT_FALSE(IsPathBeneath("/a", "/a/../b"));
  EXPECT_TRUE(IsPathBeneath("/", "/x"));
}

// --- JoinBeneath -------------------------------------------------------------

struct JoinCase {
  std::string root;
  std::string rel;
  std::string out;  // empty: INVALID_ARGUMENT
};

class JoinBeneathTest : public testing::TestWithParam<JoinCase> {};

TEST_P(JoinBeneathTest, Table) {
  absl::StatusOr<std::string> got = JoinBeneath(GetParam().root, GetParam().rel);
  if (GetParam().out.empty()) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << *got;
  } else {
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, GetParam().out);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, JoinBeneathTest,
    testing::Values(JoinCase{"/mnt/fs", "sub/dir", "/mnt/fs/sub/dir"},
                    JoinCase{"/mnt/fs/", "", "/mnt/fs"}, JoinCase{"/mnt/fs", ".", "/mnt/fs"},
                    JoinCase{"/mnt/fs", "a/../b", "/mnt/fs/b"},
                    JoinCase{"/mnt/fs", "a//b/./", "/mnt/fs/a/b"}, JoinCase{"/", "a", "/a"},
                    JoinCase{"/mnt/fs", "..", ""}, JoinCase{"/mnt/fs", "a/../..", ""},
                    JoinCase{"/mnt/fs", "../fs/x", ""}, JoinCase{"/mnt/fs", "/etc", ""},
                    JoinCase{"/mnt/fs", "a\0b"s, ""}, JoinCase{"", "a", ""},
                    JoinCase{"/mnt\0x"s, "a", ""}));

}  // namespace
}  // namespace lustre_csi::volume
