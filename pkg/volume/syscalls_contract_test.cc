// The contract of Syscalls that the code above the seam relies on, run
// against both implementations: LinuxSyscalls on a tmpfs in a private mount
// namespace (mount_namespace_main.cc: the run fails, never skips, when it
// cannot get one) and FakeSyscalls. Each case is written once; a difference
// between the kernel and the fake fails one of the two runs. The descriptor
// calls are held to the kernel's answers one by one, and the algorithms built
// on them (beneath.h, tree.h) run over both; every case ends with no
// descriptor left open.
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/dir_watch.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/syscalls.h"
#include "pkg/volume/testing/fake_syscalls.h"
#include "pkg/volume/testing/test_dir.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::volume {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The kernel: a tmpfs of the test's own, set up with libc.
class LinuxEnv {
 public:
  LinuxEnv() : sys_(NewLinuxSyscalls()), root_(dir_.Sub("fs")) {
    MakeDir(root_);
    mounted_ = mount("contract", root_.c_str(), "tmpfs", 0, "size=16m") == 0;
  }
  ~LinuxEnv() {
    if (mounted_) umount2(root_.c_str(), MNT_DETACH);
  }
  bool ok() const { return mounted_; }
  Syscalls& sys() { return *sys_; }
  // The descriptors this process holds.
  int OpenFiles() const {
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      (void)entry;
      ++n;
    }
    return n;
  }
  const std::string& root() const { return root_; }
  // Missing parents are made, as the fake's set-up calls make them.
  void AddDir(const std::string& rel) { std::filesystem::create_directories(root_ + "/" + rel); }
  void AddFile(const std::string& rel, const std::string& content) {
    Parents(rel);
    WriteFile(root_ + "/" + rel, content);
  }
  void AddSymlink(const std::string& target, const std::string& rel) {
    Parents(rel);
    MakeSymlink(target, root_ + "/" + rel);
  }

 private:
  void Parents(const std::string& rel) {
    std::filesystem::create_directories(std::filesystem::path(root_ + "/" + rel).parent_path());
  }

  TestDir dir_;
  std::unique_ptr<Syscalls> sys_;
  std::string root_;
  bool mounted_ = false;
};

// The fake: the same tree on a tmpfs of its own, set up with its set-up
// calls.
class FakeEnv {
 public:
  FakeEnv() : root_("/fs") {
    fake_.SetAtomicBinds(true);
    mounted_ = fake_.AddDir(root_).ok() && fake_.Mount("contract", root_, "tmpfs", 0, "").ok();
  }
  bool ok() const { return mounted_; }
  Syscalls& sys() { return fake_; }
  int OpenFiles() const { return fake_.OpenFileCount(); }
  const std::string& root() const { return root_; }
  void AddDir(const std::string& rel) { ASSERT_TRUE(fake_.AddDir(root_ + "/" + rel).ok()); }
  void AddFile(const std::string& rel, const std::string& content) {
    ASSERT_TRUE(fake_.AddFile(root_ + "/" + rel, 0644, content).ok());
  }
  void AddSymlink(const std::string& target, const std::string& rel) {
    ASSERT_TRUE(fake_.AddSymlink(root_ + "/" + rel, target).ok());
  }

 private:
  FakeSyscalls fake_;
  std::string root_;
  bool mounted_ = false;
};

template <typename Env>
class SyscallsContractTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.ok()) << "could not mount the test's tmpfs";
    open_files_ = env_.OpenFiles();
  }
  void TearDown() override { EXPECT_EQ(env_.OpenFiles(), open_files_) << "a descriptor leaked"; }
  Syscalls& sys() { return env_.sys(); }
  std::string At(const std::string& rel) const { return env_.root() + "/" + rel; }
  const std::string& root() const { return env_.root(); }

  // Opens `path` from `dir_fd`; the errno of a failure, else 0 (and the
  // descriptor closed).
  int OpenErrno(int dir_fd, const std::string& path, const OpenHow& how) {
    absl::StatusOr<int> fd = sys().OpenAt(dir_fd, path, how);
    if (!fd.ok()) return ErrnoOf(fd.status()).value_or(-1);
    EXPECT_TRUE(sys().Close(*fd).ok());
    return 0;
  }

  Env env_;
  int open_files_ = 0;
};

