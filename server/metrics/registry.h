// A small Prometheus metrics registry modelled on prometheus-cpp's API
// (prometheus-cpp is not packaged for Debian 12): metric families with label
// sets, counters, gauges, histograms with fixed buckets, and callback
// families read at scrape time.
//
//   metrics::Registry registry;
//   metrics::Family<metrics::Counter>& requests =
//       registry.AddCounter("app_requests_total", "Requests served");
//   metrics::Counter& ok = requests.Add({{"code", "OK"}});   // once; keep the reference
//   ok.Increment();                                          // hot path: one atomic add
//   registry.AddCallback("app_queue_length", "Queued jobs", metrics::MetricType::kGauge,
//                        [&](metrics::CallbackSink& out) { out.Add(queue.size()); });
//   std::string text = metrics::SerializeText(registry.Collect());  // text_format.h
//
// Thread-safety: every method may be called from any thread. Counter, Gauge
// and Histogram updates are lock-free; Family::Add takes the family's mutex,
// so look a labelled child up once and keep the reference (children live as
// long as the registry). Collect() may run concurrently with updates; a
// histogram's snapshot is self-consistent (its count is the sum of its
// buckets).
//
// Names are constants in code, so an invalid metric or label name, a
// duplicate family or a histogram label named "le" is a programming error:
// it aborts with a message rather than returning a status.
#ifndef GPUFLOW_SERVER_METRICS_REGISTRY_H_
#define GPUFLOW_SERVER_METRICS_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gpuflow::metrics {

// Label name -> value. Sorted by name, which is the order they print in.
using Labels = std::map<std::string, std::string>;

enum class MetricType { kCounter, kGauge, kHistogram };
// "counter", "gauge", "histogram" (the # TYPE word).
absl::string_view MetricTypeName(MetricType type);

// ---------------------------------------------------------------- snapshots

// One cumulative histogram bucket: observations <= upper_bound.
struct BucketSample {
  double upper_bound = 0;  // +infinity for the last bucket
  uint64_t cumulative_count = 0;
};

// One labelled series of a family at collection time (prometheus-cpp's
// ClientMetric).
struct Sample {
  Labels labels;
  // Counters and gauges.
  double value = 0;
  // Histograms: cumulative buckets ending with +Inf, the count (equal to the
  // +Inf bucket) and the sum of all observations.
  std::vector<BucketSample> buckets;
  uint64_t sample_count = 0;
  double sample_sum = 0;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  // Sorted by labels.
  std::vector<Sample> samples;
};

// Anything a metrics endpoint can collect from.
class Collectable {
 public:
  virtual ~Collectable() = default;
  virtual std::vector<MetricFamily> Collect() const = 0;
};

// ---------------------------------------------------------------- metrics

// A monotonically increasing value.
class Counter {
 public:
  // Adds `amount`; negative amounts are ignored (a counter never goes down).
  void Increment(double amount = 1);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Increment(double amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void Decrement(double amount = 1) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations into buckets with fixed upper bounds, plus their sum.
class Histogram {
 public:
  // Finite upper bounds in strictly increasing order (aborts otherwise); the
  // +Inf bucket is implicit.
  using BucketBoundaries = std::vector<double>;

  explicit Histogram(BucketBoundaries bounds);

  // An observation equal to a bound counts in that bound's bucket (Prometheus'
  // "le"). NaN counts only in +Inf (and makes the sum NaN).
  void Observe(double value);

  // Cumulative buckets, count and sum (labels left empty).
  Sample Snapshot() const;

  const BucketBoundaries& bounds() const { return bounds_; }

 private:
  const BucketBoundaries bounds_;
  // Per bucket, not cumulative; the last one is +Inf.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// `count` bounds start, start*factor, start*factor^2, ...
Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count);

// ---------------------------------------------------------------- families

namespace internal {

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type)
      : name_(std::move(name)), help_(std::move(help)), type_(type) {}
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  virtual MetricFamily Collect() const = 0;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
};

// Abort unless the metric name (or every label name) is valid.
void CheckMetricName(absl::string_view name);
void CheckLabelNames(absl::string_view family, const Labels& labels, bool histogram);

}  // namespace internal

