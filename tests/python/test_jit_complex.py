"""gpuflow.jit with complex64/complex128 values (issue 23): arguments, literals,
arithmetic, the functions of complex values and complex results.

Everywhere (no GPU needed): the translations compile with NVRTC for sm_90
as the server compiles raw kernels (``#include <cupy/complex.cuh>`` becomes
the server's complex<T>; skipped without the CUDA toolkit), the types follow
NumPy 2's promotion (checked in the declarations of the translation), what
stays unsupported raises JitError at translation time with the construct
and its line, and launches reach the server as raw_kernel nodes (the CPU
backend answers FAILED_PRECONDITION); with nvcc here, the launches' results
are checked against NumPy through the host emulation of the translations
(jit_host_emulation.py: the translation and the server's device library
compiled for the host; kernels whose threads share nothing). With
GPUFLOW_TEST_BACKEND=cuda the launches' results on the device are checked
against NumPy.
"""

import inspect
import linecache
import math
import os
import re

import numpy as np
import pytest

import gpuflow
import gpuflow as gf
from gpuflow import jit
from conftest import BACKEND
import jit_host_emulation
from kernel_nodes import attrs_of, node_of, runs_or_needs_cuda
from nvrtc_check import assert_compiles, needs_compiler

CUDA = BACKEND == "cuda"
THIS_FILE = os.path.abspath(__file__)
C64, C128 = "complex64", "complex128"
RTOL = {C64: 2e-6, C128: 1e-13}


def arr(dtype, *shape):
    return np.zeros(shape, dtype)


def complex_normal(rng, n, dtype):
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)


def declared(source, name):
    """The C type the translation declares for the local variable ``name``."""
    m = re.search(rf"^  ([a-z <>]+?) {name};$", source, re.M)
    assert m, source
    return m.group(1)


CTYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
          "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
          "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
          "float64": "double", C64: "complex<float>", C128: "complex<double>"}


# ---- kernels ----------------------------------------------------------------------------


@jit.rawkernel()
def complex_arith(z, w, x, c, y):
    """+ - * / ** and unary - over complex arrays, a real array and a scalar."""
    i = jit.grid(1)
    if i < y.size:
        y[i] = z[i] * w[i] - z[i] / w[i] + x[i] * c - (-z[i]) + (z[i] + x[i]) / (c + w[i])


@jit.rawkernel()
def complex_literals(z, y):
    i = jit.grid(1)
    if i < y.size:
        a = z[i] * 2.0 + 1j            # Python literals take z's type
        b = (1 + 2j) * z[i] - 3        # a folded complex literal
        y[i] = a / b + complex(1, -0.5) + abs(3 + 4j) + (2 - 1j).conjugate() + (1j).imag


@jit.rawkernel()
def complex_parts(z, re_, im_, mag, cj):
    i = jit.grid(1)
    if i < z.size:
        re_[i] = z[i].real + gpuflow.real(z[i]) - np.real(z[i])
        im_[i] = z[i].imag + np.imag(z[i]) - gpuflow.imag(z[i])
        mag[i] = abs(z[i]) + np.abs(z[i]) - gpuflow.absolute(z[i])
        cj[i] = z[i].conj() + np.conj(z[i]) - z[i].conjugate() + gpuflow.conjugate(z[i]) \
            - np.conjugate(z[i])


@jit.rawkernel()
def complex_compare(z, w, eq, ne, truth):
    i = jit.grid(1)
    if i < z.size:
        eq[i] = z[i] == w[i] or z[i] == 1
        ne[i] = z[i] != w[i] and 1j != z[i]
        truth[i] = bool(z[i]) and not (not z[i])


@jit.rawkernel()
def complex_accumulate(z, w, out):
    """A complex local variable, augmented assignment, a complex element updated
    in place, a conditional expression and a complex loop accumulator."""
    i = jit.grid(1)
    if i < out.size:
        acc = 0j
        for k in range(z.shape[1]):
            acc += z[i, k] * w[k]
        out[i] = acc
        out[i] *= 0.5
        out[i] -= z[i, 0] if acc != 0 else 1j


