// --remove-not-ready-taint through the real binary against a stand-in
// Kubernetes API server (e2e/standin_apiserver.cc) over real TLS, with a CA,
// a server certificate and a service-account directory this test makes, as
// Kubernetes mounts them into a pod.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace lustre_csi::e2e {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kKey[] = "azurelustre.csi.azure.com/agent-not-ready";

// Runs a shell command; true when it exits 0.
bool Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

class TaintE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    // A CA, and a certificate for 127.0.0.1 signed by it; another CA the
    // driver must not trust.
    const std::string d = tmp_.path();
    for (const char* ca : {"ca", "other-ca"}) {
      ASSERT_TRUE(Sh(absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=",
                                  ca, " -keyout ", d, "/", ca, ".key -out ", d, "/", ca, ".crt")));
    }
    ASSERT_TRUE(Sh(absl::StrCat("openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver ",
                                "-keyout ", d, "/server.key -out ", d, "/server.csr")));
    ASSERT_TRUE(WriteFile(d + "/san.ext", "subjectAltName=IP:127.0.0.1,DNS:kubernetes\n").ok());
    ASSERT_TRUE(Sh(absl::StrCat("openssl x509 -req -in ", d, "/server.csr -CA ", d,
                                "/ca.crt -CAkey ", d, "/ca.key -CAcreateserial -days 2 -out ", d,
                                "/server.crt -extfile ", d, "/san.ext")));
    // The service account's directory, as a pod has it.
    ASSERT_EQ(mkdir(tmp_.Join("sa").c_str(), 0755), 0);
    ASSERT_TRUE(Sh(absl::StrCat("cp ", d, "/ca.crt ", d, "/sa/ca.crt")));
    ASSERT_TRUE(WriteFile(tmp_.Join("sa/token"), "token-1\n").ok());
    port_ = FreePort();
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", std::to_string(port_).c_str(), 1);
    SetTaints(Json::array({{{"key", "other/keep"}, {"effect", "NoSchedule"}},
                           {{"key", kKey}, {"effect", "NoSchedule"}}}));
  }
  void TearDown() override {
    node_.reset();
    api_.reset();
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
  }

  void SetTaints(const Json& taints) {
    Json node = {
        {"kind", "Node"}, {"metadata", {{"name", "node-1"}}}, {"spec", {{"taints", taints}}}};
    ASSERT_TRUE(WriteFile(tmp_.Join("node.json"), node.dump()).ok());
  }
  Json Taints() { return Json::parse(ReadFile(tmp_.Join("node.json")))["spec"]["taints"]; }

  void StartApi(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        Runfile("e2e/standin-apiserver"),    absl::StrCat("--port=", port_),
        "--cert=" + tmp_.Join("server.crt"), "--key=" + tmp_.Join("server.key"),
        "--node=" + tmp_.Join("node.json"),  "--log=" + tmp_.Join("requests.log")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    api_ = std::make_unique<Subprocess>(argv, tmp_.Join("api.log"));
    ASSERT_TRUE(WaitUntil([&] {
      return absl::StrContains(ReadFile(tmp_.Join("api.log")), "listening");
    })) << ReadFile(tmp_.Join("api.log"));
  }

  void StartNode(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {BinaryPath(),
                                     "node",
                                     "--nodeid=node-1",
                                     "--mount-mode=mock",
                                     "--endpoint=unix://" + tmp_.Join("csi.sock"),
                                     "--kube-service-account-dir=" + tmp_.Join("sa")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    node_ = std::make_unique<Subprocess>(argv, tmp_.Join("node.log"));
    ASSERT_TRUE(WaitForSocket(tmp_.Join("csi.sock"), absl::Seconds(10)).ok()) << NodeLog();
  }
  std::string NodeLog() { return ReadFile(tmp_.Join("node.log")); }

  std::vector<Json> Requests() {
    std::vector<Json> out;
    for (absl::string_view line : absl::StrSplit(ReadFile(tmp_.Join("requests.log")), '\n')) {
      if (!line.empty()) out.push_back(Json::parse(line));
    }
    return out;
  }
  bool Removed() {
    for (const Json& t : Taints()) {
      if (t["key"] == kKey) return false;
    }
    return true;
  }

  TempDir tmp_;
  int port_ = 0;
  std::unique_ptr<Subprocess> api_;
  std::unique_ptr<Subprocess> node_;
};

TEST_F(TaintE2eTest, TheTaintGoesTheOthersStayWithOnePatch) {
  ASSERT_NO_FATAL_FAILURE(StartApi());
  ASSERT_NO_FATAL_FAILURE(StartNode());
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(NodeLog(), "removed taint"); }))
      << NodeLog();
  EXPECT_EQ(Taints(), Json::array({{{"key", "other/keep"}, {"effect", "NoSchedule"}}}));
  std::vector<Json> reqs = Requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0]["method"], "GET");
  EXPECT_EQ(reqs[0]["target"], "/api/v1/nodes/node-1");
  EXPECT_EQ(reqs[0]["authorization"], "Bearer token-1");
  EXPECT_EQ(reqs[1]["method"], "PATCH");
  EXPECT_EQ(reqs[1]["content_type"], "application/json-patch+json");
  Json patch = Json::parse(reqs[1]["body"].get<std::string>());
  ASSERT_EQ(patch.size(), 2u);
  EXPECT_EQ(patch[0]["op"], "test");
  EXPECT_EQ(patch[1]["op"], "replace");
  EXPECT_EQ(patch[1]["value"], Json::array({{{"key", "other/keep"}, {"effect", "NoSchedule"}}}));
  EXPECT_TRUE(node_->running());
}

