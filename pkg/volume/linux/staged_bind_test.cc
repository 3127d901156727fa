// Bind mounts with flags on the real kernel, in a private mount namespace
// (mount_namespace_main): through LinuxSyscalls as this kernel does them
// (open_tree, mount_setattr, move_mount) and as a kernel before 5.12 must
// (the staged bind), each case on both paths with the same expectations.
#include "pkg/volume/linux/staged_bind.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "pkg/volume/linux/kernel_probe.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/testing/test_dir.h"

namespace lustre_csi::volume {
namespace {

// One line of /proc/self/mountinfo: the mount point, its per-mount options
// and its peer group ("shared:N"), if any.
struct MountLine {
  std::string mount_point;
  std::string shared;
  std::string options;
};

std::vector<MountLine> MountsAt(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<MountLine> out;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() < 7 || f[4] != path) continue;
    MountLine m{f[4], "", f[5]};
    for (size_t i = 6; i < f.size() && f[i] != "-"; ++i) {
      if (f[i].rfind("shared:", 0) == 0) m.shared = f[i];
    }
    out.push_back(m);
  }
  return out;
}

unsigned long FlagsOf(const std::string& path) {
  struct statvfs st;
  EXPECT_EQ(statvfs(path.c_str(), &st), 0) << path << ": " << strerror(errno);
  return st.f_flag;
}

// The names in `dir`; StagingPoints leaves out the owner marks.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::string cmd = "ls -A '" + dir + "'";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) {
    std::string name = buf;
    if (!name.empty() && name.back() == '\n') name.pop_back();
    out.push_back(name);
  }
  if (p != nullptr) pclose(p);
  return out;
}

std::vector<std::string> StagingPoints(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& name : Entries(dir)) {
    if (name.find(".owner") == std::string::npos) out.push_back(name);
  }
  return out;
}

// The parameter: whether the kernel is taken to lack the new mount API.
class BindWithFlagsTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      old_kernel_.mount_api = false;
      os::SetKernelForTesting(&old_kernel_);
    } else if (!os::ProbeKernel().mount_api) {
      GTEST_SKIP() << "this kernel has no mount_setattr";
    }
    // A "client": a shared tmpfs with the volume's sub-dir.
    MakeDir(dir_.Sub("client"));
    ASSERT_EQ(mount("tmpfs", dir_.Sub("client").c_str(), "tmpfs", 0, "size=1m"), 0);
    ASSERT_EQ(mount(nullptr, dir_.Sub("client").c_str(), nullptr, MS_SHARED, nullptr), 0);
    MakeDir(dir_.Sub("client/vol"));
    WriteFile(dir_.Sub("client/vol/data"), "lustre");
    // A kubelet directory shared with the "host's" view of it.
    MakeDir(dir_.Sub("pods"));
    MakeDir(dir_.Sub("host"));
    ASSERT_EQ(mount(dir_.Sub("pods").c_str(), dir_.Sub("pods").c_str(), nullptr, MS_BIND, nullptr),
              0);
    ASSERT_EQ(mount(nullptr, dir_.Sub("pods").c_str(), nullptr, MS_SHARED, nullptr), 0);
    ASSERT_EQ(mount(dir_.Sub("pods").c_str(), dir_.Sub("host").c_str(), nullptr, MS_BIND, nullptr),
              0);
    MakeDir(dir_.Sub("pods/target"));
    LinuxSyscallsOptions options;
    options.bind_staging_dir = dir_.Sub("work/staging");
    sys_ = NewLinuxSyscalls(options);
  }
  void TearDown() override {
    os::SetKernelForTesting(nullptr);
    for (const char* m :
         {"host/target", "pods/target", "host/target", "host", "pods", "work/staging", "client"}) {
      umount2(dir_.Sub(m).c_str(), MNT_DETACH);
    }
  }

  KernelInterfaces old_kernel_;
  TestDir dir_;
  std::unique_ptr<Syscalls> sys_;
};

INSTANTIATE_TEST_SUITE_P(Kernels, BindWithFlagsTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "StagedBefore5_12" : "MountApi";
                         });

