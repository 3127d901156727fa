#include "pkg/kube/taint_remover.h"

#include <glog/logging.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace lustre_csi::kube {
namespace {

using Json = nlohmann::json;

// The API server's reason from a Status object, or the start of the body.
std::string Reason(const HttpResponse& r) {
  Json status = Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    return status["message"].get<std::string>();
  }
  return r.body.substr(0, 200);
}

}  // namespace

std::string NotReadyTaintKey(const std::string& driver_name) {
  return absl::StrCat(driver_name, "/agent-not-ready");
}

TaintRemover::TaintRemover(TaintRemoverOptions options, HttpClient* http,
                           std::function<absl::StatusOr<std::string>()> token,
                           std::function<bool()> ready, base::Clock* clock)
    : options_(std::move(options)),
      http_(http),
      token_(std::move(token)),
      ready_(std::move(ready)),
      clock_(clock) {}

void TaintRemover::LogOnce(const std::string& message) {
  if (message == last_logged_) {
    VLOG(1) << message;
    return;
  }
  last_logged_ = message;
  LOG(WARNING) << message;
}

absl::StatusOr<HttpResponse> TaintRemover::Call(const std::string& method,
                                                const std::string& content_type,
                                                const std::string& body) {
  absl::StatusOr<std::string> token = token_();
  if (!token.ok()) return token.status();
  HttpRequest req;
  req.method = method;
  req.target = absl::StrCat("/api/v1/nodes/", options_.node_name);
  req.headers = {{"Authorization", absl::StrCat("Bearer ", *token)},
                 {"Accept", "application/json"},
                 {"User-Agent", "lustre-csi"}};
  if (!content_type.empty()) req.headers.push_back({"Content-Type", content_type});
  req.body = body;
  return http_->Do(req);
}

TaintRemover::Outcome TaintRemover::Attempt(std::string* why) {
  const std::string node = absl::StrCat("node ", options_.node_name);
  absl::StatusOr<HttpResponse> got = Call("GET", "", "");
  if (!got.ok()) {
    *why = absl::StrCat("reading ", node, ": ", got.status().message());
    return Outcome::kFailed;
  }
  if (got->status != 200) {
    *why = absl::StrCat("reading ", node, ": HTTP ", got->status, ": ", Reason(*got));
    return Outcome::kFailed;
  }
  Json object = Json::parse(got->body, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) {
    *why = absl::StrCat("reading ", node, ": the answer is not a JSON object");
    return Outcome::kFailed;
  }
  Json taints = Json::array();
  if (object.contains("spec") && object["spec"].is_object() && object["spec"].contains("taints") &&
      object["spec"]["taints"].is_array()) {
    taints = object["spec"]["taints"];
  }
  Json kept = Json::array();
  for (const Json& taint : taints) {
    bool ours = taint.is_object() && taint.contains("key") && taint["key"].is_string() &&
                taint["key"].get<std::string>() == options_.taint_key;
    if (!ours) kept.push_back(taint);
  }
  if (kept.size() == taints.size()) return Outcome::kAbsent;
  Json patch = Json::array({
      {{"op", "test"}, {"path", "/spec/taints"}, {"value", taints}},
      {{"op", "replace"}, {"path", "/spec/taints"}, {"value", kept}},
  });
  absl::StatusOr<HttpResponse> patched = Call("PATCH", "application/json-patch+json", patch.dump());
  if (!patched.ok()) {
    *why = absl::StrCat("patching ", node, ": ", patched.status().message());
    return Outcome::kFailed;
  }
  if (patched->status == 200) return Outcome::kRemoved;
  *why = absl::StrCat("patching ", node, ": HTTP ", patched->status, ": ", Reason(*patched));
  if (patched->status == 409 || patched->status == 422) return Outcome::kConflict;
  return Outcome::kFailed;
}

absl::Status TaintRemover::Run(base::CancelToken* cancel) {
  bool said_waiting = false;
  while (!ready_()) {
    if (!said_waiting) {
      LOG(INFO) << "taint " << options_.taint_key << ": waiting until this node plugin is "
                << "registered and ready before removing it from node " << options_.node_name;
      said_waiting = true;
    }
    if (!clock_->SleepFor(options_.ready_poll, cancel)) return absl::CancelledError();
  }
  absl::Duration backoff = options_.initial_backoff;
  int conflicts = 0;
  while (true) {
    if (cancel != nullptr && cancel->cancelled()) return absl::CancelledError();
    std::string why;
    switch (Attempt(&why)) {
      case Outcome::kRemoved:
        LOG(INFO) << "removed taint " << options_.taint_key << " from node " << options_.node_name;
        return absl::OkStatus();
      case Outcome::kAbsent:
        LOG(INFO) << "node " << options_.node_name << " has no taint " << options_.taint_key
                  << ": nothing to remove";
        return absl::OkStatus();
      case Outcome::kConflict:
        LogOnce(absl::StrCat("taint ", options_.taint_key, ": ", why,
                             " (the taints changed meanwhile); reading the node again"));
        if (++conflicts < options_.conflicts_before_backoff) continue;
        break;
      case Outcome::kFailed:
        LogOnce(absl::StrCat("taint ", options_.taint_key, " not removed yet: ", why,
                             "; retrying with backoff"));
        break;
    }
    conflicts = 0;
    if (!clock_->SleepFor(backoff, cancel)) return absl::CancelledError();
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace lustre_csi::kube
