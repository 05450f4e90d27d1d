#include "server/flags.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/reflection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

// Flags that exist only in this test, so setting them touches nothing else.
ABSL_FLAG(gpuflow::server::ByteCount, flags_test_bytes, gpuflow::server::ByteCount{4096},
          "A byte count for flags_test");
ABSL_FLAG(int, flags_test_count, 7, "An int for flags_test");

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kKiB = int64_t{1} << 10;
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kTiB = int64_t{1} << 40;

TEST(ParseByteCountTest, PlainNumbersAreBytes) {
  EXPECT_THAT(ParseByteCount("0"), IsOkAndHolds(0));
  EXPECT_THAT(ParseByteCount("4096"), IsOkAndHolds(4096));
  EXPECT_THAT(ParseByteCount("4096B"), IsOkAndHolds(4096));
  EXPECT_THAT(ParseByteCount(" 1000 "), IsOkAndHolds(1000));
  EXPECT_THAT(ParseByteCount("9223372036854775807"),
              IsOkAndHolds(std::numeric_limits<int64_t>::max()));
}

TEST(ParseByteCountTest, BinaryUnits) {
  EXPECT_THAT(ParseByteCount("64KiB"), IsOkAndHolds(64 * kKiB));
  EXPECT_THAT(ParseByteCount("512MiB"), IsOkAndHolds(512 * kMiB));
  EXPECT_THAT(ParseByteCount("16GiB"), IsOkAndHolds(16 * kGiB));
  EXPECT_THAT(ParseByteCount("1TiB"), IsOkAndHolds(kTiB));
}

TEST(ParseByteCountTest, KubernetesAndShortUnitsArePowersOf1024) {
  EXPECT_THAT(ParseByteCount("2Gi"), IsOkAndHolds(2 * kGiB));
  EXPECT_THAT(ParseByteCount("3Mi"), IsOkAndHolds(3 * kMiB));
  EXPECT_THAT(ParseByteCount("5Ki"), IsOkAndHolds(5 * kKiB));
  EXPECT_THAT(ParseByteCount("1Ti"), IsOkAndHolds(kTiB));
  EXPECT_THAT(ParseByteCount("1K"), IsOkAndHolds(kKiB));
  EXPECT_THAT(ParseByteCount("1M"), IsOkAndHolds(kMiB));
  EXPECT_THAT(ParseByteCount("1G"), IsOkAndHolds(kGiB));
  EXPECT_THAT(ParseByteCount("1T"), IsOkAndHolds(kTiB));
}

TEST(ParseByteCountTest, FractionsBeforeAUnit) {
  EXPECT_THAT(ParseByteCount("1.5GiB"), IsOkAndHolds(kGiB + kGiB / 2));
  EXPECT_THAT(ParseByteCount("1.5G"), IsOkAndHolds(kGiB + kGiB / 2));
  EXPECT_THAT(ParseByteCount("0.5KiB"), IsOkAndHolds(512));
  EXPECT_THAT(ParseByteCount("2.25Mi"), IsOkAndHolds(2 * kMiB + kMiB / 4));
}

TEST(ParseByteCountTest, RejectsNonsenseAndNamesIt) {
  for (const char* bad : {"", " ", "GiB", "B", "abc", "12abc", "1.5", "1.5B", "1 2", "16GB",
                          "16gib", "0x10", "1e3", "nanGiB", "infGiB", "16 GiB MiB"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ParseByteCount(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr(absl::StrCat("'", bad, "'"))));
  }
}

TEST(ParseByteCountTest, RejectsNegativeValues) {
  for (const char* bad : {"-1", "-4096", "-1GiB", "-0.5GiB", "-2Gi"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ParseByteCount(bad), StatusIs(absl::StatusCode::kInvalidArgument));
  }
}

