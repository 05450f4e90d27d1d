"""The custom-kernel ops (elementwise_kernel, reduction_kernel, raw_kernel) at
the graph level, through the real server.

On the CUDA backend (GPUFLOW_TEST_BACKEND=cuda on a GPU host) every kernel's
result is checked against NumPy, starting with CuPy's documentation examples.
On the CPU backend (CI) the same graphs must validate and then fail with
FAILED_PRECONDITION naming the CUDA backend; validation errors and the
--allow_raw_kernels gate are backend-independent and checked on both.
"""

import numpy as np
import pytest

import gpuflow
from conftest import BACKEND

CUDA = BACKEND == "cuda"

SQUARED_DIFF = dict(
    in_params="float32 x, float32 y",
    out_params="float32 z",
    operation="z = (x - y) * (x - y)",
    name="squared_diff",
)
SOFTPLUS = dict(
    in_params="T x, float64 threshold",
    out_params="T y",
    operation="y = (x > threshold) ? x : log1p(exp(x))",
    name="softplus",
)
L2NORM = dict(
    in_params="T x",
    out_params="T y",
    map_expr="x * x",
    reduce_expr="a + b",
    post_map_expr="y = sqrt(a)",
    identity="0",
    name="l2norm",
)
VECTOR_ADD = r"""
extern "C" __global__
void my_add(const float* x1, const float* x2, float* y) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + x2[tid];
}
"""


def run(session, build, **arrays):
    """Uploads `arrays`, builds a graph with build(g, *nodes) and returns its value."""
    g = gpuflow.Graph()
    nodes = []
    for name, value in arrays.items():
        session.upload(value, name=name)
        nodes.append(g.array(name))
    out = build(g, *nodes)
    (value,) = session.execute(g, outputs=[out])
    return value


def expect(session, build, expected, rtol=1e-6, **arrays):
    """On CUDA: the value matches; on the CPU: FAILED_PRECONDITION."""
    if CUDA:
        np.testing.assert_allclose(run(session, build, **arrays), expected, rtol=rtol)
    else:
        with pytest.raises(gpuflow.FailedPreconditionError, match="need the cuda backend"):
            run(session, build, **arrays)


def test_squared_difference(session):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1003).astype(np.float32)
    y = rng.standard_normal(1003).astype(np.float32)
    expect(session, lambda g, a, b: g.elementwise_kernel(a, b, **SQUARED_DIFF), (x - y) ** 2,
           x=x, y=y)


