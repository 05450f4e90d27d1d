#include "clients/cpp/cli/format.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::client::cli {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

template <typename T>
std::string One(T value, v1::DType dtype = DTypeOf<T>()) {
  absl::StatusOr<Array> array = Array::FromValues<T>({}, {value}, dtype);
  EXPECT_TRUE(array.ok()) << array.status();
  return FormatElement(*array, 0);
}

TEST(FormatElementTest, FloatsAreShortestAndLookLikeFloats) {
  EXPECT_EQ(One(0.1f), "0.1");
  EXPECT_EQ(One(0.1), "0.1");
  EXPECT_EQ(One(1.0f), "1.0");
  EXPECT_EQ(One(-250.0), "-250.0");
  EXPECT_EQ(One(1e20), "1e+20");
  EXPECT_EQ(One(std::sqrt(2.0f)), "1.4142135");
  EXPECT_EQ(One(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(One(-std::numeric_limits<float>::infinity()), "-inf");
  EXPECT_EQ(One(FloatToHalf(0.1f), v1::DTYPE_FLOAT16), "0.1");
  EXPECT_EQ(One(FloatToHalf(65504.0f), v1::DTYPE_FLOAT16), "65500.0");
  EXPECT_EQ(One(FloatToHalf(std::ldexp(1.0f, -24)), v1::DTYPE_FLOAT16), "6e-08");
  EXPECT_EQ(One(FloatToBFloat16(3.14159f), v1::DTYPE_BFLOAT16), "3.14");
  EXPECT_EQ(One(FloatToBFloat16(1.0f), v1::DTYPE_BFLOAT16), "1.0");
}

TEST(FormatElementTest, IntegersAndBooleans) {
  EXPECT_EQ(One<int8_t>(-128), "-128");
  EXPECT_EQ(One<uint64_t>(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(One<bool>(true), "true");
  EXPECT_EQ(One<uint16_t>(65535), "65535");
}

TEST(FormatArrayTest, NestsRowsAsNumpyDoes) {
  ASSERT_OK_AND_ASSIGN(Array m, Array::FromValues<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(FormatArray(m), "[[1, 2, 3],\n [4, 5, 6]]");
  ASSERT_OK_AND_ASSIGN(Array cube, Array::FromValues<int32_t>({2, 1, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(FormatArray(cube), "[[[1, 2]],\n\n [[3, 4]]]");
  ASSERT_OK_AND_ASSIGN(Array scalar, Array::FromValues<double>({}, {2.5}));
  EXPECT_EQ(FormatArray(scalar), "2.5");
  ASSERT_OK_AND_ASSIGN(Array empty, Array::FromValues<float>({0}, {}));
  EXPECT_EQ(FormatArray(empty), "[]");
  ASSERT_OK_AND_ASSIGN(Array empty_rows, Array::FromValues<float>({2, 0}, {}));
  EXPECT_EQ(FormatArray(empty_rows), "[[],\n []]");
}

TEST(FormatArrayTest, SummarisesLargeArrays) {
  std::vector<int64_t> values(2000);
  std::iota(values.begin(), values.end(), 0);
  ASSERT_OK_AND_ASSIGN(Array big, Array::FromValues<int64_t>({2000}, values));
  EXPECT_EQ(FormatArray(big), "[0, 1, 2, ..., 1997, 1998, 1999]");
  ASSERT_OK_AND_ASSIGN(Array matrix, Array::FromValues<int64_t>({40, 50}, values));
  const std::string text = FormatArray(matrix);
  EXPECT_THAT(text, StartsWith("[[0, 1, 2, ..., 47, 48, 49],\n [50, 51, 52, ..., 97, 98, 99],"));
  EXPECT_THAT(text, HasSubstr(" ...,\n [1850,"));
  const std::string whole = FormatArray(big, {.threshold = 5000});
  EXPECT_THAT(whole, Not(HasSubstr("...")));
  EXPECT_THAT(whole, EndsWith(", 1998, 1999]"));
}

TEST(FormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{4} << 30), "4 GiB");
}

TEST(FormatTest, BenchmarkLineIsCupyxs) {
  v1::BenchmarkResponse response;
  response.set_name("softplus");
  for (double t : {10e-6, 20e-6, 30e-6}) response.add_cpu_seconds(t);
  EXPECT_EQ(FormatBenchmark(response),
            "softplus            :    CPU:    20.000 us   +/-  8.165 (min:    10.000 / max:    "
            "30.000) us");
  response.add_gpu_seconds(5e-6);
  EXPECT_THAT(FormatBenchmark(response), HasSubstr(" us     GPU-0:     5.000 us"));
  response.clear_cpu_seconds();
  EXPECT_THAT(FormatBenchmark(response), HasSubstr("no timed runs"));
}

TEST(FormatTest, TimingsListSteps) {
  v1::Timings timings;
  timings.set_total_seconds(0.0015);
  timings.set_plan_cache_hit(true);
  v1::StepTiming* step = timings.add_steps();
  step->set_kind("elementwise");
  step->set_description("fused elementwise [mul, add]");
  step->set_host_seconds(0.001);
  const std::string text = FormatTimings(timings);
  EXPECT_THAT(text, StartsWith("total 1.500 ms: validate 0.000 ms, plan 0.000 ms (cached)"));
  EXPECT_THAT(text,
              HasSubstr("\n  step 0 elementwise: fused elementwise [mul, add]: host 1.000 ms"));
}

TEST(FormatTest, ServerInfoNamesTheEssentials) {
  v1::ServerInfo info;
  info.set_version("0.1.0");
  info.set_backend("cpu");
  info.mutable_limits()->set_max_chunk_bytes(4 << 20);
  info.add_dtypes(v1::DTYPE_BFLOAT16);
  info.add_ops()->set_name("add");
  const std::string text = FormatServerInfo(info);
  EXPECT_THAT(text, HasSubstr("backend:   cpu\n"));
  EXPECT_THAT(text, HasSubstr("chunk 4 MiB"));
  EXPECT_THAT(text, HasSubstr("dtypes:    bfloat16\n"));
  EXPECT_THAT(text, HasSubstr("ops (1): add\n"));
  EXPECT_THAT(text, Not(HasSubstr("devices:")));  // one device: nothing more to say
}

TEST(FormatTest, ServerInfoListsSeveralDevices) {
  v1::ServerInfo info;
  info.set_backend("cuda");
  for (int id : {0, 3}) {
    v1::DeviceInfo* device = info.add_devices();
    device->set_id(id);
    device->set_description(absl::StrCat("GPU ", id));
    device->set_healthy(id == 0);
    device->set_sessions(id + 1);
    device->set_bytes_held(int64_t{2} << 20);
  }
  const std::string text = FormatServerInfo(info);
  EXPECT_THAT(text, HasSubstr("devices:   2\n"
                              "  0: GPU 0, healthy, 1 session(s) holding 2 MiB\n"
                              "  3: GPU 3, UNHEALTHY, 4 session(s) holding 2 MiB\n"));
}

}  // namespace
}  // namespace gpuflow::client::cli
