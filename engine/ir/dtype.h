// Element types of gpuflow arrays: NumPy's, plus bfloat16.
//
//   DType t = DType::kFloat32;
//   ItemSize(t);                    // 4
//   DTypeName(t);                   // "float32"
//   ParseDType("bfloat16").value(); // DType::kBFloat16
//
// Everything here is constexpr-cheap and thread-safe.
#ifndef GPUFLOW_ENGINE_IR_DTYPE_H_
#define GPUFLOW_ENGINE_IR_DTYPE_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuflow {

// The numbering is internal; the wire format has its own enum (proto DType).
enum class DType : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

inline constexpr int kNumDTypes = 13;

enum class DTypeKind : uint8_t { kBool, kSigned, kUnsigned, kFloat };

struct DTypeInfo {
  DType dtype;
  absl::string_view name;  // NumPy's name ("float32"); "bfloat16" for bfloat16.
  int64_t itemsize;        // bytes per element
  DTypeKind kind;
};

// Every dtype, in enum order.
const std::array<DTypeInfo, kNumDTypes>& AllDTypes();

const DTypeInfo& GetDTypeInfo(DType dtype);
inline int64_t ItemSize(DType dtype) { return GetDTypeInfo(dtype).itemsize; }
inline absl::string_view DTypeName(DType dtype) { return GetDTypeInfo(dtype).name; }
inline DTypeKind KindOf(DType dtype) { return GetDTypeInfo(dtype).kind; }
inline bool IsFloat(DType dtype) { return KindOf(dtype) == DTypeKind::kFloat; }
inline bool IsInteger(DType dtype) {
  return KindOf(dtype) == DTypeKind::kSigned || KindOf(dtype) == DTypeKind::kUnsigned;
}

// Parses a NumPy-style name ("float32", "int8", "bool", "bfloat16").
// INVALID_ARGUMENT naming the bad string otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view name);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_DTYPE_H_
