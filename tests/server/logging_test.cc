#include "server/logging.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A logger writing into `lines` at a fixed time.
LoggerOptions Capture(std::vector<std::string>& lines, LogFormat format,
                      LogLevel min_level = LogLevel::kInfo) {
  return LoggerOptions{
      .format = format,
      .min_level = min_level,
      .sink = [&lines](absl::string_view line) { lines.emplace_back(line); },
      .clock =
          [] {
            return absl::FromCivil(absl::CivilSecond(2025, 1, 2, 3, 4, 5), absl::UTCTimeZone()) +
                   absl::Milliseconds(678);
          },
  };
}

TEST(LoggerTest, TextLineHasTimeMessageAndFields) {
  std::vector<std::string> lines;
  Logger log(Capture(lines, LogFormat::kText));
  log.Info("rpc", {{"method", "Execute"},
                   {"session_label", "my job"},
                   {"code", "OK"},
                   {"duration_ms", 1.25},
                   {"kernels", 3},
                   {"hit", true}});
  EXPECT_THAT(lines, ElementsAre("2025-01-02T03:04:05.678Z gpuflowd: rpc method=Execute "
                                 "session_label=\"my job\" code=OK duration_ms=1.25 kernels=3 "
                                 "hit=true\n"));
}

// The time is formatted up to the second once a second (per thread): it
// must still read as FormatTime's, for times in one second, across seconds,
// going back, before 1970 and at the ends of a second.
TEST(LoggerTest, TimeReadsAsFormatTimeWithMilliseconds) {
  std::vector<std::string> lines;
  absl::Time now;
  Logger log({.sink = [&lines](absl::string_view line) { lines.emplace_back(line); },
              .clock = [&now] { return now; }});
  const absl::Time base =
      absl::FromCivil(absl::CivilSecond(2026, 12, 4, 19, 59, 59), absl::UTCTimeZone());
  std::vector<absl::Time> times = {base,
                                   base + absl::Milliseconds(1),
                                   base + absl::Nanoseconds(999999999),
                                   base + absl::Seconds(1),
                                   base - absl::Nanoseconds(1),
                                   absl::UnixEpoch(),
                                   absl::UnixEpoch() - absl::Nanoseconds(1),
                                   absl::UnixEpoch() - absl::Milliseconds(1500),
                                   absl::InfiniteFuture()};
  std::mt19937_64 rng(15);
  for (int i = 0; i < 2000; ++i) {
    // Runs of nearby times (the same second, often) and jumps over centuries.
    const absl::Time from =
        i % 50 == 0 ? absl::FromUnixSeconds(static_cast<int64_t>(rng() % (int64_t{4} << 32)) -
                                            (int64_t{1} << 32))
                    : times.back();
    times.push_back(from + absl::Nanoseconds(static_cast<int64_t>(rng() % 400000000)));
  }
  for (const absl::Time t : times) {
    now = t;
    log.Info("tick");
    EXPECT_EQ(lines.back(),
              absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone()),
                           " gpuflowd: tick\n"));
  }
}

TEST(LoggerTest, TextLinePrefixesLevelsOtherThanInfo) {
  std::vector<std::string> lines;
  Logger log(Capture(lines, LogFormat::kText, LogLevel::kDebug));
  log.Debug("plan cache miss");
  log.Warning("slow");
  log.Error("cannot listen");
  EXPECT_THAT(lines, ElementsAre("2025-01-02T03:04:05.678Z gpuflowd: debug: plan cache miss\n",
                                 "2025-01-02T03:04:05.678Z gpuflowd: warning: slow\n",
                                 "2025-01-02T03:04:05.678Z gpuflowd: error: cannot listen\n"));
}

TEST(LoggerTest, TextQuotesEmptyAndSpecialValues) {
  std::vector<std::string> lines;
  Logger log(Capture(lines, LogFormat::kText));
  log.Info("x", {{"empty", ""}, {"quote", "a\"b"}, {"eq", "a=b"}, {"newline", "a\nb"}});
  EXPECT_THAT(lines, ElementsAre("2025-01-02T03:04:05.678Z gpuflowd: x empty=\"\" "
                                 "quote=\"a\\\"b\" eq=\"a=b\" newline=\"a\\nb\"\n"));
}

TEST(LoggerTest, JsonLineIsOneObject) {
  std::vector<std::string> lines;
  Logger log(Capture(lines, LogFormat::kJson));
  log.Info("rpc", {{"method", "Execute"},
                   {"session_label", "tab\there \"q\" \x01"},
                   {"duration_ms", 0.5},
                   {"kernels", int64_t{2}},
                   {"ok", false}});
  EXPECT_THAT(lines, ElementsAre("{\"time\":\"2025-01-02T03:04:05.678Z\",\"level\":\"info\","
                                 "\"msg\":\"rpc\",\"method\":\"Execute\",\"session_label\":"
                                 "\"tab\\there \\\"q\\\" \\u0001\",\"duration_ms\":0.5,"
                                 "\"kernels\":2,\"ok\":false}\n"));
}

TEST(LoggerTest, JsonHasNoNanOrInfinity) {
  std::vector<std::string> lines;
  Logger log(Capture(lines, LogFormat::kJson));
  log.Error("bad", {{"x", std::numeric_limits<double>::quiet_NaN()}});
  EXPECT_THAT(lines, ElementsAre("{\"time\":\"2025-01-02T03:04:05.678Z\",\"level\":\"error\","
                                 "\"msg\":\"bad\",\"x\":null}\n"));
}

TEST(LoggerTest, DropsLinesBelowTheLevelAndFollowsChanges) {
  std::vector<std::string> lines;
  Logger log(Capture(lines, LogFormat::kText));
  EXPECT_FALSE(log.enabled(LogLevel::kDebug));
  log.Debug("hidden");
  EXPECT_THAT(lines, IsEmpty());
  log.set_min_level(LogLevel::kDebug);
  log.set_format(LogFormat::kJson);
  log.Debug("shown");
  EXPECT_THAT(lines, ElementsAre("{\"time\":\"2025-01-02T03:04:05.678Z\",\"level\":\"debug\","
                                 "\"msg\":\"shown\"}\n"));
}

TEST(ParseLogTest, LevelsAndFormats) {
  EXPECT_THAT(ParseLogLevel("debug"), IsOkAndHolds(LogLevel::kDebug));
  EXPECT_THAT(ParseLogLevel("WARNING"), IsOkAndHolds(LogLevel::kWarning));
  EXPECT_THAT(ParseLogLevel("verbose"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseLogFormat("json"), IsOkAndHolds(LogFormat::kJson));
  EXPECT_THAT(ParseLogFormat("text"), IsOkAndHolds(LogFormat::kText));
  EXPECT_THAT(ParseLogFormat("xml"), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace gpuflow::server
