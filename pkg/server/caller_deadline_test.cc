#include "pkg/server/caller_deadline.h"

#include "gtest/gtest.h"

namespace lustre_csi::server {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

std::chrono::system_clock::time_point At(absl::Duration d) { return absl::ToChronoTime(kNow + d); }

TEST(CallerDeadlineTest, AnswersATenthOfTheTimeLeftBeforeTheDeadlineAtMostASecond) {
  EXPECT_EQ(AnswerByUntil(At(absl::Seconds(120)), kNow), kNow + absl::Seconds(119));
  EXPECT_EQ(AnswerByUntil(At(absl::Seconds(5)), kNow), kNow + absl::Milliseconds(4500));
  EXPECT_EQ(AnswerByUntil(At(absl::ZeroDuration()), kNow), kNow);
  EXPECT_EQ(AnswerByUntil(At(-absl::Seconds(3)), kNow), kNow);
  EXPECT_EQ(AnswerByUntil(std::chrono::system_clock::time_point::max(), kNow),
            absl::InfiniteFuture());

  EXPECT_EQ(CallerWaitUntil(At(absl::Seconds(120)), kNow), absl::Seconds(119));
  EXPECT_EQ(CallerWaitUntil(At(absl::Seconds(5)), kNow), absl::Milliseconds(4500));
  EXPECT_EQ(CallerWaitUntil(At(absl::ZeroDuration()), kNow), absl::ZeroDuration());
  EXPECT_EQ(CallerWaitUntil(At(-absl::Seconds(3)), kNow), absl::ZeroDuration());
  EXPECT_EQ(CallerWaitUntil(std::chrono::system_clock::time_point::max(), kNow),
            absl::InfiniteDuration());
}

TEST(CallerDeadlineTest, ACallWithoutADeadlineIsWaitedForForever) {
  grpc::ServerContext none;  // not from a call: no deadline
  EXPECT_EQ(AnswerBy(&none), absl::InfiniteFuture());
  EXPECT_EQ(AnswerBy(nullptr), absl::InfiniteFuture());
  EXPECT_EQ(CallerWait(&none), absl::InfiniteDuration());
  EXPECT_EQ(CallerWait(nullptr), absl::InfiniteDuration());
}

}  // namespace
}  // namespace lustre_csi::server
