#include "clients/cpp/cli/format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace gpuflow::client::cli {
namespace {

template <typename T>
T Load(const Array& array, int64_t index) {
  T value;
  std::memcpy(&value, array.data.data() + index * sizeof(T), sizeof(T));
  return value;
}

// Floats always look like floats: "1" -> "1.0".
std::string MarkFloat(std::string text) {
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // 'n': nan, inf
  return text;
}

std::string NonFinite(double value) {
  if (std::isnan(value)) return "nan";
  return value < 0 ? "-inf" : "inf";
}

template <typename T>
std::string ShortestFloat(T value) {
  if (!std::isfinite(value)) return NonFinite(value);
  char buffer[64];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return MarkFloat(std::string(buffer, result.ptr));
}

// The shortest "%.*g" that converts back to the same 16-bit word.
std::string ShortestHalfLike(uint16_t bits, float (*to_float)(uint16_t),
                             uint16_t (*from_float)(float)) {
  const float value = to_float(bits);
  if (!std::isfinite(value)) return NonFinite(value);
  char buffer[64];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, static_cast<double>(value));
    if (from_float(std::strtof(buffer, nullptr)) == bits) break;
  }
  // Printed again as the shortest double it is, which picks fixed or
  // exponent notation as for the other dtypes ("65500", not "6.55e+04").
  return ShortestFloat(std::strtod(buffer, nullptr));
}

// "(1.0+2.0j)", as Python prints a complex (with float-looking parts).
template <typename T>
std::string ShortestComplex(T real, T imag) {
  std::string im = ShortestFloat(imag);
  if (im[0] != '-') im = absl::StrCat("+", im);
  return absl::StrCat("(", ShortestFloat(real), im, "j)");
}

std::string Seconds(double seconds) { return absl::StrFormat("%.3f ms", seconds * 1e3); }

absl::Duration FromProto(const google::protobuf::Duration& duration) {
  return absl::Seconds(duration.seconds()) + absl::Nanoseconds(duration.nanos());
}

// Mean, population standard deviation, min and max, in microseconds.
std::string TimesLine(absl::string_view device, const google::protobuf::RepeatedField<double>& t) {
  double sum = 0, min = t[0], max = t[0];
  for (double x : t) {
    sum += x;
    min = std::min(min, x);
    max = std::max(max, x);
  }
  const double mean = sum / t.size();
  double variance = 0;
  for (double x : t) variance += (x - mean) * (x - mean);
  variance /= t.size();
  std::string line = absl::StrFormat("    %s: %9.3f us", device, mean * 1e6);
  if (t.size() > 1) {
    absl::StrAppendFormat(&line, "   +/- %6.3f (min: %9.3f / max: %9.3f) us",
                          std::sqrt(variance) * 1e6, min * 1e6, max * 1e6);
  }
  return line;
}

void AppendArray(const Array& array, const std::vector<int64_t>& strides, size_t dim,
                 int64_t offset, bool summarise, int64_t edge_items, std::string& out) {
  const int64_t n = array.shape[dim];
  const bool last = dim + 1 == array.shape.size();
  const std::string separator =
      last ? ", "
           : absl::StrCat(",", std::string(array.shape.size() - dim - 1, '\n'),
                          std::string(dim + 1, ' '));
  out += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) out += separator;
    if (summarise && n > 2 * edge_items && i == edge_items) {
      out += "...";
      i = n - edge_items - 1;
      continue;
    }
    const int64_t at = offset + i * strides[dim];
    if (last) {
      out += FormatElement(array, at);
    } else {
      AppendArray(array, strides, dim + 1, at, summarise, edge_items, out);
    }
  }
  out += ']';
}

}  // namespace

std::string FormatElement(const Array& array, int64_t index) {
  switch (array.dtype) {
    case v1::DTYPE_BOOL:
      return Load<uint8_t>(array, index) != 0 ? "true" : "false";
    case v1::DTYPE_INT8:
      return absl::StrCat(Load<int8_t>(array, index));
    case v1::DTYPE_INT16:
      return absl::StrCat(Load<int16_t>(array, index));
    case v1::DTYPE_INT32:
      return absl::StrCat(Load<int32_t>(array, index));
    case v1::DTYPE_INT64:
      return absl::StrCat(Load<int64_t>(array, index));
    case v1::DTYPE_UINT8:
      return absl::StrCat(Load<uint8_t>(array, index));
    case v1::DTYPE_UINT16:
      return absl::StrCat(Load<uint16_t>(array, index));
    case v1::DTYPE_UINT32:
      return absl::StrCat(Load<uint32_t>(array, index));
    case v1::DTYPE_UINT64:
      return absl::StrCat(Load<uint64_t>(array, index));
    case v1::DTYPE_FLOAT16:
      return ShortestHalfLike(Load<uint16_t>(array, index), HalfToFloat, FloatToHalf);
    case v1::DTYPE_BFLOAT16:
      return ShortestHalfLike(Load<uint16_t>(array, index), BFloat16ToFloat, FloatToBFloat16);
    case v1::DTYPE_FLOAT32:
      return ShortestFloat(Load<float>(array, index));
    case v1::DTYPE_FLOAT64:
      return ShortestFloat(Load<double>(array, index));
    case v1::DTYPE_COMPLEX64:
      return ShortestComplex(Load<float>(array, 2 * index), Load<float>(array, 2 * index + 1));
    case v1::DTYPE_COMPLEX128:
      return ShortestComplex(Load<double>(array, 2 * index), Load<double>(array, 2 * index + 1));
    default:
      return "?";
  }
}

