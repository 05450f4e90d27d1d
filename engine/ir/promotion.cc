#include "engine/ir/promotion.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpuflow {

namespace {

// The smallest float dtype that holds every value of an integer or bool
// dtype exactly enough for NumPy (its "can cast safely" rule).
DType MinFloatFor(DType dtype) {
  switch (ItemSize(dtype)) {
    case 1:
      return DType::kFloat16;
    case 2:
      return DType::kFloat32;
    default:
      return DType::kFloat64;
  }
}

DType SignedOfSize(int64_t itemsize) {
  switch (itemsize) {
    case 1:
      return DType::kInt8;
    case 2:
      return DType::kInt16;
    case 4:
      return DType::kInt32;
    default:
      return DType::kInt64;
  }
}

DType PromoteFloats(DType a, DType b) {
  if (a == b) return a;
  // float16 and bfloat16 hold different ranges and precisions; float32 holds
  // both.
  if ((a == DType::kFloat16 && b == DType::kBFloat16) ||
      (a == DType::kBFloat16 && b == DType::kFloat16)) {
    return DType::kFloat32;
  }
  return ItemSize(a) >= ItemSize(b) ? a : b;
}

DType PromoteIntWithFloat(DType integer, DType floating) {
  // bfloat16 keeps itself with 8-bit ints (float16 would too, and bfloat16
  // holds every int8/uint8 value exactly); wider ints need what float16
  // needs.
  if (ItemSize(integer) == 1) return floating;
  return PromoteFloats(MinFloatFor(integer), floating);
}

DType PromoteSignedWithUnsigned(DType s, DType u) {
  if (ItemSize(s) > ItemSize(u)) return s;
  if (ItemSize(u) < 8) return SignedOfSize(2 * ItemSize(u));
  return DType::kFloat64;  // uint64 with any signed int
}

// Kinds ordered as NumPy's promotion sees them.
int KindRank(DTypeKind kind) {
  switch (kind) {
    case DTypeKind::kBool:
      return 0;
    case DTypeKind::kSigned:
    case DTypeKind::kUnsigned:
      return 1;
    case DTypeKind::kFloat:
      return 2;
    case DTypeKind::kComplex:
      return 3;
  }
  return 0;
}

// NumPy's type numbers ordered (bool, int8, uint8, int16, uint16, int32,
// uint32, int64, uint64, float32, float64, complex64, complex128, float16);
// bfloat16, a user dtype in
// NumPy's world (ml_dtypes), comes last.
int NumpyTypeOrder(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return 0;
    case DType::kInt8:
      return 1;
    case DType::kUInt8:
      return 2;
    case DType::kInt16:
      return 3;
    case DType::kUInt16:
      return 4;
    case DType::kInt32:
      return 5;
    case DType::kUInt32:
      return 6;
    case DType::kInt64:
      return 7;
    case DType::kUInt64:
      return 8;
    case DType::kFloat32:
      return 11;
    case DType::kFloat64:
      return 12;
    case DType::kComplex64:
      return 14;
    case DType::kComplex128:
      return 15;
    case DType::kFloat16:
      return 23;
    case DType::kBFloat16:
      return 24;
  }
  return 0;
}

template <typename T>
absl::Status CheckIntFits(T value, DType dtype) {
  bool fits = true;
  switch (dtype) {
    case DType::kInt8:
      fits = std::in_range<int8_t>(value);
      break;
    case DType::kInt16:
      fits = std::in_range<int16_t>(value);
      break;
    case DType::kInt32:
      fits = std::in_range<int32_t>(value);
      break;
    case DType::kInt64:
      fits = std::in_range<int64_t>(value);
      break;
    case DType::kUInt8:
      fits = std::in_range<uint8_t>(value);
      break;
    case DType::kUInt16:
      fits = std::in_range<uint16_t>(value);
      break;
    case DType::kUInt32:
      fits = std::in_range<uint32_t>(value);
      break;
    case DType::kUInt64:
      fits = std::in_range<uint64_t>(value);
      break;
    default:
      break;  // bool and floats: NumPy converts without an error.
  }
  if (fits) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("Python integer ", value, " out of bounds for ", DTypeName(dtype)));
}

}  // namespace

