#include "pkg/volume/testing/fake_syscalls.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/volume/beneath.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/mount_table.h"
#include "pkg/volume/tree.h"

namespace lustre_csi::volume {
namespace {

using Op = FakeSyscalls::Op;

int ErrnoFrom(const absl::Status& s) { return ErrnoOf(s).value_or(0); }

TEST(FakeSyscallsTest, DirectoriesAndFiles) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.Mkdir("/a", 0750).ok());
  EXPECT_EQ(ErrnoFrom(sys.Mkdir("/a", 0755)), EEXIST);
  EXPECT_EQ(ErrnoFrom(sys.Mkdir("/x/y", 0755)), ENOENT);
  ASSERT_TRUE(sys.AddFile("/a/f").ok());
  EXPECT_EQ(ErrnoFrom(sys.Mkdir("/a/f/g", 0755)), ENOTDIR);
  absl::StatusOr<FileInfo> info = sys.Stat("/a");
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(S_ISDIR(info->mode));
  EXPECT_EQ(info->mode & 07777, 0750u);
  EXPECT_EQ(ErrnoFrom(sys.Rmdir("/a")), ENOTEMPTY);
  EXPECT_EQ(ErrnoFrom(sys.Rmdir("/a/f")), ENOTDIR);
  EXPECT_EQ(ErrnoFrom(sys.Rmdir("/nope")), ENOENT);
  EXPECT_EQ(ErrnoFrom(sys.Stat("/nope").status()), ENOENT);
  ASSERT_TRUE(sys.AddDir("/b/c").ok());
  ASSERT_TRUE(sys.Rmdir("/b/c").ok());
  EXPECT_FALSE(sys.Exists("/b/c"));
  EXPECT_TRUE(sys.Exists("/b"));
}

TEST(FakeSyscallsTest, SymlinksAreNotFollowedByStatButByOthers) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/real/d").ok());
  ASSERT_TRUE(sys.AddSymlink("/link", "/real").ok());
  ASSERT_TRUE(sys.AddSymlink("/rel", "real/d").ok());
  absl::StatusOr<FileInfo> info = sys.Stat("/link");
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(S_ISLNK(info->mode));
  EXPECT_TRUE(S_ISDIR(sys.Stat("/link/d")->mode));
  EXPECT_TRUE(S_ISDIR(sys.Stat("/rel/.")->mode));
  ASSERT_TRUE(sys.Mkdir("/link/e", 0755).ok());
  EXPECT_TRUE(sys.Exists("/real/e"));
  ASSERT_TRUE(sys.AddSymlink("/l1", "/l2").ok());
  ASSERT_TRUE(sys.AddSymlink("/l2", "/l1").ok());
  EXPECT_EQ(ErrnoFrom(sys.Stat("/l1/x").status()), ELOOP);
}

TEST(FakeSyscallsTest, MountsStackAndHide) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddFile("/mnt/under").ok());
  absl::StatusOr<FileInfo> dir = sys.Stat("/mnt");
  ASSERT_TRUE(dir.ok());
  EXPECT_FALSE(dir->mount_root);

  ASSERT_TRUE(sys.Mount("tmpfs", "/mnt", "tmpfs", 0, "size=1m").ok());
  EXPECT_FALSE(sys.Exists("/mnt/under"));  // hidden
  absl::StatusOr<FileInfo> first = sys.Stat("/mnt");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->mount_root);
  EXPECT_NE(first->mount_id, dir->mount_id);
  EXPECT_NE(first->dev, dir->dev);
  ASSERT_TRUE(sys.AddFile("/mnt/on-first").ok());

  ASSERT_TRUE(sys.Mount("other", "/mnt", "tmpfs", 0, "").ok());
  absl::StatusOr<FileInfo> second = sys.Stat("/mnt");
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->mount_id, first->mount_id);
  EXPECT_FALSE(sys.Exists("/mnt/on-first"));
  EXPECT_EQ(sys.MountCount(), 2);
  EXPECT_EQ(ErrnoFrom(sys.Rmdir("/mnt")), EBUSY);

  ASSERT_TRUE(sys.Unmount("/mnt", 0).ok());
  EXPECT_TRUE(sys.Exists("/mnt/on-first"));
  ASSERT_TRUE(sys.Unmount("/mnt", 0).ok());
  EXPECT_TRUE(sys.Exists("/mnt/under"));
  EXPECT_EQ(ErrnoFrom(sys.Unmount("/mnt", 0)), EINVAL);
  EXPECT_EQ(ErrnoFrom(sys.Unmount("/nope", 0)), ENOENT);
  EXPECT_EQ(sys.MountCount(), 0);
}

