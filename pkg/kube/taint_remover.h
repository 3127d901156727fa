// Removes the taint "<driver name>/agent-not-ready" from this node's Node
// object once the node plugin can serve, as the Go driver does with
// --remove-not-ready-taint: operators put that taint on new nodes so no
// workload lands before the driver can mount.
//
// Only that taint goes, with a JSON patch (RFC 6902) that first tests that
// the taints are still the ones read, then replaces them: a concurrent change
// to the node's taints makes the test fail (409 or 422), and the node is read
// again rather than the change lost. Failures are retried with a doubling
// backoff, forever (until cancelled); the service-account token is read
// again for every attempt, as tokens rotate. Each distinct outcome is logged
// once. Readiness never depends on it.
//
// Plain logic over HttpClient (https_client.h for the real one), a token
// source and a Clock, so tests drive it without a network or real time.
#ifndef LUSTRE_CSI_PKG_KUBE_TAINT_REMOVER_H_
#define LUSTRE_CSI_PKG_KUBE_TAINT_REMOVER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pkg/base/cancel.h"
#include "pkg/base/clock.h"
#include "pkg/kube/http.h"

namespace lustre_csi::kube {

// "<driver name>/agent-not-ready".
std::string NotReadyTaintKey(const std::string& driver_name);

struct TaintRemoverOptions {
  std::string node_name;
  std::string taint_key;
  // While not ready, how often readiness is asked again.
  absl::Duration ready_poll = absl::Seconds(1);
  // After a failure: the first wait, doubled each time up to the maximum.
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Minutes(2);
  // Conflicts (the taints changed between read and patch) retried at once
  // before the backoff applies.
  int conflicts_before_backoff = 5;
};

class TaintRemover {
 public:
  // All borrowed. `token` returns the current bearer token; `ready` whether
  // the node plugin is registered and ready now.
  TaintRemover(TaintRemoverOptions options, HttpClient* http,
               std::function<absl::StatusOr<std::string>()> token, std::function<bool()> ready,
               base::Clock* clock);

  // Waits for readiness, then works until the taint is gone (or was never
  // there): OK. CANCELLED when `cancel` fires first.
  absl::Status Run(base::CancelToken* cancel);

  enum class Outcome { kRemoved, kAbsent, kConflict, kFailed };
  // One read and, when the taint is there, one patch. `why` says what
  // failed, for kFailed and kConflict.
  Outcome Attempt(std::string* why);

 private:
  absl::StatusOr<HttpResponse> Call(const std::string& method, const std::string& content_type,
                                    const std::string& body);
  void LogOnce(const std::string& message);

  const TaintRemoverOptions options_;
  HttpClient* const http_;
  const std::function<absl::StatusOr<std::string>()> token_;
  const std::function<bool()> ready_;
  base::Clock* const clock_;
  std::string last_logged_;
};

}  // namespace lustre_csi::kube

#endif  // LUSTRE_CSI_PKG_KUBE_TAINT_REMOVER_H_