@jit.rawkernel()
def complex_block_sum(z, partial):
    """A block's sum of complex values in complex shared memory."""
    smem = jit.shared_memory(gpuflow.complex128, 128)
    tid = jit.threadIdx.x
    i = jit.blockIdx.x * jit.blockDim.x + tid
    smem[tid] = z[i] if i < z.size else gpuflow.complex128(0)
    jit.syncthreads()
    s = jit.blockDim.x // 2
    while s > 0:
        if tid < s:
            smem[tid] += smem[tid + s]
        jit.syncthreads()
        s //= 2
    if tid == 0:
        partial[jit.blockIdx.x] = smem[0]


COMPLEX_UFUNCS = [
    ("sqrt", np.sqrt), ("exp", np.exp), ("exp2", np.exp2), ("expm1", np.expm1), ("log", np.log),
    ("log2", np.log2), ("log10", np.log10), ("log1p", np.log1p), ("sin", np.sin),
    ("cos", np.cos), ("tan", np.tan), ("sinh", np.sinh), ("cosh", np.cosh),
    ("tanh", np.tanh), ("arcsin", np.arcsin), ("arccos", np.arccos), ("arctan", np.arctan),
    ("arcsinh", np.arcsinh), ("arccosh", np.arccosh), ("arctanh", np.arctanh),
    ("rint", np.rint), ("square", np.square), ("negative", np.negative),
]


def _ufunc_kernel(name, module):
    fn = getattr(module, name)

    @jit.rawkernel()
    def kernel(z, y):
        i = jit.grid(1)
        if i < y.size:
            y[i] = fn(z[i])
    return kernel


@jit.rawkernel()
def complex_functions(z, y):
    """COMPLEX_UFUNCS in order, one row of y each."""
    i = jit.grid(1)
    if i < z.size:
        v = z[i]
        y[0, i] = np.sqrt(v)
        y[1, i] = np.exp(v)
        y[2, i] = np.exp2(v)
        y[3, i] = np.expm1(v)
        y[4, i] = np.log(v)
        y[5, i] = np.log2(v)
        y[6, i] = np.log10(v)
        y[7, i] = np.log1p(v)
        y[8, i] = np.sin(v)
        y[9, i] = np.cos(v)
        y[10, i] = np.tan(v)
        y[11, i] = np.sinh(v)
        y[12, i] = np.cosh(v)
        y[13, i] = np.tanh(v)
        y[14, i] = np.arcsin(v)
        y[15, i] = np.arccos(v)
        y[16, i] = np.arctan(v)
        y[17, i] = np.arcsinh(v)
        y[18, i] = np.arccosh(v)
        y[19, i] = np.arctanh(v)
        y[20, i] = np.rint(v)
        y[21, i] = np.square(v)
        y[22, i] = np.negative(v)


@jit.rawkernel()
def complex_classify(z, nan, inf, fin):
    i = jit.grid(1)
    if i < z.size:
        nan[i] = np.isnan(z[i])
        inf[i] = gpuflow.isinf(z[i])
        fin[i] = np.isfinite(z[i])


@jit.rawkernel()
def complex_powers(z, w, x, p):
    i = jit.grid(1)
    if i < p.shape[1]:
        p[0, i] = z[i] ** 2
        p[1, i] = z[i] ** w[i]
        p[2, i] = z[i] ** 0.5
        p[3, i] = 2 ** z[i]
        p[4, i] = x[i] ** z[i]
        p[5, i] = np.power(z[i], -3)


# ---- translations compile ------------------------------------------------------------------