TEST(FakeSyscallsTest, BindMountShowsSourceAndSharesDevice) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddFile("/src/sub/file").ok());
  ASSERT_TRUE(sys.AddDir("/dst").ok());
  ASSERT_TRUE(sys.Mount("/src/sub", "/dst", "", MS_BIND, "").ok());
  EXPECT_TRUE(sys.Exists("/dst/file"));
  absl::StatusOr<FileInfo> dst = sys.Stat("/dst");
  absl::StatusOr<FileInfo> src = sys.Stat("/src");
  ASSERT_TRUE(dst.ok() && src.ok());
  EXPECT_EQ(dst->dev, src->dev);
  EXPECT_TRUE(dst->mount_root);
  // Writes through the bind land in the source.
  ASSERT_TRUE(sys.Mkdir("/dst/new", 0755).ok());
  EXPECT_TRUE(sys.Exists("/src/sub/new"));
  EXPECT_EQ(ErrnoFrom(sys.Mount("/nope", "/dst", "", MS_BIND, "")), ENOENT);
  EXPECT_EQ(ErrnoFrom(sys.Mount("/src/sub/file", "/dst", "", MS_BIND, "")), ENOTDIR);
}

TEST(FakeSyscallsTest, ReadOnlyRemount) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/src").ok());
  ASSERT_TRUE(sys.AddDir("/dst").ok());
  ASSERT_TRUE(sys.Mount("/src", "/dst", "", MS_BIND | MS_RDONLY, "").ok());
  ASSERT_TRUE(sys.Mkdir("/dst/ok", 0755).ok());  // MS_RDONLY is ignored on the first bind
  ASSERT_TRUE(sys.Mount("/src", "/dst", "", MS_REMOUNT | MS_BIND | MS_RDONLY, "").ok());
  EXPECT_EQ(ErrnoFrom(sys.Mkdir("/dst/no", 0755)), EROFS);
  EXPECT_TRUE(sys.Mkdir("/src/yes", 0755).ok());
  EXPECT_EQ(ErrnoFrom(sys.Mount("", "/src", "", MS_REMOUNT, "")), EINVAL);  // not a mount
}

TEST(FakeSyscallsTest, SubmountsMakeUnmountBusyUnlessDetached) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys.Mkdir("/m/sub", 0755).ok());
  ASSERT_TRUE(sys.Mount("t2", "/m/sub", "tmpfs", 0, "").ok());
  EXPECT_EQ(ErrnoFrom(sys.Unmount("/m", 0)), EBUSY);
  ASSERT_TRUE(sys.Unmount("/m", MNT_DETACH).ok());
  EXPECT_EQ(sys.MountCount(), 0);
}

TEST(FakeSyscallsTest, BusyMountNeedsDetach) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys.SetBusy("/m", true).ok());
  EXPECT_EQ(ErrnoFrom(sys.Unmount("/m", 0)), EBUSY);
  EXPECT_EQ(ErrnoFrom(sys.Unmount("/m", MNT_FORCE)), EBUSY);
  EXPECT_TRUE(sys.Unmount("/m", MNT_DETACH).ok());
}

