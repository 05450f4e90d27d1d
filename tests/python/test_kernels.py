"""Custom kernels: gpuflow.ElementwiseKernel, ReductionKernel and RawKernel.

Everywhere: the graph nodes and attributes the client builds, the
argument checks made before anything is sent, and how the server's answer
surfaces. On the CPU backend (CI) the server answers FAILED_PRECONDITION;
with GPUFLOW_TEST_BACKEND=cuda the same tests check the numbers against
NumPy instead.
"""

import re

import numpy as np
import pytest

import gpuflow as gf
from gpuflow._inference import AxisError
from kernel_nodes import attrs_of, node_of, runs_or_needs_cuda


SOFTPLUS = gf.ElementwiseKernel(
    "T x, float64 threshold", "T y",
    "y = x > threshold ? x : log1p(exp(x))", "softplus")
L2NORM = gf.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
VEC_ADD_SOURCE = r'''
extern "C" __global__ void vec_add(const float* a, const float* b, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // one element per thread
    if (i < n) y[i] = a[i] + b[i];
}
'''
VEC_ADD = gf.RawKernel(VEC_ADD_SOURCE, "vec_add")


def scalar_of(node, i):
    msg = node.inputs[i]
    assert msg.WhichOneof("source") == "scalar", msg
    value = getattr(msg.scalar, msg.scalar.WhichOneof("value"))
    dtype = gf.v1.types_pb2.DType.Name(msg.scalar.dtype) if msg.scalar.dtype else None
    return value, dtype


# ---- ElementwiseKernel ---------------------------------------------------------------


def test_elementwise_kernel_builds_its_node(session):
    x_np = np.linspace(-30, 30, 1023, dtype=np.float32)
    x = session.asarray(x_np)
    y = SOFTPLUS(x, 20)
    assert (y.shape, y.dtype) == ((1023,), np.float32)
    node = node_of(y)
    assert node.op == "elementwise_kernel"
    assert attrs_of(node) == {
        "in_params": "T x, float64 threshold", "out_params": "T y",
        "operation": "y = x > threshold ? x : log1p(exp(x))", "name": "softplus",
    }
    assert node.inputs[0].array == x._expr.array_name
    # A Python scalar for a typed parameter is sent with that dtype, as CuPy casts it.
    assert scalar_of(node, 1) == (20.0, "DTYPE_FLOAT64")
    expected = np.where(x_np > 20, x_np, np.log1p(np.exp(x_np.astype(np.float64))))
    runs_or_needs_cuda(y, expected.astype(np.float32), rtol=1e-5)


def test_elementwise_kernel_takes_numpy_and_broadcasts(session):
    k = gf.ElementwiseKernel("T x, T y", "T z", "z = x * y + 1", "fma1")
    x_np = np.arange(12, dtype=np.float64).reshape(3, 4)
    y_np = np.array([1.0, 2.0, 3.0, 4.0])
    z = k(session.asarray(x_np), y_np)
    assert z.shape == (3, 4) and z.dtype == np.float64
    assert node_of(z).inputs[1].WhichOneof("source") == "literal"
    runs_or_needs_cuda(z, x_np * y_np + 1)


def test_elementwise_kernel_with_several_outputs_and_output_arrays(session):
    k = gf.ElementwiseKernel("T x, T y", "T s, T d", "s = x + y; d = x - y", "sum_diff")
    x_np, y_np = np.arange(5, dtype=np.int32), np.full(5, 2, np.int32)
    x, y = session.asarray(x_np), session.asarray(y_np)
    s, d = k(x, y)
    assert "output" not in attrs_of(node_of(s)) and attrs_of(node_of(d))["output"] == 1
    assert s.dtype == d.dtype == np.int32
    # Output arrays: their values are the initial ones, and they are rebound.
    s_out, d_out = gf.empty(5, np.int32, session=session), gf.zeros(5, np.int32, session=session)
    returned = k(x, y, s_out, d_out)
    assert returned[0] is s_out and returned[1] is d_out
    assert len(node_of(d_out).inputs) == 4
    runs_or_needs_cuda(s, x_np + y_np)
    runs_or_needs_cuda(d_out, x_np - y_np)
    single = gf.ElementwiseKernel("T x", "T y", "y = x * 2", "twice", return_tuple=True)
    assert isinstance(single(x), tuple)


