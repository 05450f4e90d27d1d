// Elementwise ops: unary, binary, where, clip and cast. Inputs are broadcast
// to the output shape through zero strides; each op is a functor over the
// compute types it supports (kSupports<C>), so that an op on a compute type it
// does not define is an error rather than a silent conversion.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"

namespace gpuflow::host_internal {
namespace {

template <typename C>
inline constexpr bool kIsBool = std::is_same_v<C, bool>;
template <typename C>
inline constexpr bool kIsInt = std::is_same_v<C, int64_t>;
template <typename C>
inline constexpr bool kIsUInt = std::is_same_v<C, uint64_t>;
template <typename C>
inline constexpr bool kIsDouble = std::is_same_v<C, double>;
template <typename C>
inline constexpr bool kIsCx = std::is_same_v<C, Complex128>;

// ---- Unary ops ------------------------------------------------------------------

struct NegOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C>;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsInt<C>) {
      return WrapNeg(a);
    } else if constexpr (kIsUInt<C>) {
      return uint64_t{0} - a;
    } else {
      return -a;
    }
  }
};

struct AbsOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  auto operator()(C a) const {
    if constexpr (kIsCx<C>) {
      return std::hypot(a.real(), a.imag());
    } else if constexpr (kIsInt<C>) {
      return a < 0 ? WrapNeg(a) : a;
    } else if constexpr (kIsDouble<C>) {
      return std::fabs(a);
    } else {
      return a;
    }
  }
};

struct SignOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C>;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsCx<C>) {
      return ComplexSign(a);
    } else if constexpr (kIsDouble<C>) {
      // As NumPy: sign(-0.0) is 0.0, sign(NaN) is NaN.
      return a > 0 ? 1.0 : (a < 0 ? -1.0 : (a == 0 ? 0.0 : a));
    } else if constexpr (kIsUInt<C>) {
      return a > 0 ? 1 : 0;
    } else {
      return a > 0 ? 1 : (a < 0 ? -1 : 0);
    }
  }
};

struct SquareOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsInt<C>) {
      return WrapMul(a, a);
    } else if constexpr (kIsBool<C>) {
      return a;
    } else if constexpr (kIsCx<C>) {
      return ComplexMul(a, a);
    } else {
      return a * a;
    }
  }
};

// A unary function of doubles (the float ops: ints reach them converted by
// the compute dtype) and, where NumPy defines one, of complex values.
template <double (*kFn)(double), Complex128 (*kComplexFn)(Complex128) = nullptr>
struct FloatFnOp {
  template <typename C>
  static constexpr bool kSupports = kIsDouble<C> || (kIsCx<C> && kComplexFn != nullptr);
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsCx<C>) {
      return kComplexFn(a);
    } else {
      return kFn(a);
    }
  }
};

Complex128 CSqrt(Complex128 z) { return std::sqrt(z); }
Complex128 CRsqrt(Complex128 z) { return ComplexReciprocal(std::sqrt(z)); }
Complex128 CExp(Complex128 z) { return std::exp(z); }
Complex128 CLog(Complex128 z) { return std::log(z); }
Complex128 CSin(Complex128 z) { return std::sin(z); }
Complex128 CCos(Complex128 z) { return std::cos(z); }
Complex128 CTanh(Complex128 z) { return std::tanh(z); }
// glibc's casin, cacos, ... (C99's branch cuts), as NumPy calls them.
Complex128 CAsin(Complex128 z) { return std::asin(z); }
Complex128 CAcos(Complex128 z) { return std::acos(z); }
Complex128 CAtan(Complex128 z) { return std::atan(z); }
Complex128 CAsinh(Complex128 z) { return std::asinh(z); }
Complex128 CAcosh(Complex128 z) { return std::acosh(z); }
Complex128 CAtanh(Complex128 z) { return std::atanh(z); }
// Defined in this file (not the shared ones of another), so that
// FloatFnOp's `kComplexFn != nullptr` is a constant expression under the
// sanitizers too.
Complex128 CLog1p(Complex128 z) { return ComplexLog1p(z); }
Complex128 CExpm1(Complex128 z) { return ComplexExpm1(z); }

