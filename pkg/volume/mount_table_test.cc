#include "pkg/volume/mount_table.h"

#include <sys/mount.h>

#include <cerrno>

#include "gtest/gtest.h"
#include "pkg/volume/cleanup.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::volume {
namespace {

using Op = FakeSyscalls::Op;

// --- ParseMountInfo ----------------------------------------------------------

TEST(ParseMountInfoTest, FullLine) {
  absl::StatusOr<std::vector<MountEntry>> got = ParseMountInfo(
      "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  const MountEntry& e = (*got)[0];
  EXPECT_EQ(e.mount_id, 36);
  EXPECT_EQ(e.parent_id, 35);
  EXPECT_EQ(e.major, 98u);
  EXPECT_EQ(e.minor, 0u);
  EXPECT_EQ(e.root, "/mnt1");
  EXPECT_EQ(e.mount_point, "/mnt2");
  EXPECT_EQ(e.options, "rw,noatime");
  EXPECT_EQ(e.optional_fields, std::vector<std::string>{"master:1"});
  EXPECT_EQ(e.fs_type, "ext3");
  EXPECT_EQ(e.source, "/dev/root");
  EXPECT_EQ(e.super_options, "rw,errors=continue");
}

struct LineCase {
  const char* name;
  std::string line;
  // Expected on success:
  std::string mount_point;
  std::string source;
  size_t optional_fields;
  std::string super_options;
};

class ParseMountInfoLineTest : public testing::TestWithParam<LineCase> {};

TEST_P(ParseMountInfoLineTest, Table) {
  absl::StatusOr<std::vector<MountEntry>> got = ParseMountInfo(GetParam().line);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].mount_point, GetParam().mount_point);
  EXPECT_EQ((*got)[0].source, GetParam().source);
  EXPECT_EQ((*got)[0].optional_fields.size(), GetParam().optional_fields);
  EXPECT_EQ((*got)[0].super_options, GetParam().super_options);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseMountInfoLineTest,
    testing::Values(
        LineCase{"NoOptionalFields", "1 0 0:1 / /a rw - tmpfs tmpfs rw", "/a", "tmpfs", 0, "rw"},
        LineCase{"TwoOptionalFields", "1 0 0:1 / /a rw shared:2 master:1 - tmpfs t rw", "/a", "t",
                 2, "rw"},
        LineCase{"Space", "1 0 0:1 / /a\\040b rw - tmpfs t rw", "/a b", "t", 0, "rw"},
        LineCase{"Tab", "1 0 0:1 / /a\\011b rw - tmpfs t rw", "/a\tb", "t", 0, "rw"},
        LineCase{"Newline", "1 0 0:1 / /a\\012b rw - tmpfs t rw", "/a\nb", "t", 0, "rw"},
        LineCase{"Backslash", "1 0 0:1 / /a\\134b rw - tmpfs t rw", "/a\\b", "t", 0, "rw"},
        LineCase{"EscapedSource", "1 0 0:1 / /a rw - fuse my\\040src rw", "/a", "my src", 0, "rw"},
        LineCase{"NotAnEscape", "1 0 0:1 / /a\\9x\\ rw - tmpfs t rw", "/a\\9x\\", "t", 0, "rw"},
        LineCase{"EmptySource", "1 0 0:1 / /a rw - tmpfs  rw", "/a", "", 0, "rw"},
        LineCase{"LustreSource", "1 0 0:1 / /a rw - lustre 10.0.0.1@tcp:/lustrefs rw,flock", "/a",
                 "10.0.0.1@tcp:/lustrefs", 0, "rw,flock"},
        LineCase{"RawSpaceInSuperOptions", "1 0 0:1 / /a rw - tmpfs t rw,x=a b", "/a", "t", 0,
                 "rw,x=a b"},
        LineCase{"NoTrailingNewline", "1 0 0:1 / /a rw - tmpfs t rw", "/a", "t", 0, "rw"}),
    [](const testing::TestParamInfo<LineCase>& info) { return info.param.name; });

struct BadCase {
  const char* name;
  std::string text;
  const char* problem;
};

class ParseMountInfoBadTest : public testing::TestWithParam<BadCase> {};

