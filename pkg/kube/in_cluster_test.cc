#include "pkg/kube/in_cluster.h"

#include <cstdio>
#include <fstream>
#include <map>

#include "gtest/gtest.h"

namespace lustre_csi::kube {
namespace {

absl::StatusOr<InClusterConfig> From(std::map<std::string, std::string> env, bool token = true) {
  return InClusterConfigFrom(
      [&env](const char* name) { return env.count(name) ? env[name] : std::string(); },
      [token](const std::string&) { return token; }, "/sa");
}

TEST(InClusterTest, ReadsTheServiceEnvironment) {
  absl::StatusOr<InClusterConfig> c =
      From({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "6443"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->Authority(), "10.96.0.1:6443");
  EXPECT_EQ(c->token_file, "/sa/token");
  EXPECT_EQ(c->ca_file, "/sa/ca.crt");
  c = From({{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->port, 443);
  EXPECT_EQ(c->Authority(), "[fd00:10:96::1]:443");
}

TEST(InClusterTest, OutsideAClusterIsNotFound) {
  EXPECT_EQ(From({}).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<InClusterConfig> no_token = From({{"KUBERNETES_SERVICE_HOST", "h"}}, false);
  EXPECT_EQ(no_token.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(no_token.status().message().find("/sa/token"), std::string::npos);
  for (const char* bad : {"0", "65536", "https", "-1"}) {
    EXPECT_EQ(
        From({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", bad}}).status().code(),
        absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(InClusterTest, TheTokenIsReadFreshAndTrimmed) {
  std::string path = testing::TempDir() + "/token";
  std::ofstream(path) << "  abc\n";
  EXPECT_EQ(*ReadToken(path), "abc");
  std::ofstream(path) << "rotated";
  EXPECT_EQ(*ReadToken(path), "rotated");
  std::ofstream(path) << "\n";
  EXPECT_EQ(ReadToken(path).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadToken(path + ".none").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace lustre_csi::kube
