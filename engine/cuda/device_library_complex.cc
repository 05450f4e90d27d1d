#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

// Complex values on the device, appended to kDeviceLibrary by
// DeviceSource for kernels that name gf::complex (others do not pay for
// parsing it). Every complex op computes in gf::complex<double>, as the host
// reference computes in std::complex<double>, and rounds once when it
// stores a complex64. The formulas are NumPy's where the host kernels
// (engine/host/host_complex.cc) write NumPy's out: the schoolbook product,
// Smith's quotient, the reciprocal, integer powers by repeated
// multiplication, sign, log1p, expm1 and the lexicographic order. Where the
// host calls glibc's C99 functions (csqrt, cexp, clog, csinh, ccosh,
// ctanh, cpow, and the inverse functions), these are FreeBSD msun's
// algorithms (s_csqrt.c, s_cexp.c, k_exp.c, s_csinh.c, s_ccosh.c,
// s_ctanh.c, catrig.c; BSD licensed), which follow C99 Annex G for
// infinities and NaNs as glibc does and agree with it to a few ulps.
// Real functions are called as ::f so that gf's complex ones never hide
// them.
const char kDeviceComplexLibrary[] = R"CUDA(
namespace gf {

// Aligned to its size, as cuda::std::complex, so that a complex128 loads
// in one 16-byte access (device buffers are 256-byte aligned).
// Its interface is also thrust::complex's (value_type, real(), imag(), the
// other precision's values), which CuPy's kernels use
// (kDeviceCupyComplexLibrary adds the free functions).
template <class T> struct alignas(2 * sizeof(T)) complex {
  typedef T part;
  typedef T value_type;
  T re, im;
  complex() = default;
  __device__ __forceinline__ complex(T r, T i = (T)0) : re(r), im(i) {}
  template <class U> __device__ __forceinline__ complex(const complex<U>& z) : re((T)z.re), im((T)z.im) {}
  __device__ __forceinline__ T real() const { return re; }
  __device__ __forceinline__ T imag() const { return im; }
  __device__ __forceinline__ void real(T v) { re = v; }
  __device__ __forceinline__ void imag(T v) { im = v; }
};
typedef complex<float> c64;
typedef complex<double> c128;

template <class T> __device__ __forceinline__ complex<T> operator+(complex<T> a, complex<T> b) { return complex<T>(a.re + b.re, a.im + b.im); }
template <class T> __device__ __forceinline__ complex<T> operator-(complex<T> a, complex<T> b) { return complex<T>(a.re - b.re, a.im - b.im); }
template <class T> __device__ __forceinline__ complex<T> operator-(complex<T> a) { return complex<T>(-a.re, -a.im); }
// The schoolbook product, as NumPy (no C99 recovery of infinities).
template <class T> __device__ __forceinline__ complex<T> operator*(complex<T> a, complex<T> b) {
  return complex<T>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
// Smith's quotient, as NumPy (x / 0 is a complex inf or NaN, part by part).
template <class T> __device__ __forceinline__ complex<T> operator/(complex<T> a, complex<T> b) {
  const T abr = ::fabs(b.re), abi = ::fabs(b.im);
  if (abr >= abi) {
    if (abr == 0 && abi == 0) return complex<T>(a.re / abr, a.im / abr);
    const T rat = b.im / b.re;
    const T scl = (T)1 / (b.re + b.im * rat);
    return complex<T>((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
  }
  const T rat = b.re / b.im;
  const T scl = (T)1 / (b.im + b.re * rat);
  return complex<T>((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
// Part by part (a mean's sum over its count, as the host divides).
template <class T> __device__ __forceinline__ complex<T> operator/(complex<T> a, T b) { return complex<T>(a.re / b, a.im / b); }
template <class T> __device__ __forceinline__ bool operator==(complex<T> a, complex<T> b) { return a.re == b.re && a.im == b.im; }
template <class T> __device__ __forceinline__ bool operator!=(complex<T> a, complex<T> b) { return !(a == b); }
// NumPy 2's order: by real part, then imaginary part; a NaN compares false.
template <class T> __device__ __forceinline__ bool operator>(complex<T> x, complex<T> y) {
  return (x.re > y.re && x.im == x.im && y.im == y.im) || (x.re == y.re && x.im > y.im);
}
template <class T> __device__ __forceinline__ bool operator>=(complex<T> x, complex<T> y) {
  return (x.re > y.re && x.im == x.im && y.im == y.im) || (x.re == y.re && x.im >= y.im);
}
template <class T> __device__ __forceinline__ bool operator<(complex<T> x, complex<T> y) { return y > x; }
template <class T> __device__ __forceinline__ bool operator<=(complex<T> x, complex<T> y) { return y >= x; }

template <class T> __device__ __forceinline__ bool c_isnan(complex<T> z) { return z.re != z.re || z.im != z.im; }
template <class T> __device__ __forceinline__ bool c_isinf(complex<T> z) { return ::isinf(z.re) || ::isinf(z.im); }

// cv's conversions to and from complex (the host's ConvertValue): complex
// to complex rounds each part; to bool tests both parts; to a real dtype
// takes the real part (as a double first); a real value becomes (double,
// then the part's type) with a zero imaginary part.
template <class To, class From> __device__ __forceinline__ To cx_cv(From v, To*) {
  if constexpr (is_cx<From>::v && is_cx<To>::v) {
    typedef typename To::part P;
    return To((P)v.re, (P)v.im);
  } else if constexpr (is_cx<From>::v) {
    if constexpr (same<To, bool>::v) return v.re != 0 || v.im != 0;
    else return cv<To>((double)v.re);
  } else {
    typedef typename To::part P;
    return To((P)cv<double>(v), (P)0);
  }
}

template <class T> __device__ __forceinline__ complex<T> c_conj(complex<T> z) { return complex<T>(z.re, -z.im); }
template <class T> __device__ __forceinline__ T c_abs(complex<T> z) { return ::hypot(z.re, z.im); }
template <class T> __device__ __forceinline__ T c_angle(complex<T> z) { return ::atan2(z.im, z.re); }
template <class T> __device__ __forceinline__ complex<T> c_round(complex<T> z) { return complex<T>(::rint(z.re), ::rint(z.im)); }

template <class T> __device__ __forceinline__ complex<T> c_reciprocal(complex<T> z) {
  if (::fabs(z.im) <= ::fabs(z.re)) {
    const T q = z.im / z.re, d = z.re + z.im * q;
    return complex<T>((T)1 / d, -q / d);
  }
  const T q = z.re / z.im, d = z.re * q + z.im;
  return complex<T>(q / d, (T)-1 / d);
}

// NumPy 2's sign: z / |z|, 0 for 0, NaN for NaN.
template <class T> __device__ __forceinline__ complex<T> c_sign(complex<T> z) {
  const T nan = (T)__longlong_as_double(0x7ff8000000000000ll);
  const T a = ::hypot(z.re, z.im);
  if (a != a) return complex<T>(nan, nan);
  if (::isinf(a)) {
    if (::isinf(z.re)) {
      if (::isinf(z.im)) return complex<T>(nan, nan);
      return complex<T>(z.re > 0 ? (T)1 : (T)-1, (T)0);
    }
    return complex<T>((T)0, z.im > 0 ? (T)1 : (T)-1);
  }
  if (a == 0) return complex<T>((T)0, (T)0);
  return complex<T>(z.re / a, z.im / a);
}

// ---- csqrt (s_csqrt.c) ----
template <class T> __device__ complex<T> c_sqrt(complex<T> z) {
  T a = z.re, b = z.im;
  if (a == 0 && b == 0) return complex<T>((T)0, b);
  if (::isinf(b)) return complex<T>(__longlong_as_double(0x7ff0000000000000ll), b);
  if (a != a) { const T t = (b - b) / (b - b); return complex<T>(a, t); }
  if (::isinf(a)) {
    if (::signbit(a)) return complex<T>(::fabs(b - b), ::copysign(a, b));
    return complex<T>(a, ::copysign(b - b, b));
  }
  // Scaled so that a + hypot(a, b) cannot overflow, nor the tiny lose bits.
  const double kThresh = 7.446288774449766337959726e+307;  // 0x1.a827999fcef32p+1022
  const double kTiny = 0x1p-1021;
  T scale = (T)1;
  if (::fabs(a) >= kThresh || ::fabs(b) >= kThresh) {
    a *= (T)0.25; b *= (T)0.25; scale = (T)2;
  } else if (::fabs(a) <= kTiny && ::fabs(b) <= kTiny) {
    a *= (T)0x1p54; b *= (T)0x1p54; scale = (T)0x1p-27;
  }
  if (a >= 0) {
    const T t = ::sqrt((a + ::hypot(a, b)) * (T)0.5);
    return complex<T>(t * scale, b / (2 * t) * scale);
  }
  const T t = ::sqrt((-a + ::hypot(a, b)) * (T)0.5);
  return complex<T>(::fabs(b) / (2 * t) * scale, ::copysign(t, b) * scale);
}

// exp(x) as a value in [2^1023, 2^1024) times 2^expt, for x in [709.7,
// 1454.9] where exp(x) overflows (k_exp.c: __frexp_exp, __ldexp_cexp).
__device__ __forceinline__ double c_frexp_exp(double x, int* expt) {
  const double kln2 = 1246.97177782734161156;  // 1799 * ln 2
  const double e = ::exp(x - kln2);
  const long long bits = __double_as_longlong(e);
  const int hx = (int)(bits >> 32);
  *expt = (hx >> 20) - (0x3ff + 1023) + 1799;
  const long long m = (bits & 0x000fffffffffffffll) | ((long long)(0x3ff + 1023) << 52);
  return __longlong_as_double(m);
}
// exp(x) * (cos y, sin y) * 2^expt without overflowing early.
__device__ __forceinline__ complex<double> c_ldexp_cexp(double x, double y, int expt) {
  int ex = 0;
  const double e = c_frexp_exp(x, &ex);
  expt += ex;
  const int h1 = expt / 2, h2 = expt - expt / 2;
  const double s1 = __longlong_as_double((long long)(0x3ff + h1) << 52);
  const double s2 = __longlong_as_double((long long)(0x3ff + h2) << 52);
  return complex<double>(::cos(y) * e * s1 * s2, ::sin(y) * e * s1 * s2);
}

// ---- cexp (s_cexp.c) ----
template <class T> __device__ complex<T> c_exp(complex<T> z) {
  const double x = z.re, y = z.im;
  if (y == 0) return complex<T>(::exp(x), y);
  if (x == 0) return complex<T>(::cos(y), ::sin(y));
  if (!::isfinite(y)) {
    if (!::isinf(x)) return complex<T>(y - y, y - y);
    if (x < 0) return complex<T>(0.0, 0.0);
    return complex<T>(x, y - y);
  }
  if (x >= 7.09782712893383973096e+02 && x <= 1.454912441451808568e+03) {
    return c_ldexp_cexp(x, y, 0);
  }
  const double e = ::exp(x);
  return complex<T>(e * ::cos(y), e * ::sin(y));
}

// Knuth's exact sum: s + e == a + b.
__device__ __forceinline__ void c_two_sum(double a, double b, double* s, double* e) {
  *s = a + b;
  const double bb = *s - a;
  *e = (a - (*s - bb)) + (b - bb);
}

// ---- clog: log |z| + i arg z; |z| near 1 through log1p of x^2 + y^2 - 1
// computed exactly enough (glibc's clog does the same), so that results
// close to 0 keep their relative precision. ----
template <class T> __device__ complex<T> c_log(complex<T> z) {
  const double x = z.re, y = z.im;
  const double ax = ::fabs(x), ay = ::fabs(y);
  const double big = ax > ay ? ax : ay, small = ax > ay ? ay : ax;
  const double arg = ::atan2(y, x);
  if (big > 0x1p1020) {
    return complex<T>(::log(::hypot(big * 0x1p-2, small * 0x1p-2)) + 2 * 0.69314718055994530942, arg);
  }
  const double h = ::hypot(x, y);
  if (h > 0.71 && h < 1.73) {
    const double pb = big * big, eb = ::fma(big, big, -pb);
    const double ps = small * small, es = ::fma(small, small, -ps);
    double s1, e1, s2, e2;
    c_two_sum(pb, -1.0, &s1, &e1);
    c_two_sum(s1, ps, &s2, &e2);
    const double t = s2 + (((e1 + e2) + eb) + es);
    return complex<T>(0.5 * ::log1p(t), arg);
  }
  return complex<T>(::log(h), arg);
}

// NumPy's log1p and expm1 (the host's formulas).
template <class T> __device__ __forceinline__ complex<T> c_log1p(complex<T> z) {
  const T l = ::hypot(z.re + 1, z.im);
  return complex<T>(::log(l), ::atan2(z.im, z.re + 1));
}
template <class T> __device__ __forceinline__ complex<T> c_expm1(complex<T> z) {
  const T a = ::sin(z.im / 2);
  return complex<T>(::expm1(z.re) * ::cos(z.im) - 2 * a * a, ::exp(z.re) * ::sin(z.im));
}

// ---- csinh, ccosh (s_csinh.c, s_ccosh.c) ----
inline __device__ complex<double> c_sinh_d(double x, double y) {
  const double ax = ::fabs(x);
  if (::isfinite(x) && ::isfinite(y)) {
    if (y == 0) return complex<double>(::sinh(x), y);
    if (ax < 22) return complex<double>(::sinh(x) * ::cos(y), ::cosh(x) * ::sin(y));
    if (ax < 7.09782712893383973096e+02) {
      const double h = ::exp(ax) * 0.5;
      return complex<double>(::copysign(h, x) * ::cos(y), h * ::sin(y));
    }
    if (ax < 1.454912441451808568e+03) {
      const complex<double> r = c_ldexp_cexp(ax, y, -1);
      return complex<double>(r.re * ::copysign(1.0, x), r.im);
    }
    const double h = 0x1p1023 * x;
    return complex<double>(h * ::cos(y), h * h * ::sin(y));
  }
  if (x == 0) return complex<double>(x, y - y);
  if (y == 0) return complex<double>(x + x, y);
  if (::isfinite(x)) return complex<double>(y - y, y - y);
  if (::isinf(x)) {
    if (!::isfinite(y)) return complex<double>(x, y - y);
    return complex<double>(x * ::cos(y), __longlong_as_double(0x7ff0000000000000ll) * ::sin(y));
  }
  return complex<double>((x * x) * (y - y), (x + x) * (y - y));
}
inline __device__ complex<double> c_cosh_d(double x, double y) {
  const double ax = ::fabs(x);
  const double inf = __longlong_as_double(0x7ff0000000000000ll);
  if (::isfinite(x) && ::isfinite(y)) {
    if (y == 0) return complex<double>(::cosh(x), x * y);
    if (ax < 22) return complex<double>(::cosh(x) * ::cos(y), ::sinh(x) * ::sin(y));
    if (ax < 7.09782712893383973096e+02) {
      const double h = ::exp(ax) * 0.5;
      return complex<double>(h * ::cos(y), ::copysign(h, x) * ::sin(y));
    }
    if (ax < 1.454912441451808568e+03) {
      const complex<double> r = c_ldexp_cexp(ax, y, -1);
      return complex<double>(r.re, r.im * ::copysign(1.0, x));
    }
    const double h = 0x1p1023 * x;
    return complex<double>(h * h * ::cos(y), h * ::sin(y));
  }
  if (x == 0) return complex<double>(y - y, x * ::copysign(0.0, y));
  if (y == 0) return complex<double>(x * x, ::copysign(0.0, x) * y);
  if (::isfinite(x)) return complex<double>(y - y, x * (y - y));
  if (::isinf(x)) {
    if (!::isfinite(y)) return complex<double>(inf, x * (y - y));
    return complex<double>(inf * ::cos(y), x * ::sin(y));
  }
  return complex<double>((x * x) * (y - y), (x + x) * (y - y));
}
// ---- ctanh (s_ctanh.c, Kahan's formula) ----
inline __device__ complex<double> c_tanh_d(double x, double y) {
  if (!::isfinite(x)) {
    if (x != x) return complex<double>(x, y == 0 ? y : x * y);
    return complex<double>(::copysign(1.0, x), ::copysign(0.0, ::isinf(y) ? y : ::sin(y) * ::cos(y)));
  }
  if (!::isfinite(y)) return complex<double>(x != 0 ? y - y : x, y - y);
  if (::fabs(x) >= 22) {
    const double e = ::exp(-::fabs(x));
    return complex<double>(::copysign(1.0, x), 4 * ::sin(y) * ::cos(y) * e * e);
  }
  const double t = ::tan(y);
  const double beta = 1.0 + t * t;  // 1 / cos^2 y
  const double s = ::sinh(x);
  const double rho = ::sqrt(1 + s * s);  // cosh x
  const double denom = 1 + beta * s * s;
  return complex<double>((beta * rho * s) / denom, t / denom);
}
template <class T> __device__ __forceinline__ complex<T> c_sinh(complex<T> z) { return c_sinh_d(z.re, z.im); }
template <class T> __device__ __forceinline__ complex<T> c_cosh(complex<T> z) { return c_cosh_d(z.re, z.im); }
template <class T> __device__ __forceinline__ complex<T> c_tanh(complex<T> z) { return c_tanh_d(z.re, z.im); }
// sin z = -i sinh(iz), cos z = cosh(iz).
template <class T> __device__ __forceinline__ complex<T> c_sin(complex<T> z) {
  const complex<double> r = c_sinh_d(-z.im, z.re);
  return complex<T>(r.im, -r.re);
}
template <class T> __device__ __forceinline__ complex<T> c_cos(complex<T> z) { return c_cosh_d(-z.im, z.re); }

// C99's product (Annex G, as gcc's __muldc3 that glibc's cpow multiplies
// with): an infinite factor keeps the product infinite where the
// schoolbook formula gives NaN.
__device__ __forceinline__ complex<double> c_mul_c99(complex<double> x, complex<double> w) {
  double a = x.re, b = x.im, c = w.re, d = w.im;
  const double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
  double re = ac - bd, im = ad + bc;
  if (re != re && im != im) {
    bool again = false;
    if (::isinf(a) || ::isinf(b)) {
      a = ::copysign(::isinf(a) ? 1.0 : 0.0, a);
      b = ::copysign(::isinf(b) ? 1.0 : 0.0, b);
      if (c != c) c = ::copysign(0.0, c);
      if (d != d) d = ::copysign(0.0, d);
      again = true;
    }
    if (::isinf(c) || ::isinf(d)) {
      c = ::copysign(::isinf(c) ? 1.0 : 0.0, c);
      d = ::copysign(::isinf(d) ? 1.0 : 0.0, d);
      if (a != a) a = ::copysign(0.0, a);
      if (b != b) b = ::copysign(0.0, b);
      again = true;
    }
    if (!again && (::isinf(ac) || ::isinf(bd) || ::isinf(ad) || ::isinf(bc))) {
      if (a != a) a = ::copysign(0.0, a);
      if (b != b) b = ::copysign(0.0, b);
      if (c != c) c = ::copysign(0.0, c);
      if (d != d) d = ::copysign(0.0, d);
      again = true;
    }
    if (again) {
      const double inf = __longlong_as_double(0x7ff0000000000000ll);
      re = inf * (a * c - b * d);
      im = inf * (a * d + b * c);
    }
  }
  return complex<double>(re, im);
}

// NumPy's power: z ** 0 is 1, 0 ** z is 0 for a real positive z and NaN
// otherwise, integer exponents below 100 by repeated multiplication
// (squaring), the others cexp(b * clog(a)) as glibc's cpow.
template <class T> __device__ complex<T> c_pow(complex<T> a, complex<T> b) {
  if (b.re == 0 && b.im == 0) return complex<T>((T)1, (T)0);
  if (a.re == 0 && a.im == 0) {
    if (b.re > 0 && b.im == 0) return complex<T>((T)0, (T)0);
    const T nan = (T)__longlong_as_double(0x7ff8000000000000ll);
    return complex<T>(nan, nan);
  }
  if (b.im == 0 && b.re > -100 && b.re < 100 && ::trunc(b.re) == b.re) {
    long long n = (long long)b.re;
    if (n == 1) return a;
    if (n == 2) return a * a;
    if (n == 3) return (a * a) * a;
    if (n < 0) n = -n;
    complex<T> acc((T)1, (T)0), p = a;
    long long mask = 1;
    while (true) {
      if ((n & mask) != 0) acc = acc * p;
      mask <<= 1;
      if (n < mask) break;
      p = p * p;
    }
    return b.re < 0 ? complex<T>((T)1, (T)0) / acc : acc;
  }
  return c_exp(c_mul_c99(b, c_log(a)));
}

// ---- casinh, casin, cacos, cacosh, catanh, catan (catrig.c: Hull,
// Fairgrieve and Tang's algorithm, accurate to a few ulps, with C99's
// branch cuts and special values) ----
struct c_trig {
  static constexpr double kEps = 2.220446049250313080847e-16;
  static constexpr double kRecipEps = 1 / kEps;
  static constexpr double kACrossover = 10, kBCrossover = 0.6417;
  static constexpr double kFourSqrtMin = 0x1p-509, kQuarterSqrtMax = 0x1p509, kSqrtMin = 0x1p-511;
  static constexpr double kLn2 = 6.9314718055994531e-1, kE = 2.7182818284590452e0;
  static constexpr double kPio2Hi = 1.5707963267948966e0, kPio2Lo = 6.1232339957367659e-17;
  static constexpr double kSqrt3Eps = 2.5809568279517849e-8, kSqrt6Eps = 3.6500241499888571e-8;
  static constexpr double kMax = 1.7976931348623157e308;

  // (hypot(a, b) - b) / 2, given hypot(a, b).
  static __device__ __forceinline__ double f(double a, double b, double h) {
    if (b < 0) return (h - b) / 2;
    if (b == 0) return a / 2;
    return a * a / (h + b) / 2;
  }
  // x, y >= 0 and below kRecipEps: rx = Re casinh(x + iy), and either B
  // (usable) or sqrt(A^2 - y^2) with y rescaled alike, for Im.
  static __device__ void hard_work(double x, double y, double* rx, bool* b_usable, double* b,
                                   double* sqrt_a2my2, double* new_y) {
    const double r = ::hypot(x, y + 1), s = ::hypot(x, y - 1);
    double a = (r + s) / 2;
    if (a < 1) a = 1;
    if (a < kACrossover) {
      if (y == 1 && x < kEps * kEps / 128) {
        *rx = ::sqrt(x);
      } else if (x >= kEps * ::fabs(y - 1)) {
        const double am1 = f(x, 1 + y, r) + f(x, 1 - y, s);
        *rx = ::log1p(am1 + ::sqrt(am1 * (a + 1)));
      } else if (y < 1) {
        *rx = x / ::sqrt((1 - y) * (1 + y));
      } else {
        *rx = ::log1p((y - 1) + ::sqrt((y - 1) * (y + 1)));
      }
    } else {
      *rx = ::log(a + ::sqrt(a * a - 1));
    }
    *new_y = y;
    if (y < kFourSqrtMin) {
      *b_usable = false;
      *sqrt_a2my2 = a * (2 / kEps);
      *new_y = y * (2 / kEps);
      return;
    }
    *b = y / a;
    *b_usable = true;
    if (*b > kBCrossover) {
      *b_usable = false;
      if (y == 1 && x < kEps / 128) {
        *sqrt_a2my2 = ::sqrt(x) * ::sqrt((a + y) / 2);
      } else if (x >= kEps * ::fabs(y - 1)) {
        const double amy = f(x, y + 1, r) + f(x, y - 1, s);
        *sqrt_a2my2 = ::sqrt(amy * (a + y));
      } else if (y > 1) {
        *sqrt_a2my2 = x * (4 / kEps / kEps) * y / ::sqrt((y + 1) * (y - 1));
        *new_y = y * (4 / kEps / kEps);
      } else {
        *sqrt_a2my2 = ::sqrt((1 - y) * (1 + y));
      }
    }
  }
  // clog for |z| finite and above about kRecipEps.
  static __device__ complex<double> log_large(double x, double y) {
    double ax = ::fabs(x), ay = ::fabs(y);
    if (ax < ay) { const double t = ax; ax = ay; ay = t; }
    if (ax > kMax / 2) return complex<double>(::log(::hypot(x / kE, y / kE)) + 1, ::atan2(y, x));
    if (ax > kQuarterSqrtMax || ay < kSqrtMin) return complex<double>(::log(::hypot(x, y)), ::atan2(y, x));
    return complex<double>(::log(ax * ax + ay * ay) / 2, ::atan2(y, x));
  }
  static __device__ complex<double> asinh(double x, double y) {
    const double ax = ::fabs(x), ay = ::fabs(y);
    if (x != x || y != y) {
      if (::isinf(x)) return complex<double>(x, y + y);
      if (::isinf(y)) return complex<double>(y, x + x);
      if (y == 0) return complex<double>(x + x, y);
      return complex<double>(x + y, x + y);
    }
    if (ax > kRecipEps || ay > kRecipEps) {
      const complex<double> w = ::signbit(x) ? log_large(-x, -y) : log_large(x, y);
      return complex<double>(::copysign(w.re + kLn2, x), ::copysign(w.im, y));
    }
    if (x == 0 && y == 0) return complex<double>(x, y);
    if (ax < kSqrt6Eps / 4 && ay < kSqrt6Eps / 4) return complex<double>(x, y);
    double rx, b, sqrt_a2my2, new_y;
    bool b_usable;
    hard_work(ax, ay, &rx, &b_usable, &b, &sqrt_a2my2, &new_y);
    const double ry = b_usable ? ::asin(b) : ::atan2(new_y, sqrt_a2my2);
    return complex<double>(::copysign(rx, x), ::copysign(ry, y));
  }
  static __device__ complex<double> acos(double x, double y) {
    const bool sx = ::signbit(x), sy = ::signbit(y);
    const double ax = ::fabs(x), ay = ::fabs(y);
    if (x != x || y != y) {
      if (::isinf(x)) return complex<double>(y + y, -__longlong_as_double(0x7ff0000000000000ll));
      if (::isinf(y)) return complex<double>(x + x, -y);
      if (x == 0) return complex<double>(kPio2Hi + kPio2Lo, y + y);
      return complex<double>(x + y, x + y);
    }
    if (ax > kRecipEps || ay > kRecipEps) {
      const complex<double> w = log_large(x, y);
      const double rx = ::fabs(w.im);
      const double ry = w.re + kLn2;
      return complex<double>(rx, sy ? ry : -ry);
    }
    if (x == 1 && y == 0) return complex<double>(0, -y);
    if (ax < kSqrt6Eps / 4 && ay < kSqrt6Eps / 4) return complex<double>(kPio2Hi - (x - kPio2Lo), -y);
    double ry, b, sqrt_a2mx2, new_x;
    bool b_usable;
    hard_work(ay, ax, &ry, &b_usable, &b, &sqrt_a2mx2, &new_x);
    const double rx = b_usable ? ::acos(sx ? -b : b) : ::atan2(sqrt_a2mx2, sx ? -new_x : new_x);
    return complex<double>(rx, sy ? ry : -ry);
  }
  static __device__ complex<double> acosh(double x, double y) {
    const complex<double> w = acos(x, y);
    if (w.re != w.re && w.im != w.im) return complex<double>(w.im, w.re);
    if (w.re != w.re) return complex<double>(::fabs(w.im), w.re);
    // acosh(0 + i NaN) = NaN + i pi/2, as glibc's (catrig.c: NaN + i NaN).
    if (w.im != w.im) return complex<double>(w.im, ::copysign(w.re, y));
    return complex<double>(::fabs(w.im), ::copysign(w.re, y));
  }
  // Re(1 / (x + iy)) without undue underflow (one of x, y above kRecipEps).
  static __device__ double real_part_reciprocal(double x, double y) {
    const int ix = (int)(__double_as_longlong(x) >> 32) & 0x7ff00000;
    const int iy = (int)(__double_as_longlong(y) >> 32) & 0x7ff00000;
    const int kCutoff = 53 / 2 + 1, kBias = 1023;
    if (ix - iy >= (kCutoff << 20) || ::isinf(x)) return 1 / x;
    if (iy - ix >= (kCutoff << 20)) return x / y / y;
    if (ix <= ((kBias + 1024 / 2 - kCutoff) << 20)) return x / (x * x + y * y);
    const double scale = __longlong_as_double((long long)(0x7ff00000 - ix) << 32);
    x *= scale;
    y *= scale;
    return x / (x * x + y * y) * scale;
  }
  static __device__ complex<double> atanh(double x, double y) {
    const double ax = ::fabs(x), ay = ::fabs(y);
    if (y == 0 && ax <= 1) return complex<double>(::atanh(x), y);
    if (x == 0) return complex<double>(x, ::atan(y));
    if (x != x || y != y) {
      if (::isinf(x)) return complex<double>(::copysign(0.0, x), y + y);
      if (::isinf(y)) return complex<double>(::copysign(0.0, x), ::copysign(kPio2Hi + kPio2Lo, y));
      return complex<double>(x + y, x + y);
    }
    if (ax > kRecipEps || ay > kRecipEps) {
      return complex<double>(real_part_reciprocal(x, y), ::copysign(kPio2Hi + kPio2Lo, y));
    }
    if (ax < kSqrt3Eps / 2 && ay < kSqrt3Eps / 2) return complex<double>(x, y);
    double rx, ry;
    if (ax == 1 && ay < kEps) {
      rx = (kLn2 - ::log(ay)) / 2;
    } else {
      const double d = ax - 1;
      rx = ::log1p(4 * ax / (ay < kSqrtMin ? d * d : d * d + ay * ay)) / 4;
    }
    if (ax == 1) ry = ::atan2(2.0, -ay) / 2;
    else if (ay < kEps) ry = ::atan2(2 * ay, (1 - ax) * (1 + ax)) / 2;
    else ry = ::atan2(2 * ay, (1 - ax) * (1 + ax) - ay * ay) / 2;
    return complex<double>(::copysign(rx, x), ::copysign(ry, y));
  }
};
template <class T> __device__ __forceinline__ complex<T> c_asinh(complex<T> z) { return c_trig::asinh(z.re, z.im); }
template <class T> __device__ __forceinline__ complex<T> c_acos(complex<T> z) { return c_trig::acos(z.re, z.im); }
template <class T> __device__ __forceinline__ complex<T> c_acosh(complex<T> z) { return c_trig::acosh(z.re, z.im); }
template <class T> __device__ __forceinline__ complex<T> c_atanh(complex<T> z) { return c_trig::atanh(z.re, z.im); }
// asin z = reverse(asinh(reverse z)), atan alike, reverse(x + iy) = y + ix.
template <class T> __device__ __forceinline__ complex<T> c_asin(complex<T> z) {
  const complex<double> w = c_trig::asinh(z.im, z.re);
  return complex<T>(w.im, w.re);
}
template <class T> __device__ __forceinline__ complex<T> c_atan(complex<T> z) {
  const complex<double> w = c_trig::atanh(z.im, z.re);
  return complex<T>(w.im, w.re);
}

// var/std of complex values: count, both parts' means and the sum of
// squared distances |x - mean|^2, by Welford's update and Chan et al.'s
// merge, as gf::var_acc does for real values.
struct cvar_acc { double n, mr, mi, m2; };
__device__ __forceinline__ cvar_acc cvar_push(cvar_acc a, complex<double> x) {
  a.n += 1.0;
  const double dr = x.re - a.mr, di = x.im - a.mi;
  a.mr += dr / a.n;
  a.mi += di / a.n;
  a.m2 += dr * (x.re - a.mr) + di * (x.im - a.mi);
  return a;
}
__device__ __forceinline__ cvar_acc cvar_combine(cvar_acc a, cvar_acc b) {
  if (b.n == 0.0) return a;
  if (a.n == 0.0) return b;
  const double n = a.n + b.n;
  const double dr = b.mr - a.mr, di = b.mi - a.mi;
  const double wb = b.n / n;
  return cvar_acc{n, a.mr + dr * wb, a.mi + di * wb, a.m2 + b.m2 + (dr * dr + di * di) * (a.n * wb)};
}
__device__ __forceinline__ double cvar_finish(cvar_acc a, double count, double ddof, bool root) {
  const double dof = count - ddof > 0.0 ? count - ddof : 0.0;
  const double v = ::isfinite(a.mr) && ::isfinite(a.mi) ? a.m2 / dof : __longlong_as_double(0x7ff8000000000000ll);
  return root ? ::sqrt(v) : v;
}

// Extremes of the order (the identities of min and max reductions).
template <class T> __device__ __forceinline__ complex<T> c_lowest() {
  const T inf = (T)__longlong_as_double(0x7ff0000000000000ll);
  return complex<T>(-inf, -inf);
}
template <class T> __device__ __forceinline__ complex<T> c_highest() {
  const T inf = (T)__longlong_as_double(0x7ff0000000000000ll);
  return complex<T>(inf, inf);
}

}  // namespace gf
)CUDA";

}  // namespace gpuflow::cuda
