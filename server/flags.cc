#include "server/flags.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpuflow::server {

namespace {
struct Unit {
  absl::string_view suffix;
  int shift;
};
// Longest suffixes first so "GiB" is not read as "B".
constexpr Unit kUnits[] = {
    {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"Ti", 40}, {"Gi", 30}, {"Mi", 20},
    {"Ki", 10},  {"T", 40},   {"G", 30},   {"M", 20},   {"K", 10},  {"B", 0},
};
}  // namespace

absl::StatusOr<int64_t> ParseByteCount(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  int shift = 0;
  for (const Unit& unit : kUnits) {
    if (s.size() > unit.suffix.size() && absl::EndsWith(s, unit.suffix)) {
      shift = unit.shift;
      s.remove_suffix(unit.suffix.size());
      break;
    }
  }
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a byte count (e.g. 4096, 512MiB, 16GiB)"));
  };
  int64_t whole = 0;
  if (absl::SimpleAtoi(s, &whole)) {
    if (whole < 0 || whole > (std::numeric_limits<int64_t>::max() >> shift)) return bad();
    return whole << shift;
  }
  double value = 0;
  if (shift == 0 || !absl::SimpleAtod(s, &value) || !std::isfinite(value) || value < 0) {
    return bad();
  }
  const double bytes = std::ldexp(value, shift);
  if (bytes >= 9.2e18) return bad();
  return static_cast<int64_t>(bytes);
}

std::string FormatByteCount(int64_t bytes) {
  static constexpr Unit kExact[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  for (const Unit& unit : kExact) {
    const int64_t size = int64_t{1} << unit.shift;
    if (bytes != 0 && bytes % size == 0) return absl::StrCat(bytes / size, unit.suffix);
  }
  return absl::StrCat(bytes);
}

bool AbslParseFlag(absl::string_view text, ByteCount* out, std::string* error) {
  absl::StatusOr<int64_t> bytes = ParseByteCount(text);
  if (!bytes.ok()) {
    *error = std::string(bytes.status().message());
    return false;
  }
  out->bytes = *bytes;
  return true;
}

std::string AbslUnparseFlag(ByteCount value) { return FormatByteCount(value.bytes); }

absl::Status ApplyEnvironmentToFlags(const std::vector<std::string>& flag_names) {
  for (const std::string& name : flag_names) {
    const std::string var = absl::StrCat("GPUFLOW_", absl::AsciiStrToUpper(name));
    const char* value = std::getenv(var.c_str());
    if (value == nullptr) continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) return absl::InternalError(absl::StrCat("no flag named --", name));
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(var, "='", value, "': ", error));
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::server