double Sqrt(double x) { return std::sqrt(x); }
double Rsqrt(double x) { return 1.0 / std::sqrt(x); }
double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Log1p(double x) { return std::log1p(x); }
double Expm1(double x) { return std::expm1(x); }
double Sin(double x) { return std::sin(x); }
double Cos(double x) { return std::cos(x); }
double Tanh(double x) { return std::tanh(x); }
double Asin(double x) { return std::asin(x); }
double Acos(double x) { return std::acos(x); }
double Atan(double x) { return std::atan(x); }
double Asinh(double x) { return std::asinh(x); }
double Acosh(double x) { return std::acosh(x); }
double Atanh(double x) { return std::atanh(x); }
double Erf(double x) { return std::erf(x); }
double Sigmoid(double x) {
  // Never exponentiates a large positive number.
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}
// The exact (erf) form, as torch.nn.functional.gelu's default; erfc keeps
// the relative accuracy for negative x, where 1 + erf(x / sqrt 2) cancels.
double Gelu(double x) { return 0.5 * x * std::erfc(x * -0.70710678118654752440); }

// floor, ceil, round: integers are already integral.
template <double (*kFn)(double)>
struct RoundingOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C>;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsDouble<C>) {
      return kFn(a);
    } else if constexpr (kIsCx<C>) {
      return {kFn(a.real()), kFn(a.imag())};  // numpy.round: both parts
    } else {
      return a;
    }
  }
};
double Floor(double x) { return std::floor(x); }
double Ceil(double x) { return std::ceil(x); }
// Half to even (the default rounding mode, which gpuflow never changes).
double RoundHalfEven(double x) { return std::nearbyint(x); }

struct ReluOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C> && !kIsCx<C>;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsDouble<C>) {
      return std::isnan(a) ? a : (a > 0 ? a : 0.0);  // maximum(a, 0)
    } else {
      return a > C{0} ? a : C{0};
    }
  }
};

struct ReciprocalOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsDouble<C>) {
      return 1.0 / a;
    } else if constexpr (kIsCx<C>) {
      return ComplexReciprocal(a);
    } else if constexpr (kIsInt<C>) {
      return (a == 1 || a == -1) ? a : 0;  // 1 / a truncated; 0 for a == 0
    } else if constexpr (kIsUInt<C>) {
      return a == 1 ? 1 : 0;
    } else {
      return a;
    }
  }
};

struct IsNanOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  bool operator()(C a) const {
    if constexpr (kIsDouble<C>) {
      return std::isnan(a);
    } else if constexpr (kIsCx<C>) {
      return ComplexIsNaN(a);
    } else {
      return false;
    }
  }
};

struct IsInfOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  bool operator()(C a) const {
    if constexpr (kIsDouble<C>) {
      return std::isinf(a);
    } else if constexpr (kIsCx<C>) {
      return std::isinf(a.real()) || std::isinf(a.imag());
    } else {
      return false;
    }
  }
};

struct LogicalNotOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  bool operator()(C a) const {
    return !(a != C{0});
  }
};

struct BitwiseNotOp {
  template <typename C>
  static constexpr bool kSupports = !kIsDouble<C> && !kIsCx<C>;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsBool<C>) {
      return !a;
    } else {
      return ~a;
    }
  }
};

