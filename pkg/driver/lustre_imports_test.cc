// The import-state reader on the fake syscalls: device names, the import
// file's text, which states are healthy, the snapshot's age, a read that
// does not return, and the metric.
#include "pkg/driver/lustre_imports.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/base/wait_until.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using volume::FakeSyscalls;
using volume::SyscallOp;

// The start of an import file as the client prints it.
std::string ImportText(const std::string& device, const std::string& target,
                       const std::string& state) {
  return "import:\n    name: " + device + "\n    target: " + target + "_UUID\n    state: " + state +
         "\n    connect_flags: [ write_grant, lru_resize ]\n    connection:\n"
         "       failover_nids: [ 10.0.0.4@tcp ]\n       current_connection: 10.0.0.4@tcp\n";
}

TEST(ParseImportDeviceTest, NamesOfMdcAndOscDevices) {
  std::optional<ClientImport> mdc = ParseImportDevice("lustrefs-MDT0000-mdc-ffff8f2a3c1b5000");
  ASSERT_TRUE(mdc.has_value());
  EXPECT_EQ(mdc->fs, "lustrefs");
  EXPECT_EQ(mdc->target, "lustrefs-MDT0000");
  std::optional<ClientImport> osc = ParseImportDevice("my-fs-OST001f-osc-ffff9e1200ab4800");
  ASSERT_TRUE(osc.has_value());
  EXPECT_EQ(osc->fs, "my-fs");
  EXPECT_EQ(osc->target, "my-fs-OST001f");
  for (const char* bad : {"lustrefs-MDT0000-osc-ffff", "lustrefs-OST0000-mdc-ffff",
                          "MDT0000-mdc-ffff", "lustrefs-MDT00-mdc-ffff", "lustrefs-MDT0000-mdc-",
                          "lustrefs-MDT0000-mdc-xyz", "lustrefs-clilmv-ffff", ".", ".."}) {
    EXPECT_FALSE(ParseImportDevice(bad).has_value()) << bad;
  }
}

TEST(ParseImportStateTest, TheStateKeyOfTheImportMap) {
  absl::StatusOr<std::string> state =
      ParseImportState(ImportText("lustrefs-OST0000-osc-ffff", "lustrefs-OST0000", "DISCONN"));
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(*state, "DISCONN");
  EXPECT_FALSE(ParseImportState("import:\n    name: x\n").ok());
  EXPECT_FALSE(ParseImportState("state: FULL\n").ok()) << "not a key of the import map";
  EXPECT_FALSE(ParseImportState("import:\n    state:\n").ok());
}

TEST(ImportStateTest, FullAndIdleAreHealthy) {
  EXPECT_TRUE(IsHealthyImportState("FULL"));
  EXPECT_TRUE(IsHealthyImportState("IDLE"));
  for (const char* s : {"DISCONN", "CONNECTING", "REPLAY", "REPLAY_LOCKS", "REPLAY_WAIT", "RECOVER",
                        "EVICTED", "CLOSED", "NEW", "<UNKNOWN>"}) {
    EXPECT_FALSE(IsHealthyImportState(s)) << s;
  }
}

TEST(LustreParamDirsTest, UnderTheRoot) {
  EXPECT_THAT(LustreParamDirs("/"), ElementsAre("/proc/fs/lustre", "/sys/kernel/debug/lustre"));
  EXPECT_THAT(LustreParamDirs("/proc/1/root/"),
              ElementsAre("/proc/1/root/proc/fs/lustre", "/proc/1/root/sys/kernel/debug/lustre"));
}

class LustreImportsTest : public testing::Test {
 protected:
  void AddDevice(const std::string& dir, const std::string& kind, const std::string& device,
                 const std::string& state) {
    std::optional<ClientImport> parsed = ParseImportDevice(device);
    ASSERT_TRUE(parsed.has_value()) << device;
    ASSERT_TRUE(sys_.AddFile(dir + "/" + kind + "/" + device + "/import", 0444,
                             ImportText(device, parsed->target, state))
                    .ok());
  }

  FakeSyscalls sys_;
  base::FakeClock clock_;
};

