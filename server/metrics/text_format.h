// The Prometheus text exposition format, version 0.0.4:
// https://prometheus.io/docs/instrumenting/exposition_formats/
//
//   # HELP gpuflow_rpc_requests_total RPCs finished, by method and status code.
//   # TYPE gpuflow_rpc_requests_total counter
//   gpuflow_rpc_requests_total{code="OK",method="Execute"} 42
//
// Histograms print cumulative _bucket series (with "le", ending in +Inf),
// then _sum and _count. Values print in the shortest form that reads back
// exactly; infinities as +Inf/-Inf, NaN as NaN. No timestamps.
#ifndef GPUFLOW_SERVER_METRICS_TEXT_FORMAT_H_
#define GPUFLOW_SERVER_METRICS_TEXT_FORMAT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/metrics/registry.h"

namespace gpuflow::metrics {

// The Content-Type of SerializeText's output.
inline constexpr absl::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// Every family in order, each with its # HELP and # TYPE lines.
std::string SerializeText(absl::Span<const MetricFamily> families);

// The pieces, exposed for tests.
// A sample value: "3", "0.25", "1e-06", "+Inf", "NaN".
std::string FormatValue(double value);
// A label value inside quotes: backslash, double quote and newline escaped.
std::string EscapeLabelValue(absl::string_view value);
// A # HELP text: backslash and newline escaped.
std::string EscapeHelp(absl::string_view help);

}  // namespace gpuflow::metrics

#endif  // GPUFLOW_SERVER_METRICS_TEXT_FORMAT_H_