TEST(FakeSyscallsTest, BrokenMountFailsLookupsButUnmounts) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("fuse", "/m", "fuse", 0, "").ok());
  ASSERT_TRUE(sys.Mkdir("/m/d", 0755).ok());
  ASSERT_TRUE(sys.BreakMount("/m", ENOTCONN).ok());
  EXPECT_EQ(ErrnoFrom(sys.Stat("/m").status()), ENOTCONN);
  EXPECT_EQ(ErrnoFrom(sys.Stat("/m/d").status()), ENOTCONN);
  EXPECT_EQ(ErrnoFrom(sys.Statfs("/m").status()), ENOTCONN);
  EXPECT_EQ(ErrnoFrom(sys.Mkdir("/m/e", 0755)), ENOTCONN);
  EXPECT_TRUE(sys.Stat("/").ok());
  ASSERT_TRUE(sys.Unmount("/m", 0).ok());
  EXPECT_TRUE(sys.Stat("/m").ok());
}

TEST(FakeSyscallsTest, MountInfoRendersAndParses) {
  FakeSyscalls sys;
  const std::string weird = "/mnt/a b\tc\nd\\e";
  ASSERT_TRUE(sys.AddDir(weird).ok());
  ASSERT_TRUE(sys.Mount("src with space", weird, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m").ok());
  absl::StatusOr<std::string> text = sys.ReadMountInfo();
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("/mnt/a\\040b\\011c\\012d\\134e"), std::string::npos) << *text;
  absl::StatusOr<std::vector<MountEntry>> table = ParseMountInfo(*text);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 2u);
  const MountEntry& e = (*table)[1];
  EXPECT_EQ(e.mount_point, weird);
  EXPECT_EQ(e.source, "src with space");
  EXPECT_EQ(e.fs_type, "tmpfs");
  EXPECT_EQ(e.options, "rw,nosuid,nodev,relatime");
  EXPECT_EQ(e.super_options, "rw,size=1m");
  EXPECT_EQ(e.parent_id, (*table)[0].mount_id);
  EXPECT_EQ((*table)[0].optional_fields, std::vector<std::string>{"shared:1"});
}