TEST_F(LustreImportsTest, ReadsEveryDeviceAndNamesTheUnhealthyOnes) {
  AddDevice("/proc/fs/lustre", "mdc", "lustrefs-MDT0000-mdc-ffff000000000001", "FULL");
  AddDevice("/proc/fs/lustre", "osc", "lustrefs-OST0000-osc-ffff000000000001", "IDLE");
  AddDevice("/proc/fs/lustre", "osc", "lustrefs-OST0001-osc-ffff000000000001", "DISCONN");
  // A second client mount of the same file system sees the same target down.
  AddDevice("/proc/fs/lustre", "osc", "lustrefs-OST0001-osc-ffff000000000002", "DISCONN");
  AddDevice("/proc/fs/lustre", "mdc", "otherfs-MDT0000-mdc-ffff000000000003", "EVICTED");
  ASSERT_TRUE(sys_.AddDir("/proc/fs/lustre/osc/not-a-device").ok());
  LustreImports imports(&sys_, LustreParamDirs("/"), &clock_);
  std::vector<ClientImport> all = imports.All();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].device, "lustrefs-MDT0000-mdc-ffff000000000001");
  EXPECT_EQ(all[0].state, "FULL");
  EXPECT_EQ(imports.Unhealthy("lustrefs").size(), 2u);
  EXPECT_EQ(imports.Describe("lustrefs"), "lustrefs-OST0001 DISCONN");
  EXPECT_EQ(imports.Describe("otherfs"), "otherfs-MDT0000 EVICTED");
  EXPECT_EQ(imports.Describe("nofs"), "");
}

TEST_F(LustreImportsTest, LaterReleasesKeepThemInDebugfs) {
  AddDevice("/sys/kernel/debug/lustre", "mdc", "lustrefs-MDT0000-mdc-ffff000000000001", "EVICTED");
  LustreImports imports(&sys_, LustreParamDirs("/"), &clock_);
  EXPECT_EQ(imports.Describe("lustrefs"), "lustrefs-MDT0000 EVICTED");
}

TEST_F(LustreImportsTest, NoClientNoImports) {
  LustreImports imports(&sys_, LustreParamDirs("/"), &clock_);
  EXPECT_TRUE(imports.All().empty());
  EXPECT_EQ(imports.Describe("lustrefs"), "");
}

TEST_F(LustreImportsTest, ASnapshotServesUntilItIsOld) {
  AddDevice("/proc/fs/lustre", "mdc", "lustrefs-MDT0000-mdc-ffff000000000001", "FULL");
  LustreImports imports(&sys_, LustreParamDirs("/"), &clock_, absl::Seconds(5));
  EXPECT_EQ(imports.All().size(), 1u);
  AddDevice("/proc/fs/lustre", "osc", "lustrefs-OST0000-osc-ffff000000000001", "DISCONN");
  const int reads = sys_.CallCount(SyscallOp::kRead);
  EXPECT_EQ(imports.All().size(), 1u) << "read again within its age";
  EXPECT_EQ(sys_.CallCount(SyscallOp::kRead), reads);
  clock_.Advance(absl::Seconds(6));
  EXPECT_EQ(imports.All().size(), 2u);
  EXPECT_EQ(imports.Describe("lustrefs"), "lustrefs-OST0000 DISCONN");
}

TEST_F(LustreImportsTest, AReadThatDoesNotReturnLeavesTheLastSnapshot) {
  AddDevice("/proc/fs/lustre", "osc", "lustrefs-OST0000-osc-ffff000000000001", "DISCONN");
  LustreImports imports(&sys_, LustreParamDirs("/"), &clock_, absl::Seconds(5),
                        absl::Milliseconds(50));
  EXPECT_EQ(imports.Describe("lustrefs"), "lustrefs-OST0000 DISCONN");
  clock_.Advance(absl::Seconds(6));
  sys_.HangNext(SyscallOp::kRead);
  const absl::Time start = absl::Now();
  EXPECT_EQ(imports.Describe("lustrefs"), "lustrefs-OST0000 DISCONN");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  const int reads = sys_.CallCount(SyscallOp::kRead);
  sys_.Release(SyscallOp::kRead);
  // Once the stuck read returns, the next one starts afresh (and nothing of
  // this test is still in use when it ends).
  EXPECT_TRUE(base::WaitUntil([&] {
    clock_.Advance(absl::Seconds(6));
    imports.All();
    return sys_.CallCount(SyscallOp::kRead) > reads;
  }));
}

TEST_F(LustreImportsTest, ExportsTheStateOfEveryTarget) {
  AddDevice("/proc/fs/lustre", "osc", "lustrefs-OST0001-osc-ffff000000000001", "DISCONN");
  AddDevice("/proc/fs/lustre", "osc", "lustrefs-OST0001-osc-ffff000000000002", "DISCONN");
  AddDevice("/proc/fs/lustre", "mdc", "lustrefs-MDT0000-mdc-ffff000000000001", "FULL");
  LustreImports imports(&sys_, LustreParamDirs("/"), &clock_);
  server::MetricsRegistry metrics;
  imports.Export(&metrics);
  std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("lustre_csi_client_state{fs=\"lustrefs\",target=\"lustrefs-OST0001\","
                              "state=\"DISCONN\"} 2"));
  EXPECT_THAT(text, HasSubstr("lustre_csi_client_state{fs=\"lustrefs\",target=\"lustrefs-MDT0000\","
                              "state=\"FULL\"} 1"));
}

}  // namespace
}  // namespace lustre_csi::driver