// All series of one metric, one per label set. T is Counter, Gauge or
// Histogram.
template <typename T>
class Family final : public internal::FamilyBase {
 public:
  // Use Registry::AddCounter/AddGauge/AddHistogram.
  Family(std::string name, std::string help, MetricType type,
         Histogram::BucketBoundaries buckets = {})
      : FamilyBase(std::move(name), std::move(help), type), buckets_(std::move(buckets)) {}

  // The series with these labels, created (at zero) on first use. The
  // reference stays valid as long as the family (the registry) lives.
  T& Add(const Labels& labels) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = children_.find(labels);
    if (it == children_.end()) {
      internal::CheckLabelNames(name(), labels, type() == MetricType::kHistogram);
      it = children_.emplace(labels, MakeChild()).first;
    }
    return *it->second;
  }

  MetricFamily Collect() const override ABSL_LOCKS_EXCLUDED(mu_) {
    MetricFamily family{name(), help(), type(), {}};
    absl::MutexLock lock(&mu_);
    family.samples.reserve(children_.size());
    for (const auto& [labels, child] : children_) {
      Sample sample = SampleOf(*child);
      sample.labels = labels;
      family.samples.push_back(std::move(sample));
    }
    return family;
  }

 private:
  std::unique_ptr<T> MakeChild() const;
  static Sample SampleOf(const T& child);

  const Histogram::BucketBoundaries buckets_;
  mutable absl::Mutex mu_;
  std::map<Labels, std::unique_ptr<T>> children_ ABSL_GUARDED_BY(mu_);
};

template <>
inline std::unique_ptr<Counter> Family<Counter>::MakeChild() const {
  return std::make_unique<Counter>();
}
template <>
inline std::unique_ptr<Gauge> Family<Gauge>::MakeChild() const {
  return std::make_unique<Gauge>();
}
template <>
inline std::unique_ptr<Histogram> Family<Histogram>::MakeChild() const {
  return std::make_unique<Histogram>(buckets_);
}
template <>
inline Sample Family<Counter>::SampleOf(const Counter& child) {
  Sample sample;
  sample.value = child.Value();
  return sample;
}
template <>
inline Sample Family<Gauge>::SampleOf(const Gauge& child) {
  Sample sample;
  sample.value = child.Value();
  return sample;
}
template <>
inline Sample Family<Histogram>::SampleOf(const Histogram& child) {
  return child.Snapshot();
}

// Receives the samples of a callback family during one collection.
class CallbackSink {
 public:
  // One series. Label names must be valid (aborts otherwise); give each
  // label set once.
  void Add(const Labels& labels, double value);
  void Add(double value) { Add({}, value); }

 private:
  friend class Registry;
  explicit CallbackSink(const std::string& family) : family_(family) {}
  const std::string& family_;
  std::vector<Sample> samples_;
};

// Called on every collection, on the collecting thread; must be thread-safe
// and quick (it runs while Prometheus waits for the scrape).
using CollectCallback = std::function<void(CallbackSink&)>;

// Owns metric families and collects them in registration order.
class Registry final : public Collectable {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The new family; aborts when the name is invalid or already registered.
  // References stay valid as long as the registry.
  Family<Counter>& AddCounter(std::string name, std::string help);
  Family<Gauge>& AddGauge(std::string name, std::string help);
  // Every series of the family uses `buckets` (see Histogram).
  Family<Histogram>& AddHistogram(std::string name, std::string help,
                                  Histogram::BucketBoundaries buckets);

  // A family whose series come from `collect` at each collection: values
  // that live elsewhere (pool bytes, open sessions, cache counters). `type`
  // is kCounter or kGauge. Whatever `collect` reads must outlive every later
  // Collect() call.
  void AddCallback(std::string name, std::string help, MetricType type, CollectCallback collect);

  // Families with no series are left out.
  std::vector<MetricFamily> Collect() const override;

 private:
  class CallbackFamily;
  void Register(std::unique_ptr<internal::FamilyBase> family);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<internal::FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuflow::metrics

#endif  // GPUFLOW_SERVER_METRICS_REGISTRY_H_