using Implementations = testing::Types<LinuxEnv, FakeEnv>;
class Names {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, LinuxEnv> ? "Linux" : "Fake";
  }
};
TYPED_TEST_SUITE(SyscallsContractTest, Implementations, Names);

TYPED_TEST(SyscallsContractTest, MkdirStatRmdir) {
  Syscalls& sys = this->sys();
  const std::string dir = this->At("d");
  ASSERT_TRUE(sys.Mkdir(dir, 0755).ok());
  EXPECT_EQ(sys.Mkdir(dir, 0755).code(), absl::StatusCode::kAlreadyExists);
  absl::StatusOr<FileInfo> info = sys.Stat(dir);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(S_ISDIR(info->mode));
  EXPECT_FALSE(info->mount_root);
  this->env_.AddFile("d/f", "x");
  EXPECT_EQ(ErrnoOf(sys.Rmdir(dir)), ENOTEMPTY);
  EXPECT_EQ(sys.Stat(this->At("missing")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sys.Rmdir(this->At("missing")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sys.Mkdir(this->At("missing/d"), 0755).code(), absl::StatusCode::kNotFound);
  absl::StatusOr<FileInfo> root = sys.Stat(this->root());
  ASSERT_TRUE(root.ok());
  // The kernels these machines run report both (statx, Linux 5.8).
  ASSERT_TRUE(root->has_mount_root && root->has_mount_id && info->has_mount_id);
  EXPECT_TRUE(root->mount_root) << "the tmpfs's root is a mount root";
  EXPECT_EQ(root->mount_id, info->mount_id) << "a directory is on its parent's mount";
}

TYPED_TEST(SyscallsContractTest, StatDoesNotFollowTheLastSymlink) {
  this->env_.AddDir("a");
  this->env_.AddSymlink("a", "link");
  this->env_.AddSymlink("nowhere", "dangling");
  absl::StatusOr<FileInfo> link = this->sys().Stat(this->At("link"));
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_TRUE(S_ISLNK(link->mode));
  absl::StatusOr<FileInfo> dangling = this->sys().Stat(this->At("dangling"));
  ASSERT_TRUE(dangling.ok()) << dangling.status();
  EXPECT_TRUE(S_ISLNK(dangling->mode));
}

TYPED_TEST(SyscallsContractTest, ResolveBeneathFollowsNoSymlink) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("a/b");
  this->env_.AddSymlink("a", "inside");
  this->env_.AddSymlink("../..", "up");
  this->env_.AddSymlink("/etc", "absolute");
  this->env_.AddSymlink("b", "a/rel");
  absl::StatusOr<std::string> b = ResolveBeneath(sys, this->root(), "a/b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, this->At("a/b"));
  absl::StatusOr<std::string> root = ResolveBeneath(sys, this->root(), "");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(*root, this->root());
  const std::pair<const char*, const char*> refused[] = {{"inside/b", "\"inside\" is a symlink"},
                                                         {"a/rel", "\"a/rel\" is a symlink"},
                                                         {"up/x", "\"up\" is a symlink"},
                                                         {"absolute", "\"absolute\" is a symlink"},
                                                         {"..", "\"..\" goes up"},
                                                         {"/a", "not a clean path"}};
  for (const auto& [path, named] : refused) {
    absl::StatusOr<std::string> got = ResolveBeneath(sys, this->root(), path);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(got.status().message(), HasSubstr(named)) << path;
  }
  EXPECT_EQ(ResolveBeneath(sys, this->root(), "a/missing").status().code(),
            absl::StatusCode::kNotFound);
}

TYPED_TEST(SyscallsContractTest, MkdirAllBeneathMakesEachLevelAndStopsAtASymlink) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("a");
  this->env_.AddDir("outside");
  this->env_.AddSymlink("../outside", "a/evil");
  this->env_.AddFile("a/file", "x");
  ASSERT_TRUE(MkdirAllBeneath(sys, this->root(), "a/b/c/d", 0755).ok());
  absl::StatusOr<FileInfo> d = sys.Stat(this->At("a/b/c/d"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(IsDirectoryMode(d->mode));
  EXPECT_TRUE(MkdirAllBeneath(sys, this->root(), "a/b/c/d", 0755).ok()) << "existing is fine";
  absl::Status refused = MkdirAllBeneath(sys, this->root(), "a/evil/new", 0755);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("\"a/evil\" is a symlink"));
  EXPECT_FALSE(PathExists(sys, this->At("outside/new")).value()) << "nothing made through it";
  EXPECT_FALSE(MkdirAllBeneath(sys, this->root(), "a/file/x", 0755).ok());
  EXPECT_EQ(MkdirAllBeneath(sys, this->root(), "../x", 0755).code(),
            absl::StatusCode::kInvalidArgument);
}

TYPED_TEST(SyscallsContractTest, StrictBeneathCallsRefuseEverySymlink) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("a");
  this->env_.AddFile("a/f", "0123456789");
  this->env_.AddSymlink("a", "inside");
  this->env_.AddSymlink("a/f", "file-link");
  ASSERT_TRUE(MkdirBeneath(sys, this->root(), "a/new", 0755).ok());
  EXPECT_EQ(MkdirBeneath(sys, this->root(), "a/new", 0755).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(MkdirBeneath(sys, this->root(), "inside/new", 0755).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MkdirBeneath(sys, this->root(), "x/y", 0755).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(StatBeneath(sys, this->root(), "file-link").status().code(),
            absl::StatusCode::kInvalidArgument)
      << "the last component too";
  absl::StatusOr<FileInfo> f = StatBeneath(sys, this->root(), "a/f");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(S_ISREG(f->mode));
  absl::StatusOr<std::string> head = ReadFileBeneath(sys, this->root(), "a/f", 4);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(*head, "0123");
  EXPECT_EQ(ReadFileBeneath(sys, this->root(), "a", 4).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "a directory is not a regular file";
  EXPECT_EQ(ReadFileBeneath(sys, this->root(), "file-link", 4).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TYPED_TEST(SyscallsContractTest, MarkedDirHasExactlyTheModeAndTheMarker) {
  Syscalls& sys = this->sys();
  MarkedDirSpec spec;
  spec.mode = 02770;
  spec.uid = 4242;
  spec.gid = 4343;
  spec.marker_name = ".owner";
  spec.marker_content = "volume=v1\n";
  spec.marker_mode = 0444;
  ASSERT_TRUE(MakeMarkedDirBeneath(sys, this->root(), "vol", spec).ok());
  absl::StatusOr<FileInfo> dir = sys.Stat(this->At("vol"));
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->mode & 07777, 02770u) << "no umask, set-group-ID kept after the chown";
  EXPECT_EQ(dir->uid, 4242u);
  EXPECT_EQ(dir->gid, 4343u);
  absl::StatusOr<FileInfo> marker = sys.Stat(this->At("vol/.owner"));
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(marker->mode & 07777, 0444u);
  absl::StatusOr<std::string> content = ReadFileBeneath(sys, this->root(), "vol/.owner", 100);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "volume=v1\n");
  EXPECT_EQ(MakeMarkedDirBeneath(sys, this->root(), "vol", spec).code(),
            absl::StatusCode::kAlreadyExists);
}

TYPED_TEST(SyscallsContractTest, ListDirIsSortedWithoutDots) {
  for (const char* name : {"b", "a", "c"}) this->env_.AddDir(std::string("l/") + name);
  this->env_.AddFile("l/0", "");
  absl::StatusOr<std::vector<std::string>> names = ListDir(this->sys(), this->At("l"));
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre("0", "a", "b", "c"));
  EXPECT_EQ(ListDir(this->sys(), this->At("nope")).status().code(), absl::StatusCode::kNotFound);
}

TYPED_TEST(SyscallsContractTest, WalkTreeGoesDirectoriesFirstAndNeverFollowsOrCrosses) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("w/d/e");
  this->env_.AddFile("w/d/f", "x");
  this->env_.AddDir("outside");
  this->env_.AddFile("outside/secret", "x");
  this->env_.AddSymlink("../outside", "w/link");
  this->env_.AddDir("w/m");
  ASSERT_TRUE(sys.Mount("other", this->At("w/m"), "tmpfs", 0, "").ok());
  this->env_.AddFile("w/m/on-the-other-mount", "x");
  std::vector<std::string> seen;
  absl::Status walked = WalkTree(sys, this->At("w"), {}, [&](const TreeEntry& e) {
    seen.push_back(e.path);
    return EntryChange{};
  });
  ASSERT_TRUE(walked.ok()) << walked;
  EXPECT_TRUE(std::find(seen.begin(), seen.end(), "link") != seen.end()) << "the link is shown";
  for (const std::string& path : seen) {
    EXPECT_EQ(path.find("secret"), std::string::npos) << "followed the symlink";
    EXPECT_NE(path, "m") << "showed another mount";
    EXPECT_EQ(path.find("on-the-other-mount"), std::string::npos) << "entered another mount";
  }
  auto index = [&](const std::string& p) {
    return std::find(seen.begin(), seen.end(), p) - seen.begin();
  };
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), "");
  for (const char* p : {"d", "d/e", "d/f"}) {
    ASSERT_LT(index(p), static_cast<long>(seen.size())) << p << " was not shown";
  }
  EXPECT_LT(index("d"), index("d/e"));
  EXPECT_LT(index("d"), index("d/f"));
  TreeLimits shallow;
  shallow.max_depth = 1;
  EXPECT_EQ(
      WalkTree(sys, this->At("w"), shallow, [](const TreeEntry&) { return EntryChange{}; }).code(),
      absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(sys.Unmount(this->At("w/m"), 0).ok());
}

TYPED_TEST(SyscallsContractTest, RemoveTreeBeneathStopsAtMountsAndDepth) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("t/a/b");
  this->env_.AddFile("t/a/b/f", "x");
  this->env_.AddDir("kept");
  this->env_.AddFile("kept/file", "x");
  this->env_.AddSymlink("../kept", "t/link");
  ASSERT_TRUE(RemoveTreeBeneath(sys, this->root(), "t", 256).ok());
  EXPECT_EQ(sys.Stat(this->At("t")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(sys.Stat(this->At("kept/file")).ok()) << "a symlink is removed, not followed";

  this->env_.AddDir("deep/1/2/3");
  EXPECT_EQ(RemoveTreeBeneath(sys, this->root(), "deep", 1).code(),
            absl::StatusCode::kResourceExhausted);

  this->env_.AddDir("mounted/m");
  ASSERT_TRUE(sys.Mount("other", this->At("mounted/m"), "tmpfs", 0, "").ok());
  EXPECT_EQ(RemoveTreeBeneath(sys, this->root(), "mounted", 256).code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<FileInfo> m = sys.Stat(this->At("mounted/m"));
  ASSERT_TRUE(m.ok()) << "the mount below is never entered";
  EXPECT_TRUE(m->mount_root);
  ASSERT_TRUE(sys.Unmount(this->At("mounted/m"), 0).ok());
}

TYPED_TEST(SyscallsContractTest, BindShowsInTheTableAndUnmountTakesIt) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("src");
  this->env_.AddFile("src/f", "x");
  this->env_.AddDir("dst");
  ASSERT_TRUE(sys.Mount(this->At("src"), this->At("dst"), "", kMsBind, "").ok());
  MountChecker checker(&sys);
  absl::StatusOr<bool> mounted = checker.IsMountPoint(this->At("dst"));
  ASSERT_TRUE(mounted.ok()) << mounted.status();
  EXPECT_TRUE(*mounted);
  EXPECT_TRUE(sys.Stat(this->At("dst/f")).ok());
  // The mount table (ReadMountInfo, parsed) shows the bind: the source's
  // file system, with the source directory as its root.
  absl::StatusOr<std::optional<MountEntry>> entry = checker.FindMountAt(this->At("dst"));
  ASSERT_TRUE(entry.ok()) << entry.status();
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->fs_type, "tmpfs");
  EXPECT_EQ((*entry)->root, "/src");
  ASSERT_TRUE(sys.Unmount(this->At("dst"), 0).ok());
  mounted = checker.IsMountPoint(this->At("dst"));
  ASSERT_TRUE(mounted.ok());
  EXPECT_FALSE(*mounted);
  entry = checker.FindMountAt(this->At("dst"));
  ASSERT_TRUE(entry.ok());
  EXPECT_FALSE(entry->has_value()) << "gone from the table";
  EXPECT_EQ(ErrnoOf(sys.Unmount(this->At("dst"), 0)), EINVAL) << "not a mount point";
}

TYPED_TEST(SyscallsContractTest, BindBeneathSetsTheFlagsAndStaysBeneath) {
  Syscalls& sys = this->sys();
  ASSERT_TRUE(sys.PrepareBinds().ok());
  this->env_.AddDir("vol/data");
  this->env_.AddSymlink("../..", "vol/up");
  this->env_.AddSymlink("data", "vol/in");
  this->env_.AddDir("target");
  ASSERT_TRUE(sys.BindBeneath(this->root(), "vol/data", this->At("target"), kMsRdonly).ok());
  absl::StatusOr<FsStats> stats = sys.Statfs(this->At("target"));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->mount_flags & kMsRdonly);
  ASSERT_TRUE(sys.Unmount(this->At("target"), 0).ok());
  EXPECT_EQ(sys.BindBeneath(this->root(), "vol/up", this->At("target"), 0).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status inside = BindDirBeneath(sys, this->root(), "vol/in", this->At("target"), 0);
  EXPECT_EQ(inside.code(), absl::StatusCode::kInvalidArgument) << "not even a link that stays";
  EXPECT_THAT(inside.message(), HasSubstr("\"vol/in\" is a symlink"));
  EXPECT_EQ(sys.BindBeneath(this->root(), "vol/missing", this->At("target"), 0).code(),
            absl::StatusCode::kNotFound);
  MountChecker checker(&sys);
  absl::StatusOr<bool> mounted = checker.IsMountPoint(this->At("target"));
  ASSERT_TRUE(mounted.ok());
  EXPECT_FALSE(*mounted) << "a refused bind leaves nothing";
}

TYPED_TEST(SyscallsContractTest, BindMountWithFlagsSetsThemAtTheTargetOnly) {
  Syscalls& sys = this->sys();
  ASSERT_TRUE(sys.PrepareBinds().ok());
  this->env_.AddFile("src/f", "x");
  this->env_.AddDir("dst");
  ASSERT_TRUE(sys.BindMountWithFlags(this->At("src"), this->At("dst"), /*recursive=*/false,
                                     kMsRdonly | kMsNosuid)
                  .ok());
  absl::StatusOr<FsStats> at = sys.Statfs(this->At("dst"));
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_TRUE(at->mount_flags & kMsRdonly);
  EXPECT_TRUE(at->mount_flags & kMsNosuid);
  absl::StatusOr<FsStats> source = sys.Statfs(this->At("src"));
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_FALSE(source->mount_flags & kMsRdonly) << "the source changed too";
  EXPECT_TRUE(sys.Stat(this->At("dst/f")).ok());
  MountChecker checker(&sys);
  absl::StatusOr<std::optional<MountEntry>> entry = checker.FindMountAt(this->At("dst"));
  ASSERT_TRUE(entry.ok()) << entry.status();
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->root, "/src");
  ASSERT_TRUE(sys.Unmount(this->At("dst"), 0).ok());
  EXPECT_EQ(ErrnoOf(sys.BindMountWithFlags(this->At("missing"), this->At("dst"), false, 0)),
            ENOENT);
  absl::StatusOr<bool> mounted = checker.IsMountPoint(this->At("dst"));
  ASSERT_TRUE(mounted.ok());
  EXPECT_FALSE(*mounted);
}