def test_elementwise_kernel_raw_input_and_size(session):
    reverse = gf.ElementwiseKernel("raw T x, int64 n", "T y", "y = x[n - 1 - i]", "reverse")
    x_np = np.arange(7, dtype=np.float32)
    x = session.asarray(x_np)
    y = reverse(x, 7, size=7)
    assert y.shape == (7,) and y.dtype == np.float32
    assert attrs_of(node_of(y))["size"] == 7
    runs_or_needs_cuda(y, x_np[::-1])
    iota = gf.ElementwiseKernel("raw T unused", "float32 y", "y = i", "iota")
    runs_or_needs_cuda(iota(x, size=4), np.arange(4, dtype=np.float32))
    with pytest.raises(ValueError, match="at least one argument"):
        gf.ElementwiseKernel("", "float32 y", "y = i", "k")(size=4)


def test_elementwise_kernel_raw_outputs(session):
    # CuPy's raw output: the kernel writes y[j] anywhere in its array, which
    # starts as the array passed (here a scatter of x into 10 slots).
    scatter = gf.ElementwiseKernel("T x, int64 idx", "raw T y, T twice",
                                   "y[idx] = x; twice = x * 2", "scatter_raw")
    x_np = np.array([1.5, -2.0, 4.0], np.float32)
    idx_np = np.array([7, 0, 3])
    base_np = np.full((2, 5), -1.0, np.float32)
    y, twice = scatter(session.asarray(x_np), session.asarray(idx_np),
                       session.asarray(base_np), gf.empty(3, np.float32, session=session))
    assert (y.shape, y.dtype) == ((2, 5), np.float32)
    assert twice.shape == (3,)
    want = base_np.copy().reshape(-1)
    want[idx_np] = x_np
    runs_or_needs_cuda(y, want.reshape(2, 5))
    runs_or_needs_cuda(twice, x_np * 2)
    # Only raw outputs: size= gives the loop.
    fill = gf.ElementwiseKernel("", "raw float64 y", "y[i * 2] = i", "fill_even")
    out = fill(gf.zeros(9, np.float64, session=session), size=5)
    runs_or_needs_cuda(out, np.where(np.arange(9) % 2 == 0, np.arange(9) / 2, 0.0))
    with pytest.raises(ValueError, match="raw output parameter 'y' needs its array"):
        scatter(session.asarray(x_np), session.asarray(idx_np))
    with pytest.raises(ValueError, match="loop size is undecided"):
        fill(gf.zeros(9, np.float64, session=session))
    with pytest.raises(TypeError, match="is declared float64 but the array is float32"):
        fill(gf.zeros(9, np.float32, session=session), size=5)