TEST_F(TaintE2eTest, AConcurrentChangeIsReadAgainAndKept) {
  ASSERT_NO_FATAL_FAILURE(StartApi({"--change-before-patch=added/meanwhile"}));
  ASSERT_NO_FATAL_FAILURE(StartNode());
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(NodeLog(), "removed taint"); }))
      << NodeLog();
  EXPECT_EQ(Taints(), Json::array({{{"key", "other/keep"}, {"effect", "NoSchedule"}},
                                   {{"key", "added/meanwhile"}, {"effect", "NoSchedule"}}}));
  std::vector<std::string> methods;
  for (const Json& r : Requests()) methods.push_back(r["method"]);
  EXPECT_THAT(methods, testing::ElementsAre("GET", "PATCH", "GET", "PATCH"));
  EXPECT_THAT(NodeLog(), HasSubstr("HTTP 422"));
}

TEST_F(TaintE2eTest, RefusalsAreRetriedAndARotatedTokenIsSent) {
  ASSERT_NO_FATAL_FAILURE(StartApi({"--fail=401,403"}));
  ASSERT_NO_FATAL_FAILURE(StartNode());
  // The first refusal; the token rotates during the backoff that follows.
  ASSERT_TRUE(WaitUntil([&] { return Requests().size() >= 1; })) << NodeLog();
  ASSERT_TRUE(WriteFile(tmp_.Join("sa/token.new"), "token-2").ok());
  ASSERT_EQ(rename(tmp_.Join("sa/token.new").c_str(), tmp_.Join("sa/token").c_str()), 0);
  ASSERT_TRUE(WaitUntil([&] { return Removed(); })) << NodeLog();
  std::vector<Json> reqs = Requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0]["authorization"], "Bearer token-1");
  EXPECT_EQ(reqs.back()["authorization"], "Bearer token-2");
  EXPECT_THAT(NodeLog(), HasSubstr("HTTP 401"));
  EXPECT_TRUE(node_->running());
}

TEST_F(TaintE2eTest, AServerThatIsDownIsWaitedFor) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(NodeLog(), "not removed yet"); }))
      << NodeLog();
  ASSERT_NO_FATAL_FAILURE(StartApi());
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(NodeLog(), "removed taint"); }))
      << NodeLog();
  EXPECT_TRUE(Removed());
}

// An API server that takes the connection and never answers (TLS never
// starts): SIGTERM ends the node at once; it does not wait out the 10 s
// bound of the call in flight.
TEST_F(TaintE2eTest, AStoppingNodeDoesNotWaitForAServerThatDoesNotAnswer) {
  int silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(silent, 0) << strerror(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  ASSERT_EQ(listen(silent, 8), 0);
  ASSERT_NO_FATAL_FAILURE(StartNode());
  // Its call is in flight once the connection waits to be accepted.
  pollfd pending{silent, POLLIN, 0};
  EXPECT_EQ(poll(&pending, 1, 10000), 1) << NodeLog();
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time start = absl::Now();
  node_->Signal(SIGTERM);
  EXPECT_TRUE(WaitUntil([&] { return !node_->running(); }, absl::Seconds(15))) << NodeLog();
  RecordProperty("sigterm_exit_ms", absl::ToInt64Milliseconds(absl::Now() - start));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "waited for the silent API server";
  close(silent);
}

TEST_F(TaintE2eTest, AServerWithACertificateFromAnotherCaIsNeverTrusted) {
  ASSERT_TRUE(Sh(absl::StrCat("cp ", tmp_.Join("other-ca.crt"), " ", tmp_.Join("sa/ca.crt"))));
  ASSERT_NO_FATAL_FAILURE(StartApi());
  ASSERT_NO_FATAL_FAILURE(StartNode());
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(NodeLog(), "not removed yet"); }))
      << NodeLog();
  EXPECT_THAT(NodeLog(), HasSubstr("certificate verify failed"));
  EXPECT_THAT(Requests(), IsEmpty()) << "no request reaches an untrusted server";
  EXPECT_FALSE(Removed());
}

TEST_F(TaintE2eTest, FlagOffOrOutsideAPodSendsNothing) {
  ASSERT_NO_FATAL_FAILURE(StartApi());
  ASSERT_NO_FATAL_FAILURE(StartNode({"--remove-not-ready-taint=false"}));
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(NodeLog(), "is left alone"); }))
      << NodeLog();
  node_.reset();
  unsetenv("KUBERNETES_SERVICE_HOST");
  ASSERT_NO_FATAL_FAILURE(StartNode());
  ASSERT_TRUE(WaitUntil([&] {
    return absl::StrContains(NodeLog(), "KUBERNETES_SERVICE_HOST is not set");
  })) << NodeLog();
  node_.reset();
  EXPECT_THAT(Requests(), IsEmpty());
  EXPECT_FALSE(Removed());
}

}  // namespace
}  // namespace lustre_csi::e2e
