// Host arrays as the client sends and receives them: a wire dtype, a shape
// and the elements' bytes, C-contiguous and little-endian (the v1 wire form,
// see proto/gpuflow/v1/types.proto).
//
//   absl::StatusOr<Array> x = Array::FromValues<float>({2, 3}, {1, 2, 3, 4, 5, 6});
//   x->num_elements();              // 6
//   DTypeName(x->dtype);            // "float32"
//   std::vector<float> v = x->ValuesAs<float>();
//
// float16 and bfloat16 have no C++ type here: their elements are raw 16-bit
// words (uint16_t), converted with HalfToFloat / BFloat16ToFloat and back.
// Everything here is a plain value type or a pure function: thread-compatible.
#ifndef GPUFLOW_CLIENTS_CPP_ARRAY_H_
#define GPUFLOW_CLIENTS_CPP_ARRAY_H_

#include <bit>
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gpuflow/v1/types.pb.h"

namespace gpuflow::client {

static_assert(std::endian::native == std::endian::little,
              "the client keeps array bytes in host order, which must be the wire's little-endian");

// Bytes per element; 0 for DTYPE_UNSPECIFIED or a value outside the enum.
int64_t ItemSize(v1::DType dtype);

// NumPy's name ("float32", "bool"); "bfloat16" for bfloat16; "unspecified"
// for DTYPE_UNSPECIFIED and values outside the enum.
absl::string_view DTypeName(v1::DType dtype);

// Parses a name as DTypeName prints it (one spelling per dtype, no
// aliases). INVALID_ARGUMENT listing the names for anything else.
absl::StatusOr<v1::DType> ParseDTypeName(absl::string_view name);

// Every dtype gpuflow has, in enum order.
absl::Span<const v1::DType> AllDTypes();

// The dtype a C++ element type is sent as: bool, (u)int8..64, float, double.
template <typename T>
constexpr v1::DType DTypeOf() {
  if constexpr (std::is_same_v<T, bool>) return v1::DTYPE_BOOL;
  if constexpr (std::is_same_v<T, int8_t>) return v1::DTYPE_INT8;
  if constexpr (std::is_same_v<T, int16_t>) return v1::DTYPE_INT16;
  if constexpr (std::is_same_v<T, int32_t>) return v1::DTYPE_INT32;
  if constexpr (std::is_same_v<T, int64_t>) return v1::DTYPE_INT64;
  if constexpr (std::is_same_v<T, uint8_t>) return v1::DTYPE_UINT8;
  if constexpr (std::is_same_v<T, uint16_t>) return v1::DTYPE_UINT16;
  if constexpr (std::is_same_v<T, uint32_t>) return v1::DTYPE_UINT32;
  if constexpr (std::is_same_v<T, uint64_t>) return v1::DTYPE_UINT64;
  if constexpr (std::is_same_v<T, float>) return v1::DTYPE_FLOAT32;
  if constexpr (std::is_same_v<T, double>) return v1::DTYPE_FLOAT64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return v1::DTYPE_COMPLEX64;
  if constexpr (std::is_same_v<T, std::complex<double>>) return v1::DTYPE_COMPLEX128;
  return v1::DTYPE_UNSPECIFIED;
}

// The product of `shape`; INVALID_ARGUMENT for a negative dimension or a
// product above INT64_MAX.
absl::StatusOr<int64_t> NumElements(absl::Span<const int64_t> shape);

// The IEEE binary16 and bfloat16 words, to and from float. The narrowing
// conversions round to nearest even and keep NaN a NaN.
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);

struct Array {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  // Outermost first; empty for a 0-d array.
  std::vector<int64_t> shape;
  // Exactly num_elements() * ItemSize(dtype) bytes, C order, little-endian.
  std::string data;

  // An array of `dtype` and `shape` holding `values` (their count must be
  // the shape's product). `dtype` defaults to DTypeOf<T>(); it may also be
  // DTYPE_FLOAT16 or DTYPE_BFLOAT16 for uint16_t words, or any dtype of
  // T's size. INVALID_ARGUMENT otherwise.
  template <typename T>
  static absl::StatusOr<Array> FromValues(std::vector<int64_t> shape, absl::Span<const T> values,
                                          v1::DType dtype = DTypeOf<T>());
  template <typename T>
  static absl::StatusOr<Array> FromValues(std::vector<int64_t> shape,
                                          std::initializer_list<T> values,
                                          v1::DType dtype = DTypeOf<T>()) {
    return FromValues<T>(std::move(shape), absl::Span<const T>(values.begin(), values.size()),
                         dtype);
  }

  // The elements copied out as T, whose size must be the dtype's item size
  // (read bool arrays as uint8_t: std::vector<bool> has no storage to copy into).
  template <typename T>
  std::vector<T> ValuesAs() const {
    std::vector<T> out(data.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
    return out;
  }

  // The product of the shape (1 for 0-d); 0 when the shape is invalid.
  int64_t num_elements() const;

  // OK when the dtype is a known one, every dimension is non-negative and
  // `data` holds exactly the bytes the shape needs; else INVALID_ARGUMENT
  // saying which.
  absl::Status Validate() const;

  // "float32[2, 3]".
  std::string TypeString() const;

  friend bool operator==(const Array&, const Array&) = default;
};

// Conversions to and from the wire's InlineArray (which holds the same
// fields). FromInline validates the byte count.
absl::StatusOr<Array> FromInline(const v1::InlineArray& inline_array);
v1::InlineArray ToInline(const Array& array);

// ---------------------------------------------------------------- implementation

template <typename T>
absl::StatusOr<Array> Array::FromValues(std::vector<int64_t> shape, absl::Span<const T> values,
                                        v1::DType dtype) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (ItemSize(dtype) != static_cast<int64_t>(sizeof(T))) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", DTypeName(dtype), " array cannot hold ", sizeof(T), "-byte values"));
  }
  absl::StatusOr<int64_t> n = NumElements(shape);
  if (!n.ok()) return n.status();
  if (*n != static_cast<int64_t>(values.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the shape holds ", *n, " elements but ", values.size(), " were given"));
  }
  Array array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(array.data.data(), values.data(), array.data.size());
  return array;
}

}  // namespace gpuflow::client

#endif  // GPUFLOW_CLIENTS_CPP_ARRAY_H_