TEST_P(ParseMountInfoBadTest, Table) {
  absl::StatusOr<std::vector<MountEntry>> got = ParseMountInfo(GetParam().text);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find(GetParam().problem), std::string::npos) << got.status();
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseMountInfoBadTest,
    testing::Values(BadCase{"NoSeparator", "1 0 0:1 / /a rw tmpfs t rw x y", "separator"},
                    BadCase{"TooFewFields", "1 0 0:1 / /a - tmpfs t", "too few"},
                    BadCase{"NothingAfterSeparator", "1 0 0:1 / /a rw x:1 - tmpfs t", "after"},
                    BadCase{"BadId", "x 0 0:1 / /a rw - tmpfs t rw", "bad mount or parent id"},
                    BadCase{"BadParent", "1 -z 0:1 / /a rw - tmpfs t rw", "bad mount"},
                    BadCase{"BadDevice", "1 0 01 / /a rw - tmpfs t rw", "major:minor"},
                    BadCase{"BadMinor", "1 0 0:x / /a rw - tmpfs t rw", "major:minor"},
                    BadCase{"EmptyType", "1 0 0:1 / /a rw -  t rw", "empty file system type"},
                    BadCase{"EmptyRoot", "1 0 0:1  /a rw - tmpfs t rw", "line 1"},
                    BadCase{"SecondLineBad", "1 0 0:1 / / rw - ext4 r rw\ngarbage\n", "line 2"}),
    [](const testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(ParseMountInfoTest, EmptyTextIsEmptyTable) {
  absl::StatusOr<std::vector<MountEntry>> got = ParseMountInfo("");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty());
}

TEST(ParseMountInfoTest, ManyLines) {
  std::string text;
  for (int i = 0; i < 10000; ++i) {
    text += std::to_string(i + 2) + " 1 0:" + std::to_string(i) + " / /m/" + std::to_string(i) +
            " rw,relatime shared:" + std::to_string(i) + " - tmpfs tmpfs rw\n";
  }
  absl::StatusOr<std::vector<MountEntry>> got = ParseMountInfo(text);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 10000u);
  EXPECT_EQ(got->back().mount_point, "/m/9999");
}

TEST(TopMountAtTest, PicksTheMountOnTop) {
  std::vector<MountEntry> table = *ParseMountInfo(
      "1 0 8:1 / / rw - ext4 r rw\n"
      "5 1 0:5 / /m rw - tmpfs lower rw\n"
      "7 6 0:7 / /m rw - tmpfs hidden-sibling rw\n"
      "6 5 0:6 / /m rw - tmpfs upper rw\n"
      "9 1 0:9 / /other rw - tmpfs o rw\n");
  std::optional<MountEntry> top = TopMountAt(table, "/m/");
  ASSERT_TRUE(top.has_value());
  EXPECT_EQ(top->source, "hidden-sibling");  // 7 sits on 6, which sits on 5
  EXPECT_FALSE(TopMountAt(table, "/nope").has_value());
  EXPECT_EQ(TopMountAt(table, "/")->mount_id, 1);
}

// --- MountChecker over the fake ---------------------------------------------

class MountCheckerTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sys_.AddDir("/plain").ok());
    ASSERT_TRUE(sys_.AddDir("/tmpfs").ok());
    ASSERT_TRUE(sys_.Mount("tmpfs", "/tmpfs", "tmpfs", 0, "").ok());
    ASSERT_TRUE(sys_.AddDir("/src/sub").ok());
    ASSERT_TRUE(sys_.AddDir("/bind").ok());
    ASSERT_TRUE(sys_.Mount("/src/sub", "/bind", "", MS_BIND, "").ok());
    ASSERT_TRUE(sys_.AddFile("/file").ok());
    ASSERT_TRUE(sys_.AddFile("/src/f").ok());
    ASSERT_TRUE(sys_.Mount("/src/f", "/file", "", MS_BIND, "").ok());
    ASSERT_TRUE(sys_.AddSymlink("/link", "/tmpfs").ok());
    ASSERT_TRUE(sys_.AddDir("/tmpfs/inside").ok());
    sys_.ResetCounters();
  }

  FakeSyscalls sys_;
  MountChecker checker_{&sys_};
};

struct CheckCase {
  const char* path;
  bool mount_point;
};

// Every kernel flavour must give the same answers.
struct Kernel {
  const char* name;
  bool mount_id;
  bool mount_root;
};

class MountCheckerTableTest : public MountCheckerTest,
                              public testing::WithParamInterface<Kernel> {};