TEST_P(BindWithFlagsTest, BindBeneathArrivesReadOnlyEverywhereAndPrivate) {
  ASSERT_TRUE(sys_->PrepareBinds().ok());
  absl::Status s =
      sys_->BindBeneath(dir_.Sub("client"), "vol", dir_.Sub("pods/target"), kMsRdonly | kMsNosuid);
  ASSERT_TRUE(s.ok()) << s;
  // The data, read-only and nosuid here and in the propagated copy.
  std::ifstream data(dir_.Sub("host/target/data"));
  std::string content;
  data >> content;
  EXPECT_EQ(content, "lustre");
  for (const char* view : {"pods/target", "host/target"}) {
    unsigned long flags = FlagsOf(dir_.Sub(view));
    EXPECT_TRUE(flags & ST_RDONLY) << view;
    EXPECT_TRUE(flags & ST_NOSUID) << view;
  }
  EXPECT_EQ(open(dir_.Sub("pods/target/new").c_str(), O_CREAT | O_WRONLY, 0600), -1);
  EXPECT_EQ(errno, EROFS);
  // Not in the client's peer group: a mount under the client would not
  // reach the target.
  std::vector<MountLine> client = MountsAt(dir_.Sub("client"));
  std::vector<MountLine> target = MountsAt(dir_.Sub("pods/target"));
  ASSERT_EQ(client.size(), 1u);
  ASSERT_EQ(target.size(), 1u);
  ASSERT_FALSE(client[0].shared.empty());
  EXPECT_NE(target[0].shared, client[0].shared);
  // Nothing left on the staging point.
  if (GetParam()) {
    EXPECT_TRUE(StagingPoints(dir_.Sub("work/staging")).empty());
  }
}

TEST_P(BindWithFlagsTest, EscapesAndSymlinksAreRefusedAndLeaveNothing) {
  MakeSymlink("/", dir_.Sub("client/abs"));
  MakeSymlink("../elsewhere", dir_.Sub("client/up"));
  MakeDir(dir_.Sub("elsewhere"));
  for (const char* rel : {"abs", "up", "../elsewhere", "vol/../.."}) {
    absl::Status s = sys_->BindBeneath(dir_.Sub("client"), rel, dir_.Sub("pods/target"), kMsRdonly);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << rel << ": " << s;
  }
  EXPECT_TRUE(MountsAt(dir_.Sub("pods/target")).empty());
  // A target that is a symlink is not followed.
  MakeSymlink(dir_.Sub("elsewhere"), dir_.Sub("pods/link"));
  EXPECT_FALSE(sys_->BindBeneath(dir_.Sub("client"), "vol", dir_.Sub("pods/link"), kMsRdonly).ok());
  EXPECT_TRUE(MountsAt(dir_.Sub("elsewhere")).empty());
  // A missing target fails and leaves nothing staged.
  EXPECT_FALSE(sys_->BindBeneath(dir_.Sub("client"), "vol", dir_.Sub("pods/none"), kMsRdonly).ok());
  if (GetParam()) {
    EXPECT_TRUE(StagingPoints(dir_.Sub("work/staging")).empty());
  }
}

TEST_P(BindWithFlagsTest, BindMountWithFlagsKeepsTheSourcesFlags) {
  ASSERT_EQ(mount(nullptr, dir_.Sub("client").c_str(), nullptr, MS_REMOUNT | MS_NODEV, "size=1m"),
            0);
  absl::Status s =
      sys_->BindMountWithFlags(dir_.Sub("client/vol"), dir_.Sub("pods/target"), false, kMsNoexec);
  ASSERT_TRUE(s.ok()) << s;
  for (const char* view : {"pods/target", "host/target"}) {
    unsigned long flags = FlagsOf(dir_.Sub(view));
    EXPECT_TRUE(flags & ST_NOEXEC) << view;
    EXPECT_TRUE(flags & ST_NODEV) << view << ": the source's own flag was lost";
    EXPECT_FALSE(flags & ST_RDONLY) << view;
  }
}

