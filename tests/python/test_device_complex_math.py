"""The CUDA backend's complex functions (engine/cuda/device_library_complex.cc)
against NumPy, without a GPU: the device library's source compiled as host
C++ (its __device__ qualifiers and bit casts stubbed out), so that the
algorithms (FreeBSD msun's csqrt, cexp, clog, ctanh, catrig's inverse
functions, NumPy's power, quotient, sign ...) are checked here on special
values, both sides of every branch cut and random points. On the GPU the same
code runs with CUDA's real functions, which differ from glibc's by an ulp or
two; tests/python/test_complex.py checks that there
(GPUFLOW_TEST_BACKEND=cuda)."""

import math
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "engine" / "cuda" / "device_library_complex.cc"
inf, nan = math.inf, math.nan

STUBS = r"""
#include <math.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#define __device__
#define __forceinline__ inline
static inline double __longlong_as_double(long long x) {
  double d;
  std::memcpy(&d, &x, 8);
  return d;
}
static inline long long __double_as_longlong(double x) {
  long long d;
  std::memcpy(&d, &x, 8);
  return d;
}
namespace gf {
template <class A, class B> struct same { static constexpr bool v = false; };
template <class A> struct same<A, A> { static constexpr bool v = true; };
template <class T> struct complex;
template <class T> struct is_cx { static constexpr bool v = false; };
template <class T> struct is_cx<complex<T>> { static constexpr bool v = true; };
template <class To, class From> To cv(From v) { return (To)v; }
}
"""

MAIN = r"""
int main() {
  using gf::complex;
  char op[32];
  double a, b, c, d;
  while (std::scanf("%31s %lf %lf %lf %lf", op, &a, &b, &c, &d) == 5) {
    const complex<double> z(a, b), w(c, d);
    const std::string o(op);
    complex<double> r(0, 0);
    if (o == "sqrt") r = gf::c_sqrt(z);
    else if (o == "exp") r = gf::c_exp(z);
    else if (o == "log") r = gf::c_log(z);
    else if (o == "log1p") r = gf::c_log1p(z);
    else if (o == "expm1") r = gf::c_expm1(z);
    else if (o == "sin") r = gf::c_sin(z);
    else if (o == "cos") r = gf::c_cos(z);
    else if (o == "tanh") r = gf::c_tanh(z);
    else if (o == "arcsin") r = gf::c_asin(z);
    else if (o == "arccos") r = gf::c_acos(z);
    else if (o == "arctan") r = gf::c_atan(z);
    else if (o == "arcsinh") r = gf::c_asinh(z);
    else if (o == "arccosh") r = gf::c_acosh(z);
    else if (o == "arctanh") r = gf::c_atanh(z);
    else if (o == "reciprocal") r = gf::c_reciprocal(z);
    else if (o == "divide") r = z / w;
    else if (o == "power") r = gf::c_pow(z, w);
    std::printf("%.17g %.17g\n", r.re, r.im);
  }
}
"""

UNARY = ["sqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "arcsin", "arccos",
         "arctan", "arcsinh", "arccosh", "arctanh", "reciprocal"]


def special_values():
    v = [1 + 2j, -3.5 + 0.25j, 0j, complex(inf, 0), complex(nan, 1), complex(0, -inf), -2 + 0j,
         0.5 - 0.5j, complex(-inf, inf), 1e-3 + 30j, 2 + 0j, complex(2, -0.0), complex(-2, -0.0),
         2j, complex(-0.0, 2), complex(0, -2), complex(-0.0, -2), 1 + 0j, -1 + 0j, 1j, -1j,
         1e-9 + 1e-10j, -1e-12 + 3e-13j, 1e20 - 3e19j, -4e200 + 1e200j, 1 + 1e-20j,
         complex(inf, 1), complex(-inf, -2), complex(3, inf), complex(nan, 0), complex(0, nan),
         complex(nan, inf), complex(inf, nan), 0.3 + 2.5j, -7 - 0.01j, 0.6 + 0.8j,
         0.6000001 + 0.8j, 710 + 1j, -710 + 2j, 800 + 0.5j, 1e-310 + 1e-310j, 1e308 + 1e308j,
         0.99999 + 0.001j, complex(1e-300, -1e-300)]
    rng = np.random.default_rng(3)
    v += list(rng.standard_normal(200) * 3 + 1j * rng.standard_normal(200) * 3)
    v += list(np.exp(rng.uniform(-30, 30, 100)) * np.exp(1j * rng.uniform(-4, 4, 100)))
    return np.array(v, complex)


@pytest.fixture(scope="module")
def device_math(tmp_path_factory):
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    text = LIBRARY.read_text()
    library = text[text.index('R"CUDA(') + len('R"CUDA('):text.index(')CUDA"')]
    work = tmp_path_factory.mktemp("device_complex")
    (work / "math.cc").write_text(STUBS + library + MAIN)
    binary = work / "math"
    subprocess.run([compiler, "-std=c++17", "-O1", "-ffp-contract=off", "-o", str(binary),
                    str(work / "math.cc")], check=True)

    def run(lines):
        out = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True,
                             text=True, check=True).stdout.split()
        return [complex(float(out[i]), float(out[i + 1])) for i in range(0, len(out), 2)]

    return run


def line(op, a, b=0j):
    return f"{op} {a.real!r} {a.imag!r} {b.real!r} {b.imag!r}"


def mismatches(got, want, rtol):
    """(got, want) pairs that differ: NaN and infinities where NumPy has them,
    finite parts within rtol of the larger finite part, and the signs of
    zeros in finite results (C99 leaves a zero's sign beside a NaN or an
    infinity unspecified)."""
    bad = []
    for g, w in zip(got, want):
        finite = [abs(p) for p in (w.real, w.imag) if math.isfinite(p)]
        scale = max(finite) if finite else 0.0
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            if math.isnan(wp) or math.isinf(wp):
                ok = (math.isnan(gp) and math.isnan(wp)) or gp == wp
            else:
                ok = abs(gp - wp) <= rtol * scale and (
                    wp != 0 or len(finite) < 2 or math.copysign(1, gp) == math.copysign(1, wp))
            if not ok:
                bad.append((g, w))
                break
    return bad


@pytest.mark.parametrize("op", UNARY)
def test_unary_functions_match_numpy(device_math, op):
    z = special_values()
    got = device_math([line(op, v) for v in z])
    with np.errstate(all="ignore"):
        want = getattr(np, op)(z)
    bad = [(v, g, w) for v, (g, w) in zip(z, zip(got, want)) if mismatches([g], [w], 1e-13)]
    assert not bad, f"{op}: {len(bad)} of {len(z)} differ, e.g. {bad[:4]}"


def test_quotient_and_power_match_numpy(device_math):
    z = special_values()
    w = np.roll(z, 7)
    pairs = [(a, b) for a, b in zip(z, w)]
    powers = [(a, b) for a in z[:60] for b in (2 + 0j, 3 + 0j, -2 + 0j, 5 + 0j, 0j, 0.5 + 0j,
                                                1.5 - 1j)]
    got = device_math([line("divide", a, b) for a, b in pairs] +
                      [line("power", a, b) for a, b in powers])
    with np.errstate(all="ignore"):
        want = [a / b for a, b in pairs] + [a ** b for a, b in powers]
    bad = mismatches(got, want, 1e-13)
    assert not bad, f"{len(bad)} differ, e.g. {bad[:4]}"
