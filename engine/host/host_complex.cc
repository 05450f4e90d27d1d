// Complex functions whose NumPy definitions differ from std::complex's: the
// quotient (Smith's algorithm), integer powers by repeated multiplication,
// the reciprocal, sign (z / |z|), log1p and expm1. The others (exp, log,
// sqrt, sin, cos, tanh, ...) are glibc's C99 functions through
// std::complex, which NumPy calls too.
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>

#include "engine/host/host_kernels_internal.h"

namespace gpuflow::host_internal {

Complex128 ComplexDiv(Complex128 a, Complex128 b) {
  const double ar = a.real();
  const double ai = a.imag();
  const double br = b.real();
  const double bi = b.imag();
  const double br_abs = std::fabs(br);
  const double bi_abs = std::fabs(bi);
  if (br_abs >= bi_abs) {
    if (br_abs == 0 && bi_abs == 0) return {ar / br_abs, ai / br_abs};
    const double rat = bi / br;
    const double scl = 1.0 / (br + bi * rat);
    return {(ar + ai * rat) * scl, (ai - ar * rat) * scl};
  }
  const double rat = br / bi;
  const double scl = 1.0 / (bi + br * rat);
  return {(ar * rat + ai) * scl, (ai * rat - ar) * scl};
}

Complex128 ComplexReciprocal(Complex128 z) {
  const double r = z.real();
  const double i = z.imag();
  if (std::fabs(i) <= std::fabs(r)) {
    const double q = i / r;
    const double d = r + i * q;
    return {1.0 / d, -q / d};
  }
  const double q = r / i;
  const double d = r * q + i;
  return {q / d, -1.0 / d};
}

Complex128 ComplexPow(Complex128 a, Complex128 b) {
  const double ar = a.real();
  const double ai = a.imag();
  const double br = b.real();
  const double bi = b.imag();
  if (br == 0 && bi == 0) return {1.0, 0.0};
  if (ar == 0 && ai == 0) {
    if (br > 0 && bi == 0) return {0.0, 0.0};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan};
  }
  if (bi == 0 && br > -100 && br < 100 && std::trunc(br) == br) {
    int64_t n = static_cast<int64_t>(br);
    if (n == 1) return a;
    if (n == 2) return ComplexMul(a, a);
    if (n == 3) return ComplexMul(ComplexMul(a, a), a);
    // Exponentiation by squaring, as NumPy.
    if (n < 0) n = -n;
    Complex128 acc(1.0, 0.0);
    Complex128 p = a;
    int64_t mask = 1;
    while (true) {
      if ((n & mask) != 0) acc = ComplexMul(acc, p);
      mask <<= 1;
      if (n < mask) break;
      p = ComplexMul(p, p);
    }
    return br < 0 ? ComplexDiv({1.0, 0.0}, acc) : acc;
  }
  return std::pow(a, b);
}

Complex128 ComplexSign(Complex128 z) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double abs = std::hypot(z.real(), z.imag());
  if (std::isnan(abs)) return {nan, nan};
  if (std::isinf(abs)) {
    if (std::isinf(z.real())) {
      if (std::isinf(z.imag())) return {nan, nan};
      return {z.real() > 0 ? 1.0 : -1.0, 0.0};
    }
    return {0.0, z.imag() > 0 ? 1.0 : -1.0};
  }
  if (abs == 0) return {0.0, 0.0};
  return {z.real() / abs, z.imag() / abs};
}

Complex128 ComplexLog1p(Complex128 z) {
  const double l = std::hypot(z.real() + 1, z.imag());
  return {std::log(l), std::atan2(z.imag(), z.real() + 1)};
}

Complex128 ComplexExpm1(Complex128 z) {
  const double a = std::sin(z.imag() / 2);
  return {std::expm1(z.real()) * std::cos(z.imag()) - 2 * a * a,
          std::exp(z.real()) * std::sin(z.imag())};
}

}  // namespace gpuflow::host_internal