TEST(FakeSyscallsTest, ResolveBeneath) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/root/a/b").ok());
  ASSERT_TRUE(sys.AddDir("/outside").ok());
  ASSERT_TRUE(sys.AddSymlink("/root/a/in", "b").ok());
  ASSERT_TRUE(sys.AddSymlink("/root/a/out", "../../outside").ok());
  ASSERT_TRUE(sys.AddSymlink("/root/abs", "/outside").ok());
  EXPECT_EQ(*ResolveBeneath(sys, "/root", "a/b"), "/root/a/b");
  EXPECT_EQ(*ResolveBeneath(sys, "/root", ""), "/root");
  for (const char* bad : {"..", "a/in", "a/out", "abs", "/root", "a/b/.."}) {
    EXPECT_EQ(ResolveBeneath(sys, "/root", bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ResolveBeneath(sys, "/root", "nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sys.OpenFileCount(), 0) << "a descriptor was not closed";
}

// A descriptor names what it opened (here the root of a mount): what is made
// through it lands there, O_PATH ones only name, and all go stale with their
// mount (where Linux would keep a detached mount alive).
TEST(FakeSyscallsTest, DescriptorsNameWhatTheyOpened) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m/d").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  ASSERT_TRUE(sys.AddDir("/m/on-top").ok());
  OpenHow read_dir;
  read_dir.access = OpenAccess::kRead;
  read_dir.directory = true;
  absl::StatusOr<int> under = sys.OpenAt(kAtCwd, "/m", read_dir);
  ASSERT_TRUE(under.ok()) << under.status();
  EXPECT_THAT(*sys.ReadDir(*under, 0), ::testing::ElementsAre("on-top"));
  ASSERT_TRUE(sys.MkdirAt(*under, "made", 0700).ok());
  EXPECT_TRUE(sys.Exists("/m/made"));
  OpenHow path_only;
  absl::StatusOr<int> named = sys.OpenAt(*under, "made", path_only);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(ErrnoFrom(sys.ChmodAt(*named, "", 0755)), EBADF) << "as fchmod of an O_PATH file";
  EXPECT_EQ(ErrnoFrom(sys.ReadDir(*named, 0).status()), EBADF);
  EXPECT_EQ(*sys.PathOf(*named), "/m/made");
  ASSERT_TRUE(sys.Unmount("/m", kMntDetach).ok());
  EXPECT_EQ(ErrnoFrom(sys.MkdirAt(*under, "late", 0700)), ESTALE);
  EXPECT_TRUE(sys.Exists("/m/d")) << "the directory under the mount shows again";
  ASSERT_TRUE(sys.Close(*under).ok());
  ASSERT_TRUE(sys.Close(*named).ok());
  EXPECT_EQ(ErrnoFrom(sys.Close(*named)), EBADF);
  EXPECT_EQ(sys.OpenFileCount(), 0);
}

TEST(FakeSyscallsTest, FailNextCountsDown) {
  FakeSyscalls sys;
  sys.FailNext(Op::kStat, EIO, 2);
  EXPECT_EQ(ErrnoFrom(sys.Stat("/").status()), EIO);
  EXPECT_EQ(ErrnoFrom(sys.Stat("/").status()), EIO);
  EXPECT_TRUE(sys.Stat("/").ok());
  EXPECT_EQ(sys.CallCount(Op::kStat), 3);
  EXPECT_EQ(sys.CallCount(Op::kMount), 0);
  sys.ResetCounters();
  EXPECT_EQ(sys.CallCount(Op::kStat), 0);
}

TEST(FakeSyscallsTest, HangBlocksUntilRelease) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  ASSERT_TRUE(sys.Mount("t", "/m", "tmpfs", 0, "").ok());
  sys.Hang(Op::kUnmount);
  absl::Status result = absl::UnknownError("not run");
  std::thread t([&] { result = sys.Unmount("/m", 0); });
  ASSERT_TRUE(sys.AwaitHung(Op::kUnmount, 1, absl::Seconds(30)));
  EXPECT_EQ(sys.HungCount(Op::kUnmount), 1);
  EXPECT_EQ(sys.MountCount(), 1);    // still mounted while the call hangs
  EXPECT_TRUE(sys.Stat("/m").ok());  // other ops go on
  sys.Release(Op::kUnmount);
  t.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(sys.MountCount(), 0);
}

TEST(FakeSyscallsTest, DestructorReleasesHungCalls) {
  auto sys = std::make_unique<FakeSyscalls>();
  sys->Hang(Op::kStat);
  std::thread t([s = sys.get()] { (void)s->Stat("/"); });
  ASSERT_TRUE(sys->AwaitHung(Op::kStat, 1, absl::Seconds(30)));
  sys.reset();
  t.join();
}

TEST(FakeSyscallsTest, RecordsMountAndUnmountCalls) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/m").ok());
  (void)sys.Mount("src", "/m", "tmpfs", MS_NOSUID, "size=1m");
  (void)sys.Unmount("/m", MNT_DETACH);
  ASSERT_EQ(sys.MountCalls().size(), 1u);
  EXPECT_EQ(sys.MountCalls()[0].source, "src");
  EXPECT_EQ(sys.MountCalls()[0].flags, static_cast<unsigned long>(MS_NOSUID));
  EXPECT_EQ(sys.MountCalls()[0].data, "size=1m");
  ASSERT_EQ(sys.UnmountCalls().size(), 1u);
  EXPECT_EQ(sys.UnmountCalls()[0].flags, MNT_DETACH);
}

