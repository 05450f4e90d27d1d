#include "server/metrics/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace gpuflow::metrics {

namespace {

// `{a="x",b="y"` plus `extra` (already formatted, e.g. `le="0.5"`), then `}`;
// nothing at all when there are no labels.
void AppendLabels(const Labels& labels, absl::string_view extra, std::string& out) {
  if (labels.empty() && extra.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    absl::StrAppend(&out, name, "=\"", EscapeLabelValue(value), "\"");
  }
  if (!extra.empty()) {
    if (!first) out += ',';
    absl::StrAppend(&out, extra);
  }
  out += '}';
}

void AppendSeries(absl::string_view name, const Labels& labels, absl::string_view extra,
                  double value, std::string& out) {
  absl::StrAppend(&out, name);
  AppendLabels(labels, extra, out);
  absl::StrAppend(&out, " ", FormatValue(value), "\n");
}

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Whole numbers (counts, bytes) as integers: "1000000", not "1e+06".
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buffer[32];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::general);
  return std::string(buffer, result.ptr);
}

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeHelp(absl::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string SerializeText(absl::Span<const MetricFamily> families) {
  std::string out;
  for (const MetricFamily& family : families) {
    absl::StrAppend(&out, "# HELP ", family.name, " ", EscapeHelp(family.help), "\n");
    absl::StrAppend(&out, "# TYPE ", family.name, " ", MetricTypeName(family.type), "\n");
    for (const Sample& sample : family.samples) {
      if (family.type != MetricType::kHistogram) {
        AppendSeries(family.name, sample.labels, "", sample.value, out);
        continue;
      }
      const std::string bucket_name = absl::StrCat(family.name, "_bucket");
      for (const BucketSample& bucket : sample.buckets) {
        AppendSeries(bucket_name, sample.labels,
                     absl::StrCat("le=\"", FormatValue(bucket.upper_bound), "\""),
                     static_cast<double>(bucket.cumulative_count), out);
      }
      AppendSeries(absl::StrCat(family.name, "_sum"), sample.labels, "", sample.sample_sum, out);
      AppendSeries(absl::StrCat(family.name, "_count"), sample.labels, "",
                   static_cast<double>(sample.sample_count), out);
    }
  }
  return out;
}

}  // namespace gpuflow::metrics