// What this process makes is owned by the uid EffectiveUid names.
TYPED_TEST(SyscallsContractTest, EffectiveUidOwnsWhatIsMade) {
  Syscalls& sys = this->sys();
  ASSERT_TRUE(sys.Mkdir(this->At("made"), 0755).ok());
  absl::StatusOr<FileInfo> info = sys.Stat(this->At("made"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->uid, sys.EffectiveUid());
}

// A watch reports entries made, moved in and removed after it started, the
// directory's own removal, and returns at once when woken.
TYPED_TEST(SyscallsContractTest, WatchDirReportsEntriesThatComeAndGo) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("w/before");
  this->env_.AddDir("elsewhere/moved");
  absl::StatusOr<std::unique_ptr<DirWatch>> watch = sys.WatchDir(this->At("w"));
  ASSERT_TRUE(watch.ok()) << watch.status();
  // Events until `want` has been seen (the kernel may hand them over in
  // more than one batch).
  auto wait_for = [&](const DirEvent& want) {
    for (int i = 0; i < 10; ++i) {
      absl::StatusOr<std::vector<DirEvent>> events = (*watch)->Wait();
      if (!events.ok()) return false;
      for (const DirEvent& e : *events) {
        if (e == want) return true;
      }
    }
    return false;
  };
  ASSERT_TRUE(sys.Mkdir(this->At("w/new"), 0755).ok());
  EXPECT_TRUE(wait_for({DirEvent::Kind::kAdded, "new"}));
  ASSERT_TRUE(sys.Rmdir(this->At("w/before")).ok());
  EXPECT_TRUE(wait_for({DirEvent::Kind::kRemoved, "before"}));
  (*watch)->Wake();
  absl::StatusOr<std::vector<DirEvent>> woken = (*watch)->Wait();
  ASSERT_TRUE(woken.ok()) << woken.status();
  EXPECT_TRUE(woken->empty());
  ASSERT_TRUE(sys.Rmdir(this->At("w/new")).ok());
  EXPECT_TRUE(wait_for({DirEvent::Kind::kRemoved, "new"}));
  ASSERT_TRUE(sys.Rmdir(this->At("w")).ok());
  EXPECT_TRUE(wait_for({DirEvent::Kind::kDirectoryGone, ""}));
}

