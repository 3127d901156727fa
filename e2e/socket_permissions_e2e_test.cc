// The unix sockets of every role are owner-only: another user on the node
// cannot connect to the node plugin, its kubelet registration socket, the
// controller or the plugin manager. Needs real user ids, so this test runs
// outside Bazel's sandbox (whose user namespace maps root only).
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lustre_csi::e2e {
namespace {

using ::testing::IsEmpty;

constexpr uid_t kNobody = 65534;

// connect(2) to the unix socket `path`; 0 or the errno.
int ConnectErrno(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = rc == 0 ? 0 : errno;
  close(fd);
  return err;
}

// connect(2) to each of `paths` as user `uid` and group `gid` with no
// supplementary groups, from a child process; the errno of each (0:
// connected), or an error when the child could not become that user.
absl::StatusOr<std::vector<int>> ConnectAs(uid_t uid, gid_t gid,
                                           const std::vector<std::string>& paths) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
      out = absl::StrCat("setuid: ", strerror(errno));
    } else if (getuid() != uid || geteuid() != uid) {
      out = "still root";
    } else {
      for (const std::string& p : paths) absl::StrAppend(&out, ConnectErrno(p), " ");
    }
    ssize_t unused = write(fds[1], out.data(), out.size());
    (void)unused;
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  std::vector<std::string> fields = absl::StrSplit(out, ' ', absl::SkipEmpty());
  std::vector<int> errnos;
  for (const std::string& f : fields) {
    int e = 0;
    if (!absl::SimpleAtoi(f, &e)) return absl::FailedPreconditionError(out);
    errnos.push_back(e);
  }
  if (errnos.size() != paths.size()) return absl::FailedPreconditionError(out);
  return errnos;
}

TEST(SocketPermissionsE2eTest, OtherUsersCannotConnectToAnySocket) {
  TempDir tmp;
  // Directories others may enter, so that only the sockets' own modes decide.
  ASSERT_EQ(chmod(tmp.path().c_str(), 0755), 0);
  for (const char* d : {"lustre", "lustre/lustrefs", "registry", "mounts", "state"}) {
    ASSERT_EQ(mkdir(tmp.Join(d).c_str(), 0755), 0) << d;
  }
  const std::string reg = tmp.Join("registry/azurelustre.csi.azure.com-reg.sock");
  {
    Subprocess node(
        {BinaryPath(), "node", "--nodeid=node-1", "--mount-mode=local",
         "--local-root=" + tmp.Join("lustre"), "--endpoint=unix://" + tmp.Join("node.sock"),
         "--plugin-registration-dir=" + tmp.Join("registry")},
        tmp.Join("node.log"));
    Subprocess controller(
        {BinaryPath(), "controller", "--endpoint=unix://" + tmp.Join("controller.sock")},
        tmp.Join("controller.log"));
    Subprocess manager(
        {BinaryPath(), "plugin-manager", "--endpoint=unix://" + tmp.Join("pm.sock"),
         "--state-file=" + tmp.Join("state/pm.db"), "--mount-root=" + tmp.Join("mounts"),
         "--registration-dir=" + tmp.Join("registry")},
        tmp.Join("manager.log"));
    const std::vector<std::string> sockets = {tmp.Join("node.sock"), reg,
                                              tmp.Join("controller.sock"), tmp.Join("pm.sock")};
    for (const std::string& s : sockets) {
      ASSERT_TRUE(WaitForSocket(s, absl::Seconds(20)).ok()) << s;
      struct stat st;
      ASSERT_EQ(stat(s.c_str(), &st), 0) << s;
      EXPECT_TRUE(S_ISSOCK(st.st_mode)) << s;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << s;
      EXPECT_EQ(st.st_uid, 0u) << s;
      EXPECT_EQ(ConnectErrno(s), 0) << "root cannot connect to " << s;
    }

    // A control: a socket anyone may use, in the same directories, accepts
    // the other user - the refusals below come from the sockets' modes.
    std::vector<std::string> open_sockets = {tmp.Join("open.sock"), tmp.Join("registry/open.sock")};
    std::vector<int> listeners;
    for (const std::string& path : open_sockets) {
      int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr = {};
      addr.sun_family = AF_UNIX;
      strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
      ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
      ASSERT_EQ(listen(fd, 8), 0);
      ASSERT_EQ(chmod(path.c_str(), 0666), 0);
      listeners.push_back(fd);
    }
    absl::StatusOr<std::vector<int>> control = ConnectAs(kNobody, kNobody, open_sockets);
    if (!control.ok()) GTEST_SKIP() << "cannot act as another user here: " << control.status();
    EXPECT_THAT(*control, testing::Each(0)) << "the other user cannot reach the directories";

    // Refused to another user, even one in the owner's group.
    for (gid_t gid : {kNobody, gid_t{0}}) {
      absl::StatusOr<std::vector<int>> refused = ConnectAs(kNobody, gid, sockets);
      ASSERT_TRUE(refused.ok()) << refused.status();
      for (size_t i = 0; i < sockets.size(); ++i) {
        EXPECT_EQ((*refused)[i], EACCES)
            << sockets[i] << " (group " << gid << "): " << strerror((*refused)[i]);
      }
    }
    for (int fd : listeners) close(fd);

    // Every process still serves root.
    for (const std::string& s : sockets) EXPECT_EQ(ConnectErrno(s), 0) << s;
    EXPECT_TRUE(node.running() && controller.running() && manager.running());
  }
  EXPECT_THAT(ChildProcesses(), IsEmpty());
  EXPECT_THAT(ProcessesMentioning(tmp.path()), IsEmpty());
  EXPECT_THAT(MountsUnder(tmp.path()), IsEmpty());
}

}  // namespace
}  // namespace lustre_csi::e2e
