// Internals of the host kernels (host_kernels.h); nothing outside
// engine/host/host_*.cc should include this.
//
// Every op works the same way: input elements are loaded in blocks of up to
// kBlock, converted (with gpuflow's cast semantics) to the dtype the op
// computes in and widened to one of five compute types (bool, int64_t,
// uint64_t, double, std::complex<double>: ComputeOf<T>); the op runs on those; the results are
// converted to the output dtype when stored. Integer arithmetic on int64_t
// goes through uint64_t so that it wraps, which is also how narrower integer
// dtypes wrap: their values are truncated when stored. Float16, bfloat16 and
// float32 are computed in double and rounded once.
#ifndef GPUFLOW_ENGINE_HOST_HOST_KERNELS_INTERNAL_H_
#define GPUFLOW_ENGINE_HOST_HOST_KERNELS_INTERNAL_H_

#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/host/host_kernels.h"
#include "engine/ir/dtype.h"
#include "engine/ir/half.h"
#include "engine/ir/validate.h"

namespace gpuflow::host_internal {

// Elements per block: the unit of loading, computing and storing.
inline constexpr int64_t kBlock = 1024;

// ---- Compute types ----------------------------------------------------------

enum class ComputeClass : uint8_t { kBool, kInt, kUInt, kFloat, kComplex };

using Complex64 = std::complex<float>;
using Complex128 = std::complex<double>;

// The largest compute value (a Complex128): a raw buffer that a LoadFn
// fills or a StoreFn reads holds n * kMaxComputeBytes bytes, aligned to it.
inline constexpr size_t kMaxComputeBytes = sizeof(Complex128);

inline ComputeClass ClassOf(DType dtype) {
  switch (KindOf(dtype)) {
    case DTypeKind::kBool:
      return ComputeClass::kBool;
    case DTypeKind::kSigned:
      return ComputeClass::kInt;
    case DTypeKind::kUnsigned:
      return ComputeClass::kUInt;
    case DTypeKind::kComplex:
      return ComputeClass::kComplex;
    case DTypeKind::kFloat:
      break;
  }
  return ComputeClass::kFloat;
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T the C++ type that stores one element of
// `dtype` (bool, int8_t, ..., Half, BFloat16, float, double, Complex64,
// Complex128) and returns its result.
template <typename F>
decltype(auto) VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBool:
      return f(TypeTag<bool>{});
    case DType::kInt8:
      return f(TypeTag<int8_t>{});
    case DType::kInt16:
      return f(TypeTag<int16_t>{});
    case DType::kInt32:
      return f(TypeTag<int32_t>{});
    case DType::kInt64:
      return f(TypeTag<int64_t>{});
    case DType::kUInt8:
      return f(TypeTag<uint8_t>{});
    case DType::kUInt16:
      return f(TypeTag<uint16_t>{});
    case DType::kUInt32:
      return f(TypeTag<uint32_t>{});
    case DType::kUInt64:
      return f(TypeTag<uint64_t>{});
    case DType::kFloat16:
      return f(TypeTag<Half>{});
    case DType::kBFloat16:
      return f(TypeTag<BFloat16>{});
    case DType::kFloat32:
      return f(TypeTag<float>{});
    case DType::kComplex64:
      return f(TypeTag<Complex64>{});
    case DType::kComplex128:
      return f(TypeTag<Complex128>{});
    case DType::kFloat64:
      break;
  }
  return f(TypeTag<double>{});
}

// VisitDType and VisitClass for kernels without complex loops (sorting):
// `f` is never instantiated with a complex type; a complex dtype gives
// INVALID_ARGUMENT "'sort' is not defined for complex64".
template <typename F>
absl::Status VisitRealDType(DType dtype, absl::string_view op, F&& f);
template <typename F>
absl::Status VisitRealClass(DType compute, absl::string_view op, F&& f);

// Calls f(TypeTag<C>{}) with the compute type of `cls`.
template <typename F>
decltype(auto) VisitClass(ComputeClass cls, F&& f) {
  switch (cls) {
    case ComputeClass::kBool:
      return f(TypeTag<bool>{});
    case ComputeClass::kInt:
      return f(TypeTag<int64_t>{});
    case ComputeClass::kUInt:
      return f(TypeTag<uint64_t>{});
    case ComputeClass::kComplex:
      return f(TypeTag<Complex128>{});
    case ComputeClass::kFloat:
      break;
  }
  return f(TypeTag<double>{});
}

