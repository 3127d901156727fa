#include "pkg/server/caller_deadline.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace lustre_csi::server {

absl::Time AnswerByUntil(std::chrono::system_clock::time_point deadline, absl::Time now) {
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  absl::Duration left = absl::FromChrono(deadline) - now;
  if (left <= absl::ZeroDuration()) return now;
  return now + left - std::min(left / 10, absl::Seconds(1));
}

absl::Time AnswerBy(const grpc::ServerContext* ctx) {
  if (ctx == nullptr) return absl::InfiniteFuture();
  return AnswerByUntil(ctx->deadline(), absl::Now());
}

absl::Duration CallerWaitUntil(std::chrono::system_clock::time_point deadline, absl::Time now) {
  return AnswerByUntil(deadline, now) - now;
}

absl::Duration CallerWait(const grpc::ServerContext* ctx) {
  if (ctx == nullptr) return absl::InfiniteDuration();
  return CallerWaitUntil(ctx->deadline(), absl::Now());
}

}  // namespace lustre_csi::server
