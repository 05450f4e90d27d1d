#include "server/reloadable_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ReadSmallFileTest, ReadsOrNamesTheFlagAndFile) {
  const std::string path =
      ::testing::TempDir() + "reloadable_file_test_" + std::to_string(getpid());
  std::ofstream(path) << "contents";
  EXPECT_THAT(ReadSmallFile("some_file", path), IsOkAndHolds("contents"));
  EXPECT_THAT(ReadSmallFile("some_file", path, 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--some_file=" + path + ": larger than 4 bytes")));
  std::remove(path.c_str());
  EXPECT_THAT(ReadSmallFile("some_file", path),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("--some_file=" + path + ": cannot read it: No such file")));
}

TEST(ReloadTrackerTest, GoodChangesAtOnceBadOnesOnceSettledAndOnce) {
  ReloadTracker tracker("v1");
  EXPECT_TRUE(tracker.InForce("v1"));
  EXPECT_FALSE(tracker.InForce("v2"));
  tracker.Applied("v2");
  EXPECT_TRUE(tracker.InForce("v2"));
  // A bad state: not at the first look, at the second, then never again.
  EXPECT_FALSE(tracker.ShouldReport("bad"));
  EXPECT_TRUE(tracker.ShouldReport("bad"));
  EXPECT_FALSE(tracker.ShouldReport("bad"));
  // Another bad state settles and is reported in its turn.
  EXPECT_FALSE(tracker.ShouldReport("worse"));
  EXPECT_TRUE(tracker.ShouldReport("worse"));
  // Back to what is in force, then bad again: reported again once settled.
  EXPECT_TRUE(tracker.InForce("v2"));
  EXPECT_FALSE(tracker.ShouldReport("worse"));
  EXPECT_TRUE(tracker.ShouldReport("worse"));
  // Flapping between two bad states never settles.
  EXPECT_FALSE(tracker.ShouldReport("a"));
  EXPECT_FALSE(tracker.ShouldReport("b"));
  EXPECT_FALSE(tracker.ShouldReport("a"));
}

TEST(ReloadTrackerTest, UnreadableIsNoContents) {
  EXPECT_NE(UnreadableFingerprint(absl::NotFoundError("gone")), "gone");
  EXPECT_NE(UnreadableFingerprint(absl::NotFoundError("")), "");
}

}  // namespace
}  // namespace gpuflow::server