TEST_P(MountCheckerTableTest, Answers) {
  sys_.SetStatxSupport(GetParam().mount_id, GetParam().mount_root);
  const CheckCase cases[] = {{"/", true},
                             {"/plain", false},
                             {"/tmpfs", true},
                             {"/tmpfs/", true},
                             {"/bind", true},
                             {"/src/sub", false},
                             {"/file", true},
                             {"/src/f", false},
                             {"/link", false},
                             {"/tmpfs/inside", false},
                             {"/plain/../tmpfs", true},
                             {"/link/inside", false}};
  for (const CheckCase& c : cases) {
    absl::StatusOr<bool> got = checker_.IsMountPoint(c.path);
    ASSERT_TRUE(got.ok()) << c.path << ": " << got.status();
    EXPECT_EQ(*got, c.mount_point) << c.path;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, MountCheckerTableTest,
                         testing::Values(Kernel{"StatxMountRoot", true, true},
                                         Kernel{"MountIdOnly", true, false},
                                         Kernel{"Neither", false, false}),
                         [](const testing::TestParamInfo<Kernel>& info) {
                           return info.param.name;
                         });

TEST_F(MountCheckerTest, StatxPathNeverReadsTheTable) {
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(checker_.IsMountPoint("/bind").ok());
    ASSERT_TRUE(checker_.IsMountPoint("/plain").ok());
  }
  EXPECT_EQ(sys_.CallCount(Op::kReadMountInfo), 0);
  EXPECT_EQ(sys_.CallCount(Op::kStat), 200);  // one statx per check
}

TEST_F(MountCheckerTest, MountIdFallbackStatsTheParentOnly) {
  sys_.SetStatxSupport(true, false);
  ASSERT_TRUE(*checker_.IsMountPoint("/bind"));
  EXPECT_EQ(sys_.CallCount(Op::kReadMountInfo), 0);
  EXPECT_EQ(sys_.CallCount(Op::kStat), 2);
}

TEST_F(MountCheckerTest, DeviceFallbackReadsTableOnlyForSameDevice) {
  sys_.SetStatxSupport(false, false);
  ASSERT_TRUE(*checker_.IsMountPoint("/tmpfs"));  // other device: no table needed
  EXPECT_EQ(sys_.CallCount(Op::kReadMountInfo), 0);
  ASSERT_TRUE(*checker_.IsMountPoint("/bind"));  // same device: only the table knows
  EXPECT_EQ(sys_.CallCount(Op::kReadMountInfo), 1);
}

TEST_F(MountCheckerTest, MissingPathIsNotFound) {
  EXPECT_EQ(checker_.IsMountPoint("/nope").status().code(), absl::StatusCode::kNotFound);
}

class MountCheckerErrnoTest : public MountCheckerTest, public testing::WithParamInterface<int> {};

TEST_P(MountCheckerErrnoTest, CorruptedMountKeepsErrno) {
  ASSERT_TRUE(sys_.BreakMount("/tmpfs", GetParam()).ok());
  absl::StatusOr<bool> got = checker_.IsMountPoint("/tmpfs");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(ErrnoOf(got.status()), GetParam());
  EXPECT_TRUE(IsCorruptedError(got.status()));
  // The table still shows it.
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt("/tmpfs");
  ASSERT_TRUE(entry.ok());
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->fs_type, "tmpfs");
}

INSTANTIATE_TEST_SUITE_P(Errnos, MountCheckerErrnoTest,
                         testing::Values(ENOTCONN, ESTALE, EIO, EACCES, EHOSTDOWN, EWOULDBLOCK,
                                         ENODEV));

TEST_F(MountCheckerTest, FaultOnParentStatIsReturned) {
  sys_.SetStatxSupport(true, false);
  sys_.FailNext(Op::kStat, EIO, 1);
  EXPECT_EQ(ErrnoOf(checker_.IsMountPoint("/plain").status()), EIO);
}

TEST_F(MountCheckerTest, FindMountAtStackedReturnsTop) {
  ASSERT_TRUE(sys_.Mount("second", "/tmpfs", "tmpfs", 0, "").ok());
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt("/tmpfs");
  ASSERT_TRUE(entry.ok());
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->source, "second");
  absl::StatusOr<std::optional<MountEntry>> none = checker_.FindMountAt("/plain");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST_F(MountCheckerTest, FindMountAtBindShowsRoot) {
  absl::StatusOr<std::optional<MountEntry>> entry = checker_.FindMountAt("/bind");
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->root, "/src/sub");
  EXPECT_EQ((*entry)->fs_type, "ext4");
}

TEST_F(MountCheckerTest, ListErrors) {
  sys_.FailNext(Op::kReadMountInfo, EIO);
  EXPECT_EQ(ErrnoOf(checker_.List().status()), EIO);
  absl::StatusOr<std::vector<MountEntry>> all = checker_.List();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 4u);
}

}  // namespace
}  // namespace lustre_csi::volume