template <typename T>
inline constexpr bool kIsNarrowFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T>
inline constexpr bool kIsFloatStorage = std::is_floating_point_v<T> || kIsNarrowFloat<T>;
template <typename T>
inline constexpr bool kIsComplex = std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>;

template <typename F>
absl::Status VisitRealDType(DType dtype, absl::string_view op, F&& f) {
  if (IsComplex(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", op, "' is not defined for ", DTypeName(dtype)));
  }
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    if constexpr (kIsComplex<typename decltype(tag)::type>) {
      return absl::InternalError("complex dtype");
    } else {
      return f(tag);
    }
  });
}
template <typename F>
absl::Status VisitRealClass(DType compute, absl::string_view op, F&& f) {
  if (IsComplex(compute)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", op, "' is not defined for ", DTypeName(compute)));
  }
  return VisitClass(ClassOf(compute), [&](auto tag) -> absl::Status {
    if constexpr (std::is_same_v<typename decltype(tag)::type, Complex128>) {
      return absl::InternalError("complex dtype");
    } else {
      return f(tag);
    }
  });
}

// The compute type of a storage type: bool, int64_t, uint64_t, double or
// Complex128.
template <typename T>
using ComputeOf = std::conditional_t<
    std::is_same_v<T, bool>, bool,
    std::conditional_t<
        kIsComplex<T>, Complex128,
        std::conditional_t<kIsFloatStorage<T>, double,
                           std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>>>;

// ---- Conversions (gpuflow's cast semantics) ---------------------------------

// Float to integer: truncation toward zero; NaN gives 0; values beyond the
// target's range saturate to its minimum or maximum (so do infinities).
template <typename To>
To SaturatingFloatToInt(double v) {
  if (std::isnan(v)) return To{0};
  const double t = std::trunc(v);
  constexpr double kLow = static_cast<double>(std::numeric_limits<To>::min());
  // 2^digits: exactly one past the maximum, representable in double.
  constexpr double kHighExclusive =
      2.0 * static_cast<double>(std::numeric_limits<To>::max() / 2 + 1);
  if (t <= kLow) return std::numeric_limits<To>::min();
  if (t >= kHighExclusive) return std::numeric_limits<To>::max();
  return static_cast<To>(t);
}