std::string FormatArray(const Array& array, const ArrayFormatOptions& options) {
  if (array.shape.empty()) return FormatElement(array, 0);
  std::vector<int64_t> strides(array.shape.size(), 1);
  for (size_t i = array.shape.size() - 1; i > 0; --i) {
    strides[i - 1] = strides[i] * array.shape[i];
  }
  std::string out;
  AppendArray(array, strides, 0, 0, array.num_elements() > options.threshold, options.edge_items,
              out);
  return out;
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.4g %s", value, kUnits[unit]);
}

std::string FormatServerInfo(const v1::ServerInfo& info) {
  const v1::Limits& limits = info.limits();
  std::vector<std::string> dtypes;
  for (int dtype : info.dtypes()) dtypes.emplace_back(DTypeName(static_cast<v1::DType>(dtype)));
  std::vector<std::string> ops;
  for (const v1::OpInfo& op : info.ops()) ops.push_back(op.name());
  std::string out;
  absl::StrAppend(&out, "version:   ", info.version(), "\n");
  absl::StrAppend(&out, "backend:   ", info.backend(), "\n");
  absl::StrAppend(&out, "device:    ", info.device(), "\n");
  absl::StrAppend(&out, "healthy:   ", info.healthy() ? "yes" : "no", "\n");
  // A server driving several devices (--devices) lists each.
  if (info.devices_size() > 1) {
    absl::StrAppend(&out, "devices:   ", info.devices_size(), "\n");
    for (const v1::DeviceInfo& device : info.devices()) {
      absl::StrAppend(&out, "  ", device.id(), ": ", device.description(), ", ",
                      device.healthy() ? "healthy" : "UNHEALTHY", ", ", device.sessions(),
                      " session(s) holding ", FormatBytes(device.bytes_held()), "\n");
    }
  }
  if (!info.tenant().empty()) absl::StrAppend(&out, "tenant:    ", info.tenant(), "\n");
  absl::StrAppend(&out, "sessions:  ", info.active_sessions(), " open, at most ",
                  limits.max_sessions(), "\n");
  absl::StrAppend(&out, "quota:     ", FormatBytes(limits.default_session_memory_limit_bytes()),
                  " per session by default, at most ",
                  FormatBytes(limits.max_session_memory_limit_bytes()), "\n");
  absl::StrAppend(&out,
                  "idle TTL:  ", absl::FormatDuration(FromProto(limits.default_session_idle_ttl())),
                  " by default, at most ",
                  absl::FormatDuration(FromProto(limits.max_session_idle_ttl())), "\n");
  absl::StrAppend(&out, "limits:    array ", FormatBytes(limits.max_array_bytes()), ", chunk ",
                  FormatBytes(limits.max_chunk_bytes()), ", inline ",
                  FormatBytes(limits.max_inline_bytes()), ", message ",
                  FormatBytes(limits.max_message_bytes()), ", ", limits.max_graph_nodes(),
                  " graph nodes\n");
  absl::StrAppend(&out, "dtypes:    ", absl::StrJoin(dtypes, " "), "\n");
  absl::StrAppend(&out, "ops (", ops.size(), "): ", absl::StrJoin(ops, " "), "\n");
  return out;
}

std::string FormatBenchmark(const v1::BenchmarkResponse& response) {
  const std::string name = response.name().empty() ? "graph" : response.name();
  std::string line = absl::StrFormat("%-20s:", name);
  if (response.cpu_seconds().empty()) return line + "    no timed runs";
  line += TimesLine("CPU", response.cpu_seconds());
  if (!response.gpu_seconds().empty()) {
    absl::StrAppend(&line, " ",
                    TimesLine(absl::StrCat("GPU-", response.device()), response.gpu_seconds()));
  }
  return line;
}

std::string FormatTimings(const v1::Timings& timings) {
  std::string out = absl::StrCat(
      "total ", Seconds(timings.total_seconds()), ": validate ",
      Seconds(timings.validate_seconds()), ", plan ", Seconds(timings.plan_seconds()),
      timings.plan_cache_hit() ? " (cached)" : "", ", compile ", Seconds(timings.compile_seconds()),
      ", run ", Seconds(timings.run_seconds()), ", transfer ", Seconds(timings.transfer_seconds()));
  if (timings.has_gpu_seconds()) absl::StrAppend(&out, ", gpu ", Seconds(timings.gpu_seconds()));
  if (timings.kernels_compiled() > 0 || timings.kernel_cache_hits() > 0) {
    absl::StrAppend(&out, "; kernels: ", timings.kernels_compiled(), " compiled, ",
                    timings.kernel_cache_hits(), " cached");
  }
  for (const v1::StepTiming& step : timings.steps()) {
    absl::StrAppend(&out, "\n  step ", step.index(), " ", step.kind(), ": ", step.description(),
                    ": host ", Seconds(step.host_seconds()));
    if (step.has_gpu_seconds()) absl::StrAppend(&out, ", gpu ", Seconds(step.gpu_seconds()));
  }
  return out;
}

}  // namespace gpuflow::client::cli
