#include "pkg/volume/metrics.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::volume {
namespace {

using Op = FakeSyscalls::Op;

TEST(StatfsMetricsTest, Figures) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/v").ok());
  FsStats st;
  st.block_size = 4096;
  st.blocks = 1000;
  st.blocks_free = 300;
  st.blocks_available = 250;
  st.files = 500;
  st.files_free = 120;
  ASSERT_TRUE(sys.SetFsStats("/v", st).ok());
  absl::StatusOr<VolumeMetrics> m = NewStatfsMetrics(&sys, "/v")->GetMetrics();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->capacity_bytes, 1000 * 4096);
  EXPECT_EQ(m->available_bytes, 250 * 4096);
  EXPECT_EQ(m->used_bytes, 700 * 4096);
  EXPECT_EQ(m->inodes, 500);
  EXPECT_EQ(m->inodes_free, 120);
  EXPECT_EQ(m->inodes_used, 380);
}

TEST(StatfsMetricsTest, InconsistentFiguresDoNotGoNegative) {
  FakeSyscalls sys;
  FsStats st;
  st.block_size = 512;
  st.blocks = 10;
  st.blocks_free = 20;
  st.files = 0;
  st.files_free = 5;
  ASSERT_TRUE(sys.SetFsStats("/", st).ok());
  absl::StatusOr<VolumeMetrics> m = NewStatfsMetrics(&sys, "/")->GetMetrics();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->used_bytes, 0);
  EXPECT_EQ(m->inodes_used, 0);
}

struct ErrorCase {
  const char* name;
  int err;  // fault injected into statfs; 0: none
  std::string path;
  MetricsErrorKind kind;
  absl::StatusCode code;
};

class MetricsErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(MetricsErrorTest, Table) {
  FakeSyscalls sys;
  if (GetParam().err != 0) sys.FailNext(Op::kStatfs, GetParam().err);
  absl::StatusOr<VolumeMetrics> m = NewStatfsMetrics(&sys, GetParam().path)->GetMetrics();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(MetricsErrorKindOf(m.status()), GetParam().kind);
  EXPECT_EQ(m.status().code(), GetParam().code) << m.status();
  if (GetParam().err != 0) {
    EXPECT_EQ(ErrnoOf(m.status()), GetParam().err);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, MetricsErrorTest,
    testing::Values(ErrorCase{"NoPath", 0, "", MetricsErrorKind::kNoPath,
                              absl::StatusCode::kInvalidArgument},
                    ErrorCase{"Missing", 0, "/nope", MetricsErrorKind::kFsInfoFailed,
                              absl::StatusCode::kNotFound},
                    ErrorCase{"NotConnected", ENOTCONN, "/", MetricsErrorKind::kFsInfoFailed,
                              absl::StatusCode::kUnavailable},
                    ErrorCase{"Stale", ESTALE, "/", MetricsErrorKind::kFsInfoFailed,
                              absl::StatusCode::kUnavailable},
                    ErrorCase{"NoSys", ENOSYS, "/", MetricsErrorKind::kFsInfoFailed,
                              absl::StatusCode::kInternal}),
    [](const testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(MetricsErrorTest, KindOfOtherStatuses) {
  EXPECT_EQ(MetricsErrorKindOf(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(MetricsErrorKindOf(absl::NotFoundError("x")), std::nullopt);
}

}  // namespace
}  // namespace lustre_csi::volume
