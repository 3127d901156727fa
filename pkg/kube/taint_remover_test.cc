// The taint removal against a fake API server that keeps a Node and applies
// JSON patches as the real one does (test, then replace), on a fake clock.
#include "pkg/kube/taint_remover.h"

#include <deque>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pkg/base/fake_clock.h"

namespace lustre_csi::kube {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kKey[] = "azurelustre.csi.azure.com/agent-not-ready";

Json Taint(const std::string& key, const std::string& effect = "NoSchedule") {
  return {{"key", key}, {"effect", effect}};
}

class FakeApiServer : public HttpClient {
 public:
  explicit FakeApiServer(Json taints) {
    node_ = {{"kind", "Node"}, {"metadata", {{"name", "n1"}}}, {"spec", {{"taints", taints}}}};
  }

  absl::StatusOr<HttpResponse> Do(const HttpRequest& r) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(r);
    if (!down_.empty()) {
      absl::Status s = down_.front();
      down_.pop_front();
      return s;
    }
    if (!statuses_.empty()) {
      int status = statuses_.front();
      statuses_.pop_front();
      return HttpResponse{status, Json({{"kind", "Status"}, {"message", "scripted"}}).dump()};
    }
    if (r.target != "/api/v1/nodes/n1") return HttpResponse{404, "{}"};
    if (r.method == "GET") return HttpResponse{200, node_.dump()};
    if (r.method != "PATCH") return HttpResponse{405, "{}"};
    if (patch_status_ != 0) {
      int status = patch_status_;
      patch_status_ = 0;
      return HttpResponse{status, R"({"kind":"Status","message":"Operation cannot be fulfilled"})"};
    }
    if (before_patch_) {
      before_patch_(node_);
      before_patch_ = nullptr;
    }
    Json patch = Json::parse(r.body);
    for (const Json& op : patch) {
      if (op["path"] != "/spec/taints") return HttpResponse{422, "{}"};
      Json& have = node_["spec"]["taints"];
      if (op["op"] == "test" && have != op["value"]) {
        return HttpResponse{422, R"({"kind":"Status","message":"the test failed"})"};
      }
      if (op["op"] == "replace") have = op["value"];
    }
    return HttpResponse{200, node_.dump()};
  }

  std::vector<HttpRequest> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  Json taints() {
    absl::MutexLock lock(&mu_);
    return node_["spec"]["taints"];
  }
  void FailWith(std::vector<int> statuses) {
    absl::MutexLock lock(&mu_);
    statuses_.assign(statuses.begin(), statuses.end());
  }
  void GoDown(int times) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < times; ++i) down_.push_back(absl::UnavailableError("connection refused"));
  }
  void FailNextPatchWith(int status) {
    absl::MutexLock lock(&mu_);
    patch_status_ = status;
  }
  void BeforeNextPatch(std::function<void(Json&)> fn) {
    absl::MutexLock lock(&mu_);
    before_patch_ = std::move(fn);
  }

 private:
  absl::Mutex mu_;
  Json node_;
  std::vector<HttpRequest> requests_;
  std::deque<int> statuses_;
  std::deque<absl::Status> down_;
  std::function<void(Json&)> before_patch_;
  int patch_status_ = 0;
};

std::string Header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

class TaintRemoverTest : public testing::Test {
 protected:
  TaintRemover Make(
      FakeApiServer* api, std::function<bool()> ready = [] { return true; }) {
    TaintRemoverOptions options;
    options.node_name = "n1";
    options.taint_key = kKey;
    return TaintRemover(
        options, api,
        [this]() -> absl::StatusOr<std::string> { return absl::StrCat("token-", ++tokens_); },
        std::move(ready), &clock_);
  }
  void SetUp() override { clock_.SetAutoAdvance(true); }

  base::FakeClock clock_;
  int tokens_ = 0;
};

TEST_F(TaintRemoverTest, RemovesOnlyItsTaintWithOneTestedPatch) {
  FakeApiServer api(Json::array({Taint("other/x"), Taint(kKey), Taint("more", "NoExecute")}));
  ASSERT_TRUE(Make(&api).Run(nullptr).ok());
  EXPECT_EQ(api.taints(), Json::array({Taint("other/x"), Taint("more", "NoExecute")}));
  std::vector<HttpRequest> reqs = api.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].target, "/api/v1/nodes/n1");
  EXPECT_EQ(Header(reqs[1], "Content-Type"), "application/json-patch+json");
  Json body = Json::parse(reqs[1].body);
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["op"], "test");
  EXPECT_EQ(body[0]["value"],
            Json::array({Taint("other/x"), Taint(kKey), Taint("more", "NoExecute")}));
  EXPECT_EQ(body[1]["op"], "replace");
  EXPECT_EQ(body[1]["value"], Json::array({Taint("other/x"), Taint("more", "NoExecute")}));
}

