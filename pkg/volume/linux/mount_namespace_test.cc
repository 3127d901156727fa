// Child processes and the Linux MountNamespace against a real second mount
// namespace (needs root; runs inside a private namespace of its own).
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/linux_mount_namespace.h"
#include "pkg/volume/linux/process.h"
#include "pkg/volume/test_dir.h"

namespace lustre_csi::volume {
namespace {

// A process in a mount namespace of its own, with a tmpfs at `dir` that only
// that namespace sees. The tmpfs holds "marker" ("hello") and an executable
// script "prog". Killed on destruction, which ends the namespace.
class OtherNamespace {
 public:
  explicit OtherNamespace(const std::string& dir) {
    int ready[2], hold[2];
    if (pipe(ready) != 0 || pipe(hold) != 0) abort();
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(hold[1]);
      if (unshare(CLONE_NEWNS) != 0) _exit(1);
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(2);
      if (mount("other-ns", dir.c_str(), "tmpfs", 0, nullptr) != 0) _exit(3);
      WriteFile(dir + "/marker", "hello");
      WriteFile(dir + "/prog",
                "#!/bin/sh\necho \"in-ns $FOO $(cat \"$(dirname \"$0\")/marker\")\"\n");
      chmod((dir + "/prog").c_str(), 0755);
      char c = 'r';
      if (write(ready[1], &c, 1) != 1) _exit(4);
      read(hold[0], &c, 1);  // returns when the test closes its end
      _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    hold_ = hold[1];
    char c;
    ok_ = read(ready[0], &c, 1) == 1;
    close(ready[0]);
  }
  ~OtherNamespace() {
    close(hold_);
    int status;
    waitpid(pid_, &status, 0);
  }
  bool ok() const { return ok_; }
  std::string ns_path() const { return absl::StrCat("/proc/", pid_, "/ns/mnt"); }

 private:
  pid_t pid_ = -1;
  int hold_ = -1;
  bool ok_ = false;
};

class MountNamespaceTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.Sub("shared");
    MakeDir(dir_);
  }
  TestDir tmp_;
  std::string dir_;
};

TEST_F(MountNamespaceTest, WorksInsideTheOtherNamespaceOnly) {
  OtherNamespace other(dir_);
  ASSERT_TRUE(other.ok());
  std::unique_ptr<MountNamespace> ns = NewLinuxMountNamespace(other.ns_path(), absl::Seconds(30));
  struct stat st;
  ASSERT_NE(stat((dir_ + "/marker").c_str(), &st), 0) << "the tmpfs leaked into this namespace";

  EXPECT_EQ(*ns->IsOwn(), false);
  EXPECT_EQ(*ns->ReadFile(dir_ + "/marker", 100), "hello");
  EXPECT_EQ(*ns->ReadFile(dir_ + "/marker", 3), "hel");
  EXPECT_TRUE(*ns->Exists(dir_ + "/marker"));
  EXPECT_FALSE(*ns->Exists(dir_ + "/nope"));
  EXPECT_EQ(ns->ReadFile(dir_ + "/nope", 100).status().code(), absl::StatusCode::kNotFound);

  // The program exists only there, and gets exactly the environment given.
  absl::StatusOr<ProcessResult> r = ns->Run({dir_ + "/prog"}, {"FOO=bar"}, absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->Succeeded()) << r->Describe();
  EXPECT_EQ(r->output, "in-ns bar hello\n");
  absl::StatusOr<ProcessResult> here =
      RunProcess({{dir_ + "/prog"}, std::nullopt, -1}, absl::Seconds(30));
  EXPECT_EQ(here.status().code(), absl::StatusCode::kFailedPrecondition) << here.status();
  EXPECT_EQ(ErrnoOf(here.status()), ENOENT);

  // Unmounted there, the files are gone there too; a second unmount is EINVAL.
  ASSERT_TRUE(ns->Unmount(dir_, 0).ok());
  EXPECT_EQ(ns->ReadFile(dir_ + "/marker", 100).status().code(), absl::StatusCode::kNotFound);
  absl::Status again = ns->Unmount(dir_, 0);
  EXPECT_EQ(ErrnoOf(again), EINVAL) << again;
}