DType PromoteDTypes(DType a, DType b) {
  if (a == b) return a;
  const DTypeKind ka = KindOf(a);
  const DTypeKind kb = KindOf(b);
  if (ka == DTypeKind::kBool) return b;
  if (kb == DTypeKind::kBool) return a;
  // A complex dtype with anything: the complex dtype of the promotion of its
  // real part with the other's (real part): complex64 with int16 or float32
  // stays complex64, with int32, int64 or float64 becomes complex128.
  if (ka == DTypeKind::kComplex || kb == DTypeKind::kComplex) {
    return ComplexDType(PromoteDTypes(RealDType(a), RealDType(b)));
  }
  if (ka == DTypeKind::kFloat && kb == DTypeKind::kFloat) return PromoteFloats(a, b);
  if (ka == DTypeKind::kFloat) return PromoteIntWithFloat(b, a);
  if (kb == DTypeKind::kFloat) return PromoteIntWithFloat(a, b);
  if (ka == kb) return ItemSize(a) >= ItemSize(b) ? a : b;
  return ka == DTypeKind::kSigned ? PromoteSignedWithUnsigned(a, b)
                                  : PromoteSignedWithUnsigned(b, a);
}

absl::StatusOr<DType> PromoteTypes(absl::Span<const ValueType> types) {
  if (types.empty()) return absl::InvalidArgumentError("no dtypes to promote");
  // Pairwise promotion is not associative (int8 + uint8 -> int16, then
  // + float16 -> float32, while uint8 + float16 -> float16). NumPy's
  // result_type starts from the "main" dtype, the one with the highest type
  // number, and promotes the others into it in turn; so does this.
  const ValueType* main = nullptr;
  int weak_rank = -1;
  for (const ValueType& t : types) {
    if (t.weak) {
      weak_rank = std::max(weak_rank, KindRank(KindOf(t.dtype)));
    } else if (main == nullptr || NumpyTypeOrder(t.dtype) > NumpyTypeOrder(main->dtype)) {
      main = &t;
    }
  }
  if (main != nullptr) {
    DType strong = main->dtype;
    for (const ValueType& t : types) {
      if (!t.weak) strong = PromoteDTypes(strong, t.dtype);
    }
    if (KindRank(KindOf(strong)) >= weak_rank) return strong;
    // A Python complex with a float array: that float's complex dtype
    // (float32 + 1j is complex64, float16 + 1j too).
    if (weak_rank == 3 && IsFloat(strong)) return ComplexDType(strong);
  }
  // A weak scalar of a higher kind than every array: that kind's default.
  switch (weak_rank) {
    case 0:
      return DType::kBool;
    case 1:
      return DType::kInt64;
    case 2:
      return DType::kFloat64;
    default:
      return DType::kComplex128;
  }
}

DType FloatResultDType(DType dtype) {
  if (IsFloat(dtype) || IsComplex(dtype)) return dtype;
  return MinFloatFor(dtype);
}

absl::StatusOr<DType> FloatLoopDType(absl::Span<const ValueType> types) {
  if (types.empty()) return absl::InvalidArgumentError("no dtypes to promote");
  int strong_rank = -1;
  for (const ValueType& t : types) {
    if (!t.weak) strong_rank = std::max(strong_rank, KindRank(KindOf(t.dtype)));
  }
  // bool and 8-bit ints convert safely to float16 and to bfloat16 alike: they
  // only decide the result (float16) when nothing else does.
  std::optional<DType> result;
  for (const ValueType& t : types) {
    DType d = t.dtype;
    if (t.weak) {
      const int rank = KindRank(KindOf(t.dtype));
      if (rank <= strong_rank) continue;
      d = rank == 0   ? DType::kBool
          : rank == 1 ? DType::kInt64
          : rank == 2 ? DType::kFloat64
                      : DType::kComplex128;
    }
    if (!IsFloat(d) && ItemSize(d) == 1) continue;
    const DType f = FloatResultDType(d);
    result = result.has_value() ? PromoteDTypes(*result, f) : f;
  }
  return result.value_or(DType::kFloat16);
}

absl::Status CheckIntFitsDType(int64_t value, DType dtype) { return CheckIntFits(value, dtype); }
absl::Status CheckIntFitsDType(uint64_t value, DType dtype) { return CheckIntFits(value, dtype); }

ValueType WeakIntType() { return {.dtype = DType::kInt64, .shape = Shape(), .weak = true}; }
ValueType WeakUIntType() { return {.dtype = DType::kUInt64, .shape = Shape(), .weak = true}; }
ValueType WeakFloatType() { return {.dtype = DType::kFloat64, .shape = Shape(), .weak = true}; }
ValueType WeakComplexType() {
  return {.dtype = DType::kComplex128, .shape = Shape(), .weak = true};
}
ValueType WeakBoolType() { return {.dtype = DType::kBool, .shape = Shape(), .weak = true}; }

}  // namespace gpuflow
