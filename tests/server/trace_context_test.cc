#include "server/trace_context.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::server {
namespace {

using ::testing::Eq;
using ::testing::Optional;

constexpr char kValid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(ParseTraceparentTest, TakesTheSpecificationsExample) {
  EXPECT_THAT(ParseTraceparent(kValid), Optional(Eq(std::string(kValid))));
  EXPECT_THAT(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
              Optional(Eq(std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"))));
}

TEST(ParseTraceparentTest, ALaterVersionKeepsTheFieldsVersion00Defines) {
  EXPECT_THAT(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what"),
              Optional(Eq(std::string("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))));
  EXPECT_THAT(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
              Optional(Eq(std::string("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))));
}

TEST(ParseTraceparentTest, RefusesWhatTheSpecificationRefuses) {
  for (const char* bad : {
           "",
           "00",
           // version ff, upper case, a short or long field, other separators
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
           // all-zero ids
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
           // not hex
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0z",
       }) {
    EXPECT_EQ(ParseTraceparent(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace gpuflow::server
