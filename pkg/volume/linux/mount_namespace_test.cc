// Child processes and the Linux MountNamespace against a real second mount
// namespace (needs root; runs inside a private namespace of its own).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/left_behind.h"
#include "pkg/volume/linux/isolated_task.h"
#include "pkg/volume/linux/linux_mount_namespace.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/linux/namespace_threads.h"
#include "pkg/volume/linux/process.h"
#include "pkg/volume/testing/test_dir.h"

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
  // A file that is not a namespace cannot be entered either, by a child or
  // by a thread.
  WriteFile(tmp_.Sub("not-a-ns"), "");
  std::unique_ptr<MountNamespace> not_ns =
      NewLinuxMountNamespace(tmp_.Sub("not-a-ns"), absl::Seconds(5));
  absl::StatusOr<ProcessResult> r = not_ns->Run({"/bin/true"}, {}, absl::Seconds(5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_EQ(ErrnoOf(r.status()), EINVAL);
  absl::Status unmounted = not_ns->Unmount(dir_, 0);
  EXPECT_EQ(unmounted.code(), absl::StatusCode::kFailedPrecondition) << unmounted;
  EXPECT_EQ(ErrnoOf(unmounted), EINVAL);
  EXPECT_EQ(not_ns->Exists("/").status().code(), absl::StatusCode::kFailedPrecondition);
}

// The namespace a thread of this process is in (its /proc/thread-self link).
std::string ThreadNamespace() {
  char buf[64] = {};
  ssize_t n = readlink("/proc/thread-self/ns/mnt", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : std::string("?");
}

std::string NamespaceOf(const std::string& ns_path) {
  char buf[64] = {};
  ssize_t n = readlink(ns_path.c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : std::string("?");
}

TEST_F(MountNamespaceTest, CallsRunOnThreadsOfThisProcessInsideTheNamespace) {
  OtherNamespace other(dir_);
  ASSERT_TRUE(other.ok());
  int fd = open(other.ns_path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  NamespaceThreads threads(fd);
  const pid_t self = getpid();
  const std::string marker = dir_ + "/marker";
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<CallReply> reply =
        threads.Run("look", absl::Seconds(30), [self, marker](std::string* data) {
          // A thread of this process, not a child, in the other namespace.
          if (getpid() != self || syscall(SYS_gettid) == self) return EPERM;
          *data = ThreadNamespace();
          return access(marker.c_str(), F_OK) == 0 ? 0 : errno;
        });
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->err, 0) << strerror(reply->err);
    EXPECT_EQ(reply->data, NamespaceOf(other.ns_path()));
  }
  // One call at a time needs one thread; this thread stayed where it was.
  EXPECT_EQ(threads.Threads(), 1);
  EXPECT_EQ(ThreadNamespace(), NamespaceOf("/proc/self/ns/mnt"));
  EXPECT_NE(ThreadNamespace(), NamespaceOf(other.ns_path()));
}

// Counts the work it runs, each piece in a task of its own.
class CountingTasks : public Isolation {
 public:
  void Run(const std::function<void()>& fn) override {
    runs.fetch_add(1);
    IsolatedTasks()->Run(fn);
  }
  std::atomic<int> runs{0};
};

// With an isolation, each call runs in a task outside this process's thread
// group, still inside the namespace, and answers as on the thread itself.
TEST_F(MountNamespaceTest, InTasksOfTheirOwnCallsWorkTheSame) {
  OtherNamespace other(dir_);
  ASSERT_TRUE(other.ok());
  int fd = open(other.ns_path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  CountingTasks tasks;
  NamespaceThreads::Options options;
  options.isolation = &tasks;
  NamespaceThreads threads(fd, options);
  const pid_t self = getpid();
  const std::string marker = dir_ + "/marker";
  absl::StatusOr<CallReply> reply =
      threads.Run("look", absl::Seconds(30), [self, marker](std::string* data) {
        // A task of its own: not of this process's thread group.
        if (syscall(SYS_getpid) == self) return EPERM;
        *data = ThreadNamespace();
        return access(marker.c_str(), F_OK) == 0 ? 0 : errno;
      });
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->err, 0) << strerror(reply->err);
  EXPECT_EQ(reply->data, NamespaceOf(other.ns_path()));
  EXPECT_EQ(tasks.runs.load(), 1);

  std::unique_ptr<MountNamespace> ns =
      NewLinuxMountNamespace(other.ns_path(), absl::Seconds(30), &tasks);
  EXPECT_EQ(*ns->ReadFile(marker, 100), "hello");
  ASSERT_TRUE(ns->Unmount(dir_, 0).ok());
  EXPECT_FALSE(*ns->Exists(marker));
  absl::Status again = ns->Unmount(dir_, 0);
  EXPECT_EQ(ErrnoOf(again), EINVAL) << again;
  EXPECT_EQ(tasks.runs.load(), 5);
  // An unmount that cannot wait on its file system is made on the thread.
  absl::Status in_place = ns->Unmount(dir_, kUnmountInPlace);
  EXPECT_EQ(ErrnoOf(in_place), EINVAL) << in_place;
  EXPECT_EQ(tasks.runs.load(), 5);
}

// LinuxSyscalls' Unmount runs in the isolation it is given; the errno of
// the task's call is the caller's answer.
TEST_F(MountNamespaceTest, LinuxSyscallsUnmountInTheIsolationGiven) {
  ASSERT_EQ(mount("isolated", dir_.c_str(), "tmpfs", 0, nullptr), 0) << strerror(errno);
  CountingTasks tasks;
  LinuxSyscallsOptions options;
  options.isolation = &tasks;
  std::unique_ptr<Syscalls> sys = NewLinuxSyscalls(options);
  absl::Status unmounted = sys->Unmount(dir_, 0);
  EXPECT_TRUE(unmounted.ok()) << unmounted;
  absl::Status again = sys->Unmount(dir_, 0);
  EXPECT_EQ(ErrnoOf(again), EINVAL) << again;
  EXPECT_EQ(tasks.runs.load(), 2);
  if (!unmounted.ok()) umount2(dir_.c_str(), MNT_DETACH);
  // An unmount that cannot wait on its file system is made in place, with
  // the kernel's flags only.
  ASSERT_EQ(mount("isolated", dir_.c_str(), "tmpfs", 0, nullptr), 0) << strerror(errno);
  absl::Status in_place = sys->Unmount(dir_, kMntDetach | kUnmountInPlace);
  EXPECT_TRUE(in_place.ok()) << in_place;
  EXPECT_EQ(tasks.runs.load(), 2);
  if (!in_place.ok()) umount2(dir_.c_str(), MNT_DETACH);
}

TEST(NamespaceThreadsTest, AStuckCallIsGivenUpAndOthersGoOn) {
  NamespaceThreads::Options options;
  options.max_stuck = 2;
  NamespaceThreads threads(-1, options);
  absl::Notification release;
  std::atomic<int> finished{0};
  auto stuck = [&release, &finished](std::string*) {
    release.WaitForNotification();
    finished.fetch_add(1);
    return 0;
  };
  absl::StatusOr<CallReply> first = threads.Run("hang one", absl::Milliseconds(100), stuck);
  EXPECT_EQ(first.status().code(), absl::StatusCode::kDeadlineExceeded) << first.status();
  EXPECT_NE(first.status().message().find("hang one: no answer within 100ms"), std::string::npos)
      << first.status();
  EXPECT_EQ(threads.Stuck(), 1);
  // Other calls get another thread meanwhile.
  absl::StatusOr<CallReply> quick =
      threads.Run("quick", absl::Seconds(30), [](std::string* d) { return (*d = "ok", 0); });
  ASSERT_TRUE(quick.ok()) << quick.status();
  EXPECT_EQ(quick->data, "ok");
  EXPECT_EQ(threads.Run("hang two", absl::Milliseconds(50), stuck).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  // At the limit of stuck calls, new ones are refused rather than piled up.
  absl::StatusOr<CallReply> refused =
      threads.Run("third", absl::Seconds(30), [](std::string*) { return 0; });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  // Two stuck: the second hang took the thread the quick call left waiting.
  EXPECT_EQ(threads.Threads(), 2);

  // Once the kernel lets go, the given-up threads end and calls are taken again.
  release.Notify();
  for (int i = 0; i < 2000 && (threads.Stuck() > 0 || threads.Threads() > 0); ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(finished.load(), 2);
  EXPECT_EQ(threads.Stuck(), 0);
  EXPECT_EQ(threads.Threads(), 0);
  absl::StatusOr<CallReply> again =
      threads.Run("again", absl::Seconds(30), [](std::string*) { return ENOENT; });
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->err, ENOENT);
  EXPECT_EQ(threads.Threads(), 1);
}

TEST(NamespaceThreadsTest, OverlappingCallsGetThreadsOfTheirOwnAndFewStayIdle) {
  NamespaceThreads::Options options;
  options.max_idle = 2;
  NamespaceThreads threads(-1, options);
  constexpr int kCalls = 6;
  std::atomic<int> inside{0};
  absl::Notification all_inside;
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&] {
      absl::StatusOr<CallReply> r = threads.Run("wait", absl::Seconds(60), [&](std::string*) {
        // Every call waits until all of them run at once: only possible on
        // threads of their own.
        if (inside.fetch_add(1) + 1 == kCalls) all_inside.Notify();
        all_inside.WaitForNotification();
        return 0;
      });
      if (r.ok() && r->err == 0) ok.fetch_add(1);
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ok.load(), kCalls);
  for (int i = 0; i < 2000 && threads.Threads() > 2; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(threads.Threads(), 2);
  EXPECT_EQ(threads.Stuck(), 0);
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

// A program that ends when killed leaves nothing behind to hold anything up
// (it is given 100 ms to end; three tries, so a loaded machine that took
// longer once does not decide), and what was left ends once reaped.
TEST(RunProcessTest, AProgramThatEndsWhenKilledLeavesNothingBehind) {
  bool clean = false;
  for (int attempt = 0; attempt < 3 && !clean; ++attempt) {
    absl::StatusOr<ProcessResult> r = RunProcess(
        {{"/bin/sh", "-c", "exec sleep 600"}, std::nullopt, -1}, absl::Milliseconds(100));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
    clean = !LeftBehindOf(r.status()).has_value();
  }
  EXPECT_TRUE(clean) << "every killed program was left behind";
  absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (ProcessLeftBehind().Running() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(ProcessLeftBehind().Running(), 0);
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
