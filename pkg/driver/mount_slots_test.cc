// The node's mount slots: the bound on mounts in flight, and the gate that
// keeps mounts of a file system that does not answer from piling up.
#include "pkg/driver/mount_slots.h"

#include <optional>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/base/fake_clock.h"
#include "pkg/volume/left_behind.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;

constexpr char kDead[] = "10.0.0.4@tcp:/dead";
constexpr char kAlive[] = "10.0.0.4@tcp:/alive";

TEST(MountSlotsTest, AFileSystemHeldUpPastTheBoundTakesNoMoreSlots) {
  base::FakeClock clock;
  MountSlots slots(8, absl::Seconds(1), absl::Seconds(10), &clock);
  absl::StatusOr<MountSlots::Slot> stuck = slots.Acquire(kDead, "/pods/a");
  ASSERT_TRUE(stuck.ok()) << stuck.status();

  // Within the bound a mount of it may still wait: it may just be slow.
  clock.Advance(absl::Seconds(10));
  {
    absl::StatusOr<MountSlots::Slot> second = slots.Acquire(kDead, "/pods/b");
    EXPECT_TRUE(second.ok()) << second.status();
  }

  clock.Advance(absl::Seconds(1));
  absl::StatusOr<MountSlots::Slot> third = slots.Acquire(kDead, "/pods/c");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kUnavailable) << third.status();
  EXPECT_THAT(third.status().message(),
              HasSubstr("the file system 10.0.0.4@tcp:/dead has not answered the mount at "
                        "/pods/a since 2023-11-14T22:13:20Z"));
  // Another file system is not held up.
  EXPECT_TRUE(slots.Acquire(kAlive, "/pods/d").ok());

  // Once the stuck mount returns, the file system is mounted again.
  std::optional<MountSlots::Slot> held(std::move(*stuck));
  held.reset();
  EXPECT_TRUE(slots.Acquire(kDead, "/pods/c").ok());
}

TEST(MountSlotsTest, MountsWaitForAFreeSlotAsLongAsTheWait) {
  base::FakeClock clock;
  MountSlots slots(1, absl::Milliseconds(50), absl::Seconds(10), &clock);
  std::optional<MountSlots::Slot> first;
  {
    absl::StatusOr<MountSlots::Slot> taken = slots.Acquire(kAlive, "/pods/a");
    ASSERT_TRUE(taken.ok());
    first.emplace(std::move(*taken));
  }
  absl::StatusOr<MountSlots::Slot> busy = slots.Acquire(kDead, "/pods/b");
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(busy.status().message(), HasSubstr("all 1 mount slots stayed busy"));

  // A slot given back while another mount waits goes to it.
  MountSlots patient(1, absl::Seconds(30), absl::Seconds(10), &clock);
  std::optional<MountSlots::Slot> held;
  {
    absl::StatusOr<MountSlots::Slot> taken = patient.Acquire(kAlive, "/pods/a");
    ASSERT_TRUE(taken.ok());
    held.emplace(std::move(*taken));
  }
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    held.reset();
  });
  absl::StatusOr<MountSlots::Slot> next = patient.Acquire(kAlive, "/pods/b");
  releaser.join();
  EXPECT_TRUE(next.ok()) << next.status();
}

// A mount that waited for a slot while its file system stalled does not
// take the slot that frees up.
TEST(MountSlotsTest, AFileSystemThatStalledMeanwhileIsCheckedAgain) {
  base::FakeClock clock;
  MountSlots slots(2, absl::Seconds(30), absl::Seconds(10), &clock);
  absl::StatusOr<MountSlots::Slot> stuck = slots.Acquire(kDead, "/pods/a");
  ASSERT_TRUE(stuck.ok());
  std::optional<MountSlots::Slot> busy;
  {
    absl::StatusOr<MountSlots::Slot> taken = slots.Acquire(kAlive, "/pods/b");
    ASSERT_TRUE(taken.ok());
    busy.emplace(std::move(*taken));
  }
  clock.Advance(absl::Seconds(5));
  absl::Status waited = absl::UnknownError("not returned");
  std::thread waiter([&] { waited = slots.Acquire(kDead, "/pods/c").status(); });
  absl::SleepFor(absl::Milliseconds(100));  // waiting for a slot
  clock.Advance(absl::Seconds(6));
  busy.reset();
  waiter.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kUnavailable) << waited;
  EXPECT_THAT(waited.message(), HasSubstr("has not answered the mount at /pods/a"));
}

// A mount that gave up and left work behind (a helper killed at its timeout
// that still waits for the servers) gives its slot back, but its file
// system stays held up, however young, until that work ends: retries start
// no more of it. Other file systems get the slot.
TEST(MountSlotsTest, WorkLeftBehindHoldsItsFileSystemUpUntilItEnds) {
  base::FakeClock clock;
  volume::LeftBehind left;
  MountSlots slots(1, absl::Milliseconds(50), absl::Seconds(10), &clock, &left);
  uint64_t helper = left.Add();
  {
    absl::StatusOr<MountSlots::Slot> gave_up = slots.Acquire(kDead, "/pods/a");
    ASSERT_TRUE(gave_up.ok()) << gave_up.status();
    slots.HoldFileSystemUntilEnded(std::move(*gave_up), helper);
  }
  absl::StatusOr<MountSlots::Slot> retry = slots.Acquire(kDead, "/pods/a");
  EXPECT_EQ(retry.status().code(), absl::StatusCode::kUnavailable) << retry.status();
  EXPECT_THAT(retry.status().message(),
              HasSubstr("has not answered the mount at /pods/a since 2023-11-14T22:13:20Z (the "
                        "mount gave up; what it left still waits for the file system)"));
  {
    absl::StatusOr<MountSlots::Slot> other = slots.Acquire(kAlive, "/pods/b");
    EXPECT_TRUE(other.ok()) << other.status() << ": the one slot was not given back";
  }
  clock.Advance(absl::Hours(1));
  EXPECT_FALSE(slots.Acquire(kDead, "/pods/c").ok()) << "held up only for a while";

  left.End(helper);
  EXPECT_TRUE(slots.Acquire(kDead, "/pods/c").ok());
}

// Work that ended before it was handed over holds nothing up; work that
// ends after the slots are gone (the node shut down) finds nothing freed.
TEST(MountSlotsTest, WorkLeftBehindMayEndBeforeOrAfter) {
  volume::LeftBehind left;
  uint64_t ended = left.Add();
  uint64_t later = left.Add();
  left.End(ended);
  {
    MountSlots slots(2, absl::Milliseconds(50), absl::Seconds(10), nullptr, &left);
    absl::StatusOr<MountSlots::Slot> a = slots.Acquire(kDead, "/pods/a");
    ASSERT_TRUE(a.ok());
    slots.HoldFileSystemUntilEnded(std::move(*a), ended);
    absl::StatusOr<MountSlots::Slot> b = slots.Acquire(kDead, "/pods/b");
    ASSERT_TRUE(b.ok()) << b.status();
    slots.HoldFileSystemUntilEnded(std::move(*b), later);
    EXPECT_FALSE(slots.Acquire(kDead, "/pods/c").ok());
  }
  left.End(later);
  EXPECT_EQ(left.Running(), 0);
}

}  // namespace
}  // namespace lustre_csi::driver