// Statfs reports a mount's own flags, as the mount table shows them: what
// the shared clients' repeat check reads instead of the table.
TEST_P(BindWithFlagsTest, StatfsShowsTheBindsFlagsAsTheMountTableDoes) {
  ASSERT_TRUE(sys_->PrepareBinds().ok());
  const unsigned long cases[] = {0, kMsRdonly | kMsNosuid, kMsNoatime | kMsNodev | kMsNoexec,
                                 kMsNodiratime | kMsStrictatime, kMsRdonly | kMsNosymfollow};
  for (unsigned long flags : cases) {
    absl::Status s = sys_->BindBeneath(dir_.Sub("client"), "vol", dir_.Sub("pods/target"), flags);
    if (!s.ok() && (flags & kMsNosymfollow)) continue;  // before Linux 5.10
    ASSERT_TRUE(s.ok()) << flags << ": " << s;
    std::vector<MountLine> lines = MountsAt(dir_.Sub("pods/target"));
    ASSERT_EQ(lines.size(), 1u);
    absl::StatusOr<FsStats> stats = sys_->Statfs(dir_.Sub("pods/target"));
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(PerMountOptionsText(stats->mount_flags), lines[0].options) << flags;
    // The unmount propagates to the host's copy too.
    ASSERT_EQ(umount2(dir_.Sub("pods/target").c_str(), MNT_DETACH), 0);
    ASSERT_TRUE(MountsAt(dir_.Sub("host/target")).empty());
  }
}

TEST(BindStagingTest, PrepareTakesBackWhatACrashLeft) {
  TestDir dir;
  MakeDir(dir.Sub("src"));
  {
    os::BindStaging first(dir.Sub("staging"));
    ASSERT_TRUE(first.Prepare().ok());
    // A bind left between its steps, as by a crash.
    MakeDir(dir.Sub("staging/123-0"));
    ASSERT_EQ(
        mount(dir.Sub("src").c_str(), dir.Sub("staging/123-0").c_str(), nullptr, MS_BIND, nullptr),
        0);
  }
  os::BindStaging second(dir.Sub("staging"));
  ASSERT_TRUE(second.Prepare().ok());
  EXPECT_TRUE(MountsAt(dir.Sub("staging/123-0")).empty());
  EXPECT_TRUE(StagingPoints(dir.Sub("staging")).empty());
  // On a private mount the directory needs no mount of its own.
  EXPECT_TRUE(MountsAt(dir.Sub("staging")).empty());
}

// On a shared mount (a host's /var/lib/kubelet) the staging directory gets a
// private mount of its own, once however often it is prepared, so nothing
// staged propagates and a staged bind can still be moved out.
TEST(BindStagingTest, OnASharedMountTheDirectoryBecomesOnePrivateMount) {
  TestDir dir;
  MakeDir(dir.Sub("kubelet"));
  MakeDir(dir.Sub("peer"));
  ASSERT_EQ(
      mount(dir.Sub("kubelet").c_str(), dir.Sub("kubelet").c_str(), nullptr, MS_BIND, nullptr), 0);
  ASSERT_EQ(mount(nullptr, dir.Sub("kubelet").c_str(), nullptr, MS_SHARED, nullptr), 0);
  ASSERT_EQ(mount(dir.Sub("kubelet").c_str(), dir.Sub("peer").c_str(), nullptr, MS_BIND, nullptr),
            0);
  MakeDir(dir.Sub("kubelet/src"));
  WriteFile(dir.Sub("kubelet/src/f"), "x");
  MakeDir(dir.Sub("kubelet/target"));
  for (int i = 0; i < 2; ++i) {
    os::BindStaging staging(dir.Sub("kubelet/plugin/bind-staging"));
    ASSERT_TRUE(staging.Prepare().ok());
    ASSERT_TRUE(staging.Prepare().ok());
  }
  std::vector<MountLine> mounts = MountsAt(dir.Sub("kubelet/plugin/bind-staging"));
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_TRUE(mounts[0].shared.empty());
  os::BindStaging staging(dir.Sub("kubelet/plugin/bind-staging"));
  absl::Status s = staging.Bind(dir.Sub("kubelet/src"), dir.Sub("kubelet/target"), MS_RDONLY,
                                /*make_private=*/true, /*keep_source_flags=*/false);
  ASSERT_TRUE(s.ok()) << s;
  // The bind reached the target and its peer, read-only, and nothing staged
  // is left.
  EXPECT_TRUE(FlagsOf(dir.Sub("peer/target")) & ST_RDONLY);
  EXPECT_TRUE(StagingPoints(dir.Sub("kubelet/plugin/bind-staging")).empty());
  // Its private mount taken away (by hand, or a host's clean-up): the next
  // check makes it again.
  ASSERT_EQ(umount2(dir.Sub("kubelet/plugin/bind-staging").c_str(), MNT_DETACH), 0);
  umount2(dir.Sub("peer/plugin/bind-staging").c_str(), MNT_DETACH);
  EXPECT_TRUE(MountsAt(dir.Sub("kubelet/plugin/bind-staging")).empty());
  ASSERT_TRUE(staging.Prepare().ok());
  EXPECT_EQ(MountsAt(dir.Sub("kubelet/plugin/bind-staging")).size(), 1u);
  for (const char* m : {"peer/target", "kubelet/target", "kubelet/plugin/bind-staging",
                        "peer/plugin/bind-staging", "peer", "kubelet"}) {
    umount2(dir.Sub(m).c_str(), MNT_DETACH);
  }
}

