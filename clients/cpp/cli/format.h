// How the gpuflow CLI prints arrays, server info and benchmark results.
//
//   FormatArray(*Array::FromValues<float>({2, 2}, {1, 2, 3, 4}));
//   // [[1.0, 2.0],
//   //  [3.0, 4.0]]
//
// Pure functions: thread-safe.
#ifndef GPUFLOW_CLIENTS_CPP_CLI_FORMAT_H_
#define GPUFLOW_CLIENTS_CPP_CLI_FORMAT_H_

#include <cstdint>
#include <string>

#include "clients/cpp/array.h"
#include "gpuflow/v1/service.pb.h"

namespace gpuflow::client::cli {

struct ArrayFormatOptions {
  // Arrays of more elements are summarised: each axis longer than
  // 2 * edge_items shows its first and last edge_items entries around "...",
  // as NumPy prints.
  int64_t threshold = 1000;
  int64_t edge_items = 3;
};

// One element as text: the shortest decimal that reads back as the same
// value of its dtype ("0.1" for float16 0.1, not 0.0999755859375); floats
// always show a '.' or exponent ("1.0"), and "nan", "inf", "-inf";
// booleans "true"/"false".
std::string FormatElement(const Array& array, int64_t index);

// The elements as nested brackets, rows on their own lines: "[[1, 2],\n [3, 4]]";
// a 0-d array is its element. The array must be valid (Array::Validate).
std::string FormatArray(const Array& array, const ArrayFormatOptions& options = {});

// "4096" -> "4 KiB", "1536" -> "1.5 KiB", "100" -> "100 B".
std::string FormatBytes(int64_t bytes);

// A few lines: version, backend, device, health, sessions, limits, dtypes, ops.
std::string FormatServerInfo(const v1::ServerInfo& info);

// One line as cupyx.profiler.benchmark prints it:
// "graph               :    CPU:   12.345 us   +/-  0.123 (min:   12.000 / max:   13.000) us"
// followed by "     GPU-0: ..." when the response has device times.
std::string FormatBenchmark(const v1::BenchmarkResponse& response);

// The request's timings on one line ("total 1.234 ms: validate ..., plan ...");
// with per-step lines after it when it has steps.
std::string FormatTimings(const v1::Timings& timings);

}  // namespace gpuflow::client::cli

#endif  // GPUFLOW_CLIENTS_CPP_CLI_FORMAT_H_
