#include "server/metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpuflow::metrics {

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "gpuflow metrics: %s\n", message.c_str());
  std::abort();
}

bool IsNameStart(char c, bool allow_colon) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_' ||
         (allow_colon && c == ':');
}

bool IsValidName(absl::string_view name, bool allow_colon) {
  if (name.empty() || !IsNameStart(name[0], allow_colon)) return false;
  return std::all_of(name.begin() + 1, name.end(), [&](char c) {
    return IsNameStart(c, allow_colon) || absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

absl::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

namespace internal {

void CheckMetricName(absl::string_view name) {
  if (!IsValidName(name, /*allow_colon=*/true)) {
    Die(absl::StrCat("invalid metric name '", name, "'"));
  }
}

void CheckLabelNames(absl::string_view family, const Labels& labels, bool histogram) {
  for (const auto& [name, value] : labels) {
    if (!IsValidName(name, /*allow_colon=*/false) || absl::StartsWith(name, "__")) {
      Die(absl::StrCat("metric ", family, ": invalid label name '", name, "'"));
    }
    if (histogram && name == "le") {
      Die(absl::StrCat("histogram ", family, " may not have a label named 'le'"));
    }
  }
}

}  // namespace internal

// ---------------------------------------------------------------- metrics

void Counter::Increment(double amount) {
  if (!(amount >= 0)) return;  // negative or NaN
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(BucketBoundaries bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && !(bounds_[i - 1] < bounds_[i]))) {
      Die("histogram bucket bounds must be finite and strictly increasing");
    }
  }
}

void Histogram::Observe(double value) {
  const size_t bucket =
      std::isnan(value)
          ? bounds_.size()
          : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                bounds_.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Sample Histogram::Snapshot() const {
  Sample sample;
  sample.buckets.reserve(bounds_.size() + 1);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    sample.buckets.push_back(
        {i < bounds_.size() ? bounds_[i] : std::numeric_limits<double>::infinity(), cumulative});
  }
  sample.sample_count = cumulative;
  sample.sample_sum = sum_.load(std::memory_order_relaxed);
  return sample;
}

Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    Die("ExponentialBuckets needs start > 0, factor > 1 and count >= 1");
  }
  Histogram::BucketBoundaries bounds;
  bounds.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
  return bounds;
}

// ---------------------------------------------------------------- callbacks

void CallbackSink::Add(const Labels& labels, double value) {
  internal::CheckLabelNames(family_, labels, /*histogram=*/false);
  Sample sample;
  sample.labels = labels;
  sample.value = value;
  samples_.push_back(std::move(sample));
}

class Registry::CallbackFamily final : public internal::FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, MetricType type, CollectCallback collect)
      : FamilyBase(std::move(name), std::move(help), type), collect_(std::move(collect)) {}

  MetricFamily Collect() const override {
    CallbackSink sink(name());
    collect_(sink);
    MetricFamily family{name(), help(), type(), std::move(sink.samples_)};
    std::stable_sort(family.samples.begin(), family.samples.end(),
                     [](const Sample& a, const Sample& b) { return a.labels < b.labels; });
    return family;
  }

 private:
  const CollectCallback collect_;
};

// ---------------------------------------------------------------- registry

void Registry::Register(std::unique_ptr<internal::FamilyBase> family) {
  internal::CheckMetricName(family->name());
  absl::MutexLock lock(&mu_);
  for (const auto& existing : families_) {
    if (existing->name() == family->name()) {
      Die(absl::StrCat("metric ", family->name(), " is registered twice"));
    }
  }
  families_.push_back(std::move(family));
}

Family<Counter>& Registry::AddCounter(std::string name, std::string help) {
  auto family =
      std::make_unique<Family<Counter>>(std::move(name), std::move(help), MetricType::kCounter);
  Family<Counter>& ref = *family;
  Register(std::move(family));
  return ref;
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help) {
  auto family =
      std::make_unique<Family<Gauge>>(std::move(name), std::move(help), MetricType::kGauge);
  Family<Gauge>& ref = *family;
  Register(std::move(family));
  return ref;
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help,
                                          Histogram::BucketBoundaries buckets) {
  Histogram check(buckets);  // aborts on bad bounds now, not at first Add
  auto family = std::make_unique<Family<Histogram>>(std::move(name), std::move(help),
                                                    MetricType::kHistogram, std::move(buckets));
  Family<Histogram>& ref = *family;
  Register(std::move(family));
  return ref;
}

void Registry::AddCallback(std::string name, std::string help, MetricType type,
                           CollectCallback collect) {
  if (type == MetricType::kHistogram) Die("callback families are counters or gauges");
  Register(
      std::make_unique<CallbackFamily>(std::move(name), std::move(help), type, std::move(collect)));
}

std::vector<MetricFamily> Registry::Collect() const {
  std::vector<const internal::FamilyBase*> families;
  {
    absl::MutexLock lock(&mu_);
    families.reserve(families_.size());
    for (const auto& family : families_) families.push_back(family.get());
  }
  // Outside the registry's lock: callbacks may be slow or take their own.
  std::vector<MetricFamily> out;
  out.reserve(families.size());
  for (const internal::FamilyBase* family : families) {
    MetricFamily collected = family->Collect();
    if (!collected.samples.empty()) out.push_back(std::move(collected));
  }
  return out;
}

}  // namespace gpuflow::metrics
