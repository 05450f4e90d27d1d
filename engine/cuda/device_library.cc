#include "engine/cuda/device_library.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpuflow::cuda {

// The semantics mirror engine/host (the reference kernels): compute classes bool,
// long long, unsigned long long, float (for float16, bfloat16 and float32)
// and double; integer arithmetic wraps; float -> int truncates and
// saturates, NaN -> 0; anything -> bool is != 0; narrow floats round once.
const char kDeviceLibrary[] = R"CUDA(
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef __half f16;
typedef __nv_bfloat16 bf16;

namespace gf {

template <class A, class B> struct same { static constexpr bool v = false; };
template <class A> struct same<A, A> { static constexpr bool v = true; };
template <class T> struct is_narrow { static constexpr bool v = same<T, f16>::v || same<T, bf16>::v; };
template <class T> struct is_fp {
  static constexpr bool v = same<T, float>::v || same<T, double>::v || is_narrow<T>::v;
};
template <class T> struct is_signed_int {
  static constexpr bool v = same<T, i8>::v || same<T, i16>::v || same<T, i32>::v || same<T, i64>::v;
};
template <class T> struct is_unsigned_int {
  static constexpr bool v = same<T, u8>::v || same<T, u16>::v || same<T, u32>::v || same<T, u64>::v;
};
// Complex values (kDeviceComplexLibrary, appended for the kernels that use
// them): the ops below send them to its c_<op> functions, found by
// argument-dependent lookup when a kernel instantiates them.
template <class T> struct complex;
template <class T> struct is_cx { static constexpr bool v = false; };
template <class T> struct is_cx<complex<T>> { static constexpr bool v = true; };
template <class T> struct limits;
template <> struct limits<i8> { static constexpr double lo = -128.0, hi_ex = 128.0; };
template <> struct limits<i16> { static constexpr double lo = -32768.0, hi_ex = 32768.0; };
template <> struct limits<i32> { static constexpr double lo = -2147483648.0, hi_ex = 2147483648.0; };
template <> struct limits<i64> {
  static constexpr double lo = -9223372036854775808.0, hi_ex = 9223372036854775808.0;
};
template <> struct limits<u8> { static constexpr double lo = 0.0, hi_ex = 256.0; };
template <> struct limits<u16> { static constexpr double lo = 0.0, hi_ex = 65536.0; };
template <> struct limits<u32> { static constexpr double lo = 0.0, hi_ex = 4294967296.0; };
template <> struct limits<u64> { static constexpr double lo = 0.0, hi_ex = 18446744073709551616.0; };
// (Written with the traits: ~(T)0 of a narrow unsigned T is a negative int.)
template <class T> __device__ __forceinline__ T int_max() {
  if constexpr (is_unsigned_int<T>::v) return (T)~0ull;
  else return (T)((1ull << (sizeof(T) * 8 - 1)) - 1);
}
template <class T> __device__ __forceinline__ T int_min() {
  if constexpr (is_unsigned_int<T>::v) return (T)0;
  else return (T)(1ull << (sizeof(T) * 8 - 1));
}

// Narrow floats to float/double (exact).
__device__ __forceinline__ float widen(f16 v) { return __half2float(v); }
__device__ __forceinline__ float widen(bf16 v) { return __bfloat162float(v); }

template <class To> __device__ __forceinline__ To sat(double v) {
  if (v != v) return (To)0;
  double t = trunc(v);
  if (t <= limits<To>::lo) return int_min<To>();
  if (t >= limits<To>::hi_ex) return int_max<To>();
  return (To)t;
}
template <class To> __device__ __forceinline__ To sat(float v) {
  if (v != v) return (To)0;
  return sat<To>((double)v);
}

// A NaN as a narrow float the way the host converts it (engine/ir/half.h's
// RoundDoubleToBits, as NumPy's float16): quiet, its sign and leading
// payload bits kept (CUDA's conversions give 0x7FFF for every NaN). The
// NaN's bits in double's layout (a float's widened exactly), then the
// narrow format's sign, quiet NaN bits and top `mant` payload bits.
__device__ __forceinline__ unsigned long long nan_bits(float v) {
  const unsigned long long b = __float_as_uint(v);
  return ((b & 0x80000000ull) << 32) | ((b & 0x7FFFFFull) << 29);
}
__device__ __forceinline__ unsigned long long nan_bits(double v) {
  return (unsigned long long)__double_as_longlong(v);
}
__device__ __forceinline__ unsigned short narrow_nan(unsigned long long b, unsigned quiet, int mant) {
  return (unsigned short)(((b >> 48) & 0x8000u) | quiet | ((b & 0xFFFFFFFFFFFFFull) >> (52 - mant)));
}
template <class F> __device__ __forceinline__ f16 nan_f16(F v) { return __ushort_as_half(narrow_nan(nan_bits(v), 0x7E00u, 10)); }
template <class F> __device__ __forceinline__ bf16 nan_bf16(F v) { return __ushort_as_bfloat16(narrow_nan(nan_bits(v), 0x7FC0u, 7)); }
// The same bits from a float in 32-bit operations (every narrow store of a
// float runs one, NaN or not: the 64-bit form above made half and bfloat16
// kernels ALU-bound): bfloat16 is the float's top half with the quiet bit
// set; float16 its sign, the quiet NaN and the top 10 payload bits.
__device__ __forceinline__ f16 nan_f16(float v) {
  const unsigned b = __float_as_uint(v);
  return __ushort_as_half((unsigned short)(((b >> 16) & 0x8000u) | 0x7E00u | ((b >> 13) & 0x3FFu)));
}
__device__ __forceinline__ bf16 nan_bf16(float v) {
  return __ushort_as_bfloat16((unsigned short)((__float_as_uint(v) >> 16) | 0x40u));
}

// cv<To>(v): gpuflow's conversion semantics between any two types. A value
// of the type itself comes back untouched (a narrow float's NaN payload too).
template <class To, class From> __device__ __forceinline__ To cv(From v) {
  if constexpr (same<To, From>::v) {
    return v;
  } else if constexpr (is_cx<From>::v || is_cx<To>::v) {
    return cx_cv(v, (To*)nullptr);
  } else if constexpr (is_narrow<From>::v) {
    return cv<To>(widen(v));
  } else if constexpr (same<To, bool>::v) {
    return v != (From)0;
  } else if constexpr (same<To, f16>::v) {
    if constexpr (same<From, float>::v) return v != v ? nan_f16(v) : __float2half_rn(v);
    else if constexpr (same<From, double>::v) return v != v ? nan_f16(v) : __double2half(v);
    else if constexpr (same<From, bool>::v) return __float2half_rn(v ? 1.f : 0.f);
    else if constexpr (is_signed_int<From>::v) return __ll2half_rn((i64)v);
    else return __ull2half_rn((u64)v);
  } else if constexpr (same<To, bf16>::v) {
    if constexpr (same<From, float>::v) return v != v ? nan_bf16(v) : __float2bfloat16_rn(v);
    else if constexpr (same<From, double>::v) return v != v ? nan_bf16(v) : __double2bfloat16(v);
    else if constexpr (same<From, bool>::v) return __float2bfloat16_rn(v ? 1.f : 0.f);
    else if constexpr (is_signed_int<From>::v) return __ll2bfloat16_rn((i64)v);
    else return __ull2bfloat16_rn((u64)v);
  } else if constexpr ((is_signed_int<To>::v || is_unsigned_int<To>::v) && is_fp<From>::v) {
    return sat<To>(v);
  } else {
    return (To)v;
  }
}

// in<C, K>(x): load-side conversion: to the op's compute dtype K (rounding or
// wrapping as the reference does), then to the compute class C.
template <class C, class K, class X> __device__ __forceinline__ C in(X x) {
  if constexpr (same<K, X>::v) return cv<C>(x);
  else return cv<C>(cv<K>(x));
}

__device__ __forceinline__ i64 wadd(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ i64 wsub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ i64 wmul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
__device__ __forceinline__ i64 wneg(i64 a) { return (i64)(0ull - (u64)a); }

// ---- unary ----
template <class C> __device__ __forceinline__ C op_neg(C a) {
  if constexpr (same<C, i64>::v) return wneg(a); else if constexpr (same<C, u64>::v) return 0ull - a; else return -a;
}
template <class C> __device__ __forceinline__ auto op_abs(C a) {
  if constexpr (is_cx<C>::v) return c_abs(a);
  else if constexpr (same<C, i64>::v) return a < 0 ? wneg(a) : a;
  else if constexpr (same<C, float>::v || same<C, double>::v) return fabs(a);
  else return a;
}
template <class C> __device__ __forceinline__ C op_sign(C a) {
  if constexpr (is_cx<C>::v) return c_sign(a);
  else if constexpr (is_fp<C>::v) return a > 0 ? (C)1 : (a < 0 ? (C)-1 : (a == 0 ? (C)0 : a));
  else if constexpr (same<C, u64>::v) return a > 0 ? 1 : 0;
  else return a > 0 ? 1 : (a < 0 ? -1 : 0);
}
template <class C> __device__ __forceinline__ C op_square(C a) {
  if constexpr (same<C, i64>::v) return wmul(a, a); else if constexpr (same<C, bool>::v) return a; else return a * a;
}
template <class C> __device__ __forceinline__ C op_sqrt(C a) { if constexpr (is_cx<C>::v) return c_sqrt(a); else return sqrt(a); }
template <class C> __device__ __forceinline__ C op_rsqrt(C a) { if constexpr (is_cx<C>::v) return c_reciprocal(c_sqrt(a)); else return (C)1 / sqrt(a); }
template <class C> __device__ __forceinline__ C op_exp(C a) { if constexpr (is_cx<C>::v) return c_exp(a); else return exp(a); }
template <class C> __device__ __forceinline__ C op_log(C a) { if constexpr (is_cx<C>::v) return c_log(a); else return log(a); }
template <class C> __device__ __forceinline__ C op_log1p(C a) { if constexpr (is_cx<C>::v) return c_log1p(a); else return log1p(a); }
template <class C> __device__ __forceinline__ C op_expm1(C a) { if constexpr (is_cx<C>::v) return c_expm1(a); else return expm1(a); }
template <class C> __device__ __forceinline__ C op_sin(C a) { if constexpr (is_cx<C>::v) return c_sin(a); else return sin(a); }
template <class C> __device__ __forceinline__ C op_cos(C a) { if constexpr (is_cx<C>::v) return c_cos(a); else return cos(a); }
template <class C> __device__ __forceinline__ C op_tanh(C a) { if constexpr (is_cx<C>::v) return c_tanh(a); else return tanh(a); }
template <class C> __device__ __forceinline__ C op_asin(C a) { if constexpr (is_cx<C>::v) return c_asin(a); else return asin(a); }
template <class C> __device__ __forceinline__ C op_acos(C a) { if constexpr (is_cx<C>::v) return c_acos(a); else return acos(a); }
template <class C> __device__ __forceinline__ C op_atan(C a) { if constexpr (is_cx<C>::v) return c_atan(a); else return atan(a); }
template <class C> __device__ __forceinline__ C op_asinh(C a) { if constexpr (is_cx<C>::v) return c_asinh(a); else return asinh(a); }
template <class C> __device__ __forceinline__ C op_acosh(C a) { if constexpr (is_cx<C>::v) return c_acosh(a); else return acosh(a); }
template <class C> __device__ __forceinline__ C op_atanh(C a) { if constexpr (is_cx<C>::v) return c_atanh(a); else return atanh(a); }
template <class C> __device__ __forceinline__ C op_erf(C a) { return erf(a); }
template <class C> __device__ __forceinline__ C op_sigmoid(C a) {
  if (a >= 0) return (C)1 / ((C)1 + exp(-a));
  C e = exp(a);
  return e / ((C)1 + e);
}
template <class C> __device__ __forceinline__ C op_gelu(C a) {
  return (C)0.5 * a * ((C)1 + erf(a * (C)0.70710678118654752440));
}
template <class C> __device__ __forceinline__ C op_floor(C a) { if constexpr (is_fp<C>::v) return floor(a); else return a; }
template <class C> __device__ __forceinline__ C op_ceil(C a) { if constexpr (is_fp<C>::v) return ceil(a); else return a; }
template <class C> __device__ __forceinline__ C op_round(C a) {
  if constexpr (is_cx<C>::v) return c_round(a); else if constexpr (is_fp<C>::v) return rint(a); else return a;
}
template <class C> __device__ __forceinline__ C op_relu(C a) {
  if constexpr (is_fp<C>::v) return a != a ? a : (a > 0 ? a : (C)0); else return a > (C)0 ? a : (C)0;
}
template <class C> __device__ __forceinline__ C op_reciprocal(C a) {
  if constexpr (is_cx<C>::v) return c_reciprocal(a);
  else if constexpr (is_fp<C>::v) return (C)1 / a;
  else if constexpr (same<C, i64>::v) return (a == 1 || a == -1) ? a : 0;
  else if constexpr (same<C, u64>::v) return a == 1 ? 1 : 0;
  else return a;
}
template <class C> __device__ __forceinline__ bool op_isnan(C a) {
  if constexpr (is_cx<C>::v) return c_isnan(a); else if constexpr (is_fp<C>::v) return a != a; else return false;
}
template <class C> __device__ __forceinline__ bool op_isinf(C a) {
  if constexpr (is_cx<C>::v) return c_isinf(a); else if constexpr (is_fp<C>::v) return isinf(a); else return false;
}
template <class C> __device__ __forceinline__ bool op_logical_not(C a) { return !(a != (C)0); }
template <class C> __device__ __forceinline__ C op_bitwise_not(C a) { if constexpr (same<C, bool>::v) return !a; else return ~a; }
template <class C> __device__ __forceinline__ C op_cast(C a) { return a; }
// real, imag, conj, angle: a real x is its own real part and conjugate, with
// a zero imaginary part and an angle of atan2(0, x).
template <class C> __device__ __forceinline__ auto op_real(C a) { if constexpr (is_cx<C>::v) return a.re; else return a; }
template <class C> __device__ __forceinline__ auto op_imag(C a) { if constexpr (is_cx<C>::v) return a.im; else return (C)0; }
template <class C> __device__ __forceinline__ C op_conj(C a) { if constexpr (is_cx<C>::v) return c_conj(a); else return a; }
template <class C> __device__ __forceinline__ auto op_angle(C a) { if constexpr (is_cx<C>::v) return c_angle(a); else return atan2((C)0, a); }

// ---- binary ----
template <class C> __device__ __forceinline__ C op_add(C a, C b) {
  if constexpr (same<C, bool>::v) return a || b; else if constexpr (same<C, i64>::v) return wadd(a, b); else return a + b;
}
template <class C> __device__ __forceinline__ C op_sub(C a, C b) {
  if constexpr (same<C, i64>::v) return wsub(a, b); else return a - b;
}
template <class C> __device__ __forceinline__ C op_mul(C a, C b) {
  if constexpr (same<C, bool>::v) return a && b; else if constexpr (same<C, i64>::v) return wmul(a, b); else return a * b;
}
template <class C> __device__ __forceinline__ C op_div(C a, C b) { return a / b; }
// A bfloat16 division by a value shared by many elements (a row's), as a
// multiply by its reciprocal when that is normal: for bfloat16 operands the
// float product rounds to the bfloat16 quotient's bits (every bfloat16
// numerator against every divisor of normal reciprocal, checked on the
// host); other divisors divide.
struct rcp_div { float d, r; bool ok; };
__device__ __forceinline__ rcp_div rcp_div_of(float d) {
  const float a = fabsf(d);
  return rcp_div{d, 1.0f / d, a >= 0x1p-126f && a <= 0x1p126f};
}
__device__ __forceinline__ float div_by(float a, const rcp_div& q) { return q.ok ? a * q.r : a / q.d; }
template <class C> __device__ __forceinline__ C fp_floordiv(C a, C b) {
  if (b == 0) return a / b;
  C mod = fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= (C)1;
  if (div == 0) return copysign((C)0, a / b);
  C fd = floor(div);
  if (div - fd > (C)0.5) fd += (C)1;
  return fd;
}
template <class C> __device__ __forceinline__ C op_floordiv(C a, C b) {
  if constexpr (is_fp<C>::v) return fp_floordiv(a, b);
  else if constexpr (same<C, u64>::v) return b == 0 ? 0 : a / b;
  else {
    if (b == 0) return 0;
    if (b == -1) return wneg(a);
    i64 q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
}
template <class C> __device__ __forceinline__ C op_mod(C a, C b) {
  if constexpr (is_fp<C>::v) {
    C mod = fmod(a, b);
    if (b == 0) return mod;
    if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; } else { mod = copysign((C)0, b); }
    return mod;
  } else if constexpr (same<C, u64>::v) return b == 0 ? 0 : a % b;
  else {
    if (b == 0 || b == -1) return 0;
    i64 r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
}
__device__ __forceinline__ u64 wpow(u64 base, u64 e) {
  u64 r = 1;
  while (e != 0) { if (e & 1) r *= base; base *= base; e >>= 1; }
  return r;
}
template <class C> __device__ __forceinline__ C op_pow(C a, C b) {
  if constexpr (is_cx<C>::v) return c_pow(a, b);
  else if constexpr (is_fp<C>::v) return pow(a, b);
  else if constexpr (same<C, u64>::v) return wpow(a, b);
  else {
    if (b < 0) { if (a == 1) return 1; if (a == -1) return (b & 1) ? -1 : 1; return 0; }
    return (i64)wpow((u64)a, (u64)b);
  }
}
// Complex: ordered by real, then imaginary part; a NaN, else the first of
// equal values.
template <class C> __device__ __forceinline__ C op_maximum(C a, C b) {
  if constexpr (is_cx<C>::v) return c_isnan(a) || a >= b ? a : b;
  if constexpr (is_fp<C>::v) { if (a != a) return a; }
  return a > b ? a : b;
}
template <class C> __device__ __forceinline__ C op_minimum(C a, C b) {
  if constexpr (is_cx<C>::v) return c_isnan(a) || b >= a ? a : b;
  if constexpr (is_fp<C>::v) { if (a != a) return a; }
  return a < b ? a : b;
}
template <class C> __device__ __forceinline__ C op_atan2(C a, C b) { return atan2(a, b); }
template <class C> __device__ __forceinline__ bool op_eq(C a, C b) { return a == b; }
template <class C> __device__ __forceinline__ bool op_ne(C a, C b) { return a != b; }
template <class C> __device__ __forceinline__ bool op_lt(C a, C b) { return a < b; }
template <class C> __device__ __forceinline__ bool op_le(C a, C b) { return a <= b; }
template <class C> __device__ __forceinline__ bool op_gt(C a, C b) { return a > b; }
template <class C> __device__ __forceinline__ bool op_ge(C a, C b) { return a >= b; }
template <class C> __device__ __forceinline__ bool op_logical_and(C a, C b) { return (a != (C)0) && (b != (C)0); }
template <class C> __device__ __forceinline__ bool op_logical_or(C a, C b) { return (a != (C)0) || (b != (C)0); }
template <class C> __device__ __forceinline__ bool op_logical_xor(C a, C b) { return (a != (C)0) != (b != (C)0); }
template <class C> __device__ __forceinline__ C op_bitwise_and(C a, C b) { if constexpr (same<C, bool>::v) return a && b; else return a & b; }
template <class C> __device__ __forceinline__ C op_bitwise_or(C a, C b) { if constexpr (same<C, bool>::v) return a || b; else return a | b; }
template <class C> __device__ __forceinline__ C op_bitwise_xor(C a, C b) { if constexpr (same<C, bool>::v) return a != b; else return a ^ b; }
// gcd, lcm: on the magnitudes in 64 bits (C is i64 or u64), wrapping as the
// reference does.
template <class C> __device__ __forceinline__ u64 magnitude(C a) {
  if constexpr (same<C, i64>::v) return a < 0 ? 0ull - (u64)a : (u64)a; else return (u64)a;
}
__device__ __forceinline__ u64 euclid_gcd(u64 a, u64 b) {
  while (b != 0) { u64 r = a % b; a = b; b = r; }
  return a;
}
template <class C> __device__ __forceinline__ C op_gcd(C a, C b) { return (C)euclid_gcd(magnitude(a), magnitude(b)); }
template <class C> __device__ __forceinline__ C op_lcm(C a, C b) {
  u64 x = magnitude(a), y = magnitude(b), g = euclid_gcd(x, y);
  return g == 0 ? (C)0 : (C)(x / g * y);
}
// bit_as<To, From>(v): v's bytes read as To (the bitcast op). A value that
// arrives in another type (a literal parameter) is first converted to From,
// the input's own type, exactly; one in From is copied untouched (NaN
// payloads and signs too).
template <class To, class From, class X> __device__ __forceinline__ To bit_as(X x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast keeps the item size");
  From v;
  if constexpr (same<X, From>::v) v = x; else v = cv<From>(x);
  To r;
  memcpy(&r, &v, sizeof(To));
  return r;
}

// ---- ternary ----
template <class C> __device__ __forceinline__ C op_clip(C x, C lo, C hi) {
  C t = x;
  if constexpr (is_cx<C>::v) {
    return op_minimum(op_maximum(t, lo), hi);
  } else if constexpr (is_fp<C>::v) {
    if (t == t) t = t > lo ? t : lo;
    if (t == t) t = t < hi ? t : hi;
    return t;
  } else {
    t = t > lo ? t : lo;
    return t < hi ? t : hi;
  }
}
template <class C> __device__ __forceinline__ C op_where(bool c, C a, C b) { return c ? a : b; }

template <class C> __device__ __forceinline__ C inf() {
  if constexpr (same<C, double>::v) return __longlong_as_double(0x7ff0000000000000ll);
  else return __int_as_float(0x7f800000);
}

// ---- reduction accumulators (codegen_reduce.cc) ----
// var/std: count, mean and sum of squared deviations, in double; elements
// are added by Welford's update, partial results merged by Chan et al.'s.
struct var_acc { double n, mean, m2; };
__device__ __forceinline__ var_acc var_push(var_acc a, double x) {
  a.n += 1.0;
  const double d = x - a.mean;
  a.mean += d / a.n;
  a.m2 += d * (x - a.mean);
  return a;
}
__device__ __forceinline__ var_acc var_combine(var_acc a, var_acc b) {
  if (b.n == 0.0) return a;
  if (a.n == 0.0) return b;
  const double n = a.n + b.n;
  const double d = b.mean - a.mean;
  const double wb = b.n / n;
  return var_acc{n, a.mean + d * wb, a.m2 + b.m2 + d * d * (a.n * wb)};
}
// As the reference (NumPy): divided by max(count - ddof, 0); an inf or NaN
// element (a non-finite mean) gives NaN.
__device__ __forceinline__ double var_finish(var_acc a, double count, double ddof, bool root) {
  const double dof = count - ddof > 0.0 ? count - ddof : 0.0;
  const double v = isfinite(a.mean) ? a.m2 / dof : __longlong_as_double(0x7ff8000000000000ll);
  return root ? sqrt(v) : v;
}

// logsumexp: the running maximum m (NaN wins) and the sum of exp(x - m), in
// double. As scipy.special.logsumexp (the reference): a NaN gives NaN, +inf
// gives +inf, nothing but -inf gives -inf.
struct lse_acc { double m, s; };
__device__ __forceinline__ lse_acc lse_combine(lse_acc a, lse_acc b) {
  const double m = op_maximum<double>(a.m, b.m);
  if (!isfinite(m)) return lse_acc{m, 0.0};
  if (a.m >= b.m) return lse_acc{a.m, a.s + b.s * exp(b.m - a.m)};
  return lse_acc{b.m, a.s * exp(a.m - b.m) + b.s};
}
__device__ __forceinline__ lse_acc lse_push(lse_acc a, double x) { return lse_combine(a, lse_acc{x, 1.0}); }
__device__ __forceinline__ double lse_finish(lse_acc a) { return isfinite(a.m) ? log(a.s) + a.m : a.m; }

// argmin/argmax: the extremum so far and its index (-1: none yet), compared
// in the input's dtype. The answer is the first extremum, or the first NaN.
template <class C> struct arg_acc { C v; long long i; };
template <class C> __device__ __forceinline__ bool is_nan(C v) {
  if constexpr (is_cx<C>::v) return c_isnan(v); else if constexpr (is_fp<C>::v) return v != v; else return false;
}
// Elements pushed in increasing index order (each accumulator's loop).
template <class C, bool kMax> __device__ __forceinline__ arg_acc<C> arg_push(arg_acc<C> a, C x, long long k) {
  const bool take = a.i < 0 || (!is_nan(a.v) && (is_nan(x) || (kMax ? x > a.v : x < a.v)));
  return take ? arg_acc<C>{x, k} : a;
}
// Partial results merged in any order: a NaN first, then the extremum; ties
// go to the lower index.
template <class C, bool kMax> __device__ __forceinline__ arg_acc<C> arg_combine(arg_acc<C> a, arg_acc<C> b) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  const bool an = is_nan(a.v), bn = is_nan(b.v);
  bool take_b;
  if (an || bn) take_b = an == bn ? b.i < a.i : bn;
  else if (kMax ? b.v > a.v : b.v < a.v) take_b = true;
  else if (kMax ? a.v > b.v : a.v < b.v) take_b = false;
  else take_b = b.i < a.i;
  return take_b ? b : a;
}

// A kernel argument word reinterpreted as a scalar of type T.
template <class T> __device__ __forceinline__ T word(unsigned long long w) {
  union { unsigned long long w; T t; } u;
  u.w = w;
  return u.t;
}

// 16-byte vector of E elements of T, for aligned loads and stores.
template <class T, int E> struct alignas(sizeof(T) * E) vec { T v[E]; };

// Philox4x32-10, word for word engine/ir/philox.h (random_uniform/normal).
struct philox_words { unsigned int w[4]; };
__device__ __forceinline__ philox_words philox(unsigned long long counter, unsigned long long seed) {
  unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)(counter >> 32), c2 = 0, c3 = 0;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = 0xD2511F53ull * c0;
    const unsigned long long p1 = 0xCD9E8D57ull * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n1 = (unsigned int)p1;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    const unsigned int n3 = (unsigned int)p0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  philox_words r;
  r.w[0] = c0; r.w[1] = c1; r.w[2] = c2; r.w[3] = c3;
  return r;
}
// Uniform in [0, 1) from 24 bits (narrow floats and float32) or 53 (float64).
__device__ __forceinline__ double uniform24(unsigned int w) { return (double)((float)(w >> 8) * 0x1p-24f); }
__device__ __forceinline__ double uniform53(unsigned int hi, unsigned int lo) {
  return (double)((((unsigned long long)hi << 32) | lo) >> 11) * 0x1p-53;
}

// Block-wide reductions, scans and exchanges with the interfaces of CUB's
// BlockReduce, BlockScan and BlockExchange as the generated kernels use
// them, written here: CUB's headers cost NVRTC about 1.5 s a kernel, these
// a few milliseconds. The same contracts: every thread of the block calls,
// a reduction's result is valid in thread 0, and a TempStorage is reused
// only after a __syncthreads.
// A value of any trivially copyable type through a warp shuffle, word by
// word (the widest word its size and alignment allow), as CUB shuffles.
template <class T> struct shfl_word {
  static constexpr bool w4 = sizeof(T) % 4 == 0 && alignof(T) >= 4;
  static constexpr bool w2 = !w4 && sizeof(T) % 2 == 0 && alignof(T) >= 2;
  static constexpr int size = w4 ? 4 : (w2 ? 2 : 1);
  static constexpr int n = sizeof(T) / size;
};
template <int S> struct word_of { typedef unsigned char t; };
template <> struct word_of<2> { typedef unsigned short t; };
template <> struct word_of<4> { typedef unsigned int t; };
template <int kind, class T>
__device__ __forceinline__ T shfl(const T& v, int delta, unsigned int mask) {
  typedef typename word_of<shfl_word<T>::size>::t word;
  T r = v;
  const word* in = reinterpret_cast<const word*>(&v);
  word* out = reinterpret_cast<word*>(&r);
#pragma unroll
  for (int i = 0; i < shfl_word<T>::n; ++i) {
    const unsigned int w = in[i];
    out[i] = (word)(kind == 0 ? __shfl_down_sync(mask, w, delta) : __shfl_up_sync(mask, w, delta));
  }
  return r;
}
template <class T> __device__ __forceinline__ T shfl_down(const T& v, int delta, unsigned int mask) {
  return shfl<0>(v, delta, mask);
}
template <class T> __device__ __forceinline__ T shfl_up(const T& v, int delta, unsigned int mask) {
  return shfl<1>(v, delta, mask);
}
// The threads of this thread's warp: all 32 but in a last, partial warp.
template <int B> __device__ __forceinline__ int warp_width() {
  return (B % 32 != 0 && (int)(threadIdx.x >> 5) == (B - 1) / 32) ? B % 32 : 32;
}
__device__ __forceinline__ unsigned int lanes_mask(int width) {
  return width == 32 ? 0xffffffffu : ((1u << width) - 1u);
}
struct plus { template <class T> __device__ __forceinline__ T operator()(const T& a, const T& b) const { return a + b; } };

template <class T, int B> struct BlockReduce {
  static constexpr int kWarps = (B + 31) / 32;
  struct TempStorage { alignas(T) unsigned char bytes[sizeof(T) * kWarps]; };
  TempStorage& temp;
  __device__ __forceinline__ explicit BlockReduce(TempStorage& t) : temp(t) {}
  // op over every thread's value in thread order (each warp's lanes, as
  // CUB's shuffle steps of 1, 2, 4 ..., then the warps in order); the result
  // is valid in thread 0.
  template <class Op> __device__ __forceinline__ T Reduce(T v, Op op) {
    T* part = reinterpret_cast<T*>(temp.bytes);
    const int lane = threadIdx.x & 31;
    const int width = warp_width<B>();
    const unsigned int mask = lanes_mask(width);
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {  // lane 0 ends with its warp's lanes in order
      const T o = shfl_down(v, d, mask);
      if (lane + d < width) v = op(v, o);
    }
    if (kWarps == 1) return v;
    if (lane == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kWarps; ++w) v = op(v, part[w]);
    }
    return v;
  }
  __device__ __forceinline__ T Sum(T v) { return Reduce(v, plus()); }
};