// real, imag, conj and angle: real inputs are their own real part and
// conjugate, with a zero imaginary part and an angle of arctan2(0, x).
struct RealOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  auto operator()(C a) const {
    if constexpr (kIsCx<C>) {
      return a.real();
    } else {
      return a;
    }
  }
};
struct ImagOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  auto operator()(C a) const {
    if constexpr (kIsCx<C>) {
      return a.imag();
    } else {
      return C{0};
    }
  }
};
struct ConjOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a) const {
    if constexpr (kIsCx<C>) {
      return std::conj(a);
    } else {
      return a;
    }
  }
};
struct AngleOp {
  template <typename C>
  static constexpr bool kSupports = kIsDouble<C> || kIsCx<C>;
  template <typename C>
  double operator()(C a) const {
    if constexpr (kIsCx<C>) {
      return std::atan2(a.imag(), a.real());
    } else {
      return std::atan2(0.0, a);
    }
  }
};

// Cast: the conversion happens in the load (to the output dtype).
struct IdentityOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a) const {
    return a;
  }
};

// ---- Binary ops -------------------------------------------------------------------

struct AddOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsBool<C>) {
      return a || b;
    } else if constexpr (kIsInt<C>) {
      return WrapAdd(a, b);
    } else {
      return a + b;
    }
  }
};

struct SubOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsInt<C>) {
      return WrapSub(a, b);
    } else {
      return a - b;
    }
  }
};

struct MulOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a, C b) const {
    return MultiplyInCompute(a, b);
  }
};

struct DivOp {
  template <typename C>
  static constexpr bool kSupports = kIsDouble<C> || kIsCx<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsCx<C>) {
      return ComplexDiv(a, b);
    } else {
      return a / b;
    }
  }
};

// NumPy's npy_divmod: the floored quotient and the remainder with the
// divisor's sign, exact where fmod is.
double FloatFloorDivide(double a, double b) {
  if (b == 0) return a / b;
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}
double FloatRemainder(double a, double b) {
  double mod = std::fmod(a, b);
  if (b == 0) return mod;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

struct FloorDivOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C> && !kIsCx<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsDouble<C>) {
      return FloatFloorDivide(a, b);
    } else if constexpr (kIsUInt<C>) {
      return b == 0 ? 0 : a / b;
    } else {
      if (b == 0) return 0;
      if (b == -1) return WrapNeg(a);  // INT64_MIN // -1 wraps
      const int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
  }
};

struct ModOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C> && !kIsCx<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsDouble<C>) {
      return FloatRemainder(a, b);
    } else if constexpr (kIsUInt<C>) {
      return b == 0 ? 0 : a % b;
    } else {
      if (b == 0 || b == -1) return 0;
      const int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
  }
};

uint64_t WrapPow(uint64_t base, uint64_t exponent) {
  uint64_t result = 1;
  while (exponent != 0) {
    if (exponent & 1) result *= base;
    base *= base;
    exponent >>= 1;
  }
  return result;
}

struct PowOp {
  template <typename C>
  static constexpr bool kSupports = !kIsBool<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsDouble<C>) {
      return std::pow(a, b);
    } else if constexpr (kIsCx<C>) {
      return ComplexPow(a, b);
    } else if constexpr (kIsUInt<C>) {
      return WrapPow(a, b);
    } else {
      if (b < 0) {
        // 1 / a^|b| truncated: nonzero only for a == 1 and a == -1.
        if (a == 1) return 1;
        if (a == -1) return (b & 1) != 0 ? -1 : 1;
        return 0;
      }
      return static_cast<int64_t>(WrapPow(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
    }
  }
};

// numpy.maximum / numpy.minimum: a NaN in either operand is the result; on
// ties the second operand (which decides the sign of a zero). Complex values
// are ordered by real, then imaginary part; on ties the first operand.
struct MaximumOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsCx<C>) {
      return ComplexIsNaN(a) || ComplexGreaterEqual(a, b) ? a : b;
    } else {
      if constexpr (kIsDouble<C>) {
        if (std::isnan(a)) return a;
      }
      return a > b ? a : b;
    }
  }
};
struct MinimumOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsCx<C>) {
      return ComplexIsNaN(a) || ComplexGreaterEqual(b, a) ? a : b;
    } else {
      if constexpr (kIsDouble<C>) {
        if (std::isnan(a)) return a;
      }
      return a < b ? a : b;
    }
  }
};

