// Element types of gpuflow arrays: NumPy's, plus bfloat16.
//
//   DType t = DType::kFloat32;
//   ItemSize(t);                    // 4
//   DTypeName(t);                   // "float32"
//   ParseDType("bfloat16").value(); // DType::kBFloat16
//   RealDType(DType::kComplex64);   // DType::kFloat32
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
  kComplex64,   // two float32: real, imaginary (numpy.complex64)
  kComplex128,  // two float64 (numpy.complex128)
};

inline constexpr int kNumDTypes = 15;

enum class DTypeKind : uint8_t { kBool, kSigned, kUnsigned, kFloat, kComplex };

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
inline bool IsComplex(DType dtype) { return KindOf(dtype) == DTypeKind::kComplex; }
// float32 for complex64, float64 for complex128; any other dtype itself.
inline DType RealDType(DType dtype) {
  if (dtype == DType::kComplex64) return DType::kFloat32;
  if (dtype == DType::kComplex128) return DType::kFloat64;
  return dtype;
}
// The complex dtype that holds a float dtype's values: complex128 for
// float64, complex64 for float32, float16 and bfloat16; complex dtypes keep
// theirs. Not for bool and ints (see PromoteDTypes).
inline DType ComplexDType(DType dtype) {
  if (dtype == DType::kFloat64 || dtype == DType::kComplex128) return DType::kComplex128;
  return DType::kComplex64;
}
inline bool IsInteger(DType dtype) {
  return KindOf(dtype) == DTypeKind::kSigned || KindOf(dtype) == DTypeKind::kUnsigned;
}

// Parses a NumPy-style name ("float32", "int8", "bool", "bfloat16").
// INVALID_ARGUMENT naming the bad string otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view name);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_DTYPE_H_