def _compile_cases():
    cases = []
    for c in (C64, C128):
        cases += [
            (complex_arith, (arr(c, 4), arr(c, 4), arr("float32", 4), 1.5, arr(c, 4))),
            (complex_arith, (arr(c, 4), arr(C64, 4), arr("int32", 4), 2j, arr(C128, 4))),
            (complex_arith, (arr(c, 4), arr(c, 4), arr("float64", 4), np.complex64(1j),
                             arr(c, 4))),
            (complex_literals, (arr(c, 4), arr(c, 4))),
            (complex_parts, (arr(c, 4),) + (arr(c, 4),) * 4),
            (complex_compare, (arr(c, 4), arr(C64, 4), arr("bool", 4), arr("bool", 4),
                               arr("bool", 4))),
            (complex_accumulate, (arr(c, 3, 5), arr(c, 5), arr(c, 3))),
            (complex_classify, (arr(c, 4), arr("bool", 4), arr("bool", 4), arr("bool", 4))),
            (complex_powers, (arr(c, 4), arr(c, 4), arr("float32", 4), arr(c, 6, 4))),
        ]
    cases += [
        (complex_parts, (arr("float32", 4),) * 5),
        (complex_block_sum, (arr(C64, 300), arr(C128, 3))),
        (complex_arith, (arr("float32", 4), arr("float32", 4), arr("float32", 4), 1j,
                         arr(C128, 4))),
    ]
    return cases


COMPILE_CASES = _compile_cases()
IDS = [f"{k.__name__}-{i}" for i, (k, _) in enumerate(COMPILE_CASES)]


@needs_compiler
@pytest.mark.parametrize("kernel,args", COMPILE_CASES, ids=IDS)
def test_complex_translations_compile_with_nvrtc(kernel, args):
    source = assert_compiles(kernel.cuda_source(*args))
    uses_complex = any(np.iscomplexobj(a) for a in args)
    assert (source.splitlines()[1] == "#include <cupy/complex.cuh>") == uses_complex


@needs_compiler
@pytest.mark.parametrize("dtype", [C64, C128])
def test_complex_ufuncs_compile(dtype):
    for name, _ in COMPLEX_UFUNCS:
        for module in (np, gpuflow):
            source = _ufunc_kernel(name, module).cuda_source(arr(dtype, 4), arr(dtype, 4))
            assert_compiles(source)


@pytest.mark.parametrize("kernel,args", COMPILE_CASES, ids=IDS)
def test_raw_kernel_reads_the_complex_parameter_list(kernel, args):
    source = kernel.cuda_source(*args)
    raw = gf.RawKernel(source, kernel.__name__)
    scalars = (int, float, complex, np.generic)
    assert raw._arity == len(args) + sum(np.ndim(a) for a in args
                                         if not isinstance(a, scalars))


def test_real_kernels_do_not_include_the_complex_library():
    source = complex_parts.cuda_source(*(arr("float64", 4),) * 5)
    assert "#include" not in source and "complex<" not in source


# ---- types: NumPy 2's promotion ------------------------------------------------------------


@jit.rawkernel()
def typed_binop(a, b, out):
    v = a[0] + b[0]
    p = a[0] * b[0]
    q = a[0] / b[0]
    out[0] = v + p + q


# (a, b) -> the result of a + b, a * b and a / b, as NumPy 2 types them.
TYPED_PAIRS = [
    (C64, C64, C64), (C64, C128, C128), (C128, C64, C128), (C64, "float32", C64),
    ("float32", C64, C64), (C64, "float64", C128), ("float64", C64, C128),
    (C64, "int8", C64), (C64, "int16", C64), (C64, "uint16", C64), (C64, "int32", C128),
    (C64, "int64", C128), (C64, "uint64", C128), (C64, "bool", C64), (C128, "int8", C128),
    (C128, "float32", C128), ("bool", C128, C128),
]


@pytest.mark.parametrize("a,b,want", TYPED_PAIRS)
def test_arrays_promote_as_numpy(a, b, want):
    assert np.result_type(a, b) == want   # the table is NumPy's
    source = typed_binop.cuda_source(arr(a, 1), arr(b, 1), arr(C128, 1))
    for name in ("v", "p", "q"):
        assert declared(source, name) == CTYPES[want]


