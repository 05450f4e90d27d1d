#include "server/metrics/registry.h"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr double kInf = std::numeric_limits<double>::infinity();

MATCHER_P2(BucketIs, upper_bound, count, "") {
  return arg.upper_bound == upper_bound && arg.cumulative_count == static_cast<uint64_t>(count);
}

TEST(CounterTest, IncrementsAndIgnoresNegativeAmounts) {
  Counter counter;
  counter.Increment();
  counter.Increment(2.5);
  counter.Increment(-10);
  counter.Increment(std::nan(""));
  EXPECT_EQ(counter.Value(), 3.5);
}

TEST(GaugeTest, SetsIncrementsAndDecrements) {
  Gauge gauge;
  gauge.Set(10);
  gauge.Increment(5);
  gauge.Decrement(20);
  EXPECT_EQ(gauge.Value(), -5);
}

TEST(HistogramTest, CountsIntoCumulativeBucketsWithUpperBoundsInclusive) {
  Histogram histogram({1, 2, 5});
  for (double v : {0.5, 1.0, 1.5, 2.0, 4.0, 7.0}) histogram.Observe(v);
  const Sample sample = histogram.Snapshot();
  EXPECT_THAT(sample.buckets,
              ElementsAre(BucketIs(1, 2), BucketIs(2, 4), BucketIs(5, 5), BucketIs(kInf, 6)));
  EXPECT_EQ(sample.sample_count, 6u);
  EXPECT_EQ(sample.sample_sum, 16.0);
}

TEST(HistogramTest, NanCountsOnlyInTheInfBucket) {
  Histogram histogram({1});
  histogram.Observe(std::nan(""));
  const Sample sample = histogram.Snapshot();
  EXPECT_THAT(sample.buckets, ElementsAre(BucketIs(1, 0), BucketIs(kInf, 1)));
  EXPECT_TRUE(std::isnan(sample.sample_sum));
}

TEST(HistogramTest, ConcurrentObservationsAreAllCounted) {
  Histogram histogram({0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) histogram.Observe(i % 2);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const Sample sample = histogram.Snapshot();
  EXPECT_THAT(sample.buckets, ElementsAre(BucketIs(0.5, 20000), BucketIs(kInf, 40000)));
  EXPECT_EQ(sample.sample_sum, 20000);
}

TEST(HistogramDeathTest, RejectsUnsortedBounds) {
  EXPECT_DEATH(Histogram({2, 1}), "strictly increasing");
}

TEST(ExponentialBucketsTest, MultipliesByTheFactor) {
  EXPECT_THAT(ExponentialBuckets(0.001, 10, 4), ElementsAre(0.001, 0.01, 0.1, 1.0));
}

TEST(FamilyTest, AddReturnsTheSameSeriesForTheSameLabels) {
  Registry registry;
  Family<Counter>& family = registry.AddCounter("requests_total", "Requests.");
  Counter& a = family.Add({{"code", "OK"}, {"method", "Execute"}});
  Counter& b = family.Add({{"method", "Execute"}, {"code", "OK"}});
  Counter& c = family.Add({{"method", "Execute"}, {"code", "NOT_FOUND"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
}

TEST(FamilyDeathTest, RejectsBadLabelNames) {
  Registry registry;
  Family<Counter>& counters = registry.AddCounter("c_total", "");
  EXPECT_DEATH(counters.Add({{"0abc", "x"}}), "invalid label name");
  EXPECT_DEATH(counters.Add({{"__reserved", "x"}}), "invalid label name");
  Family<Histogram>& histograms = registry.AddHistogram("h_seconds", "", {1});
  EXPECT_DEATH(histograms.Add({{"le", "x"}}), "label named 'le'");
}

TEST(RegistryDeathTest, RejectsBadAndDuplicateNames) {
  Registry registry;
  registry.AddGauge("a_bytes", "");
  EXPECT_DEATH(registry.AddCounter("a_bytes", ""), "registered twice");
  EXPECT_DEATH(registry.AddGauge("a-b", ""), "invalid metric name");
  EXPECT_DEATH(registry.AddGauge("", ""), "invalid metric name");
}

TEST(RegistryTest, CollectsFamiliesInRegistrationOrderAndSeriesByLabels) {
  Registry registry;
  Family<Gauge>& gauges = registry.AddGauge("b_bytes", "B.");
  gauges.Add({{"state", "used"}}).Set(3);
  gauges.Add({{"state", "free"}}).Set(4);
  registry.AddCounter("a_total", "A.").Add({}).Increment(2);
  Family<Histogram>& histograms = registry.AddHistogram("c_seconds", "C.", {1});
  histograms.Add({}).Observe(0.5);

  const std::vector<MetricFamily> families = registry.Collect();
  ASSERT_THAT(families, SizeIs(3));
  EXPECT_EQ(families[0].name, "b_bytes");
  EXPECT_EQ(families[0].type, MetricType::kGauge);
  EXPECT_EQ(families[0].help, "B.");
  ASSERT_THAT(families[0].samples, SizeIs(2));
  EXPECT_EQ(families[0].samples[0].labels, (Labels{{"state", "free"}}));
  EXPECT_EQ(families[0].samples[0].value, 4);
  EXPECT_EQ(families[0].samples[1].value, 3);
  EXPECT_EQ(families[1].name, "a_total");
  EXPECT_EQ(families[1].samples[0].value, 2);
  EXPECT_EQ(families[2].type, MetricType::kHistogram);
  EXPECT_EQ(families[2].samples[0].sample_count, 1u);
}

TEST(RegistryTest, LeavesOutFamiliesWithoutSeries) {
  Registry registry;
  registry.AddCounter("unused_total", "");
  registry.AddCallback("nothing_bytes", "", MetricType::kGauge, [](CallbackSink&) {});
  EXPECT_THAT(registry.Collect(), IsEmpty());
}

TEST(RegistryTest, CallbackFamiliesAreReadAtEachCollection) {
  Registry registry;
  int calls = 0;
  registry.AddCallback("pool_bytes", "Pool.", MetricType::kGauge, [&](CallbackSink& out) {
    ++calls;
    out.Add({{"state", "used"}}, 10 * calls);
    out.Add({{"state", "reserved"}}, 100);
  });
  registry.Collect();
  const std::vector<MetricFamily> families = registry.Collect();
  EXPECT_EQ(calls, 2);
  ASSERT_THAT(families, SizeIs(1));
  EXPECT_THAT(families[0].samples,
              ElementsAre(Field(&Sample::value, 100), Field(&Sample::value, 20)));
  EXPECT_EQ(families[0].samples[0].labels, (Labels{{"state", "reserved"}}));
}

TEST(RegistryDeathTest, CallbackFamiliesAreNotHistograms) {
  Registry registry;
  EXPECT_DEATH(registry.AddCallback("h", "", MetricType::kHistogram, [](CallbackSink&) {}),
               "counters or gauges");
}

}  // namespace
}  // namespace gpuflow::metrics