TEST(ParseByteCountTest, RejectsValuesThatOverflowInt64) {
  // 2^23 TiB = 2^63 bytes.
  EXPECT_THAT(ParseByteCount("8388608TiB"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseByteCount("8388607TiB"), IsOkAndHolds(8388607 * kTiB));
  EXPECT_THAT(ParseByteCount("8388608.5TiB"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseByteCount("9223372036854775808"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseByteCount("1e300GiB"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(FormatByteCountTest, UsesTheLargestExactUnit) {
  EXPECT_EQ(FormatByteCount(0), "0");
  EXPECT_EQ(FormatByteCount(1), "1");
  EXPECT_EQ(FormatByteCount(1000), "1000");
  EXPECT_EQ(FormatByteCount(1025), "1025");
  EXPECT_EQ(FormatByteCount(kKiB), "1KiB");
  EXPECT_EQ(FormatByteCount(64 * kKiB), "64KiB");
  EXPECT_EQ(FormatByteCount(512 * kMiB), "512MiB");
  EXPECT_EQ(FormatByteCount(1536 * kMiB), "1536MiB");
  EXPECT_EQ(FormatByteCount(16 * kGiB), "16GiB");
  EXPECT_EQ(FormatByteCount(kTiB), "1TiB");
  EXPECT_EQ(FormatByteCount(2048 * kTiB), "2048TiB");
}

TEST(FormatByteCountTest, ParseRoundTripsFormat) {
  for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{1000}, kKiB, 3 * kKiB + 1, 1536 * kMiB,
                        16 * kGiB, 5 * kTiB, std::numeric_limits<int64_t>::max()}) {
    EXPECT_THAT(ParseByteCount(FormatByteCount(bytes)), IsOkAndHolds(bytes)) << bytes;
  }
}

TEST(ByteCountFlagTest, ParsesAndUnparsesThroughAbslFlags) {
  ByteCount value;
  std::string error;
  ASSERT_TRUE(absl::ParseFlag("512MiB", &value, &error)) << error;
  EXPECT_EQ(value.bytes, 512 * kMiB);
  EXPECT_EQ(absl::UnparseFlag(value), "512MiB");
  EXPECT_FALSE(absl::ParseFlag("lots", &value, &error));
  EXPECT_THAT(error, HasSubstr("'lots' is not a byte count"));
  EXPECT_EQ(value.bytes, 512 * kMiB);
}

class ApplyEnvironmentToFlagsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("GPUFLOW_FLAGS_TEST_BYTES");
    unsetenv("GPUFLOW_FLAGS_TEST_COUNT");
    unsetenv("GPUFLOW_FLAGS_TEST_MISSING");
  }

  // Restores every flag when the test ends.
  absl::FlagSaver flag_saver_;
};

TEST_F(ApplyEnvironmentToFlagsTest, SetsFlagsFromUpperCasedVariables) {
  setenv("GPUFLOW_FLAGS_TEST_BYTES", "512MiB", /*overwrite=*/1);
  setenv("GPUFLOW_FLAGS_TEST_COUNT", "42", /*overwrite=*/1);
  EXPECT_THAT(ApplyEnvironmentToFlags({"flags_test_bytes", "flags_test_count"}), IsOk());
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_bytes).bytes, 512 * kMiB);
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_count), 42);
}

TEST_F(ApplyEnvironmentToFlagsTest, LeavesFlagsAloneWhenTheVariableIsUnset) {
  EXPECT_THAT(ApplyEnvironmentToFlags({"flags_test_bytes", "flags_test_count"}), IsOk());
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_bytes).bytes, 4096);
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_count), 7);
}

TEST_F(ApplyEnvironmentToFlagsTest, OnlyNamedFlagsAreRead) {
  setenv("GPUFLOW_FLAGS_TEST_COUNT", "42", /*overwrite=*/1);
  EXPECT_THAT(ApplyEnvironmentToFlags({"flags_test_bytes"}), IsOk());
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_count), 7);
}

TEST_F(ApplyEnvironmentToFlagsTest, BadValueNamesTheVariableAndKeepsTheFlag) {
  setenv("GPUFLOW_FLAGS_TEST_BYTES", "lots", /*overwrite=*/1);
  EXPECT_THAT(
      ApplyEnvironmentToFlags({"flags_test_bytes"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("GPUFLOW_FLAGS_TEST_BYTES='lots'")));
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_bytes).bytes, 4096);

  setenv("GPUFLOW_FLAGS_TEST_COUNT", "seven", /*overwrite=*/1);
  EXPECT_THAT(ApplyEnvironmentToFlags({"flags_test_count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("GPUFLOW_FLAGS_TEST_COUNT")));
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_count), 7);
}

TEST_F(ApplyEnvironmentToFlagsTest, VariableForAnUndefinedFlagIsAnError) {
  setenv("GPUFLOW_FLAGS_TEST_MISSING", "1", /*overwrite=*/1);
  EXPECT_THAT(ApplyEnvironmentToFlags({"flags_test_missing"}),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("--flags_test_missing")));
}

}  // namespace
}  // namespace gpuflow::server