// Converts one value between storage (or compute) types: to bool is != 0
// (NaN is true); between integers wraps (two's complement); float to integer
// saturates (SaturatingFloatToInt); into float16/bfloat16/float32 rounds once
// to nearest even. Complex to a real dtype takes the real part (NumPy's
// ComplexWarning cast); to bool is (re != 0 or im != 0); a real value
// becomes a complex one with a zero imaginary part.
template <typename To, typename From>
To ConvertValue(From v) {
  if constexpr (kIsComplex<From> && !std::is_same_v<To, From>) {
    if constexpr (kIsComplex<To>) {
      using P = typename To::value_type;
      return To(static_cast<P>(v.real()), static_cast<P>(v.imag()));
    } else if constexpr (std::is_same_v<To, bool>) {
      return v.real() != 0 || v.imag() != 0;
    } else {
      return ConvertValue<To>(static_cast<double>(v.real()));
    }
  } else if constexpr (kIsComplex<To> && !std::is_same_v<To, From>) {
    using P = typename To::value_type;
    return To(static_cast<P>(ConvertValue<double>(v)), P{0});
  } else if constexpr (kIsNarrowFloat<From>) {
    return ConvertValue<To>(v.ToFloat());
  } else if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{0};
  } else if constexpr (kIsNarrowFloat<To>) {
    if constexpr (std::is_floating_point_v<From>) {
      return To::FromDouble(static_cast<double>(v));
    } else if constexpr (std::is_same_v<From, bool>) {
      return To::FromDouble(v ? 1.0 : 0.0);
    } else if constexpr (std::is_signed_v<From>) {
      return To::FromInt64(static_cast<int64_t>(v));
    } else {
      return To::FromUInt64(static_cast<uint64_t>(v));
    }
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return SaturatingFloatToInt<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
T LoadElement(const std::byte* p) {
  if constexpr (std::is_same_v<T, bool>) {
    // Any nonzero byte is true (reading it as bool would be undefined).
    return static_cast<uint8_t>(*p) != 0;
  } else {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
}
template <typename T>
void StoreElement(std::byte* p, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    *p = static_cast<std::byte>(v ? 1 : 0);
  } else {
    std::memcpy(p, &v, sizeof(T));
  }
}

// Loads n elements of dtype `src` at base[offset + i * stride] (offsets and
// strides in elements), converts each to dtype `via` and widens it into
// dst[i], of the compute type of `via`.
using LoadFn = void (*)(const std::byte* base, int64_t offset, int64_t stride, int64_t n,
                        void* dst);
LoadFn GetLoadFn(DType src, DType via);

// Converts n values of the compute type of class `src` to dtype `dst` and
// stores them at base[offset + i * stride].
using StoreFn = void (*)(const void* src, int64_t n, std::byte* base, int64_t offset,
                         int64_t stride);
StoreFn GetStoreFn(ComputeClass src, DType dst);

template <typename C>
constexpr ComputeClass ClassOfCompute() {
  if constexpr (std::is_same_v<C, bool>) {
    return ComputeClass::kBool;
  } else if constexpr (std::is_same_v<C, int64_t>) {
    return ComputeClass::kInt;
  } else if constexpr (std::is_same_v<C, uint64_t>) {
    return ComputeClass::kUInt;
  } else if constexpr (std::is_same_v<C, Complex128>) {
    return ComputeClass::kComplex;
  } else {
    static_assert(std::is_same_v<C, double>);
    return ComputeClass::kFloat;
  }
}

// Rounds a compute value to what dtype `dtype` can hold (wraps integers,
// rounds floats), staying in the compute type.
template <typename C>
C RoundToDType(C v, DType dtype) {
  alignas(16) std::byte tmp[16];
  GetStoreFn(ClassOfCompute<C>(), dtype)(&v, 1, tmp, 0, 0);
  C r;
  GetLoadFn(dtype, dtype)(tmp, 0, 0, 1, &r);
  return r;
}

// ---- Wrapping integer arithmetic ---------------------------------------------

inline int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// ---- Complex arithmetic as NumPy's loops do it -------------------------------

// The schoolbook product (NumPy's; std::complex's operator* recovers
// infinities as C99 Annex G does, which NumPy does not).
inline Complex128 ComplexMul(Complex128 a, Complex128 b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
// Smith's division, as NumPy's complex divide (x / 0 is a complex inf or
// NaN, part by part).
Complex128 ComplexDiv(Complex128 a, Complex128 b);
// NumPy's complex reciprocal, power (integer exponents below 100 by repeated
// multiplication, 0 ** z NaN unless z is real and positive), sign (z / |z|,
// NumPy 2), log1p and expm1 (host_complex.cc).
Complex128 ComplexReciprocal(Complex128 z);
Complex128 ComplexPow(Complex128 a, Complex128 b);
Complex128 ComplexSign(Complex128 z);
Complex128 ComplexLog1p(Complex128 z);
Complex128 ComplexExpm1(Complex128 z);

// a * b in a compute type: logical and for bool, wrapping for int64.
template <typename C>
C MultiplyInCompute(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return a && b;
  } else if constexpr (std::is_same_v<C, int64_t>) {
    return WrapMul(a, b);
  } else if constexpr (std::is_same_v<C, Complex128>) {
    return ComplexMul(a, b);
  } else {
    return a * b;
  }
}

// NumPy's ordering of complex values (NumPy 2 sorts and compares them by
// real part, then imaginary part; a NaN part compares false).
inline bool ComplexGreater(Complex128 x, Complex128 y) {
  return (x.real() > y.real() && !std::isnan(x.imag()) && !std::isnan(y.imag())) ||
         (x.real() == y.real() && x.imag() > y.imag());
}
inline bool ComplexGreaterEqual(Complex128 x, Complex128 y) {
  return (x.real() > y.real() && !std::isnan(x.imag()) && !std::isnan(y.imag())) ||
         (x.real() == y.real() && x.imag() >= y.imag());
}
inline bool ComplexIsNaN(Complex128 x) { return std::isnan(x.real()) || std::isnan(x.imag()); }
inline int64_t WrapNeg(int64_t a) {
  return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a));
}

// ---- Strided iteration -------------------------------------------------------

// a * b for non-negative sizes, INT64_MAX when it overflows. The dimensions
// of an empty array may multiply past int64 (only its element count, 0, is
// bounded), and its strides and partial products are never used to address
// memory: saturating keeps computing them defined.
inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::numeric_limits<int64_t>::max();
  return r;
}

inline constexpr int kMaxOperands = 4;