template <class T, int B> struct BlockScan {
  static constexpr int kWarps = (B + 31) / 32;
  // The warps' totals (then their exclusive prefixes) and the block's prefix.
  struct TempStorage { alignas(T) unsigned char bytes[sizeof(T) * (kWarps + 1)]; };
  TempStorage& temp;
  __device__ __forceinline__ explicit BlockScan(TempStorage& t) : temp(t) {}
  // `before`: prefix(block aggregate) combined with every earlier thread's
  // total; `prefix` is called once, by thread 0, with the block's aggregate
  // (as CUB's callback, whose lane-0 answer is the block's prefix).
  template <class Op, class P>
  __device__ __forceinline__ void ExclusivePrefix(const T& total, T& before, Op op, P& prefix) {
    T* warps = reinterpret_cast<T*>(temp.bytes);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int width = warp_width<B>();
    const unsigned int mask = lanes_mask(width);
    T inc = total;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const T o = shfl_up(inc, d, mask);
      if (lane >= d) inc = op(o, inc);
    }
    const T below = shfl_up(inc, 1, mask);  // the inclusive scan up to lane - 1
    if (lane == width - 1) warps[warp] = inc;
    __syncthreads();
    if (threadIdx.x == 0) {
      T acc = warps[0];
      for (int w = 1; w < kWarps; ++w) {
        const T t = warps[w];
        warps[w] = acc;
        acc = op(acc, t);
      }
      warps[kWarps] = prefix(acc);
    }
    __syncthreads();
    T b = warps[kWarps];
    if (warp > 0) b = op(b, warps[warp]);
    if (lane > 0) b = op(b, below);
    before = b;
  }
  template <class Op, class P> __device__ __forceinline__ void ExclusiveScan(T in, T& out, Op op, P& prefix) {
    ExclusivePrefix(in, out, op, prefix);
  }
  // Items blocked by thread (thread t holds t*N .. t*N+N-1).
  template <int N, class Op, class P>
  __device__ __forceinline__ void InclusiveScan(T (&in)[N], T (&out)[N], Op op, P& prefix) {
    T total = in[0];
#pragma unroll
    for (int i = 1; i < N; ++i) total = op(total, in[i]);
    T run;
    ExclusivePrefix(total, run, op, prefix);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      run = op(run, in[i]);
      out[i] = run;
    }
  }
};

