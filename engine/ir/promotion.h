// NumPy 2 type promotion (NEP 50), extended with bfloat16 as docs/ops.md
// says. Every op's dtype rule in the registry is built from these.
//
//   PromoteDTypes(DType::kInt8, DType::kUInt8);                       // kInt16
//   PromoteTypes({{DType::kInt8, shape}, WeakIntType()}).value();     // kInt8
//   PromoteTypes({{DType::kInt8, shape}, WeakFloatType()}).value();   // kFloat64
//   FloatResultDType(DType::kInt16);                                  // kFloat32
//   CheckIntFitsDType(int64_t{300}, DType::kInt8);
//       // INVALID_ARGUMENT "Python integer 300 out of bounds for int8"
//
// Pure functions; thread-safe.
#ifndef GPUFLOW_ENGINE_IR_PROMOTION_H_
#define GPUFLOW_ENGINE_IR_PROMOTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/ir/dtype.h"
#include "engine/ir/op_registry.h"

namespace gpuflow {

// The promotion of two strong dtypes: numpy.promote_types for NumPy's dtypes
// (int64 + uint64 -> float64, int8 + float16 -> float16, ...); bfloat16
// promotes with float16 to float32, keeps itself with bool, int8 and uint8,
// and otherwise behaves like float16 (int16 -> float32, wider ints ->
// float64, float32 -> float32). A complex dtype with any other gives the
// complex dtype of the promotion of the real parts (complex64 + int16 or
// float32 -> complex64; + int32, int64 or float64 -> complex128). Commutative, but (as in NumPy)
// not associative: use PromoteTypes for more than two dtypes.
DType PromoteDTypes(DType a, DType b);

// numpy.result_type under NumPy 2 rules for the dtypes of `types` (shapes are
// ignored). Strong dtypes are promoted as NumPy does for a sequence: into the
// one with the highest NumPy type number first, so int8, uint8, float16 gives
// float16 (pairwise left to right would give float32). Weak values (Python scalars,
// ValueType::weak) only contribute their kind: a weak int keeps an int or float dtype, a weak float
// keeps a float dtype and turns bool or int into float64, a weak complex keeps a complex dtype,
// turns a float dtype into its complex one (float32 or float16 + 1j -> complex64) and bool or
// int into complex128, a weak bool changes nothing. Without any
// strong value the result is the default dtype of the highest kind: int64 for ints (whether the
// scalar was stored as int64 or uint64), float64 for floats, bool for bools. Whether a weak int's
// value fits the result is not checked here (see CheckIntFitsDType). INVALID_ARGUMENT when `types`
// is empty.
absl::StatusOr<DType> PromoteTypes(absl::Span<const ValueType> types);

// The dtype NumPy's float ufuncs (numpy.sqrt, exp, sin, ...) compute and
// return for an input dtype: floats and complex keep theirs; bool, int8 and uint8 give
// float16; int16 and uint16 give float32; wider ints give float64.
DType FloatResultDType(DType dtype);

// The dtype NumPy's float-only binary ufuncs (numpy.arctan2) compute and
// return: the smallest float every input converts to safely, i.e. the
// promotion of FloatResultDType of each input, which can be narrower than
// FloatResultDType of the promoted dtype (arctan2(int8, uint8) is float16,
// not float32). A weak scalar of a higher kind than every strong input counts
// as its default dtype (arctan2(bool_array, 1) is float64); one of the same or
// a lower kind adds nothing (arctan2(int8_array, 1) is float16). bool and
// 8-bit ints go to bfloat16 as well as to float16, so arctan2(bfloat16,
// int8) is bfloat16.
// INVALID_ARGUMENT when `types` is empty.
absl::StatusOr<DType> FloatLoopDType(absl::Span<const ValueType> types);

// OK when the Python integer `value` can be converted to `dtype` without
// overflow (always for float and bool dtypes, which NumPy converts
// without an error); otherwise INVALID_ARGUMENT "Python integer 300 out of
// bounds for int8", NumPy 2's message.
absl::Status CheckIntFitsDType(int64_t value, DType dtype);
absl::Status CheckIntFitsDType(uint64_t value, DType dtype);

// The types of weak Python scalars, as validation gives them to literals:
// 0-d with dtype int64 (int), float64 (float), complex128 (complex) or bool. A Python int above
// INT64_MAX is a weak uint64.
ValueType WeakIntType();
ValueType WeakUIntType();
ValueType WeakFloatType();
ValueType WeakComplexType();
ValueType WeakBoolType();

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_PROMOTION_H_