// --- The descriptor calls, one by one -----------------------------------------

OpenHow How(OpenAccess access, Resolution resolve, bool directory = false, bool nofollow = false) {
  OpenHow how;
  how.access = access;
  how.resolve = resolve;
  how.directory = directory;
  how.nofollow = nofollow;
  return how;
}

// The mount id of an O_PATH descriptor tells a mount point from a directory
// of its parent's mount (what a look that must not reach the file system
// mounted there uses); the ids are statx's.
TYPED_TEST(SyscallsContractTest, MountIdOfTellsAMountPointFromItsParentsDirectories) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("src");
  this->env_.AddDir("dst");
  this->env_.AddDir("plain");
  ASSERT_TRUE(sys.Mount(this->At("src"), this->At("dst"), "", kMsBind, "").ok());
  const OpenHow path_only = How(OpenAccess::kPath, {}, false, true);
  absl::StatusOr<ScopedFd> dst = Open(sys, kAtCwd, this->At("dst"), path_only);
  absl::StatusOr<ScopedFd> plain = Open(sys, kAtCwd, this->At("plain"), path_only);
  absl::StatusOr<ScopedFd> parent = Open(sys, kAtCwd, this->root(), path_only);
  ASSERT_TRUE(dst.ok() && plain.ok() && parent.ok());
  absl::StatusOr<uint64_t> dst_id = sys.MountIdOf(dst->get());
  absl::StatusOr<uint64_t> plain_id = sys.MountIdOf(plain->get());
  absl::StatusOr<uint64_t> parent_id = sys.MountIdOf(parent->get());
  ASSERT_TRUE(dst_id.ok()) << dst_id.status();
  ASSERT_TRUE(plain_id.ok() && parent_id.ok());
  EXPECT_NE(*dst_id, *parent_id) << "a mount point";
  EXPECT_EQ(*plain_id, *parent_id) << "a directory of the parent's mount";
  absl::StatusOr<FileInfo> info = sys.Stat(this->At("dst"));
  ASSERT_TRUE(info.ok());
  if (info->has_mount_id) EXPECT_EQ(info->mount_id, *dst_id);  // statx before 5.8 has none
  EXPECT_EQ(ErrnoOf(sys.MountIdOf(987654).status()), EBADF);
  // The same ids from the paths' walks alone; a final symlink followed only
  // when asked.
  this->env_.AddSymlink("dst", "link");
  EXPECT_EQ(sys.MountIdAt(this->At("dst"), false).value_or(0), *dst_id);
  EXPECT_EQ(sys.MountIdAt(this->At("plain"), false).value_or(0), *parent_id);
  EXPECT_EQ(sys.MountIdAt(this->root(), true).value_or(0), *parent_id);
  EXPECT_EQ(sys.MountIdAt(this->At("link"), false).value_or(0), *parent_id) << "not followed";
  EXPECT_EQ(sys.MountIdAt(this->At("link"), true).value_or(0), *dst_id);
  EXPECT_EQ(sys.MountIdAt(this->At("missing"), false).status().code(), absl::StatusCode::kNotFound);
  dst->Reset();
  ASSERT_TRUE(sys.Unmount(this->At("dst"), 0).ok());
}

