#include "server/metrics/callbacks.h"

#include <cstdio>
#include <cstdlib>

#include "prometheus/check_names.h"

namespace gpuflow::metrics {

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "gpuflow metrics: %s\n", what.c_str());
  std::abort();
}

}  // namespace

void CallbackSink::Add(const prometheus::Labels& labels, double value) {
  prometheus::ClientMetric sample;
  for (const auto& [name, label_value] : labels) {
    if (!prometheus::CheckLabelName(name)) Die("invalid label name '" + name + "' in " + family_);
    sample.label.push_back({name, label_value});
  }
  if (type_ == prometheus::MetricType::Counter) {
    sample.counter.value = value;
  } else {
    sample.gauge.value = value;
  }
  samples_.push_back(std::move(sample));
}

void Callbacks::Add(std::string name, std::string help, prometheus::MetricType type,
                    CollectCallback collect) {
  if (!prometheus::CheckMetricName(name)) Die("invalid metric name '" + name + "'");
  if (type != prometheus::MetricType::Counter && type != prometheus::MetricType::Gauge) {
    Die("callback family " + name + " must be a counter or a gauge");
  }
  absl::MutexLock lock(&mu_);
  for (const Family& f : families_) {
    if (f.name == name) Die("metric family " + name + " added twice");
  }
  families_.push_back({std::move(name), std::move(help), type, std::move(collect)});
}

std::vector<prometheus::MetricFamily> Callbacks::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  absl::MutexLock lock(&mu_);
  for (const Family& f : families_) {
    CallbackSink sink(f.name, f.type);
    f.collect(sink);
    if (sink.samples_.empty()) continue;
    prometheus::MetricFamily family;
    family.name = f.name;
    family.help = f.help;
    family.type = f.type;
    family.metric = std::move(sink.samples_);
    out.push_back(std::move(family));
  }
  return out;
}

}  // namespace gpuflow::metrics