TEST_F(MountNamespaceTest, OwnNamespace) {
  EXPECT_TRUE(*NewLinuxMountNamespace("/proc/self/ns/mnt", absl::Seconds(5))->IsOwn());
  std::unique_ptr<MountNamespace> current = NewLinuxMountNamespace("", absl::Seconds(5));
  EXPECT_TRUE(*current->IsOwn());
  ASSERT_EQ(mount("t", dir_.c_str(), "tmpfs", 0, nullptr), 0);
  WriteFile(dir_ + "/f", "x");
  EXPECT_EQ(*current->ReadFile(dir_ + "/f", 10), "x");
  EXPECT_TRUE(*current->Exists(dir_ + "/f"));
  ASSERT_TRUE(current->Unmount(dir_, 0).ok());
  EXPECT_FALSE(*current->Exists(dir_ + "/f"));
  EXPECT_EQ(ErrnoOf(current->Unmount(dir_, 0)), EINVAL);
}

TEST_F(MountNamespaceTest, UnreachableNamespaceIsAPrecondition) {
  std::unique_ptr<MountNamespace> ns =
      NewLinuxMountNamespace("/proc/2147483646/ns/mnt", absl::Seconds(5));
  EXPECT_EQ(ns->IsOwn().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ns->Run({"/bin/true"}, {}, absl::Seconds(5)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ns->Unmount(dir_, 0).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ns->ReadFile("/proc/filesystems", 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ns->Exists("/").status().code(), absl::StatusCode::kFailedPrecondition);
  // A file that is not a namespace cannot be entered either.
  WriteFile(tmp_.Sub("not-a-ns"), "");
  absl::StatusOr<ProcessResult> r = NewLinuxMountNamespace(tmp_.Sub("not-a-ns"), absl::Seconds(5))
                                        ->Run({"/bin/true"}, {}, absl::Seconds(5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_EQ(ErrnoOf(r.status()), EINVAL);
}

TEST(RunProcessTest, ExitStatusSignalAndEnvironment) {
  absl::StatusOr<ProcessResult> r = RunProcess(
      {{"/bin/sh", "-c", "echo \"[$FOO][$HOME]\"; exit 19"}, {{"FOO=1"}}, -1}, absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 19);
  EXPECT_FALSE(r->Succeeded());
  EXPECT_EQ(r->output, "[1][]\n");
  EXPECT_EQ(r->Describe(), "exit status 19");
  r = RunProcess({{"/bin/sh", "-c", "kill -9 $$"}, std::nullopt, -1}, absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->signaled);
  EXPECT_EQ(r->Describe(), "killed by signal 9");
}

TEST(RunProcessTest, CannotExecute) {
  TestDir tmp;
  WriteFile(tmp.Sub("plain"), "#!/bin/sh\n");
  chmod(tmp.Sub("plain").c_str(), 0644);
  absl::StatusOr<ProcessResult> r = RunProcess({{tmp.Sub("plain")}, {{}}, -1}, absl::Seconds(5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrnoOf(r.status()), EACCES);
  r = RunProcess({{"sh"}, {{}}, -1}, absl::Seconds(5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RunProcessTest, TimeoutKills) {
  absl::StatusOr<ProcessResult> r =
      RunProcess({{"/bin/sh", "-c", "echo started; exec sleep 600"}, std::nullopt, -1},
                 absl::Milliseconds(300));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("started"), std::string::npos) << r.status();
}

// Whether `pid` has ended (gone, or a zombie waiting for init).
bool Gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.good()) return true;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
}

TEST(RunProcessTest, TimeoutKillsTheWholeProcessGroup) {
  TestDir tmp;
  std::string child_file = tmp.Sub("child");
  absl::StatusOr<ProcessResult> r =
      RunProcess({{"/bin/sh", "-c",
                   absl::StrCat("sleep 600 & echo $! > ", child_file, ".tmp && mv ", child_file,
                                ".tmp ", child_file, "; wait")},
                  std::nullopt,
                  -1},
                 absl::Milliseconds(500));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  std::ifstream in(child_file);
  pid_t pid = 0;
  ASSERT_TRUE(in >> pid) << "the script did not record its child";
  // SIGKILL went to the process group; the orphan is reaped by init. A
  // bounded wait for that, not a measurement.
  bool gone = false;
  for (int i = 0; i < 1000 && !(gone = Gone(pid)); ++i) usleep(10 * 1000);
  EXPECT_TRUE(gone) << "sleep " << pid << " survived";
}

TEST(RunProcessTest, LargeOutputIsBounded) {
  absl::StatusOr<ProcessResult> r =
      RunProcess({{"/bin/sh", "-c", "yes 0123456789 | head -c 1000000; exit 3"}, std::nullopt, -1},
                 absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->output.size(), 64 * 1024u);
}

}  // namespace
}  // namespace lustre_csi::volume