def _literal_kernel(expr):
    """A kernel ``v = <expr>`` over an array ``a`` (its source is registered with
    linecache, where inspect, and so gpuflow.jit, reads it)."""
    namespace = {"jit": jit, "np": np, "gpuflow": gpuflow}
    text = f"def kernel(a, out):\n    v = {expr}\n    out[0] = v\n"
    filename = f"<jit-complex {expr}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    return jit.rawkernel()(namespace["kernel"])


# expression over a (of dtype) -> its NumPy 2 type: Python literals are weak
# (they take the array's precision; a complex literal with a real array gives
# the complex type of its precision, with an integer array complex128).
LITERAL_CASES = [
    ("a[0] * 2.0", C64, C64), ("a[0] + 1", C64, C64), ("a[0] + 1j", C64, C64),
    ("a[0] - 2.5j", "float32", C64), ("a[0] + 1j", "float64", C128),
    ("1j * a[0]", "int32", C128), ("a[0] + 1j", "int8", C128), ("a[0] + 1j", "uint8", C128),
    ("a[0] + 1j", "bool", C128), ("a[0] / 3", C64, C64), ("a[0] ** 2", C64, C64),
    ("a[0] * (1 + 2j)", C128, C128), ("abs(a[0])", C64, "float32"),
    ("abs(a[0])", C128, "float64"), ("a[0].real", C64, "float32"),
    ("a[0].imag", C128, "float64"), ("a[0].conj()", C64, C64), ("np.conj(a[0])", C128, C128),
    ("a[0].real", "int16", "int16"), ("a[0].imag", "float32", "float32"),
    ("np.sqrt(a[0])", C64, C64), ("gpuflow.exp(a[0])", C128, C128),
    ("a[0] == 1j", C64, "bool"), ("gpuflow.complex64(a[0])", "float64", C64),
    ("complex(a[0])", "float32", C128), ("complex(a[0], 2)", "int32", C128),
    ("a[0] if a[0] != 0 else 1j", C64, C64), ("np.square(a[0])", C64, C64),
    ("np.negative(a[0])", C128, C128), ("a[0] * np.float32(2)", C64, C64),
    ("a[0] * np.float64(2)", C64, C128), ("a[0] + np.complex128(1)", "float32", C128),
]


@pytest.mark.parametrize("expr,dtype,want", LITERAL_CASES)
def test_literals_and_functions_type_as_numpy(expr, dtype, want):
    source = _literal_kernel(expr).cuda_source(arr(dtype, 1), arr(C128, 1))
    assert declared(source, "v") == CTYPES[want], source


def test_python_and_numpy_complex_scalars_as_arguments():
    @jit.rawkernel()
    def shift(z, c, y):
        i = jit.grid(1)
        y[i] = z[i] + c

    # A Python complex is complex128 (as CuPy types it); numpy scalars keep theirs.
    source = shift.cuda_source(arr(C64, 3), 1 + 2j, arr(C128, 3))
    assert "complex<double> c," in source
    assert "y[i] = (complex<double>(z[i]) + c);" in source
    source = shift.cuda_source(arr(C64, 3), np.complex64(1j), arr(C64, 3))
    assert "complex<float> c," in source and "y[i] = (z[i] + c);" in source
    source = shift.cuda_source(arr("float32", 3), 2.0, arr(C64, 3))
    assert "y[i] = complex<float>((float)((((double)(z[i])) + c)));" in source


def test_complex_literals_and_globals():
    source = complex_literals.cuda_source(arr(C64, 2), arr(C64, 2))
    assert "(z[i] * complex<float>(2.0f, 0.0f)) + complex<float>(0.0f, 1.0f)" in source
    assert "complex<float>(1.0f, 2.0f) * z[i]" in source   # (1 + 2j) folded, then z's type
    assert "complex<double>(1.0, -0.5)" in source          # complex(1, -0.5), a constant

    @jit.rawkernel()
    def scale(y):
        y[0] = y[0] * ROTATION + SHIFT

    source = scale.cuda_source(arr(C64, 1))
    # A Python complex global is a literal (weak); a numpy complex128 one is typed.
    assert "y[0] = complex<float>((complex<double>((y[0] * complex<float>(0.0f, 1.0f)))" \
        " + complex<double>(0.5, -0.5)));" in source


