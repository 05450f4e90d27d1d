#include "server/compute_pool.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::server {
namespace {

TEST(ComputePoolTest, RunsEverySubmittedTaskBeforeTheDestructorReturns) {
  std::atomic<int> ran{0};
  {
    ComputePool pool(3);
    for (int i = 0; i < 100; ++i) pool.Submit(std::to_string(i % 7), [&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(ComputePoolTest, DefaultKeyLimitLeavesOneThreadForOthers) {
  EXPECT_EQ(ComputePool(4).max_per_key(), 3);
  EXPECT_EQ(ComputePool(1).max_per_key(), 1);
  EXPECT_EQ(ComputePool(4, 2).max_per_key(), 2);
}

// Regression: two Benchmarks of one client held every compute thread and
// blocked every Execute of every session.
TEST(ComputePoolTest, OneSessionCannotHoldEveryThread) {
  ComputePool pool(2);  // at most one thread per session
  absl::Notification release;
  std::atomic<int> hog_running{0};
  for (int i = 0; i < 4; ++i) {
    pool.Submit("hog", [&] {
      ++hog_running;
      release.WaitForNotification();
    });
  }
  absl::Notification other_ran;
  pool.Submit("other", [&] { other_ran.Notify(); });
  // The other session runs while the hog's tasks wait for each other.
  EXPECT_TRUE(other_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(hog_running.load(), 1);
  release.Notify();
  EXPECT_TRUE(pool.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(hog_running.load(), 4);
  EXPECT_EQ(pool.pending(), 0);
}

TEST(ComputePoolTest, SessionsTakeTurns) {
  ComputePool pool(1);
  absl::Notification gate;
  pool.Submit("gate", [&] { gate.WaitForNotification(); });
  absl::Mutex mu;
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i) {
    for (const char* key : {"a", "b"}) {
      pool.Submit(key, [&, key] {
        absl::MutexLock lock(&mu);
        order.push_back(key);
      });
    }
  }
  // "a" queued all three first; still the two alternate.
  gate.Notify();
  ASSERT_TRUE(pool.WaitIdle(absl::Seconds(10)));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(order, ::testing::ElementsAre("a", "b", "a", "b", "a", "b"));
}

TEST(ComputePoolTest, WaitIdleTimesOutWhileATaskRuns) {
  ComputePool pool(2);
  absl::Notification release;
  pool.Submit("x", [&] { release.WaitForNotification(); });
  EXPECT_FALSE(pool.WaitIdle(absl::Milliseconds(50)));
  EXPECT_EQ(pool.pending(), 1);
  release.Notify();
  EXPECT_TRUE(pool.WaitIdle(absl::Seconds(10)));
}

TEST(ComputePoolTest, GroupsTakeTurnsBeforeTheirKeys) {
  ComputePool pool(1);
  absl::Notification gate;
  pool.Submit("gate", [&] { gate.WaitForNotification(); });
  absl::Mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string what) {
    return [&, what] {
      absl::MutexLock lock(&mu);
      order.push_back(what);
    };
  };
  // Tenant a has three sessions with work, tenant b one: a's sessions do not
  // get three turns to b's one.
  for (int i = 0; i < 2; ++i) {
    for (const char* key : {"a1", "a2", "a3"}) pool.Submit("a", key, record(key));
    pool.Submit("b", "b1", record("b1"));
  }
  gate.Notify();
  ASSERT_TRUE(pool.WaitIdle(absl::Seconds(10)));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(order, ::testing::ElementsAre("a1", "b1", "a2", "b1", "a3", "a1", "a2", "a3"));
}

TEST(ComputePoolTest, OneGroupCannotHoldEveryThread) {
  ComputePool pool(3, /*max_per_key=*/0, /*max_per_group=*/2);
  EXPECT_EQ(pool.max_per_group(), 2);
  absl::Notification release;
  absl::Mutex mu;
  int hog_running = 0;
  // Three sessions of one tenant, each allowed two threads: the tenant gets
  // two in all.
  for (const char* key : {"s1", "s2", "s3"}) {
    pool.Submit("hog", key, [&] {
      {
        absl::MutexLock lock(&mu);
        ++hog_running;
      }
      release.WaitForNotification();
    });
  }
  auto running = [&](int n) {
    absl::MutexLock lock(&mu);
    auto reached = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return hog_running >= n; };
    return mu.AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(10));
  };
  ASSERT_TRUE(running(2));
  absl::Notification other_ran;
  pool.Submit("other", "s", [&] { other_ran.Notify(); });
  // The third thread is left for another tenant, and the hog's third task
  // still waits.
  EXPECT_TRUE(other_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(hog_running, 2);
  }
  release.Notify();
  EXPECT_TRUE(running(3));
  EXPECT_TRUE(pool.WaitIdle(absl::Seconds(10)));
}

TEST(ComputePoolTest, NoGroupBoundByDefault) {
  ComputePool pool(3);
  EXPECT_EQ(pool.max_per_group(), 0);
  absl::Notification release;
  absl::Mutex mu;
  int running = 0;
  // Three sessions of the one group "" use all three threads, as before
  // groups existed.
  for (const char* key : {"s1", "s2", "s3"}) {
    pool.Submit(key, [&] {
      {
        absl::MutexLock lock(&mu);
        ++running;
      }
      release.WaitForNotification();
    });
  }
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                        +[](int* n) { return *n == 3; }, &running),
                                    absl::Seconds(10)));
  }
  release.Notify();
  EXPECT_TRUE(pool.WaitIdle(absl::Seconds(10)));
}

