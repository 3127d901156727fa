// When a gRPC handler answers a caller that set a deadline, for every
// service of the project (driver and plugin manager): early enough that the
// answer, not the caller's transport giving up (DEADLINE_EXCEEDED with the
// work's outcome lost), reaches it.
#ifndef LUSTRE_CSI_PKG_SERVER_CALLER_DEADLINE_H_
#define LUSTRE_CSI_PKG_SERVER_CALLER_DEADLINE_H_

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/time/time.h"

namespace lustre_csi::server {

// The time to answer by, for a caller whose deadline is `deadline`: the
// deadline less a tenth of the time left at `now` (at most 1 s).
// InfiniteFuture for a caller without a deadline (time_point::max, as gRPC
// gives it); `now` once the deadline has passed.
absl::Time AnswerByUntil(std::chrono::system_clock::time_point deadline, absl::Time now);
// The same for the call of `ctx` (null: InfiniteFuture).
absl::Time AnswerBy(const grpc::ServerContext* ctx);

// How long a call may wait for its work before it answers: the time left
// until AnswerByUntil. Infinite for a caller without a deadline; zero once
// the deadline has passed.
absl::Duration CallerWaitUntil(std::chrono::system_clock::time_point deadline, absl::Time now);
// The same for the call of `ctx` (null: infinite).
absl::Duration CallerWait(const grpc::ServerContext* ctx);

}  // namespace lustre_csi::server

#endif  // LUSTRE_CSI_PKG_SERVER_CALLER_DEADLINE_H_