ROTATION = 1j
SHIFT = np.complex128(0.5 - 0.5j)


# ---- what stays unsupported: JitError at translation, with the line ------------------------


def k_order_lt(z, w, y):
    y[0] = z[0] < w[0]  # ERR comparison < of complex values


def k_order_ge_literal(z, w, y):
    y[0] = z[0] >= 1  # ERR comparison >= of complex values


def k_order_chained(z, w, y):
    y[0] = w[0] == z[0] <= 1  # ERR comparison <= of complex values


def k_max(z, w, y):
    y[0] = max(z[0], w[0])  # ERR comparison > of complex values


def k_math(z, w, y):
    y[0] = math.sqrt(z[0])  # ERR math.sqrt


def k_store_real(z, w, y):
    w[0] = z[0] * 2  # ERR complex to real conversion


def k_aug_store_real(z, w, y):
    w[0] += z[0]  # ERR complex to real conversion


def k_cast_real(z, w, y):
    y[0] = gpuflow.float32(z[0])  # ERR complex to real conversion


def k_int_cast(z, w, y):
    y[0] = int(z[0])  # ERR complex to real conversion


def k_var_change(z, w, y):
    v = 0.0
    v = z[0]  # ERR variable changing type
    y[0] = v


def k_floordiv(z, w, y):
    y[0] = z[0] // 2  # ERR operator //


def k_mod(z, w, y):
    y[0] = z[0] % z[0]  # ERR operator %


def k_bitand(z, w, y):
    y[0] = z[0] & 1  # ERR operator &


def k_invert(z, w, y):
    y[0] = ~z[0]  # ERR operator ~


def k_invert_literal(z, w, y):
    y[0] = ~1j  # ERR operator ~


def k_literal_floordiv(z, w, y):
    y[0] = 1j // 2  # ERR operator //


def k_floor(z, w, y):
    y[0] = np.floor(z[0])  # ERR floor


def k_maximum(z, w, y):
    y[0] = np.maximum(z[0], z[0])  # ERR maximum


def k_sign(z, w, y):
    y[0] = np.sign(z[0])  # ERR sign


def k_atomic(z, w, y):
    jit.atomic_add(y, 0, z[0])  # ERR jit.atomic_add


def k_shuffle(z, w, y):
    y[0] = jit.shfl_sync(0xffffffff, z[0], 0)  # ERR jit.shfl_sync


def k_range(z, w, y):
    for k in range(z[0]):  # ERR range()
        y[0] = k


def k_index(z, w, y):
    y[z[0]] = 1  # ERR non-integer index


ERROR_KERNELS = [k_order_lt, k_order_ge_literal, k_order_chained, k_max, k_math, k_store_real,
                 k_aug_store_real, k_cast_real, k_int_cast, k_var_change, k_floordiv, k_mod,
                 k_bitand, k_invert, k_invert_literal, k_literal_floordiv, k_floor, k_maximum,
                 k_sign, k_atomic, k_shuffle, k_range, k_index]


def _marked_line(func):
    lines, start = inspect.getsourcelines(func)
    for k, line in enumerate(lines):
        if "# ERR " in line:
            return start + k, line, line.split("# ERR ", 1)[1].strip()
    raise AssertionError(f"no # ERR marker in {func.__name__}")


@pytest.mark.parametrize("func", ERROR_KERNELS, ids=[f.__name__ for f in ERROR_KERNELS])
@pytest.mark.parametrize("dtype", [C64, C128])
def test_unsupported_complex_uses_raise_jit_error_with_location(func, dtype):
    lineno, line, construct = _marked_line(func)
    kernel = jit.rawkernel()(func)
    with pytest.raises(jit.JitError) as info:
        kernel.cuda_source(arr(dtype, 2), arr("float32", 2), arr(dtype, 2))
    err = info.value
    assert err.construct == construct, str(err)
    assert (err.filename, err.lineno) == (THIS_FILE, lineno), str(err)
    assert 1 <= err.col <= len(line) and line[err.col - 1] != " ", (str(err), line)