template <class T, int B, int N> struct BlockExchange {
  // One padding element every 32, so that neither layout's accesses conflict.
  static constexpr int kItems = B * N + (B * N) / 32;
  struct TempStorage { alignas(T) unsigned char bytes[sizeof(T) * kItems]; };
  TempStorage& temp;
  __device__ __forceinline__ explicit BlockExchange(TempStorage& t) : temp(t) {}
  static __device__ __forceinline__ int at(int i) { return i + i / 32; }
  // Striped (thread t holds t + i*B) to blocked (t*N + i), and back.
  __device__ __forceinline__ void StripedToBlocked(T (&in)[N], T (&out)[N]) {
    T* s = reinterpret_cast<T*>(temp.bytes);
#pragma unroll
    for (int i = 0; i < N; ++i) s[at(threadIdx.x + i * B)] = in[i];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = s[at(threadIdx.x * N + i)];
  }
  __device__ __forceinline__ void BlockedToStriped(T (&in)[N], T (&out)[N]) {
    T* s = reinterpret_cast<T*>(temp.bytes);
#pragma unroll
    for (int i = 0; i < N; ++i) s[at(threadIdx.x * N + i)] = in[i];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = s[at(threadIdx.x + i * B)];
  }
};

}  // namespace gf
)CUDA";

std::string DeviceSource(absl::string_view kernel) {
  if (absl::StrContains(kernel, "gf::complex")) {
    return absl::StrCat(kDeviceLibrary, kDeviceComplexLibrary, kernel);
  }
  return absl::StrCat(kDeviceLibrary, kernel);
}

}  // namespace gpuflow::cuda