struct Atan2Op {
  template <typename C>
  static constexpr bool kSupports = kIsDouble<C>;
  double operator()(double a, double b) const { return std::atan2(a, b); }
};

#define GPUFLOW_COMPARISON_OP(Name, expr)   \
  struct Name {                             \
    template <typename C>                   \
    static constexpr bool kSupports = true; \
    template <typename C>                   \
    bool operator()(C a, C b) const {       \
      return expr;                          \
    }                                       \
  };
// Ordered comparisons of complex values: by real, then imaginary part (NumPy 2).
template <typename C>
bool Greater(C a, C b) {
  if constexpr (kIsCx<C>) {
    return ComplexGreater(a, b);
  } else {
    return a > b;
  }
}
template <typename C>
bool GreaterEqual(C a, C b) {
  if constexpr (kIsCx<C>) {
    return ComplexGreaterEqual(a, b);
  } else {
    return a >= b;
  }
}

GPUFLOW_COMPARISON_OP(EqOp, a == b)
GPUFLOW_COMPARISON_OP(NeOp, a != b)
GPUFLOW_COMPARISON_OP(LtOp, Greater(b, a))
GPUFLOW_COMPARISON_OP(LeOp, GreaterEqual(b, a))
GPUFLOW_COMPARISON_OP(GtOp, Greater(a, b))
GPUFLOW_COMPARISON_OP(GeOp, GreaterEqual(a, b))
GPUFLOW_COMPARISON_OP(LogicalAndOp, (a != C{0}) && (b != C{0}))
GPUFLOW_COMPARISON_OP(LogicalOrOp, (a != C{0}) || (b != C{0}))
GPUFLOW_COMPARISON_OP(LogicalXorOp, (a != C{0}) != (b != C{0}))
#undef GPUFLOW_COMPARISON_OP

#define GPUFLOW_BITWISE_OP(Name, op)                                          \
  struct Name {                                                               \
    template <typename C>                                                     \
    static constexpr bool kSupports = !kIsDouble<C> && !kIsCx<C>;             \
    template <typename C>                                                     \
    C operator()(C a, C b) const {                                            \
      if constexpr (kIsBool<C>) {                                             \
        return static_cast<bool>(static_cast<int>(a) op static_cast<int>(b)); \
      } else {                                                                \
        return a op b;                                                        \
      }                                                                       \
    }                                                                         \
  };
GPUFLOW_BITWISE_OP(BitwiseAndOp, &)
GPUFLOW_BITWISE_OP(BitwiseOrOp, |)
GPUFLOW_BITWISE_OP(BitwiseXorOp, ^)
#undef GPUFLOW_BITWISE_OP

// numpy.gcd and numpy.lcm: on the magnitudes, computed in 64 bits and wrapped
// to the dtype on the store (gcd(INT64_MIN, 0) is INT64_MIN, as NumPy's).
inline uint64_t Magnitude(int64_t a) {
  return a < 0 ? uint64_t{0} - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
}
inline uint64_t Magnitude(uint64_t a) { return a; }
inline uint64_t EuclidGcd(uint64_t a, uint64_t b) {
  while (b != 0) {
    const uint64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}
struct GcdOp {
  template <typename C>
  static constexpr bool kSupports = std::is_same_v<C, int64_t> || kIsUInt<C>;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(EuclidGcd(Magnitude(a), Magnitude(b)));
  }
};
struct LcmOp {
  template <typename C>
  static constexpr bool kSupports = std::is_same_v<C, int64_t> || kIsUInt<C>;
  template <typename C>
  C operator()(C a, C b) const {
    const uint64_t x = Magnitude(a), y = Magnitude(b);
    const uint64_t g = EuclidGcd(x, y);
    return g == 0 ? C{0} : static_cast<C>(x / g * y);
  }
};

// ---- Ternary ops --------------------------------------------------------------------