// The fast path of a short repeated Execute: it runs on the caller's thread
// only when that takes no turn from queued work.
TEST(ComputePoolTest, RunsInlineOnTheCallersThreadWhenNothingIsQueued) {
  ComputePool pool(2);
  std::thread::id ran_on;
  int pending_inside = -1;
  EXPECT_TRUE(pool.TryRunInline("t", "s", [&] {
    ran_on = std::this_thread::get_id();
    pending_inside = pool.pending();
  }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(pending_inside, 1);  // counted while it runs
  EXPECT_EQ(pool.pending(), 0);
}

TEST(ComputePoolTest, NeverRunsInlineAheadOfQueuedWork) {
  ComputePool pool(1);
  absl::Notification gate;
  absl::Notification started;
  pool.Submit("busy", [&] {
    started.Notify();
    gate.WaitForNotification();
  });
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  // Running work alone does not stop it: the thread is busy, not the queue.
  bool ran = false;
  EXPECT_TRUE(pool.TryRunInline("", "other", [&] { ran = true; }));
  EXPECT_TRUE(ran);
  // Queued work does: the inline task would jump the queue.
  std::atomic<bool> queued_ran{false};
  pool.Submit("waiting", [&] { queued_ran = true; });
  ran = false;
  EXPECT_FALSE(pool.TryRunInline("", "other", [&] { ran = true; }));
  EXPECT_FALSE(ran);
  gate.Notify();
  EXPECT_TRUE(pool.WaitIdle(absl::Seconds(10)));
  EXPECT_TRUE(queued_ran.load());
  EXPECT_TRUE(pool.TryRunInline("", "other", [&] { ran = true; }));
}

TEST(ComputePoolTest, InlineRunsRespectTheSessionAndTenantBounds) {
  ComputePool pool(3, /*max_per_key=*/1, /*max_per_group=*/2);
  absl::Notification gate;
  absl::Notification started;
  pool.Submit("t", "s", [&] {
    started.Notify();
    gate.WaitForNotification();
  });
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  // The session already runs on its one thread.
  EXPECT_FALSE(pool.TryRunInline("t", "s", [] {}));
  // Another session of the tenant may, and takes the tenant's second slot.
  bool nested = true;
  EXPECT_TRUE(pool.TryRunInline("t", "s2", [&] {
    // The tenant is at its bound now; another tenant is not.
    nested = pool.TryRunInline("t", "s3", [] {});
    EXPECT_TRUE(pool.TryRunInline("u", "s4", [] {}));
  }));
  EXPECT_FALSE(nested);
  gate.Notify();
  EXPECT_TRUE(pool.WaitIdle(absl::Seconds(10)));
}

TEST(ComputePoolTest, QueuedWorkRunsAfterAnInlineTaskFreesTheSession) {
  ComputePool pool(2, /*max_per_key=*/1);
  std::atomic<bool> queued_ran{false};
  EXPECT_TRUE(pool.TryRunInline("", "s", [&] {
    // Same session: must wait for the inline task (max_per_key 1).
    pool.Submit("s", [&] { queued_ran = true; });
    absl::SleepFor(absl::Milliseconds(50));
    EXPECT_FALSE(queued_ran.load());
  }));
  EXPECT_TRUE(pool.WaitIdle(absl::Seconds(10)));
  EXPECT_TRUE(queued_ran.load());
}

}  // namespace
}  // namespace gpuflow::server
