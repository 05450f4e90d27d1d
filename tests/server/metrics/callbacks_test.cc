#include "server/metrics/callbacks.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/endpoint.h"

namespace gpuflow::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CallbacksTest, EachScrapeReadsTheCallbacksAfresh) {
  auto callbacks = std::make_shared<Callbacks>();
  int queued = 3;
  callbacks->Add("test_queue_length", "Queued jobs.", prometheus::MetricType::Gauge,
                 [&](CallbackSink& out) { out.Add(queued); });
  callbacks->Add("test_lookups_total", "Lookups by result.", prometheus::MetricType::Counter,
                 [&](CallbackSink& out) {
                   out.Add({{"result", "hit"}}, 5);
                   out.Add({{"result", "miss"}}, 1);
                 });
  std::string text = Scrape({callbacks});
  EXPECT_THAT(text, HasSubstr("# HELP test_queue_length Queued jobs.\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE test_queue_length gauge\ntest_queue_length 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE test_lookups_total counter\n"));
  EXPECT_THAT(text, HasSubstr("test_lookups_total{result=\"hit\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("test_lookups_total{result=\"miss\"} 1\n"));
  queued = 7;
  EXPECT_THAT(Scrape({callbacks}), HasSubstr("test_queue_length 7\n"));
}

TEST(CallbacksTest, AFamilyWithoutSamplesIsLeftOut) {
  auto callbacks = std::make_shared<Callbacks>();
  bool known = false;
  callbacks->Add("test_pool_bytes", "Pool bytes, when there is a pool.",
                 prometheus::MetricType::Gauge, [&](CallbackSink& out) {
                   if (known) out.Add({{"state", "used"}}, 10);
                 });
  EXPECT_THAT(Scrape({callbacks}), Not(HasSubstr("test_pool_bytes")));
  known = true;
  EXPECT_THAT(Scrape({callbacks}), HasSubstr("test_pool_bytes{state=\"used\"} 10\n"));
}

TEST(CallbacksDeathTest, NamesAreCheckedAndFamiliesAreAddedOnce) {
  auto callbacks = std::make_shared<Callbacks>();
  auto nothing = [](CallbackSink&) {};
  EXPECT_DEATH(callbacks->Add("bad name", "", prometheus::MetricType::Gauge, nothing),
               "invalid metric name 'bad name'");
  EXPECT_DEATH(callbacks->Add("test_h", "", prometheus::MetricType::Histogram, nothing),
               "must be a counter or a gauge");
  callbacks->Add("test_once", "", prometheus::MetricType::Gauge, nothing);
  EXPECT_DEATH(callbacks->Add("test_once", "", prometheus::MetricType::Gauge, nothing),
               "added twice");
  callbacks->Add("test_labels", "", prometheus::MetricType::Gauge, [](CallbackSink& out) {
    out.Add({{"bad-label", "x"}}, 1);
  });
  EXPECT_DEATH(Scrape({callbacks}), "invalid label name 'bad-label' in test_labels");
}

}  // namespace
}  // namespace gpuflow::metrics
