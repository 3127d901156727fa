#include "pkg/volume/metrics.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/testing/fake_syscalls.h"
#include "pkg/volume/testing/test_dir.h"

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

TEST(MetricsErrorTest, NotSupported) {
  absl::StatusOr<VolumeMetrics> m = NewUnsupportedMetrics()->GetMetrics();
  EXPECT_EQ(MetricsErrorKindOf(m.status()), MetricsErrorKind::kNotSupported);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(MetricsErrorTest, KindOfOtherStatuses) {
  EXPECT_EQ(MetricsErrorKindOf(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(MetricsErrorKindOf(absl::NotFoundError("x")), std::nullopt);
}

// --- Cache -------------------------------------------------------------------

class CountingMetrics : public MetricsProvider {
 public:
  absl::StatusOr<VolumeMetrics> GetMetrics() override {
    ++calls;
    if (fail) return MetricsError(MetricsErrorKind::kFsInfoFailed, ErrnoError(EIO, "statfs"));
    VolumeMetrics m;
    m.used_bytes = calls;
    return m;
  }
  int calls = 0;
  bool fail = false;
};

TEST(CachedMetricsTest, CachesSuccessesOnly) {
  auto inner = std::make_unique<CountingMetrics>();
  CountingMetrics* counting = inner.get();
  base::FakeClock clock;
  auto cached = NewCachedMetrics(std::move(inner), absl::Seconds(60), &clock);

  counting->fail = true;
  EXPECT_FALSE(cached->GetMetrics().ok());
  EXPECT_FALSE(cached->GetMetrics().ok());
  EXPECT_EQ(counting->calls, 2);  // errors are not remembered

  counting->fail = false;
  EXPECT_EQ(cached->GetMetrics()->used_bytes, 3);
  clock.Advance(absl::Seconds(59));
  EXPECT_EQ(cached->GetMetrics()->used_bytes, 3);
  EXPECT_EQ(counting->calls, 3);

  clock.Advance(absl::Seconds(1));  // expired
  EXPECT_EQ(cached->GetMetrics()->used_bytes, 4);

  // A failed refresh is reported, and the next call tries again.
  clock.Advance(absl::Seconds(61));
  counting->fail = true;
  absl::StatusOr<VolumeMetrics> failed = cached->GetMetrics();
  EXPECT_EQ(MetricsErrorKindOf(failed.status()), MetricsErrorKind::kFsInfoFailed);
  counting->fail = false;
  EXPECT_EQ(cached->GetMetrics()->used_bytes, 6);

  // A clock going backwards does not extend the cache.
  clock.Advance(-absl::Seconds(3600));
  EXPECT_EQ(cached->GetMetrics()->used_bytes, 7);
}

// --- du (real file system) ---------------------------------------------------

class DuMetricsTest : public testing::Test {
 protected:
  std::unique_ptr<Syscalls> sys_ = NewLinuxSyscalls();
  TestDir dir_;
};

TEST_F(DuMetricsTest, CountsFilesOnceAndDoesNotFollowSymlinks) {
  MakeDir(dir_.Sub("vol"));
  MakeDir(dir_.Sub("vol/sub"));
  WriteFile(dir_.Sub("vol/a"), std::string(64 * 1024, 'a'));
  WriteFile(dir_.Sub("vol/sub/b"), std::string(32 * 1024, 'b'));
  ASSERT_EQ(link(dir_.Sub("vol/a").c_str(), dir_.Sub("vol/sub/hardlink").c_str()), 0);
  // A large tree outside the volume, reachable by symlink: must not count.
  MakeDir(dir_.Sub("outside"));
  WriteFile(dir_.Sub("outside/big"), std::string(1024 * 1024, 'x'));
  MakeSymlink(dir_.Sub("outside"), dir_.Sub("vol/link"));

  absl::StatusOr<VolumeMetrics> m = NewDuMetrics(sys_.get(), dir_.Sub("vol"))->GetMetrics();
  ASSERT_TRUE(m.ok()) << m.status();
  // vol, sub, a (once), b, link
  EXPECT_EQ(m->inodes_used, 5);
  EXPECT_GE(m->used_bytes, 96 * 1024);
  EXPECT_LT(m->used_bytes, 1024 * 1024);
  EXPECT_GT(m->capacity_bytes, 0);
  EXPECT_GT(m->inodes, 0);
}

TEST_F(DuMetricsTest, BoundsTheWork) {
  MakeDir(dir_.Sub("vol"));
  for (int i = 0; i < 20; ++i) WriteFile(dir_.Sub("vol/f" + std::to_string(i)), "x");
  DuOptions opts;
  opts.max_entries = 10;
  absl::StatusOr<VolumeMetrics> m = NewDuMetrics(sys_.get(), dir_.Sub("vol"), opts)->GetMetrics();
  EXPECT_EQ(m.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(MetricsErrorKindOf(m.status()), MetricsErrorKind::kFsInfoFailed);

  std::string deep = dir_.Sub("deep");
  MakeDir(deep);
  for (int i = 0; i < 5; ++i) MakeDir(deep += "/d");
  opts.max_entries = 0;
  opts.max_depth = 3;
  m = NewDuMetrics(sys_.get(), dir_.Sub("deep"), opts)->GetMetrics();
  EXPECT_EQ(m.status().code(), absl::StatusCode::kResourceExhausted);
  opts.max_depth = 5;
  EXPECT_TRUE(NewDuMetrics(sys_.get(), dir_.Sub("deep"), opts)->GetMetrics().ok());
}

TEST_F(DuMetricsTest, Errors) {
  EXPECT_EQ(MetricsErrorKindOf(NewDuMetrics(sys_.get(), "")->GetMetrics().status()),
            MetricsErrorKind::kNoPath);
  absl::StatusOr<VolumeMetrics> m = NewDuMetrics(sys_.get(), dir_.Sub("nope"))->GetMetrics();
  EXPECT_EQ(MetricsErrorKindOf(m.status()), MetricsErrorKind::kFsInfoFailed);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  // The volume root itself must not be a symlink.
  MakeDir(dir_.Sub("real"));
  MakeSymlink(dir_.Sub("real"), dir_.Sub("ln"));
  m = NewDuMetrics(sys_.get(), dir_.Sub("ln"))->GetMetrics();
  EXPECT_EQ(ErrnoOf(m.status()), ENOTDIR);  // O_DIRECTORY | O_NOFOLLOW on a symlink
}

}  // namespace
}  // namespace lustre_csi::volume