def complex_normal(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def test_elementwise_kernel_complex_arguments(session):
    # CuPy's complex<T>: a complex64 placeholder, a Python complex for a
    # complex128 parameter (16 bytes), a real array and a complex128 output.
    rng = np.random.default_rng(23)
    z_np = complex_normal(rng, 1023, np.complex64)
    x_np = rng.standard_normal(1023).astype(np.float32)
    k = gf.ElementwiseKernel("T z, complex128 c, F x", "complex128 y",
                             "y = z * c + x * conj(z) - complex<double>(0, 1) * real(z)", "cmix")
    y = k(session.asarray(z_np), 0.5 - 2j, session.asarray(x_np))
    assert (y.shape, y.dtype) == ((1023,), np.complex128)
    value, dtype = scalar_of(node_of(y), 1)
    assert (value.real, value.imag, dtype) == (0.5, -2.0, "DTYPE_COMPLEX128")
    z128 = z_np.astype(np.complex128)
    # (x * conj(z) is a complex64 product: float rounding, absolute near 0.)
    runs_or_needs_cuda(y, z128 * (0.5 - 2j) + x_np * np.conj(z128) - 1j * z128.real, rtol=1e-6,
                       atol=1e-6)
    # A Python complex binds a placeholder to complex128, as CuPy's does.
    shift = gf.ElementwiseKernel("T z, S s", "S y", "y = z + s", "cshift")
    y2 = shift(session.asarray(z_np), 1 + 1j)
    assert y2.dtype == np.complex128
    runs_or_needs_cuda(y2, z128 + (1 + 1j), rtol=1e-7)
    with pytest.raises(TypeError, match=r"complex scalar \(1j\) cannot be passed to 'float32 x'"):
        gf.ElementwiseKernel("float32 x", "float32 y", "y = x", "k")(1j)


# Each of CuPy's complex functions against NumPy's, in one kernel per dtype
# (one output each).
COMPLEX_FUNCTIONS = [
    ("exp(z)", np.exp), ("log(z)", np.log), ("log10(z)", np.log10), ("sqrt(z)", np.sqrt),
    ("sin(z)", np.sin), ("cos(z)", np.cos), ("tan(z)", np.tan), ("sinh(z)", np.sinh),
    ("cosh(z)", np.cosh), ("tanh(z)", np.tanh), ("asin(z)", np.arcsin), ("acos(z)", np.arccos),
    ("atan(z)", np.arctan), ("asinh(z)", np.arcsinh), ("acosh(z)", np.arccosh),
    ("atanh(z)", np.arctanh), ("conj(z)", np.conj), ("pow(z, w)", lambda z, w: z ** w),
    ("pow(z, 3)", lambda z: z ** 3), ("pow(z, 0.5)", np.sqrt), ("pow(2.0, z)", lambda z: 2.0 ** z),
    ("polar(abs(z), arg(z))", lambda z: z),
    ("z * 2 + 1.5 - w / 3", lambda z, w: z * 2 + 1.5 - w / 3),
    ("2.0 / z - z / w", lambda z, w: 2.0 / z - z / w), ("z * w", lambda z, w: z * w),
]
REAL_FUNCTIONS = [
    ("abs(z)", np.abs), ("arg(z)", np.angle), ("norm(z)", lambda z: np.abs(z) ** 2),
    ("real(z)", np.real), ("imag(z)", np.imag),
    ("z.real() - w.imag()", lambda z, w: z.real - w.imag),
]


@pytest.mark.parametrize("dtype, real, rtol", [(np.complex64, "float32", 2e-6),
                                               (np.complex128, "float64", 1e-12)])
def test_elementwise_kernel_complex_functions_match_numpy(session, dtype, real, rtol):
    rng = np.random.default_rng(7)
    z_np, w_np = complex_normal(rng, 257, dtype), complex_normal(rng, 257, dtype)
    outs = [f"T c{j}" for j in range(len(COMPLEX_FUNCTIONS))]
    outs += [f"{real} r{j}" for j in range(len(REAL_FUNCTIONS))]
    operation = "; ".join([f"c{j} = {e}" for j, (e, _) in enumerate(COMPLEX_FUNCTIONS)]
                          + [f"r{j} = {e}" for j, (e, _) in enumerate(REAL_FUNCTIONS)])
    k = gf.ElementwiseKernel("T z, T w", ", ".join(outs), operation, "complex_functions")
    results = k(session.asarray(z_np), session.asarray(w_np))
    # The reference in complex128 from the same inputs; the kernel rounds once.
    z, w = z_np.astype(np.complex128), w_np.astype(np.complex128)
    for (expr, f), y in zip(COMPLEX_FUNCTIONS + REAL_FUNCTIONS, results):
        want = f(z, w) if re.search(r"\bw\b", expr) else f(z)
        assert y.dtype == (dtype if np.iscomplexobj(want) else np.dtype(real)), expr
        # atol: sums of float-rounded terms near 0 (inputs are of size 1).
        runs_or_needs_cuda(y, want.astype(y.dtype), rtol=rtol, atol=4 * rtol)


def test_elementwise_kernel_misuse(session):
    x = session.asarray(np.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"Wrong number of arguments for 'softplus': expected 2 "
                                        r"\(inputs\) or 3 \(inputs and outputs\), got 1"):
        SOFTPLUS(x)
    with pytest.raises(TypeError, match="Wrong number of arguments"):
        SOFTPLUS(x, 1, x, x)
    with pytest.raises(TypeError, match="must be a RemoteArray"):
        SOFTPLUS(x, 20, np.empty(4, np.float32))
    with pytest.raises(ValueError, match=r"output 'T y' has shape \(5,\)"):
        SOFTPLUS(x, 20, gf.empty(5, np.float32, session=session))
    with pytest.raises(TypeError, match="raw parameter 'raw T x' needs an array"):
        gf.ElementwiseKernel("raw T x, int64 n", "T y", "y = x[i]", "k")(1.0, 3, size=3)
    with pytest.raises(ValueError, match="loop size is undecided"):
        gf.ElementwiseKernel("raw T x", "T y", "y = x[i]", "k")(x)
    with pytest.raises(ValueError, match="could not be broadcast"):
        gf.ElementwiseKernel("T x, T y", "T z", "z = x + y", "k")(x, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="bound to both float32 and float64"):
        gf.ElementwiseKernel("T x, T y", "T z", "z = x + y", "k")(x, np.ones(4))
    with pytest.raises(TypeError, match="'U' of output 'z' is not bound"):
        gf.ElementwiseKernel("T x", "U z", "z = x", "k")(x)
    with pytest.raises(ValueError, match="C type name"):
        gf.ElementwiseKernel("float x", "float y", "y = x", "k")
    with pytest.raises(ValueError, match="'complex' in in_params is a C type name"):
        gf.ElementwiseKernel("complex z", "complex64 y", "y = z", "k")
    with pytest.raises(ValueError, match="reserved"):
        gf.ElementwiseKernel("T i", "T y", "y = i", "k")
    with pytest.raises(ValueError, match="not an identifier"):
        gf.ElementwiseKernel("T x", "T y", "y = x", "my kernel")
    with pytest.raises(ValueError, match="cannot parse"):
        gf.ElementwiseKernel("T", "T y", "y = 1", "k")
    with pytest.raises(TypeError, match="not an array or scalar"):
        SOFTPLUS(x, "20")


# ---- ReductionKernel ---------------------------------------------------------------------


def test_reduction_kernel_builds_its_node(session):
    x_np = np.random.default_rng(3).standard_normal((7, 33)).astype(np.float32)
    x = session.asarray(x_np)
    n = L2NORM(x, axis=1)
    assert (n.shape, n.dtype) == ((7,), np.float32)
    node = node_of(n)
    assert node.op == "reduction_kernel"
    assert attrs_of(node) == {
        "in_params": "T x", "out_params": "T y", "map_expr": "x * x", "reduce_expr": "a + b",
        "post_map_expr": "y = sqrt(a)", "identity": "0", "name": "l2norm", "axes": [1],
    }
    runs_or_needs_cuda(n, np.sqrt((x_np.astype(np.float64) ** 2).sum(axis=1)), rtol=1e-5)
    total = L2NORM(x)
    assert total.shape == () and "axes" not in attrs_of(node_of(total))
    runs_or_needs_cuda(total, np.sqrt((x_np.astype(np.float64) ** 2).sum()), rtol=1e-5)
    kept = L2NORM(x, axis=(0,), keepdims=True)
    assert kept.shape == (1, 33) and attrs_of(node_of(kept))["keepdims"] is True


def test_reduction_kernel_reduce_type_and_out(session):
    sum_sq = gf.ReductionKernel("T x", "float64 y", "x * x", "a + b", "y = a", "0", "sum_sq",
                                reduce_type=np.float64)
    x_np = np.arange(10, dtype=np.int32).reshape(2, 5)
    x = session.asarray(x_np)
    m = sum_sq(x, axis=-1)
    assert m.dtype == np.float64 and attrs_of(node_of(m))["reduce_type"] == "float64"
    runs_or_needs_cuda(m, (x_np.astype(np.float64) ** 2).sum(axis=-1))
    out = gf.empty(2, np.float32, session=session)
    assert sum_sq(x, axis=-1, out=out) is out and out.dtype == np.float32
    assert node_of(out).op == "cast"
    with pytest.raises(ValueError, match=r"out has shape \(2,\), the result has \(\)"):
        sum_sq(x, out=out)


def test_reduction_kernel_complex(session):
    rng = np.random.default_rng(11)
    x_np = complex_normal(rng, (30, 41), np.complex64)
    x = session.asarray(x_np)
    # A complex sum accumulated in complex128, and a real norm of complex values.
    csum = gf.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "csum",
                              reduce_type="complex128")
    l2 = gf.ReductionKernel("T x", "float64 y", "norm(x)", "a + b", "y = sqrt(a)", "0", "cl2")
    x128 = x_np.astype(np.complex128)
    for axis in (None, 0, 1):
        got = csum(x, axis=axis)
        assert got.dtype == np.complex64
        runs_or_needs_cuda(got, x128.sum(axis=axis).astype(np.complex64), rtol=1e-5)
        runs_or_needs_cuda(l2(x, axis=axis), np.linalg.norm(x128, axis=axis), rtol=1e-6)
    # Long enough to split over blocks (a combine kernel of complex accumulators).
    big_np = complex_normal(rng, 2**20 + 3, np.complex128)
    got = csum(session.asarray(big_np))
    runs_or_needs_cuda(got, big_np.sum(), rtol=1e-9)