TYPED_TEST(SyscallsContractTest, OpenResolvesAsOpenat2) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("a/b");
  this->env_.AddFile("a/f", "x");
  this->env_.AddSymlink("b", "a/inside");
  this->env_.AddSymlink("../..", "a/up");
  this->env_.AddSymlink("/etc", "a/absolute");
  this->env_.AddDir("a/m");
  ASSERT_TRUE(sys.Mount("other", this->At("a/m"), "tmpfs", 0, "").ok());
  absl::StatusOr<ScopedFd> a = Open(sys, kAtCwd, this->At("a"), How(OpenAccess::kPath, {}, true));
  ASSERT_TRUE(a.ok()) << a.status();
  const int dir = a->get();
  const Resolution kBeneath = Resolution::kBeneath;
  const Resolution kStrict = Resolution::kStrictlyBeneath;
  const OpenAccess kPath = OpenAccess::kPath;
  EXPECT_EQ(this->OpenErrno(dir, "inside", How(kPath, kBeneath)), 0) << "a link that stays";
  EXPECT_EQ(this->OpenErrno(dir, "..", How(kPath, kBeneath)), EXDEV);
  EXPECT_EQ(this->OpenErrno(dir, "up", How(kPath, kBeneath)), EXDEV);
  EXPECT_EQ(this->OpenErrno(dir, "absolute", How(kPath, kBeneath)), EXDEV);
  EXPECT_EQ(this->OpenErrno(dir, "/etc", How(kPath, kBeneath)), EXDEV);
  EXPECT_EQ(this->OpenErrno(dir, "..", How(kPath, Resolution::kAnywhere)), 0);
  EXPECT_EQ(this->OpenErrno(dir, "m", How(kPath, kBeneath)), 0) << "a mount, not strictly";
  EXPECT_EQ(this->OpenErrno(dir, "inside", How(kPath, kStrict)), ELOOP);
  EXPECT_EQ(this->OpenErrno(dir, "inside/.", How(kPath, kStrict)), ELOOP);
  EXPECT_EQ(this->OpenErrno(dir, "m", How(kPath, kStrict)), EXDEV);
  EXPECT_EQ(this->OpenErrno(dir, "b", How(kPath, kStrict, true)), 0);
  EXPECT_EQ(this->OpenErrno(dir, "missing", How(kPath, kStrict)), ENOENT);
  // O_NOFOLLOW: only O_PATH opens the link itself.
  EXPECT_EQ(this->OpenErrno(dir, "inside", How(kPath, Resolution::kAnywhere, false, true)), 0);
  EXPECT_EQ(this->OpenErrno(dir, "inside", How(OpenAccess::kRead, {}, false, true)), ELOOP);
  EXPECT_EQ(this->OpenErrno(dir, "inside", How(OpenAccess::kRead, {}, true, true)), ENOTDIR);
  EXPECT_EQ(this->OpenErrno(dir, "f", How(OpenAccess::kRead, {}, true)), ENOTDIR);
  OpenHow create = How(OpenAccess::kCreate, {}, false, true);
  create.mode = 0600;
  EXPECT_EQ(this->OpenErrno(dir, "f", create), EEXIST);
  a->Reset();
  ASSERT_TRUE(sys.Unmount(this->At("a/m"), 0).ok());
}