def test_unsupported_complex_messages_say_why():
    args = (arr(C64, 2), arr("float32", 2), arr(C64, 2))
    messages = {
        k_order_lt: "'<' not supported between complex64 and float32: complex numbers are "
                    "not ordered",
        k_order_ge_literal: "'>=' not supported between complex64 and a Python int",
        k_max: "'>' not supported between float32 and complex64",
        k_math: r"math.sqrt\(\) takes real numbers, got complex64",
        k_store_real: "cannot store complex64 values into the float32 array 'w': that would "
                      "discard the imaginary part",
        k_cast_real: "cannot cast complex64 to float32: that would discard the imaginary part",
        k_floordiv: "operator // is not supported for complex64 and int64",
        k_invert_literal: "bad operand type for unary ~: 'complex'",
        k_literal_floordiv: "unsupported operand type",
        k_floor: "ufunc 'floor' not supported for complex64 .NumPy does not define it",
        k_maximum: r"maximum\(\) of complex values .complex64 and complex64. is not supported",
        k_sign: r"sign\(\) of complex values .complex64. is not supported in gpuflow.jit",
        k_atomic: "atomic_add on a complex64 array takes complex64 values|"
                  "jit.atomic_add does not support complex64 arrays",
        k_shuffle: "jit.shfl_sync does not support complex64 values",
    }
    for func, pattern in messages.items():
        with pytest.raises(jit.JitError, match=pattern):
            jit.rawkernel()(func).cuda_source(*args)


def test_complex_arguments_of_unsupported_dtypes_are_still_refused():
    with pytest.raises(TypeError, match="is float16"):
        complex_arith.cuda_source(arr(C64, 2), arr(C64, 2), arr("float16", 2), 1.0,
                                  arr(C64, 2))


# ---- launches --------------------------------------------------------------------------------
#
# Each launch goes through gpuflow (on the CPU backend the server refuses the
# raw kernel at evaluation) and, on the CPU backend with nvcc here, through the
# host emulation too (jit_host_emulation.py): its results are checked against
# the same NumPy reference, so the translation's numbers are checked without a
# GPU as well.

EMULATE = not CUDA and jit_host_emulation.NVCC is not None


def launch(kernel, grid, block, args):
    """kernel(grid, block, args); returns {id(array): emulated result} for the
    RemoteArray arguments when the host emulation runs (else {})."""
    emulated = {}
    if EMULATE:
        values = [a.get() if isinstance(a, gf.RemoteArray) else a for a in args]
        if jit_host_emulation.emulates(kernel.cuda_source(*values)):
            results = jit_host_emulation.run(kernel, grid, block, values)
            emulated = {id(a): r for a, r in zip(args, results) if isinstance(a, gf.RemoteArray)}
    kernel(grid, block, args)
    return emulated


def check(array, want, emulated, rtol, atol=0):
    """The launch's result equals ``want``: on CUDA, and in the host emulation."""
    want = np.asarray(want)
    runs_or_needs_cuda(array, want, rtol=rtol, atol=atol)
    if id(array) in emulated:
        got = emulated[id(array)]
        assert got.dtype == array.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    else:
        assert not EMULATE or "__syncthreads" in attrs_of(node_of(array))["code"]