TEST_F(TaintRemoverTest, ANodeWithoutTheTaintIsOnlyRead) {
  FakeApiServer api(Json::array({Taint("other/x")}));
  ASSERT_TRUE(Make(&api).Run(nullptr).ok());
  ASSERT_EQ(api.requests().size(), 1u);
  EXPECT_EQ(api.requests()[0].method, "GET");
  FakeApiServer bare{Json()};  // no taints at all
  ASSERT_TRUE(Make(&bare).Run(nullptr).ok());
  EXPECT_EQ(bare.requests().size(), 1u);
}

TEST_F(TaintRemoverTest, AConcurrentChangeIsReadAgainNotLost) {
  FakeApiServer api(Json::array({Taint(kKey)}));
  api.BeforeNextPatch(
      [](Json& node) { node["spec"]["taints"].push_back(Taint("added/meanwhile")); });
  ASSERT_TRUE(Make(&api).Run(nullptr).ok());
  EXPECT_EQ(api.taints(), Json::array({Taint("added/meanwhile")}));
  std::vector<std::string> methods;
  for (const HttpRequest& r : api.requests()) methods.push_back(r.method);
  EXPECT_THAT(methods, ElementsAre("GET", "PATCH", "GET", "PATCH"));
}

// 409 Conflict (a resource version race) is a conflict too: read again at
// once, no backoff.
TEST_F(TaintRemoverTest, AConflictIsReadAgainAtOnce) {
  FakeApiServer api(Json::array({Taint(kKey)}));
  api.FailNextPatchWith(409);
  absl::Time start = clock_.Now();
  ASSERT_TRUE(Make(&api).Run(nullptr).ok());
  EXPECT_EQ(api.taints(), Json::array());
  EXPECT_EQ(api.requests().size(), 4u);
  EXPECT_EQ(clock_.Now(), start);
}

TEST_F(TaintRemoverTest, RefusalsAreRetriedWithBackoffAndEachTokenIsFresh) {
  FakeApiServer api(Json::array({Taint(kKey)}));
  api.FailWith({401, 403, 500});
  absl::Time start = clock_.Now();
  ASSERT_TRUE(Make(&api).Run(nullptr).ok());
  EXPECT_EQ(api.taints(), Json::array());
  std::vector<HttpRequest> reqs = api.requests();
  ASSERT_EQ(reqs.size(), 5u);
  // The token is read again for every request: a rotated one is used.
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(Header(reqs[i], "Authorization"), absl::StrCat("Bearer token-", i + 1));
  }
  // 1 s, 2 s, 4 s of backoff.
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(7));
}

TEST_F(TaintRemoverTest, AServerThatIsDownIsWaitedFor) {
  FakeApiServer api(Json::array({Taint(kKey)}));
  api.GoDown(10);
  absl::Time start = clock_.Now();
  ASSERT_TRUE(Make(&api).Run(nullptr).ok());
  EXPECT_EQ(api.taints(), Json::array());
  EXPECT_EQ(api.requests().size(), 12u);
  // 1+2+...+64, then 120 s (the maximum) for the rest.
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(127 + 3 * 120));
}

TEST_F(TaintRemoverTest, NothingIsAskedBeforeTheNodePluginIsReady) {
  FakeApiServer api(Json::array({Taint(kKey)}));
  int asked = 0;
  TaintRemover remover = Make(&api, [&] {
    // Each time it asks, nothing was sent yet.
    EXPECT_TRUE(api.requests().empty());
    return ++asked > 5;
  });
  ASSERT_TRUE(remover.Run(nullptr).ok());
  EXPECT_EQ(asked, 6);
  EXPECT_EQ(api.taints(), Json::array());
}

TEST_F(TaintRemoverTest, CancelledWhileRetrying) {
  FakeApiServer api(Json::array({Taint(kKey)}));
  api.GoDown(1000);
  base::CancelToken cancel;
  TaintRemoverOptions options;
  options.node_name = "n1";
  options.taint_key = kKey;
  int tokens = 0;
  TaintRemover remover(
      options, &api,
      [&]() -> absl::StatusOr<std::string> {
        if (++tokens == 3) cancel.Cancel();
        return std::string("t");
      },
      [] { return true; }, &clock_);
  std::string why;
  EXPECT_EQ(remover.Attempt(&why), TaintRemover::Outcome::kFailed);
  EXPECT_THAT(why, HasSubstr("reading node n1: connection refused"));
  EXPECT_EQ(remover.Run(&cancel).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(api.requests().size(), 3u);
}

TEST(NotReadyTaintKeyTest, IsTheDriversName) {
  EXPECT_EQ(NotReadyTaintKey("azurelustre.csi.azure.com"), kKey);
}

}  // namespace
}  // namespace lustre_csi::kube
