#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

// CuPy's complex<T> for user code (custom and raw kernels): the names and
// overloads CuPy's <cupy/complex.cuh> offers on thrust::complex, here on
// gf::complex (the type every generated kernel stores complex values in), so
// that kernels written for CuPy compile unchanged. Our own code, written
// from the interface CuPy documents. Functions of complex<float> compute
// through gf's complex<double> loops and round once (as gpuflow's complex
// ops do), so a complex64 kernel gets NumPy's special values and branch
// cuts. Real math inside namespace gf is called as ::f: the complex
// overloads below would hide the global ones there.
const char kDeviceCupyComplexLibrary[] = R"CUDA(
namespace gf {

template <bool B, class R = void> struct when {};
template <class R> struct when<true, R> { typedef R type; };
// The real scalars a complex<T> combines with (converted to T first).
template <class U> struct is_real_scalar {
  static constexpr bool v = same<U, float>::v || same<U, double>::v || is_signed_int<U>::v ||
                            is_unsigned_int<U>::v || same<U, bool>::v || same<U, char>::v ||
                            same<U, long>::v || same<U, unsigned long>::v;
};
template <class T, class U> struct cx_promote { typedef decltype(T() + U()) type; };

// ---- arithmetic with the other precision and with real scalars ----
template <class T, class U>
__device__ __forceinline__ typename when<!same<T, U>::v, complex<typename cx_promote<T, U>::type>>::type
operator+(const complex<T>& a, const complex<U>& b) {
  typedef typename cx_promote<T, U>::type P;
  return complex<P>(a) + complex<P>(b);
}
template <class T, class U>
__device__ __forceinline__ typename when<!same<T, U>::v, complex<typename cx_promote<T, U>::type>>::type
operator-(const complex<T>& a, const complex<U>& b) {
  typedef typename cx_promote<T, U>::type P;
  return complex<P>(a) - complex<P>(b);
}
template <class T, class U>
__device__ __forceinline__ typename when<!same<T, U>::v, complex<typename cx_promote<T, U>::type>>::type
operator*(const complex<T>& a, const complex<U>& b) {
  typedef typename cx_promote<T, U>::type P;
  return complex<P>(a) * complex<P>(b);
}
template <class T, class U>
__device__ __forceinline__ typename when<!same<T, U>::v, complex<typename cx_promote<T, U>::type>>::type
operator/(const complex<T>& a, const complex<U>& b) {
  typedef typename cx_promote<T, U>::type P;
  return complex<P>(a) / complex<P>(b);
}
template <class T, class U>
__device__ __forceinline__ typename when<!same<T, U>::v, bool>::type
operator==(const complex<T>& a, const complex<U>& b) { return a.re == b.re && a.im == b.im; }
template <class T, class U>
__device__ __forceinline__ typename when<!same<T, U>::v, bool>::type
operator!=(const complex<T>& a, const complex<U>& b) { return !(a == b); }
template <class T> __device__ __forceinline__ complex<T> operator+(const complex<T>& a) { return a; }

// A real scalar acts on each part (so that an infinite part stays infinite
// where the complex product would make a NaN of 0 * inf).
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>>::type
operator+(const complex<T>& a, const U& b) { return complex<T>(a.re + (T)b, a.im); }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>>::type
operator+(const U& a, const complex<T>& b) { return complex<T>((T)a + b.re, b.im); }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>>::type
operator-(const complex<T>& a, const U& b) { return complex<T>(a.re - (T)b, a.im); }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>>::type
operator-(const U& a, const complex<T>& b) { return complex<T>((T)a - b.re, -b.im); }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>>::type
operator*(const complex<T>& a, const U& b) { return complex<T>(a.re * (T)b, a.im * (T)b); }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>>::type
operator*(const U& a, const complex<T>& b) { return complex<T>((T)a * b.re, (T)a * b.im); }
// (complex<T> / T is kDeviceComplexLibrary's, part by part.)
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v && !same<T, U>::v, complex<T>>::type
operator/(const complex<T>& a, const U& b) { return complex<T>(a.re / (T)b, a.im / (T)b); }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>>::type
operator/(const U& a, const complex<T>& b) { return complex<T>((T)a, (T)0) / b; }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, bool>::type
operator==(const complex<T>& a, const U& b) { return a.re == (T)b && a.im == (T)0; }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, bool>::type
operator==(const U& a, const complex<T>& b) { return b == a; }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, bool>::type
operator!=(const complex<T>& a, const U& b) { return !(a == b); }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, bool>::type
operator!=(const U& a, const complex<T>& b) { return !(b == a); }

// Compound assignment, by a complex of either precision or a real scalar.
template <class T, class U> __device__ __forceinline__ complex<T>& operator+=(complex<T>& a, const complex<U>& b) { a = a + complex<T>(b); return a; }
template <class T, class U> __device__ __forceinline__ complex<T>& operator-=(complex<T>& a, const complex<U>& b) { a = a - complex<T>(b); return a; }
template <class T, class U> __device__ __forceinline__ complex<T>& operator*=(complex<T>& a, const complex<U>& b) { a = a * complex<T>(b); return a; }
template <class T, class U> __device__ __forceinline__ complex<T>& operator/=(complex<T>& a, const complex<U>& b) { a = a / complex<T>(b); return a; }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>&>::type
operator+=(complex<T>& a, const U& b) { a.re += (T)b; return a; }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>&>::type
operator-=(complex<T>& a, const U& b) { a.re -= (T)b; return a; }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>&>::type
operator*=(complex<T>& a, const U& b) { a.re *= (T)b; a.im *= (T)b; return a; }
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<T>&>::type
operator/=(complex<T>& a, const U& b) { a.re /= (T)b; a.im /= (T)b; return a; }

// ---- parts, magnitude, phase ----
template <class T> __device__ __forceinline__ T real(const complex<T>& z) { return z.re; }
template <class T> __device__ __forceinline__ T imag(const complex<T>& z) { return z.im; }
template <class T> __device__ __forceinline__ T abs(const complex<T>& z) { return ::hypot(z.re, z.im); }
template <class T> __device__ __forceinline__ T arg(const complex<T>& z) { return ::atan2(z.im, z.re); }
template <class T> __device__ __forceinline__ T norm(const complex<T>& z) { return z.re * z.re + z.im * z.im; }
template <class T> __device__ __forceinline__ complex<T> conj(const complex<T>& z) { return complex<T>(z.re, -z.im); }
template <class T> __device__ __forceinline__ complex<T> polar(const T& m, const T& theta = T()) {
  return complex<T>(m * ::cos(theta), m * ::sin(theta));
}
// The projection on the Riemann sphere: an infinite part gives (inf, +-0).
template <class T> __device__ __forceinline__ complex<T> proj(const complex<T>& z) {
  if (::isinf(z.re) || ::isinf(z.im)) {
    return complex<T>((T)__longlong_as_double(0x7ff0000000000000ll), ::copysign((T)0, z.im));
  }
  return z;
}
template <class T> __device__ __forceinline__ bool isnan(const complex<T>& z) { return ::isnan(z.re) || ::isnan(z.im); }
template <class T> __device__ __forceinline__ bool isinf(const complex<T>& z) { return ::isinf(z.re) || ::isinf(z.im); }
template <class T> __device__ __forceinline__ bool isfinite(const complex<T>& z) { return ::isfinite(z.re) && ::isfinite(z.im); }
template <class T> __device__ __forceinline__ complex<T> rint(const complex<T>& z) { return complex<T>(::rint(z.re), ::rint(z.im)); }

// ---- exponentials, powers, trigonometry: gf's complex<double> loops ----
typedef complex<double> cx_d;
template <class T> __device__ __forceinline__ complex<T> exp(const complex<T>& z) { return complex<T>(c_exp(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> log(const complex<T>& z) { return complex<T>(c_log(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> log10(const complex<T>& z) {
  return complex<T>(c_log(cx_d(z)) / 2.30258509299404568402);
}
template <class T> __device__ __forceinline__ complex<T> log2(const complex<T>& z) {
  return complex<T>(c_log(cx_d(z)) / 0.69314718055994530942);
}
template <class T> __device__ __forceinline__ complex<T> log1p(const complex<T>& z) { return complex<T>(c_log1p(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> expm1(const complex<T>& z) { return complex<T>(c_expm1(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> sqrt(const complex<T>& z) { return complex<T>(c_sqrt(cx_d(z))); }
template <class T, class U>
__device__ __forceinline__ complex<typename cx_promote<T, U>::type> pow(const complex<T>& a, const complex<U>& b) {
  return complex<typename cx_promote<T, U>::type>(c_pow(cx_d(a), cx_d(b)));
}
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<typename cx_promote<T, U>::type>>::type
pow(const complex<T>& a, const U& b) {
  return complex<typename cx_promote<T, U>::type>(c_pow(cx_d(a), cx_d((double)b, 0.0)));
}
template <class T, class U>
__device__ __forceinline__ typename when<is_real_scalar<U>::v, complex<typename cx_promote<T, U>::type>>::type
pow(const U& a, const complex<T>& b) {
  return complex<typename cx_promote<T, U>::type>(c_pow(cx_d((double)a, 0.0), cx_d(b)));
}
template <class T> __device__ __forceinline__ complex<T> sin(const complex<T>& z) { return complex<T>(c_sin(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> cos(const complex<T>& z) { return complex<T>(c_cos(cx_d(z))); }
// tan z = -i tanh(iz).
template <class T> __device__ __forceinline__ complex<T> tan(const complex<T>& z) {
  const cx_d r = c_tanh_d(-(double)z.im, (double)z.re);
  return complex<T>(r.im, -r.re);
}
template <class T> __device__ __forceinline__ complex<T> sinh(const complex<T>& z) { return complex<T>(c_sinh(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> cosh(const complex<T>& z) { return complex<T>(c_cosh(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> tanh(const complex<T>& z) { return complex<T>(c_tanh(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> asin(const complex<T>& z) { return complex<T>(c_asin(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> acos(const complex<T>& z) { return complex<T>(c_acos(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> atan(const complex<T>& z) { return complex<T>(c_atan(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> asinh(const complex<T>& z) { return complex<T>(c_asinh(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> acosh(const complex<T>& z) { return complex<T>(c_acosh(cx_d(z))); }
template <class T> __device__ __forceinline__ complex<T> atanh(const complex<T>& z) { return complex<T>(c_atanh(cx_d(z))); }

// CuPy's min and max of complex values: a NaN loses, then the order by
// real part, then imaginary part.
template <class T> __device__ __forceinline__ complex<T> min(const complex<T>& x, const complex<T>& y) {
  if (isnan(x)) return y;
  if (isnan(y)) return x;
  return (y.re < x.re || (y.re == x.re && y.im <= x.im)) ? y : x;
}
template <class T> __device__ __forceinline__ complex<T> max(const complex<T>& x, const complex<T>& y) {
  if (isnan(x)) return y;
  if (isnan(y)) return x;
  return (x.re < y.re || (x.re == y.re && x.im < y.im)) ? y : x;
}

}  // namespace gf

// CuPy's spellings: complex<float> and complex<double> unqualified (and as
// thrust::complex), with the functions <cupy/complex.cuh> brings into the
// global namespace. The global real functions stay visible beside them.
using gf::complex;
using gf::real; using gf::imag; using gf::abs; using gf::arg; using gf::norm; using gf::conj;
using gf::polar; using gf::proj; using gf::isnan; using gf::isinf; using gf::isfinite;
using gf::rint; using gf::exp; using gf::log; using gf::log10; using gf::log2; using gf::log1p;
using gf::expm1; using gf::sqrt; using gf::pow; using gf::sin; using gf::cos; using gf::tan;
using gf::sinh; using gf::cosh; using gf::tanh; using gf::asin; using gf::acos; using gf::atan;
using gf::asinh; using gf::acosh; using gf::atanh; using gf::min; using gf::max;
namespace thrust {
using gf::complex;
using gf::real; using gf::imag; using gf::abs; using gf::arg; using gf::norm; using gf::conj;
using gf::polar; using gf::proj; using gf::exp; using gf::log; using gf::log10; using gf::sqrt;
using gf::pow; using gf::sin; using gf::cos; using gf::tan; using gf::sinh; using gf::cosh;
using gf::tanh; using gf::asin; using gf::acos; using gf::atan; using gf::asinh; using gf::acosh;
using gf::atanh;
}  // namespace thrust
)CUDA";

namespace {

// Whether `line` is `#include <cupy/complex.cuh>` (or with quotes), spaces
// allowed where the preprocessor allows them.
bool IncludesCupyComplex(absl::string_view line) {
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "#")) return false;
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "include")) return false;
  line = absl::StripAsciiWhitespace(line);
  return line == "<cupy/complex.cuh>" || line == "\"cupy/complex.cuh\"";
}

}  // namespace

std::string CustomKernelSource(absl::string_view kernel) {
  if (absl::StrContains(kernel, "complex")) {
    return absl::StrCat(kDeviceLibrary, kDeviceComplexLibrary, kDeviceCupyComplexLibrary, kernel);
  }
  return absl::StrCat(kDeviceLibrary, kernel);
}

std::string RawKernelSource(absl::string_view code) {
  if (!absl::StrContains(code, "cupy/complex.cuh")) return std::string(code);
  std::string out;
  bool included = false;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(code, '\n')) {
    ++line_number;
    if (!IncludesCupyComplex(line)) {
      absl::StrAppend(&out, line, "\n");
      continue;
    }
    if (!included) {
      absl::StrAppend(&out, kDeviceLibrary, kDeviceComplexLibrary, kDeviceCupyComplexLibrary);
      included = true;
    }
    absl::StrAppend(&out, "#line ", line_number + 1, "\n");
  }
  out.pop_back();  // the newline StrSplit's last piece did not have
  return out;
}

}  // namespace gpuflow::cuda