def test_reduction_kernel_misuse(session):
    x = session.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"Wrong number of arguments for 'l2norm'"):
        L2NORM(x, x, x)
    with pytest.raises(AxisError):
        L2NORM(x, axis=2)
    with pytest.raises(ValueError, match="exactly one non-raw output"):
        gf.ReductionKernel("T x", "T y, T z", "x", "a + b", "y = a", "0", "k")
    with pytest.raises(ValueError, match="raw parameters are not supported"):
        gf.ReductionKernel("raw T x", "T y", "x", "a + b", "y = a", "0", "k")
    with pytest.raises(TypeError, match="must be a RemoteArray"):
        L2NORM(x, axis=1, out=np.empty(2, np.float32))


# ---- RawKernel -----------------------------------------------------------------------------


def test_raw_kernel_rebinds_its_writable_arguments(session):
    n = 1000
    a_np = np.arange(n, dtype=np.float32)
    b_np = np.full(n, 0.5, np.float32)
    a, b = session.asarray(a_np), session.asarray(b_np)
    y = gf.zeros(n, gf.float32, session=session)
    before = y._expr
    assert VEC_ADD(((n + 255) // 256,), (256,), (a, b, y, np.int32(n))) is None
    assert y._expr is not before and (y.shape, y.dtype) == ((n,), np.float32)
    node = node_of(y)
    assert node.op == "raw_kernel"
    assert attrs_of(node) == {"code": VEC_ADD_SOURCE, "name": "vec_add", "grid": [4],
                              "block": [256], "output": 2, "writes": [2]}
    assert scalar_of(node, 3) == (n, "DTYPE_INT32")
    assert [i.WhichOneof("source") for i in node.inputs] == ["array", "array", "node", "scalar"]


def test_raw_kernel_converts_python_scalars_as_cupy_does(session):
    k = gf.RawKernel('extern "C" __global__ void k(float* y, long long n, double s, bool f) {}',
                     "k", options=("-DFOO=1",))
    y = gf.zeros(4, np.float32, session=session)
    k(1, (4, 1), (y, 4, 2.5, True), shared_mem=128)
    node = node_of(y)
    assert [scalar_of(node, i) for i in (1, 2, 3)] == [
        (4, "DTYPE_INT64"), (2.5, "DTYPE_FLOAT64"), (True, "DTYPE_BOOL")]
    attrs = attrs_of(node)
    assert (attrs["grid"], attrs["block"], attrs["shared_mem"], attrs["options"], attrs["output"]) \
        == ([1], [4, 1], 128, ["-DFOO=1"], 0)


def test_raw_kernel_needs_permission(session):
    y = gf.zeros(8, np.float32, session=session)
    VEC_ADD((1,), (8,), (np.ones(8, np.float32), np.ones(8, np.float32), y, np.int32(8)))
    with pytest.raises(gf.PermissionDeniedError, match="allow_raw_kernels"):
        y.get()


def test_raw_kernel_runs_or_needs_cuda(raw_kernel_server):
    n = 2**20 + 3
    rng = np.random.default_rng(5)
    a_np, b_np = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    with gf.connect(raw_kernel_server.target) as c, c.session() as s:
        a, b = s.asarray(a_np), s.asarray(b_np)
        y = gf.empty(n, gf.float32)
        VEC_ADD(((n + 255) // 256,), (256,), (a, b, y, np.int32(n)))
        runs_or_needs_cuda(y, a_np + b_np)
        # In place: a writable array read and written by one kernel; two writable arguments.
        scale = gf.RawKernel(r'''
        extern "C" __global__ void scale2(float* x, float* w, float s, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) { x[i] *= s; w[i] = x[i] + 1.0f; }
        }''', "scale2")
        x = gf.arange(10, dtype=np.float32)
        w = gf.zeros(10, np.float32)
        scale((1,), (32,), (x, w, np.float32(3), np.int32(10)))
        assert attrs_of(node_of(x))["output"] == 0 and attrs_of(node_of(w))["output"] == 1
        runs_or_needs_cuda(x, np.arange(10, dtype=np.float32) * 3)
        runs_or_needs_cuda(w, np.arange(10, dtype=np.float32) * 3 + 1)
        # Each launch works on private copies of every argument the kernel
        # writes: the launch made for w2 must not scale the session array
        # behind x2 in place, so every order of evaluation, repeated, agrees.
        base = gf.array(np.arange(10, dtype=np.float32))
        x2, w2 = base.copy(), gf.zeros(10, np.float32)
        scale((1,), (32,), (x2, w2, np.float32(3), np.int32(10)))
        assert attrs_of(node_of(w2))["writes"] == [0, 1]
        for _ in range(2):
            runs_or_needs_cuda(w2, np.arange(10, dtype=np.float32) * 3 + 1)
            runs_or_needs_cuda(x2, np.arange(10, dtype=np.float32) * 3)
            np.testing.assert_array_equal(base.get(), np.arange(10, dtype=np.float32))


CROTATE_SOURCE = r"""
#include <cupy/complex.cuh>
extern "C" __global__ void crotate(const complex<float>* x, complex<float> w, complex<double> s,
                                   complex<float>* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = complex<float>(complex<double>(x[i] * w) + s);
}
"""


def test_raw_kernel_complex_arguments(raw_kernel_server):
    # A complex64 scalar (8 bytes) and a Python complex (complex128, 16
    # bytes, as CuPy passes it) by value, with CuPy's <cupy/complex.cuh>.
    n = 1000
    rng = np.random.default_rng(3)
    x_np = complex_normal(rng, n, np.complex64)
    rotate = gf.RawKernel(CROTATE_SOURCE, "crotate")
    with gf.connect(raw_kernel_server.target) as c, c.session() as s:
        y = gf.zeros(n, np.complex64)
        rotate(((n + 255) // 256,), (256,), (s.asarray(x_np), np.complex64(0.5 + 1j), 2 - 0.25j,
                                            y, np.int32(n)))
        node = node_of(y)
        assert [scalar_of(node, i)[1] for i in (1, 2, 4)] == [
            "DTYPE_COMPLEX64", "DTYPE_COMPLEX128", "DTYPE_INT32"]
        want = (x_np * np.complex64(0.5 + 1j)).astype(np.complex128) + (2 - 0.25j)
        runs_or_needs_cuda(y, want.astype(np.complex64), rtol=1e-6, atol=1e-6)


def test_raw_kernel_misuse(session):
    a = session.asarray(np.ones(4, np.float32))
    y = gf.zeros(4, np.float32, session=session)
    with pytest.raises(TypeError, match=r"RawKernel 'vec_add' takes 4 arguments \(its signature "
                                        r"in the code\), got 3"):
        VEC_ADD((1,), (4,), (a, a, y))
    with pytest.raises(ValueError, match="no argument it could write"):
        VEC_ADD((1,), (4,), (a, a, a, np.int32(4)))
    with pytest.raises(ValueError, match="grid must be an int or a tuple of 1 to 3 ints"):
        VEC_ADD((1, 1, 1, 1), (4,), (a, a, y, np.int32(4)))
    with pytest.raises(ValueError, match="block entries must be in"):
        VEC_ADD((1,), (0,), (a, a, y, np.int32(4)))
    with pytest.raises(ValueError, match="at most 1024"):
        VEC_ADD((1,), (64, 32), (a, a, y, np.int32(4)))
    with pytest.raises(TypeError, match="args must be a tuple"):
        VEC_ADD((1,), (4,), a)
    with pytest.raises(TypeError, match="argument 3 is a list"):
        VEC_ADD((1,), (4,), (a, a, y, [4]))
    with pytest.raises(OverflowError, match="does not fit int64"):
        VEC_ADD((1,), (4,), (a, a, y, 2**63))
    with pytest.raises(ValueError, match="shared_mem must be >= 0"):
        VEC_ADD((1,), (4,), (a, a, y, np.int32(4)), shared_mem=-1)
    with pytest.raises(ValueError, match="not an identifier"):
        gf.RawKernel(VEC_ADD_SOURCE, "vec add")
    # No signature to read (a macro): no arity check, the server has the last word.
    unknown = gf.RawKernel("#define K(n) extern \"C\" __global__ void n(float* y)\nK(f) {}", "f")
    unknown((1,), (1,), (y, 1))


def test_kernels_on_a_closed_session(client):
    with client.session() as s:
        x = s.asarray(np.ones(3, np.float32))
        y = gf.zeros(3, np.float32)
    with pytest.raises(gf.SessionClosedError):
        SOFTPLUS(x, 1.0)
    with pytest.raises(gf.SessionClosedError):
        VEC_ADD((1,), (3,), (x, x, y, np.int32(3)))
