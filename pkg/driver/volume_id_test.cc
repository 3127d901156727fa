#include "pkg/driver/volume_id.h"

#include "gtest/gtest.h"

namespace lustre_csi::driver {
namespace {

struct IdCase {
  std::string id;
  bool ok;
  VolumeId want;
};

class ParseVolumeIdTest : public testing::TestWithParam<IdCase> {};

TEST_P(ParseVolumeIdTest, Table) {
  absl::StatusOr<VolumeId> got = ParseVolumeId(GetParam().id);
  ASSERT_EQ(got.ok(), GetParam().ok) << GetParam().id << ": " << got.status();
  if (!got.ok()) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    return;
  }
  EXPECT_TRUE(*got == GetParam().want) << GetParam().id;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseVolumeIdTest,
    testing::Values(
        IdCase{"pvc-1#lustrefs#10.0.0.4", true, {"pvc-1", "lustrefs", "10.0.0.4", "", false, ""}},
        IdCase{"pvc-1#fs1#10.0.0.4#a/b", true, {"pvc-1", "fs1", "10.0.0.4", "a/b", false, ""}},
        IdCase{"pvc-1#fs1#10.0.0.4##f", true, {"pvc-1", "fs1", "10.0.0.4", "", false, ""}},
        IdCase{"pvc-1#fs1#10.0.0.4#d#t#rg", true, {"pvc-1", "fs1", "10.0.0.4", "d", true, "rg"}},
        IdCase{"pvc-1#fs1#10.0.0.4###", true, {"pvc-1", "fs1", "10.0.0.4", "", false, ""}},
        IdCase{"pvc-1#fs1", false, {}}, IdCase{"just-a-handle", false, {}}, IdCase{"", false, {}},
        IdCase{"a#b#c#d#f#rg#extra", false, {}}, IdCase{"#fs#mgs", false, {}},
        // As the Go driver reads its ids: an empty fs-name field is
        // "lustrefs", slashes around the sub-dir go.
        IdCase{"n##mgs", true, {"n", "lustrefs", "mgs", "", false, ""}},
        IdCase{"pvc-1#lustrefs#10.0.0.4#/team/a/#f",
               true,
               {"pvc-1", "lustrefs", "10.0.0.4", "team/a", false, ""}},
        IdCase{
            "pvc-1##10.0.0.4#//x//#t#rg", true, {"pvc-1", "lustrefs", "10.0.0.4", "x", true, "rg"}},
        IdCase{"n#fs#", false, {}}, IdCase{"n#fs#mgs#d#yes", false, {}}));

TEST(FormatVolumeIdTest, RoundTrips) {
  VolumeId id{"pvc-1", "lustrefs", "10.0.0.4", "team/a", false, ""};
  EXPECT_EQ(FormatVolumeId(id), "pvc-1#lustrefs#10.0.0.4#team/a#f");
  id.resource_group = "rg";
  id.created_file_system = true;
  EXPECT_EQ(FormatVolumeId(id), "pvc-1#lustrefs#10.0.0.4#team/a#t#rg");
  EXPECT_TRUE(*ParseVolumeId(FormatVolumeId(id)) == id);
}

}  // namespace
}  // namespace lustre_csi::driver