// numpy.clip: min(max(x, lo), hi) where a NaN anywhere is the result and
// lo > hi gives hi.
struct ClipOp {
  template <typename C>
  static constexpr bool kSupports = true;
  template <typename C>
  C operator()(C x, C lo, C hi) const {
    C t = x;
    if constexpr (kIsCx<C>) {
      return MinimumOp{}(MaximumOp{}(t, lo), hi);
    } else if constexpr (kIsDouble<C>) {
      if (!std::isnan(t)) t = t > lo ? t : lo;
      if (!std::isnan(t)) t = t < hi ? t : hi;
      return t;
    } else {
      t = t > lo ? t : lo;
      return t < hi ? t : hi;
    }
  }
};

// ---- Kernels ----------------------------------------------------------------------------

// Where the operands live: the output is operand 0 of the loop, input i is
// operand i + 1.
struct ElementwiseArgs {
  StridedLoop loop;
  std::vector<const std::byte*> inputs;
  std::vector<LoadFn> loads;
  std::byte* out = nullptr;
  DType out_dtype = DType::kFloat32;
};

template <typename C, typename Op>
void UnaryRange(const ElementwiseArgs& args, int64_t begin, int64_t end) {
  using R = decltype(Op{}(C{}));
  const StoreFn store = GetStoreFn(ClassOfCompute<R>(), args.out_dtype);
  C a[kBlock];
  R r[kBlock];
  ForEachRun(args.loop, begin, end, [&](int64_t n, const int64_t* off, const int64_t* step) {
    args.loads[0](args.inputs[0], off[1], step[1], n, a);
    for (int64_t i = 0; i < n; ++i) r[i] = Op{}(a[i]);
    store(r, n, args.out, off[0], step[0]);
  });
}

template <typename C, typename Op>
void BinaryRange(const ElementwiseArgs& args, int64_t begin, int64_t end) {
  using R = decltype(Op{}(C{}, C{}));
  const StoreFn store = GetStoreFn(ClassOfCompute<R>(), args.out_dtype);
  C a[kBlock];
  C b[kBlock];
  R r[kBlock];
  ForEachRun(args.loop, begin, end, [&](int64_t n, const int64_t* off, const int64_t* step) {
    args.loads[0](args.inputs[0], off[1], step[1], n, a);
    args.loads[1](args.inputs[1], off[2], step[2], n, b);
    for (int64_t i = 0; i < n; ++i) r[i] = Op{}(a[i], b[i]);
    store(r, n, args.out, off[0], step[0]);
  });
}

template <typename C>
void WhereRange(const ElementwiseArgs& args, int64_t begin, int64_t end) {
  const StoreFn store = GetStoreFn(ClassOfCompute<C>(), args.out_dtype);
  bool cond[kBlock];
  C a[kBlock];
  C b[kBlock];
  ForEachRun(args.loop, begin, end, [&](int64_t n, const int64_t* off, const int64_t* step) {
    args.loads[0](args.inputs[0], off[1], step[1], n, cond);
    args.loads[1](args.inputs[1], off[2], step[2], n, a);
    args.loads[2](args.inputs[2], off[3], step[3], n, b);
    for (int64_t i = 0; i < n; ++i) a[i] = cond[i] ? a[i] : b[i];
    store(a, n, args.out, off[0], step[0]);
  });
}

template <typename C, typename Op>
void TernaryRange(const ElementwiseArgs& args, int64_t begin, int64_t end) {
  const StoreFn store = GetStoreFn(ClassOfCompute<C>(), args.out_dtype);
  C a[kBlock];
  C b[kBlock];
  C c[kBlock];
  ForEachRun(args.loop, begin, end, [&](int64_t n, const int64_t* off, const int64_t* step) {
    args.loads[0](args.inputs[0], off[1], step[1], n, a);
    args.loads[1](args.inputs[1], off[2], step[2], n, b);
    args.loads[2](args.inputs[2], off[3], step[3], n, c);
    for (int64_t i = 0; i < n; ++i) a[i] = Op{}(a[i], b[i], c[i]);
    store(a, n, args.out, off[0], step[0]);
  });
}

