#include "clients/cpp/array.h"

#include <array>
#include <cmath>
#include <limits>

#include "absl/strings/str_join.h"

namespace gpuflow::client {
namespace {

struct DTypeEntry {
  v1::DType dtype;
  absl::string_view name;
  int64_t itemsize;
};

constexpr std::array<DTypeEntry, 15> kDTypes = {{
    {v1::DTYPE_BOOL, "bool", 1},
    {v1::DTYPE_INT8, "int8", 1},
    {v1::DTYPE_INT16, "int16", 2},
    {v1::DTYPE_INT32, "int32", 4},
    {v1::DTYPE_INT64, "int64", 8},
    {v1::DTYPE_UINT8, "uint8", 1},
    {v1::DTYPE_UINT16, "uint16", 2},
    {v1::DTYPE_UINT32, "uint32", 4},
    {v1::DTYPE_UINT64, "uint64", 8},
    {v1::DTYPE_FLOAT16, "float16", 2},
    {v1::DTYPE_BFLOAT16, "bfloat16", 2},
    {v1::DTYPE_FLOAT32, "float32", 4},
    {v1::DTYPE_FLOAT64, "float64", 8},
    {v1::DTYPE_COMPLEX64, "complex64", 8},
    {v1::DTYPE_COMPLEX128, "complex128", 16},
}};

const DTypeEntry* FindEntry(v1::DType dtype) {
  for (const DTypeEntry& entry : kDTypes) {
    if (entry.dtype == dtype) return &entry;
  }
  return nullptr;
}

}  // namespace

int64_t ItemSize(v1::DType dtype) {
  const DTypeEntry* entry = FindEntry(dtype);
  return entry == nullptr ? 0 : entry->itemsize;
}

absl::string_view DTypeName(v1::DType dtype) {
  const DTypeEntry* entry = FindEntry(dtype);
  return entry == nullptr ? "unspecified" : entry->name;
}

absl::StatusOr<v1::DType> ParseDTypeName(absl::string_view name) {
  for (const DTypeEntry& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", name, "'; expected one of ",
      absl::StrJoin(kDTypes, ", ",
                    [](std::string* out, const DTypeEntry& e) { absl::StrAppend(out, e.name); })));
}

absl::Span<const v1::DType> AllDTypes() {
  static constexpr std::array<v1::DType, kDTypes.size()> kAll = [] {
    std::array<v1::DType, kDTypes.size()> all{};
    for (size_t i = 0; i < kDTypes.size(); ++i) all[i] = kDTypes[i].dtype;
    return all;
  }();
  return kAll;
}

absl::StatusOr<int64_t> NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", i, " of the shape is negative (", shape[i], ")"));
    }
    if (shape[i] != 0 && n > std::numeric_limits<int64_t>::max() / shape[i]) {
      // A later zero would make the product 0, but such a shape is still
      // rejected: no sensible array has it.
      return absl::InvalidArgumentError(
          absl::StrCat("the shape [", absl::StrJoin(shape, ", "), "] has more than 2^63 elements"));
    }
    n *= shape[i];
  }
  return n;
}

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) {  // inf or NaN, keeping the payload
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) {  // NaN: keep the top payload bits, stay quiet
    return static_cast<uint16_t>(sign | 0x7e00 | ((abs_bits >> 13) & 0x3ff));
  }
  if (abs_bits >= 0x477ff000u) {  // rounds to >= 65520: infinity
    return static_cast<uint16_t>(sign | 0x7c00);
  }
  if (abs_bits < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
    // Rounding |value| * 2^24 to the nearest integer, ties to even, is exact
    // in float for these magnitudes.
    const float scaled = std::ldexp(std::bit_cast<float>(abs_bits), 24);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to
  // nearest even (a carry into the exponent is the right answer).
  const uint32_t rebiased = abs_bits - (uint32_t{112} << 23);
  const uint32_t rounded = rebiased + 0xfff + ((rebiased >> 13) & 1);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float BFloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a quiet NaN
    return static_cast<uint16_t>((bits >> 16) | 0x0040);
  }
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

int64_t Array::num_elements() const {
  absl::StatusOr<int64_t> n = NumElements(shape);
  return n.ok() ? *n : 0;
}

absl::Status Array::Validate() const {
  const int64_t itemsize = ItemSize(dtype);
  if (itemsize == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the array's dtype is not set or unknown (", static_cast<int>(dtype), ")"));
  }
  absl::StatusOr<int64_t> n = NumElements(shape);
  if (!n.ok()) return n.status();
  if (*n > std::numeric_limits<int64_t>::max() / itemsize) {
    return absl::InvalidArgumentError(absl::StrCat(TypeString(), " needs more than 2^63 bytes"));
  }
  if (static_cast<int64_t>(data.size()) != *n * itemsize) {
    return absl::InvalidArgumentError(
        absl::StrCat(TypeString(), " needs ", *n * itemsize, " bytes but holds ", data.size()));
  }
  return absl::OkStatus();
}

std::string Array::TypeString() const {
  return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<Array> FromInline(const v1::InlineArray& inline_array) {
  Array array;
  array.dtype = inline_array.dtype();
  array.shape.assign(inline_array.shape().begin(), inline_array.shape().end());
  array.data = inline_array.data();
  if (absl::Status status = array.Validate(); !status.ok()) return status;
  return array;
}

v1::InlineArray ToInline(const Array& array) {
  v1::InlineArray out;
  out.set_dtype(array.dtype);
  out.mutable_shape()->Add(array.shape.begin(), array.shape.end());
  out.set_data(array.data);
  return out;
}

}  // namespace gpuflow::client