def test_generic_squared_difference_broadcasts(session):
    x = np.arange(35, dtype=np.int16).reshape(5, 7)
    y = np.arange(7, dtype=np.int16)[::-1].copy()
    kernel = dict(SQUARED_DIFF, in_params="T x, T y", out_params="T z")
    expect(session, lambda g, a, b: g.elementwise_kernel(a, b, **kernel),
           ((x - y) * (x - y)).astype(np.int16), x=x, y=y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softplus_with_a_python_scalar_threshold(session, dtype):
    x = np.linspace(-30, 30, 4099).astype(dtype)
    threshold = 20
    xd = x.astype(np.float64)
    expected = np.where(xd > threshold, x, np.log1p(np.exp(x))).astype(dtype)
    expect(session, lambda g, a: g.elementwise_kernel(a, threshold, **SOFTPLUS), expected,
           rtol=2e-6 if dtype == np.float32 else 1e-12, x=x)


def test_one_plan_with_other_scalars_uses_each_graphs_values(session):
    """Graphs differing only in a scalar share a plan (and its compiled kernel);
    each still runs with its own value."""
    x = np.linspace(-30, 30, 4099).astype(np.float32)
    xd = x.astype(np.float64)
    for threshold in (20, 5, -3):
        expected = np.where(xd > threshold, x, np.log1p(np.exp(x))).astype(np.float32)
        expect(session, lambda g, a: g.elementwise_kernel(a, threshold, **SOFTPLUS), expected,
               rtol=2e-6, x=x)


def test_raw_argument_and_index(session):
    # CuPy's add_reverse example: z = x + y[n - i - 1].
    x = np.arange(10, dtype=np.float64)
    y = np.arange(10, dtype=np.float64) * 100
    kernel = dict(in_params="T x, raw T y", out_params="T z",
                  operation="z = x + y[_ind.size() - i - 1]", name="add_reverse")
    expect(session, lambda g, a, b: g.elementwise_kernel(a, b, **kernel), x + y[::-1], x=x, y=y)


def test_second_output_and_given_outputs(session):
    x = np.arange(-4, 5, dtype=np.float32)
    acc = np.full(9, 10, dtype=np.float32)
    flags = np.zeros(9, dtype=np.bool_)
    kernel = dict(in_params="T x", out_params="T acc, bool positive",
                  operation="acc = acc + x; positive = acc > 10", name="accumulate")
    expect(session, lambda g, a, b, c: g.elementwise_kernel(a, b, c, output=0, **kernel),
           acc + x, x=x, acc=acc, flags=flags)
    expect(session, lambda g, a, b, c: g.elementwise_kernel(a, b, c, output=1, **kernel),
           acc + x > 10, x=x, acc=acc, flags=flags)


def test_size_gives_the_loop_shape(session):
    kernel = dict(in_params="raw T x", out_params="T y", operation="y = x[i] * 2", name="twice")
    x = np.arange(6, dtype=np.int32)
    expect(session, lambda g, a: g.elementwise_kernel(a, size=6, **kernel), x * 2, x=x)


@pytest.mark.parametrize("axes,keepdims", [(None, False), ([1], False), ([0], True),
                                           ([0, 2], False)])
def test_l2norm_reduction(session, axes, keepdims):
    x = np.random.default_rng(1).standard_normal((30, 40, 5)).astype(np.float32)
    expected = np.sqrt((x.astype(np.float64) ** 2).sum(
        axis=None if axes is None else tuple(axes), keepdims=keepdims))
    expect(session, lambda g, a: g.reduction_kernel(a, axes=axes, keepdims=keepdims, **L2NORM),
           expected.astype(np.float32), rtol=1e-5, x=x)


def test_large_whole_array_reduction_splits(session):
    # 2^22 elements to one output: the range is split over many blocks.
    x = np.ones(1 << 22, dtype=np.float32)
    kernel = dict(L2NORM, post_map_expr="y = a", reduce_type="float64")
    expect(session, lambda g, a: g.reduction_kernel(a, **kernel),
           np.float32(1 << 22), x=x)


def test_reduction_with_custom_identity_and_reduce_expr(session):
    x = np.random.default_rng(2).standard_normal((7, 300)).astype(np.float64)
    kernel = dict(in_params="T x", out_params="T y", map_expr="fabs(x)",
                  reduce_expr="a > b ? a : b", post_map_expr="y = a", identity="0",
                  name="max_abs")
    expect(session, lambda g, a: g.reduction_kernel(a, axes=[-1], **kernel),
           np.abs(x).max(axis=-1), x=x)


def complex_normal(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def test_complex_scalars_and_zero_dim_arrays(session):
    """A Python complex (a complex128 literal: 16 bytes, read through its
    pointer) and a 0-d complex64 array, with each graph of one plan using
    its own scalar."""
    rng = np.random.default_rng(4)
    z = complex_normal(rng, (5, 7), np.complex64)
    s0 = np.array(0.25 - 4j, np.complex64)
    kernel = dict(in_params="T z, complex128 c, T s", out_params="T y",
                  operation="y = z * c + s", name="complex_axpy")
    for c in (1j, 2 - 3j):
        expected = (z.astype(np.complex128) * c + s0).astype(np.complex64)
        expect(session, lambda g, a, b: g.elementwise_kernel(a, c, b, **kernel), expected,
               z=z, s=s0)


def test_complex_functions_and_real_parts(session):
    rng = np.random.default_rng(6)
    z = complex_normal(rng, 1001, np.complex128)
    kernel = dict(in_params="T z", out_params="float64 y",
                  operation="y = real(exp(z) * conj(z)) + imag(sqrt(z)) + abs(log(z))",
                  name="complex_mix")
    expected = (np.exp(z) * np.conj(z)).real + np.sqrt(z).imag + np.abs(np.log(z))
    expect(session, lambda g, a: g.elementwise_kernel(a, **kernel), expected, rtol=1e-9, z=z)


def test_complex_reduction(session):
    rng = np.random.default_rng(8)
    x = complex_normal(rng, (7, 300), np.complex128)
    kernel = dict(in_params="T x", out_params="float64 y", map_expr="x * conj(x)",
                  reduce_expr="a + b", post_map_expr="y = real(a)", identity="0",
                  reduce_type="complex128", name="power")
    expect(session, lambda g, a: g.reduction_kernel(a, axes=[-1], **kernel),
           (np.abs(x) ** 2).sum(axis=-1), rtol=1e-12, x=x)


def test_validation_errors_name_the_reason(session):
    session.upload(np.ones(4, np.float32), name="x")
    g = gpuflow.Graph()
    bad = g.elementwise_kernel(g.array("x"), in_params="T x", out_params="U y",
                               operation="y = x", name="k", id="bad")
    with pytest.raises(gpuflow.InvalidArgumentError,
                       match=r"node 'bad' \(elementwise_kernel\): the type 'U' of 'y' is not "
                             r"bound by any argument"):
        session.execute(g, outputs=[bad])


def test_compile_error_carries_the_nvrtc_log(session):
    kernel = dict(in_params="T x", out_params="T y", operation="y = not_a_function(x)",
                  name="broken")
    if CUDA:
        with pytest.raises(gpuflow.InvalidArgumentError, match="not_a_function"):
            run(session, lambda g, a: g.elementwise_kernel(a, **kernel),
                x=np.ones(3, np.float32))
    else:
        with pytest.raises(gpuflow.FailedPreconditionError):
            run(session, lambda g, a: g.elementwise_kernel(a, **kernel),
                x=np.ones(3, np.float32))


def raw_add(g, a, b, out):
    return g.raw_kernel(a, b, out, code=VECTOR_ADD, name="my_add", grid=[5], block=[5], output=2)


def test_raw_kernels_are_refused_without_the_flag(session):
    x = np.arange(25, dtype=np.float32)
    with pytest.raises(gpuflow.PermissionDeniedError, match="--allow_raw_kernels"):
        run(session, raw_add, x1=x, x2=x, y=np.zeros(25, np.float32))


def test_raw_kernel_vector_add(raw_kernel_server):
    x1 = np.arange(25, dtype=np.float32).reshape(5, 5)
    x2 = (np.arange(25, dtype=np.float32) * 10).reshape(5, 5)
    y = np.zeros((5, 5), np.float32)
    with gpuflow.connect(raw_kernel_server.target) as client, client.session() as session:
        expect(session, raw_add, x1 + x2, x1=x1, x2=x2, y=y)
        if CUDA:
            # The output argument is copied first: the session's y is unchanged.
            np.testing.assert_array_equal(session.download("y"), y)


def test_raw_kernel_argument_checks(raw_kernel_server):
    if not CUDA:
        pytest.skip("argument checks need the compiled kernel (cuda backend)")
    x = np.arange(8, dtype=np.float32)
    with gpuflow.connect(raw_kernel_server.target) as client, client.session() as session:
        with pytest.raises(gpuflow.InvalidArgumentError, match="takes 3 arguments, but 2"):
            run(session, lambda g, a, b: g.raw_kernel(a, b, code=VECTOR_ADD, name="my_add",
                                                      grid=[1], block=[8], output=1), x1=x, y=x)
        # A Python int fits an `int` parameter; a scaled kernel with a scalar.
        code = r"""
        extern "C" __global__ void scale(const float* x, float* y, int n, float s) {
            int i = blockDim.x * blockIdx.x + threadIdx.x;
            if (i < n) y[i] = x[i] * s;
        }"""
        got = run(session, lambda g, a, b: g.raw_kernel(a, b, 8, 2.5, code=code, name="scale",
                                                        grid=[1], block=[32], output=1),
                  x1=x, y=np.zeros(8, np.float32))
        np.testing.assert_array_equal(got, x * 2.5)


def test_raw_kernel_complex_scalars(raw_kernel_server):
    """A Python complex (complex128) fits a complex<float> parameter as a
    Python float fits a float one; <cupy/complex.cuh> gives complex<T>."""
    if not CUDA:
        pytest.skip("argument fitting needs the compiled kernel (cuda backend)")
    code = r"""#include <cupy/complex.cuh>
    extern "C" __global__ void cscale(const complex<float>* x, complex<float> s,
                                      complex<double> t, complex<float>* y) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        y[i] = x[i] * s + t;
    }"""
    x = complex_normal(np.random.default_rng(9), 64, np.complex64)
    with gpuflow.connect(raw_kernel_server.target) as client, client.session() as session:
        got = run(session, lambda g, a, b: g.raw_kernel(a, 0.5 + 2j, -1j, b, code=code,
                                                        name="cscale", grid=[2], block=[32],
                                                        output=3),
                  x=x, y=np.zeros(64, np.complex64))
        want = (x * np.complex64(0.5 + 2j)).astype(np.complex128) - 1j
        np.testing.assert_allclose(got, want.astype(np.complex64), rtol=1e-6, atol=1e-6)