TYPED_TEST(SyscallsContractTest, DescriptorsListChangeReadAndWrite) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("d/sub");
  this->env_.AddFile("d/sub/f", "x");
  this->env_.AddSymlink("sub", "d/link");
  absl::StatusOr<ScopedFd> d =
      Open(sys, kAtCwd, this->At("d"), How(OpenAccess::kRead, {}, true, true));
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::vector<std::string>> names = sys.ReadDir(d->get(), 1);
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_EQ(names->size(), 1u);
  absl::StatusOr<std::vector<std::string>> rest = sys.ReadDir(d->get(), 0);
  ASSERT_TRUE(rest.ok()) << rest.status();
  names->insert(names->end(), rest->begin(), rest->end());
  std::sort(names->begin(), names->end());
  EXPECT_THAT(*names, ElementsAre("link", "sub")) << "the listing goes on where it stopped";
  EXPECT_TRUE(sys.ReadDir(d->get(), 0)->empty()) << "and ends";
  EXPECT_EQ(*sys.PathOf(d->get()), this->At("d"));

  absl::StatusOr<FileInfo> link = sys.StatAt(d->get(), "link");
  ASSERT_TRUE(link.ok());
  EXPECT_TRUE(S_ISLNK(link->mode)) << "a final symlink is not followed";
  absl::StatusOr<FileInfo> self = sys.StatAt(d->get(), "");
  ASSERT_TRUE(self.ok());
  EXPECT_TRUE(S_ISDIR(self->mode));
  EXPECT_GE(self->nlink, 2u);

  ASSERT_TRUE(sys.ChownAt(d->get(), "", 4242, 4343).ok());
  ASSERT_TRUE(sys.ChmodAt(d->get(), "", 02750).ok());
  absl::StatusOr<FileInfo> changed = sys.Stat(this->At("d"));
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->uid, 4242u);
  EXPECT_EQ(changed->gid, 4343u);
  EXPECT_EQ(changed->mode & 07777, 02750u);
  ASSERT_TRUE(sys.ChownAt(d->get(), "link", std::nullopt, 4444).ok());
  EXPECT_EQ(sys.Stat(this->At("d/link"))->gid, 4444u) << "the link's own group";
  EXPECT_EQ(sys.Stat(this->At("d/sub"))->gid, 0u) << "not its target's";
  EXPECT_EQ(ErrnoOf(sys.ChmodAt(d->get(), "link", 0700)), EOPNOTSUPP);
  absl::StatusOr<ScopedFd> path_only = Open(sys, d->get(), "sub", How(OpenAccess::kPath, {}));
  ASSERT_TRUE(path_only.ok());
  EXPECT_EQ(ErrnoOf(sys.ChmodAt(path_only->get(), "", 0700)), EBADF);
  EXPECT_EQ(ErrnoOf(sys.ReadDir(path_only->get(), 0).status()), EBADF);

  EXPECT_EQ(ErrnoOf(sys.UnlinkAt(d->get(), "sub", true)), ENOTEMPTY);
  EXPECT_EQ(ErrnoOf(sys.UnlinkAt(d->get(), "sub", false)), EISDIR);
  EXPECT_EQ(ErrnoOf(sys.UnlinkAt(path_only->get(), "f", true)), ENOTDIR);
  ASSERT_TRUE(sys.UnlinkAt(path_only->get(), "f", false).ok());
  EXPECT_EQ(ErrnoOf(sys.UnlinkAt(path_only->get(), "f", false)), ENOENT);
  ASSERT_TRUE(sys.MkdirAt(path_only->get(), "new", 0755).ok());
  EXPECT_EQ(sys.MkdirAt(path_only->get(), "new", 0755).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(sys.UnlinkAt(path_only->get(), "new", true).ok());

  OpenHow create = How(OpenAccess::kCreate, {}, false, true);
  create.mode = 0600;
  absl::StatusOr<ScopedFd> file = Open(sys, d->get(), "written", create);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(sys.Write(file->get(), "hello ").ok());
  ASSERT_TRUE(sys.Write(file->get(), "world").ok());
  ASSERT_TRUE(sys.Fsync(file->get()).ok());
  EXPECT_EQ(ErrnoOf(sys.Read(file->get(), 5).status()), EBADF) << "opened for writing only";
  absl::StatusOr<ScopedFd> reader =
      Open(sys, d->get(), "written", How(OpenAccess::kRead, {}, false, true));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*sys.Read(reader->get(), 5), "hello");
  EXPECT_EQ(*sys.Read(reader->get(), 100), " world") << "reading goes on where it stopped";
  EXPECT_EQ(*sys.Read(reader->get(), 100), "");
  EXPECT_EQ(ErrnoOf(sys.Write(reader->get(), "x")), EBADF);
}

// More names than one read of the kernel's returns, taken a few at a time:
// every name once.
TYPED_TEST(SyscallsContractTest, ReadDirInBatchesSeesEveryNameOnce) {
  Syscalls& sys = this->sys();
  this->env_.AddDir("big");
  constexpr int kNames = 3000;
  for (int i = 0; i < kNames; ++i) this->env_.AddFile("big/entry-" + std::to_string(i), "");
  absl::StatusOr<ScopedFd> big =
      Open(sys, kAtCwd, this->At("big"), How(OpenAccess::kRead, {}, true, true));
  ASSERT_TRUE(big.ok()) << big.status();
  std::vector<std::string> seen;
  while (true) {
    absl::StatusOr<std::vector<std::string>> batch = sys.ReadDir(big->get(), 7);
    ASSERT_TRUE(batch.ok()) << batch.status();
    if (batch->empty()) break;
    ASSERT_LE(batch->size(), 7u);
    seen.insert(seen.end(), batch->begin(), batch->end());
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kNames));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end()) << "a name came twice";
}

}  // namespace
}  // namespace lustre_csi::volume