def grid_for(n):
    return ((n + 127) // 128,), (128,)


def arith_reference(z, w, x, c):
    """complex_arith's body in NumPy."""
    return z * w - z / w + x * c - (-z) + (z + x) / (c + w)


def test_complex_arithmetic_matches_numpy(raw_kernel_server):
    rng = np.random.default_rng(23)
    n = 1000
    cases = [(C64, C64, "float32", 1.5, C128), (C64, C64, "float32", np.float32(1.5), C64),
             (C128, C64, "int32", 2 - 1j, C128), (C64, C64, "float64", np.complex64(0.5j), C64),
             (C128, C128, "float64", -0.25, C128)]
    with gf.connect(raw_kernel_server.target) as conn, conn.session() as s:
        for zt, wt, xt, c, yt in cases:
            z_np, w_np = complex_normal(rng, n, zt), complex_normal(rng, n, wt)
            x_np = rng.standard_normal(n).astype(xt) if xt != "int32" else \
                rng.integers(-5, 5, n).astype(xt)
            y = gf.zeros(n, yt)
            emu = launch(complex_arith, *grid_for(n),
                         (s.asarray(z_np), s.asarray(w_np), s.asarray(x_np), c, y))
            assert attrs_of(node_of(y))["code"].splitlines()[1] == "#include <cupy/complex.cuh>"
            # A Python float or complex argument is float64 or complex128 (CuPy's
            # typing), not a weak scalar as it would be in NumPy: a 1-element
            # array of that type in the reference (typed so by every NumPy).
            want = arith_reference(z_np, w_np, x_np, np.array([c]))
            # Each operation is typed as NumPy types it: the same roundings.
            single = C64 in (zt, wt) or xt == "float32" or isinstance(c, np.complex64)
            check(y, want.astype(yt), emu, rtol=RTOL[C64 if single else C128],
                  atol=1e-5 if single else 1e-12)


def test_python_complex_scalar_reaches_the_server_as_complex128(raw_kernel_server):
    with gf.connect(raw_kernel_server.target) as conn, conn.session() as s:
        z_np = np.arange(4, dtype=np.complex64) * (1 - 1j) + 1
        x_np = np.ones(4, np.float32)
        y = gf.zeros(4, np.complex128)
        z = s.asarray(z_np)
        emu = launch(complex_arith, 1, 4, (z, z, s.asarray(x_np), 0.5 - 2j, y))
        scalar = node_of(y).inputs[3].scalar
        assert scalar.dtype == gf.v1.types_pb2.DTYPE_COMPLEX128
        assert (scalar.complex_value.real, scalar.complex_value.imag) == (0.5, -2.0)
        check(y, arith_reference(z_np, z_np, x_np, np.array([0.5 - 2j])), emu, rtol=1e-6)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_complex_literals_parts_and_comparisons_match_numpy(raw_kernel_server, dtype):
    rng = np.random.default_rng(5)
    n = 300
    z_np, w_np = complex_normal(rng, n, dtype), complex_normal(rng, n, C64)
    z_np[:10] = w_np[:10]          # some equal pairs
    z_np[10:13] = [0, 1, 1j]       # z == 1, z == 0 and z == 1j
    rt = {C64: "float32", C128: "float64"}[dtype]
    with gf.connect(raw_kernel_server.target) as conn, conn.session() as s:
        z, w = s.asarray(z_np), s.asarray(w_np)
        y = gf.zeros(n, dtype)
        emu = launch(complex_literals, *grid_for(n), (z, y))
        a = z_np * 2.0 + 1j
        b = (1 + 2j) * z_np - 3
        want = a / b + complex(1, -0.5) + abs(3 + 4j) + (2 - 1j).conjugate() + (1j).imag
        check(y, want.astype(dtype), emu, rtol=RTOL[dtype] * 4, atol=RTOL[dtype] * 4)

        outs = [gf.zeros(n, rt), gf.zeros(n, rt), gf.zeros(n, rt), gf.zeros(n, dtype)]
        emu = launch(complex_parts, *grid_for(n), (z, *outs))
        for out, want in zip(outs, [z_np.real, z_np.imag, np.abs(z_np), np.conj(z_np)]):
            check(out, want, emu, rtol=RTOL[dtype])

        eq, ne, truth = (gf.zeros(n, np.bool_) for _ in range(3))
        emu = launch(complex_compare, *grid_for(n), (z, w, eq, ne, truth))
        check(eq, (z_np == w_np) | (z_np == 1), emu, rtol=0)
        check(ne, (z_np != w_np) & (z_np != 1j), emu, rtol=0)
        check(truth, z_np != 0, emu, rtol=0)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_complex_ufuncs_match_numpy(raw_kernel_server, dtype):
    rng = np.random.default_rng(9)
    n = 257
    z_np = complex_normal(rng, n, dtype)
    z_np[:4] = [0, 1j, -1, 0.5]
    # The server's functions of complex64 compute in double and round once;
    # NumPy's in float32: a few float32 ulps apart.
    rtol = {C64: 1e-5, C128: 1e-12}[dtype]
    with gf.connect(raw_kernel_server.target) as conn, conn.session() as s:
        z = s.asarray(z_np)
        y = gf.zeros((len(COMPLEX_UFUNCS), n), dtype)
        emu = launch(complex_functions, *grid_for(n), (z, y))
        assert [name for name, _ in COMPLEX_UFUNCS] == re.findall(
            r"y\[\d+, i\] = np\.(\w+)\(v\)", inspect.getsource(complex_functions.func))
        with np.errstate(all="ignore"):
            want = np.stack([ref(z_np) for _, ref in COMPLEX_UFUNCS])
            check(y, want, emu, rtol=rtol, atol=rtol)

        special = np.array([0, 1, np.inf, -np.inf + 1j, complex(np.nan, 1), complex(1, np.inf),
                            complex(np.nan, np.inf), 1e30j], dtype)
        flags = [gf.zeros(8, np.bool_) for _ in range(3)]
        emu = launch(complex_classify, 1, 8, (s.asarray(special), *flags))
        for out, ref in zip(flags, (np.isnan, np.isinf, np.isfinite)):
            check(out, ref(special), emu, rtol=0)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_complex_powers_match_numpy(raw_kernel_server, dtype):
    rng = np.random.default_rng(31)
    n = 200
    z_np, w_np = complex_normal(rng, n, dtype), complex_normal(rng, n, dtype)
    x_np = np.abs(rng.standard_normal(n)).astype(np.float32) + 0.1
    rtol = {C64: 1e-5, C128: 1e-12}[dtype]
    with gf.connect(raw_kernel_server.target) as conn, conn.session() as s:
        p = gf.zeros((6, n), dtype)
        emu = launch(complex_powers, *grid_for(n),
                     (s.asarray(z_np), s.asarray(w_np), s.asarray(x_np), p))
        want = np.stack([z_np ** 2, z_np ** w_np, z_np ** 0.5, 2 ** z_np, x_np ** z_np,
                         np.power(z_np, -3)]).astype(dtype)
        check(p, want, emu, rtol=rtol, atol=rtol)


def test_complex_accumulation_and_shared_memory_match_numpy(raw_kernel_server):
    rng = np.random.default_rng(41)
    z_np = complex_normal(rng, 7 * 33, C64).reshape(7, 33)
    w_np = complex_normal(rng, 33, C64)
    big_np = complex_normal(rng, 1000, C64)
    with gf.connect(raw_kernel_server.target) as conn, conn.session() as s:
        out = gf.zeros(7, C64)
        emu = launch(complex_accumulate, 1, 32, (s.asarray(z_np), s.asarray(w_np), out))
        acc = (z_np * w_np).sum(axis=1)
        want = acc * np.complex64(0.5) - np.where(acc != 0, z_np[:, 0], 1j)
        check(out, want.astype(C64), emu, rtol=1e-5, atol=1e-5)

        # Threads that share memory: on a GPU only.
        blocks = (1000 + 127) // 128
        partial = gf.zeros(blocks, C128)
        emu = launch(complex_block_sum, blocks, 128, (s.asarray(big_np), partial))
        padded = np.zeros(blocks * 128, C128)
        padded[:1000] = big_np
        check(partial, padded.reshape(blocks, 128).sum(axis=1), emu, rtol=1e-12, atol=1e-12)