enum class Arity : uint8_t { kUnary, kBinary, kTernary, kWhere };

// Runs `Op` over the output range in the compute type of `cls`.
template <typename Op, Arity kArity>
absl::Status RunOp(ComputeClass cls, const ElementwiseArgs& args,
                   const HostKernelOptions& options) {
  return VisitClass(cls, [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    if constexpr (!Op::template kSupports<C>) {
      return absl::InvalidArgumentError("not defined for this compute dtype");
    } else {
      ParallelFor(args.loop.num_elements(), 1, options, [&](int64_t begin, int64_t end) {
        if constexpr (kArity == Arity::kUnary) {
          UnaryRange<C, Op>(args, begin, end);
        } else if constexpr (kArity == Arity::kBinary) {
          BinaryRange<C, Op>(args, begin, end);
        } else if constexpr (kArity == Arity::kWhere) {
          WhereRange<C>(args, begin, end);
        } else {
          TernaryRange<C, Op>(args, begin, end);
        }
      });
      return absl::OkStatus();
    }
  });
}

struct OpEntry {
  int arity = 1;
  absl::Status (*run)(ComputeClass, const ElementwiseArgs&, const HostKernelOptions&) = nullptr;
};

template <typename Op>
OpEntry Unary() {
  return {1, &RunOp<Op, Arity::kUnary>};
}
template <typename Op>
OpEntry Binary() {
  return {2, &RunOp<Op, Arity::kBinary>};
}

const absl::flat_hash_map<std::string, OpEntry>& ElementwiseOps() {
  static const auto* ops = new absl::flat_hash_map<std::string, OpEntry>{
      {"neg", Unary<NegOp>()},
      {"abs", Unary<AbsOp>()},
      {"sign", Unary<SignOp>()},
      {"square", Unary<SquareOp>()},
      {"sqrt", Unary<FloatFnOp<Sqrt, CSqrt>>()},
      {"rsqrt", Unary<FloatFnOp<Rsqrt, CRsqrt>>()},
      {"exp", Unary<FloatFnOp<Exp, CExp>>()},
      {"log", Unary<FloatFnOp<Log, CLog>>()},
      {"log1p", Unary<FloatFnOp<Log1p, CLog1p>>()},
      {"expm1", Unary<FloatFnOp<Expm1, CExpm1>>()},
      {"sin", Unary<FloatFnOp<Sin, CSin>>()},
      {"cos", Unary<FloatFnOp<Cos, CCos>>()},
      {"tanh", Unary<FloatFnOp<Tanh, CTanh>>()},
      {"asin", Unary<FloatFnOp<Asin, CAsin>>()},
      {"acos", Unary<FloatFnOp<Acos, CAcos>>()},
      {"atan", Unary<FloatFnOp<Atan, CAtan>>()},
      {"asinh", Unary<FloatFnOp<Asinh, CAsinh>>()},
      {"acosh", Unary<FloatFnOp<Acosh, CAcosh>>()},
      {"atanh", Unary<FloatFnOp<Atanh, CAtanh>>()},
      {"sigmoid", Unary<FloatFnOp<Sigmoid>>()},
      {"gelu", Unary<FloatFnOp<Gelu>>()},
      {"erf", Unary<FloatFnOp<Erf>>()},
      {"floor", Unary<RoundingOp<Floor>>()},
      {"ceil", Unary<RoundingOp<Ceil>>()},
      {"round", Unary<RoundingOp<RoundHalfEven>>()},
      {"relu", Unary<ReluOp>()},
      {"reciprocal", Unary<ReciprocalOp>()},
      {"isnan", Unary<IsNanOp>()},
      {"isinf", Unary<IsInfOp>()},
      {"logical_not", Unary<LogicalNotOp>()},
      {"bitwise_not", Unary<BitwiseNotOp>()},
      {"real", Unary<RealOp>()},
      {"imag", Unary<ImagOp>()},
      {"conj", Unary<ConjOp>()},
      {"angle", Unary<AngleOp>()},
      {"cast", Unary<IdentityOp>()},
      {"add", Binary<AddOp>()},
      {"sub", Binary<SubOp>()},
      {"mul", Binary<MulOp>()},
      {"div", Binary<DivOp>()},
      {"floordiv", Binary<FloorDivOp>()},
      {"mod", Binary<ModOp>()},
      {"pow", Binary<PowOp>()},
      {"maximum", Binary<MaximumOp>()},
      {"minimum", Binary<MinimumOp>()},
      {"atan2", Binary<Atan2Op>()},
      {"eq", Binary<EqOp>()},
      {"ne", Binary<NeOp>()},
      {"lt", Binary<LtOp>()},
      {"le", Binary<LeOp>()},
      {"gt", Binary<GtOp>()},
      {"ge", Binary<GeOp>()},
      {"logical_and", Binary<LogicalAndOp>()},
      {"logical_or", Binary<LogicalOrOp>()},
      {"logical_xor", Binary<LogicalXorOp>()},
      {"bitwise_and", Binary<BitwiseAndOp>()},
      {"bitwise_or", Binary<BitwiseOrOp>()},
      {"bitwise_xor", Binary<BitwiseXorOp>()},
      {"gcd", Binary<GcdOp>()},
      {"lcm", Binary<LcmOp>()},
      {"where", {3, &RunOp<IdentityOp, Arity::kWhere>}},
      {"clip", {3, &RunOp<ClipOp, Arity::kTernary>}},
  };
  return *ops;
}

}  // namespace