TEST(FakeSyscallsTest, StatxSupportSwitches) {
  FakeSyscalls sys;
  sys.SetStatxSupport(false, false);
  absl::StatusOr<FileInfo> info = sys.Stat("/");
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->has_mount_id);
  EXPECT_FALSE(info->has_mount_root);
}

TEST(FakeSyscallsTest, ListAndWatchADirectory) {
  FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/reg/sub").ok());
  ASSERT_TRUE(sys.AddFile("/reg/b.sock").ok());
  EXPECT_THAT(*ListDir(sys, "/reg"), ::testing::ElementsAre("b.sock", "sub"));
  EXPECT_EQ(ListDir(sys, "/reg/b.sock").status().code(), absl::StatusCode::kInternal);  // ENOTDIR
  EXPECT_EQ(ListDir(sys, "/nope").status().code(), absl::StatusCode::kNotFound);

  absl::StatusOr<std::unique_ptr<DirWatch>> watch = sys.WatchDir("/reg");
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(sys.AddFile("/reg/a.sock").ok());
  ASSERT_TRUE(sys.AddFile("/reg/sub/deeper").ok());  // not in the watched directory
  EXPECT_FALSE(sys.Rmdir("/reg/sub").ok());          // not empty: nothing happens
  ASSERT_TRUE(MkdirBeneath(sys, "/reg", "new", 0755).ok());
  ASSERT_TRUE(sys.Rmdir("/reg/new").ok());
  absl::StatusOr<std::vector<DirEvent>> events = (*watch)->Wait();
  ASSERT_TRUE(events.ok()) << events.status();
  using Kind = DirEvent::Kind;
  EXPECT_THAT(*events, ::testing::ElementsAre(DirEvent{Kind::kAdded, "a.sock"},
                                              DirEvent{Kind::kAdded, "new"},
                                              DirEvent{Kind::kRemoved, "new"}));
  ASSERT_TRUE(RemoveTreeBeneath(sys, "/", "reg", 8).ok());
  events = (*watch)->Wait();
  ASSERT_TRUE(events.ok()) << events.status();
  // Removed entry by entry, as the kernel reports it, then the directory.
  EXPECT_THAT(*events, ::testing::ElementsAre(
                           DirEvent{Kind::kRemoved, "a.sock"}, DirEvent{Kind::kRemoved, "b.sock"},
                           DirEvent{Kind::kRemoved, "sub"}, DirEvent{Kind::kDirectoryGone, ""}));
  EXPECT_EQ(sys.WatchDir("/reg").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MkdirAllTest, CreatesParentsAndAcceptsExisting) {
  FakeSyscalls sys;
  ASSERT_TRUE(MkdirAll(sys, "/a/b/c/", 0750).ok());
  EXPECT_TRUE(sys.Exists("/a/b/c"));
  ASSERT_TRUE(MkdirAll(sys, "/a/b/c", 0750).ok());
  ASSERT_TRUE(sys.AddFile("/a/file").ok());
  EXPECT_EQ(ErrnoFrom(MkdirAll(sys, "/a/file/x", 0750)), ENOTDIR);
  EXPECT_EQ(MkdirAll(sys, "relative", 0750).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(sys.AddSymlink("/ln", "/a/b").ok());
  ASSERT_TRUE(MkdirAll(sys, "/ln/d", 0755).ok());
  EXPECT_TRUE(sys.Exists("/a/b/d"));
  sys.FailNext(FakeSyscalls::Op::kMkdir, EACCES);
  EXPECT_EQ(ErrnoFrom(MkdirAll(sys, "/q/r", 0755)), EACCES);
}

TEST(PathExistsTest, Table) {
  FakeSyscalls sys;
  EXPECT_TRUE(*PathExists(sys, "/"));
  EXPECT_FALSE(*PathExists(sys, "/nope"));
  sys.FailNext(Op::kStat, EIO);
  EXPECT_EQ(ErrnoFrom(PathExists(sys, "/").status()), EIO);
}

}  // namespace
}  // namespace lustre_csi::volume