// Two processes sharing one staging directory (two node pods during an
// update): the second one's sweep takes back only what a dead one left.
TEST(BindStagingTest, ASweepNeverTakesALiveProcesssStagingPoints) {
  TestDir dir;
  MakeDir(dir.Sub("src"));
  os::BindStaging live(dir.Sub("staging"));
  ASSERT_TRUE(live.Prepare().ok());
  std::vector<std::string> owners = Entries(dir.Sub("staging"));
  ASSERT_EQ(owners.size(), 1u);
  const std::string token = owners[0].substr(0, owners[0].find('.'));
  // A staging point of the live one, mid-bind, and one of a dead process.
  for (const std::string& name : {token + "-7", std::string("deadbeef-3")}) {
    MakeDir(dir.Sub("staging/" + name));
    ASSERT_EQ(mount(dir.Sub("src").c_str(), dir.Sub("staging/" + name).c_str(), nullptr, MS_BIND,
                    nullptr),
              0);
  }
  WriteFile(dir.Sub("staging/deadbeef.owner"), "");
  os::BindStaging newcomer(dir.Sub("staging"));
  ASSERT_TRUE(newcomer.Prepare().ok());
  EXPECT_EQ(MountsAt(dir.Sub("staging/" + token + "-7")).size(), 1u) << "a live bind was taken";
  EXPECT_TRUE(MountsAt(dir.Sub("staging/deadbeef-3")).empty());
  struct stat st;
  EXPECT_NE(lstat(dir.Sub("staging/deadbeef-3").c_str(), &st), 0);
  EXPECT_NE(lstat(dir.Sub("staging/deadbeef.owner").c_str(), &st), 0);
  EXPECT_EQ(lstat(dir.Sub("staging/" + token + ".owner").c_str(), &st), 0);
  EXPECT_EQ(umount(dir.Sub("staging/" + token + "-7").c_str()), 0);
}

// A file is staged on a file.
TEST(BindStagingTest, FilesAreBoundToo) {
  TestDir dir;
  WriteFile(dir.Sub("src"), "content");
  WriteFile(dir.Sub("target"), "");
  os::BindStaging staging(dir.Sub("staging"));
  absl::Status s = staging.Bind(dir.Sub("src"), dir.Sub("target"), MS_RDONLY,
                                /*make_private=*/false, /*keep_source_flags=*/true);
  ASSERT_TRUE(s.ok()) << s;
  {
    std::ifstream in(dir.Sub("target"));
    std::string content;
    in >> content;
    EXPECT_EQ(content, "content");
  }
  EXPECT_TRUE(FlagsOf(dir.Sub("target")) & ST_RDONLY);
  EXPECT_EQ(umount(dir.Sub("target").c_str()), 0);
  std::vector<std::string> left = Entries(dir.Sub("staging"));
  EXPECT_EQ(left.size(), 1u) << "only the owner mark stays";
}

TEST(BindStagingTest, NoStagingDirectoryOnAnOldKernelIsUnimplemented) {
  KernelInterfaces old_kernel;
  old_kernel.mount_api = false;
  os::SetKernelForTesting(&old_kernel);
  std::unique_ptr<Syscalls> sys = NewLinuxSyscalls();
  EXPECT_EQ(sys->PrepareBinds().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(sys->BindBeneath("/", "tmp", "/mnt", kMsRdonly).code(),
            absl::StatusCode::kUnimplemented);
  os::SetKernelForTesting(nullptr);
}

TEST(BindStagingTest, AStagingDirectoryThatCannotBeMadeIsAFailedPrecondition) {
  TestDir dir;
  WriteFile(dir.Sub("file"), "x");
  os::BindStaging staging(dir.Sub("file/staging"));
  absl::Status s = staging.Prepare();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("file/staging"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace lustre_csi::volume