absl::Status RunElementwise(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                            const HostView& out, const HostKernelOptions& options) {
  const std::string& name = node.op->name;
  if (name == "bitcast") {
    // The same bytes, read as out's dtype (validation kept the item size).
    if (inputs.size() != 1 || inputs[0].shape.num_elements() != out.shape.num_elements() ||
        ItemSize(inputs[0].dtype) != ItemSize(out.dtype)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bitcast of ", inputs.size(), " input(s) to ", DTypeName(out.dtype), " ",
                       out.shape.ToString(), ": expected one input of the same size"));
    }
    const size_t bytes = static_cast<size_t>(out.shape.num_elements() * ItemSize(out.dtype));
    if (bytes != 0) std::memcpy(out.data, inputs[0].data, bytes);
    return absl::OkStatus();
  }
  auto it = ElementwiseOps().find(name);
  if (it == ElementwiseOps().end()) {
    return absl::UnimplementedError(absl::StrCat("no host kernel for elementwise op '", name, "'"));
  }
  const OpEntry& entry = it->second;
  if (static_cast<int>(inputs.size()) != entry.arity) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", entry.arity, " inputs, got ", inputs.size()));
  }
  // Cast computes in its output dtype whatever compute_dtype says.
  const DType compute = name == "cast" ? out.dtype : node.type.compute_dtype;
  ElementwiseArgs args;
  args.out = out.data;
  args.out_dtype = out.dtype;
  args.loop.dims.assign(out.shape.dims().begin(), out.shape.dims().end());
  args.loop.AddOperand(ContiguousStrides(out.shape.dims()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape.rank() > out.shape.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " of shape ", inputs[i].shape.ToString(),
                       " does not broadcast to ", out.shape.ToString()));
    }
    args.loop.AddOperand(BroadcastStrides(inputs[i].shape.dims(), out.shape.dims()));
    args.inputs.push_back(inputs[i].data);
    // where's condition is truth-tested in its own dtype.
    const DType via = (name == "where" && i == 0) ? DType::kBool : compute;
    args.loads.push_back(GetLoadFn(inputs[i].dtype, via));
  }
  args.loop.Simplify();
  absl::Status s = entry.run(ClassOf(compute), args, options);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' with compute dtype ", DTypeName(compute), ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::host_internal
