#include "server/metrics/text_format.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/registry.h"

namespace gpuflow::metrics {
namespace {

TEST(FormatValueTest, PrintsShortestExactForms) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-7), "-7");
  EXPECT_EQ(FormatValue(1e6), "1000000");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(0.0001), "0.0001");
  EXPECT_EQ(FormatValue(2.5e-6), "2.5e-06");
  EXPECT_EQ(FormatValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatValue(1e20), "1e+20");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(EscapeTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\n"),
            R"(a\\b\"c\n)");
  EXPECT_EQ(EscapeLabelValue("NVIDIA H200 (sm_90)"), "NVIDIA H200 (sm_90)");
  // Quotes need no escape in HELP.
  EXPECT_EQ(EscapeHelp("say \"hi\"\\\nnow"), R"(say "hi"\\\nnow)");
}

TEST(SerializeTextTest, CountersAndGauges) {
  Registry registry;
  Family<Counter>& requests = registry.AddCounter("app_requests_total", "Requests served.");
  requests.Add({{"method", "Execute"}, {"code", "OK"}}).Increment(42);
  requests.Add({{"method", "Execute"}, {"code", "NOT_FOUND"}}).Increment();
  registry.AddGauge("app_build_info", "Build.\nSecond line.")
      .Add({{"device", R"(GPU "0")"}})
      .Set(1);
  registry.AddGauge("app_up", "Up.").Add({}).Set(1);
  EXPECT_EQ(SerializeText(registry.Collect()),
            "# HELP app_requests_total Requests served.\n"
            "# TYPE app_requests_total counter\n"
            "app_requests_total{code=\"NOT_FOUND\",method=\"Execute\"} 1\n"
            "app_requests_total{code=\"OK\",method=\"Execute\"} 42\n"
            "# HELP app_build_info Build.\\nSecond line.\n"
            "# TYPE app_build_info gauge\n"
            "app_build_info{device=\"GPU \\\"0\\\"\"} 1\n"
            "# HELP app_up Up.\n"
            "# TYPE app_up gauge\n"
            "app_up 1\n");
}

TEST(SerializeTextTest, HistogramsHaveCumulativeBucketsInfSumAndCount) {
  Registry registry;
  Family<Histogram>& family = registry.AddHistogram("app_seconds", "Latency.", {0.005, 0.5});
  Histogram& execute = family.Add({{"method", "Execute"}});
  execute.Observe(0.001);
  execute.Observe(0.25);
  execute.Observe(2);
  EXPECT_EQ(SerializeText(registry.Collect()),
            "# HELP app_seconds Latency.\n"
            "# TYPE app_seconds histogram\n"
            "app_seconds_bucket{method=\"Execute\",le=\"0.005\"} 1\n"
            "app_seconds_bucket{method=\"Execute\",le=\"0.5\"} 2\n"
            "app_seconds_bucket{method=\"Execute\",le=\"+Inf\"} 3\n"
            "app_seconds_sum{method=\"Execute\"} 2.251\n"
            "app_seconds_count{method=\"Execute\"} 3\n");
}

TEST(SerializeTextTest, UnlabelledHistogram) {
  Registry registry;
  registry.AddHistogram("compile_seconds", "NVRTC.", {1}).Add({}).Observe(0.5);
  EXPECT_EQ(SerializeText(registry.Collect()),
            "# HELP compile_seconds NVRTC.\n"
            "# TYPE compile_seconds histogram\n"
            "compile_seconds_bucket{le=\"1\"} 1\n"
            "compile_seconds_bucket{le=\"+Inf\"} 1\n"
            "compile_seconds_sum 0.5\n"
            "compile_seconds_count 1\n");
}

TEST(SerializeTextTest, NothingForNoFamilies) { EXPECT_EQ(SerializeText({}), ""); }

}  // namespace
}  // namespace gpuflow::metrics