// A C-order walk over an index space `dims` that addresses up to kMaxOperands
// arrays, each with its own element strides (0 for broadcast dimensions,
// negative for reversed slices) and base offset.
struct StridedLoop {
  std::vector<int64_t> dims;
  int num_operands = 0;
  std::array<std::vector<int64_t>, kMaxOperands> strides;
  std::array<int64_t, kMaxOperands> base{};

  // Adds an operand; returns its index.
  int AddOperand(std::vector<int64_t> operand_strides, int64_t operand_base = 0);
  int64_t num_elements() const;
  // Drops size-1 dimensions and merges dimensions every operand walks
  // contiguously, so that the innermost runs are as long as possible.
  void Simplify();
};

// Calls fn(n, offsets, steps) for consecutive runs covering the linear
// positions [begin, end) of `loop`: n <= kBlock elements along which operand k
// starts at element offsets[k] and advances by steps[k].
void ForEachRun(
    const StridedLoop& loop, int64_t begin, int64_t end,
    absl::FunctionRef<void(int64_t n, const int64_t* offsets, const int64_t* steps)> fn);

// Element strides of a C-contiguous array.
std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> dims);
// Strides that read an array of dims `in` broadcast (right-aligned) to `out`.
std::vector<int64_t> BroadcastStrides(absl::Span<const int64_t> in, absl::Span<const int64_t> out);

// ---- Threads -------------------------------------------------------------------

// The threads a host kernel may use: options.threads, or (0) the machine's
// (std::thread::hardware_concurrency, read once: glibc reads it from sysfs
// on every call, which once cost the CPU backend a third of a small
// request's run).
int64_t HostThreads(const HostKernelOptions& options);

// Runs fn(begin, end) over a split of [0, n), where each item costs about
// `cost_per_item` elements of work: on the calling thread when the total is
// below options.min_elements_per_thread, else on up to options.threads
// threads (the calling one included). Blocks until every part is done.
void ParallelFor(int64_t n, int64_t cost_per_item, const HostKernelOptions& options,
                 absl::FunctionRef<void(int64_t begin, int64_t end)> fn);

// ---- Op families -------------------------------------------------------------------

// Each runs one node whose inputs and output were checked against its types.
absl::Status RunElementwise(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                            const HostView& out, const HostKernelOptions& options);
absl::Status RunReduction(const ValidatedNode& node, const HostConstView& input,
                          const HostView& out, const HostKernelOptions& options);
absl::Status RunSoftmax(const ValidatedNode& node, const HostConstView& input, const HostView& out,
                        const HostKernelOptions& options);
absl::Status RunScan(const ValidatedNode& node, const HostConstView& input, const HostView& out,
                     const HostKernelOptions& options);
absl::Status RunMatmul(const ValidatedNode& node, const HostConstView& a, const HostConstView& b,
                       const HostView& out, const HostKernelOptions& options);
absl::Status RunShapeOp(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                        const HostView& out, const HostKernelOptions& options);
// scatter and flatnonzero (host_select.cc), histogram (RunHistogram).
absl::Status RunSelection(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                          const HostView& out);
// histogram (host_histogram.cc).
absl::Status RunHistogram(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                          const HostView& out);
absl::Status RunCreation(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                         const HostView& out, const HostKernelOptions& options);
// sort, argsort, searchsorted (host_sort.cc).
absl::Status RunSortOp(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                       const HostView& out, const HostKernelOptions& options);

// Copies (converting dtype when they differ) `src` viewed through `loop`'s
// operand 1 into `dst` through operand 0.
void CopyStrided(const StridedLoop& loop, DType src_dtype, const std::byte* src, DType dst_dtype,
                 std::byte* dst, const HostKernelOptions& options);

// ---- Attributes ----------------------------------------------------------------------

// The canonical attribute `name`, or INVALID_ARGUMENT naming it.
absl::StatusOr<int64_t> GetIntAttr(const ValidatedNode& node, absl::string_view name);
absl::StatusOr<double> GetFloatAttr(const ValidatedNode& node, absl::string_view name);
absl::StatusOr<std::vector<int64_t>> GetIntsAttr(const ValidatedNode& node, absl::string_view name);
bool HasAttr(const ValidatedNode& node, absl::string_view name);

}  // namespace gpuflow::host_internal

#endif  // GPUFLOW_ENGINE_HOST_HOST_KERNELS_INTERNAL_H_
