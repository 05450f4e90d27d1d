// Metric families whose samples are read from their owners at each scrape
// (open sessions, pool bytes, cache counters) instead of being mirrored into
// gauges that could drift: a prometheus::Collectable, registered with the
// endpoint beside the prometheus::Registry of ordinary metrics.
//
//   auto callbacks = std::make_shared<metrics::Callbacks>();
//   callbacks->Add("app_queue_length", "Queued jobs.", prometheus::MetricType::Gauge,
//                  [&](metrics::CallbackSink& out) { out.Add(queue.size()); });
//
// Names are constants in code: an invalid metric or label name, or a family
// added twice, is a programming error and aborts with a message. Thread-safe;
// each callback runs on the scraping thread and must be quick (no device
// calls: poll those on a thread of their own, as ServerMetrics does).
#ifndef GPUFLOW_SERVER_METRICS_CALLBACKS_H_
#define GPUFLOW_SERVER_METRICS_CALLBACKS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/client_metric.h"
#include "prometheus/collectable.h"
#include "prometheus/labels.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace gpuflow::metrics {

// Receives the samples of one callback family during one scrape.
class CallbackSink {
 public:
  // One series; give each label set once.
  void Add(const prometheus::Labels& labels, double value);
  void Add(double value) { Add({}, value); }

 private:
  friend class Callbacks;
  CallbackSink(const std::string& family, prometheus::MetricType type)
      : family_(family), type_(type) {}
  const std::string& family_;
  const prometheus::MetricType type_;
  std::vector<prometheus::ClientMetric> samples_;
};

using CollectCallback = std::function<void(CallbackSink&)>;

class Callbacks final : public prometheus::Collectable {
 public:
  // `type` is Counter or Gauge. Whatever `collect` reads must outlive every
  // later scrape.
  void Add(std::string name, std::string help, prometheus::MetricType type, CollectCallback collect)
      ABSL_LOCKS_EXCLUDED(mu_);

  // One family per callback, in the order they were added; a family with
  // no samples this time is left out.
  std::vector<prometheus::MetricFamily> Collect() const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Family {
    std::string name;
    std::string help;
    prometheus::MetricType type;
    CollectCallback collect;
  };
  mutable absl::Mutex mu_;
  std::vector<Family> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuflow::metrics

#endif  // GPUFLOW_SERVER_METRICS_CALLBACKS_H_
