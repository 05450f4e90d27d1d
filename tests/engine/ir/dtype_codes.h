// Short dtype codes used by the NumPy reference tables
// (numpy_reference_tables.inc): b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 bf f4 f8.
#ifndef GPUFLOW_TESTS_ENGINE_IR_DTYPE_CODES_H_
#define GPUFLOW_TESTS_ENGINE_IR_DTYPE_CODES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine/ir/dtype.h"
#include "gtest/gtest.h"

namespace gpuflow::testing {

// The 12 NumPy dtypes in the tables' row and column order (no bfloat16).
inline const std::vector<DType>& NumpyDTypes() {
  static const std::vector<DType> dtypes = {DType::kBool,    DType::kInt8,    DType::kInt16,
                                            DType::kInt32,   DType::kInt64,   DType::kUInt8,
                                            DType::kUInt16,  DType::kUInt32,  DType::kUInt64,
                                            DType::kFloat16, DType::kFloat32, DType::kFloat64};
  return dtypes;
}

inline DType DTypeFromCode(absl::string_view code) {
  static const std::pair<absl::string_view, DType> kCodes[] = {
      {"b1", DType::kBool},    {"i1", DType::kInt8},     {"i2", DType::kInt16},
      {"i4", DType::kInt32},   {"i8", DType::kInt64},    {"u1", DType::kUInt8},
      {"u2", DType::kUInt16},  {"u4", DType::kUInt32},   {"u8", DType::kUInt64},
      {"f2", DType::kFloat16}, {"bf", DType::kBFloat16}, {"f4", DType::kFloat32},
      {"f8", DType::kFloat64}};
  for (const auto& [c, d] : kCodes) {
    if (c == code) return d;
  }
  ADD_FAILURE() << "unknown dtype code '" << code << "'";
  return DType::kBool;
}

// One table entry: "--" (an error), "OUT" or "OUT:COMPUTE".
struct DTypeEntry {
  bool error = false;
  DType output = DType::kBool;
  DType compute = DType::kBool;
};

inline DTypeEntry ParseEntry(absl::string_view entry) {
  if (entry == "--") return {.error = true};
  std::vector<absl::string_view> parts = absl::StrSplit(entry, ':');
  const DType out = DTypeFromCode(parts[0]);
  return {
      .error = false, .output = out, .compute = parts.size() > 1 ? DTypeFromCode(parts[1]) : out};
}

// A row of space-separated entries.
inline std::vector<DTypeEntry> ParseRow(absl::string_view row) {
  std::vector<DTypeEntry> out;
  for (absl::string_view e : absl::StrSplit(row, ' ', absl::SkipEmpty())) {
    out.push_back(ParseEntry(e));
  }
  return out;
}

// Rows separated by newlines.
inline std::vector<std::vector<DTypeEntry>> ParseTable(absl::string_view table) {
  std::vector<std::vector<DTypeEntry>> out;
  for (absl::string_view row : absl::StrSplit(table, '\n', absl::SkipEmpty())) {
    out.push_back(ParseRow(row));
  }
  return out;
}

}  // namespace gpuflow::testing

#endif  // GPUFLOW_TESTS_ENGINE_IR_DTYPE_CODES_H_
