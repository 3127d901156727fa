#include "pkg/server/endpoint.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace lustre_csi::server {
namespace {

struct ParseCase {
  std::string endpoint;
  std::string path;  // empty: INVALID_ARGUMENT expected
};

class ParseUnixEndpointTest : public testing::TestWithParam<ParseCase> {};

TEST_P(ParseUnixEndpointTest, Table) {
  absl::StatusOr<std::string> got = ParseUnixEndpoint(GetParam().endpoint);
  if (GetParam().path.empty()) {
    ASSERT_FALSE(got.ok()) << *got;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  } else {
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, GetParam().path);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ParseUnixEndpointTest,
                         testing::Values(ParseCase{"unix:///csi/csi.sock", "/csi/csi.sock"},
                                         ParseCase{"unix://csi.sock", "csi.sock"},
                                         ParseCase{"unix://run/csi.sock", "run/csi.sock"},
                                         ParseCase{"unix:/csi/csi.sock", "/csi/csi.sock"},
                                         ParseCase{"/var/lib/csi.sock", "/var/lib/csi.sock"},
                                         ParseCase{"tcp://127.0.0.1:10000", ""},
                                         ParseCase{"unix://", ""}, ParseCase{"unix:relative", ""},
                                         ParseCase{"", ""}, ParseCase{"csi.sock", ""},
                                         ParseCase{std::string("unix:///a\0b", 11), ""},
                                         ParseCase{"unix:///" + std::string(200, 'x'), ""}));

class PrepareSocketPathTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/endpoint_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/csi.sock";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

  // A socket bound at path_; listening or not, the file stays after close().
  int Bind(bool listening) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    if (listening) EXPECT_EQ(listen(fd, 1), 0);
    return fd;
  }

  bool Exists() {
    struct stat st;
    return lstat(path_.c_str(), &st) == 0;
  }

  std::string dir_, path_;
};

TEST_F(PrepareSocketPathTest, MissingPathIsFine) { EXPECT_TRUE(PrepareSocketPath(path_).ok()); }

TEST_F(PrepareSocketPathTest, StaleSocketIsRemoved) {
  close(Bind(/*listening=*/true));
  ASSERT_TRUE(Exists());
  EXPECT_TRUE(PrepareSocketPath(path_).ok());
  EXPECT_FALSE(Exists());
}

TEST_F(PrepareSocketPathTest, LiveSocketIsRefusedAndKept) {
  int fd = Bind(/*listening=*/true);
  absl::Status status = PrepareSocketPath(path_);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(Exists());
  close(fd);
}

TEST_F(PrepareSocketPathTest, RegularFileIsNeverRemoved) {
  std::ofstream(path_) << "data";
  absl::Status status = PrepareSocketPath(path_);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(Exists());
}

TEST(ParseAbsoluteUnixEndpointTest, Forms) {
  EXPECT_EQ(*ParseAbsoluteUnixEndpoint("/run/csi.sock"), "/run/csi.sock");
  EXPECT_EQ(*ParseAbsoluteUnixEndpoint("unix:/run/csi.sock"), "/run/csi.sock");
  EXPECT_EQ(*ParseAbsoluteUnixEndpoint("unix:///run/csi.sock"), "/run/csi.sock");
  for (const char* bad : {"", "relative.sock", "unix://relative", "tcp://1.2.3.4:5", "unix:"}) {
    EXPECT_EQ(ParseAbsoluteUnixEndpoint(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_FALSE(ParseAbsoluteUnixEndpoint("/" + std::string(107, 'a')).ok());
  EXPECT_FALSE(ParseAbsoluteUnixEndpoint(std::string("/a\0b", 4)).ok());
}

}  // namespace
}  // namespace lustre_csi::server
