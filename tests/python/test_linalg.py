"""gpuflow.linalg against numpy.linalg through the real server: norms of
every ord and axis form, det/slogdet/inv/solve by elimination with partial
pivoting (every float and complex dtype, ints as float64, batches, empty
stacks, singular matrices), cholesky, qr, eigh/eigvalsh and svd (Jacobi)
and what builds on them (pinv, matrix_rank, lstsq, cond), matrix_power,
multi_dot, tensorinv, tensorsolve and NumPy 2's linalg namespace
functions, with NumPy's errors."""

import math

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import linalg

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

INEXACT = [np.float32, np.float64, np.complex64, np.complex128]
RTOL = {"float16": 3e-3, "float32": 3e-5, "float64": 1e-12, "complex64": 3e-5,
        "complex128": 1e-12}


def rand(shape, dtype, seed=0):
    rs = np.random.RandomState(seed)
    a = rs.randn(*shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rs.randn(*shape)
    if np.dtype(dtype).kind in "iub":
        a = rs.randint(-3, 4, size=shape)
    return a.astype(dtype)


def check(got, want, rtol=None, atol_scale=1.0):
    """Same dtype and shape as NumPy's, values close for the dtype."""
    value = got.get() if isinstance(got, gf.RemoteArray) else np.asarray(got)
    want = np.asarray(want)
    assert value.dtype == want.dtype, (value.dtype, want.dtype)
    assert value.shape == want.shape, (value.shape, want.shape)
    tol = RTOL.get(want.dtype.name, 0) if rtol is None else rtol
    scale = np.max(np.abs(want)) if want.size and np.isfinite(want).all() else 0
    np.testing.assert_allclose(value, want, rtol=tol, atol=tol * scale * atol_scale)


# ---- norm ------------------------------------------------------------------------------

VECTOR_ORDS = [None, 2, 1, -1, math.inf, -math.inf, 0, 3, 0.5, -2]
MATRIX_ORDS = [None, "fro", "f", 1, -1, math.inf, -math.inf, 2, -2, "nuc"]


@pytest.mark.parametrize("dtype", INEXACT + [np.float16, np.int32, np.uint8, np.bool_])
def test_vector_norms(session, dtype):
    a = rand((3, 7), dtype)
    x = session.asarray(a)
    rtol = 3e-3 if dtype == np.float16 else None
    for ord in VECTOR_ORDS:
        for axis in (1, -1, 0):
            for keepdims in (False, True):
                check(linalg.norm(x, ord, axis, keepdims), np.linalg.norm(a, ord, axis, keepdims),
                      rtol)
        check(linalg.norm(x[0], ord), np.linalg.norm(a[0], ord), rtol)
        check(linalg.norm(x[0], ord, keepdims=True), np.linalg.norm(a[0], ord, keepdims=True),
              rtol)


@pytest.mark.parametrize("dtype", INEXACT + [np.float16, np.int64])
def test_matrix_norms(session, dtype):
    a = rand((2, 3, 5), dtype)
    x = session.asarray(a)
    rtol = 3e-3 if dtype == np.float16 else None
    for ord in MATRIX_ORDS:
        if dtype == np.float16 and ord in (2, -2, "nuc"):
            # Singular values of float16: NumPy's TypeError, as for every
            # linalg function.
            with pytest.raises(TypeError, match="array type float16 is unsupported"):
                np.linalg.norm(a, ord, (1, 2))
            with pytest.raises(TypeError, match="array type float16 is unsupported"):
                linalg.norm(x, ord, (1, 2))
            continue
        for axis in ((1, 2), (2, 1), (0, 2), (-1, 0), (-2, -1)):
            for keepdims in (False, True):
                check(linalg.norm(x, ord, axis, keepdims),
                      np.linalg.norm(a, ord, axis, keepdims), rtol)
        check(linalg.norm(x[0], ord), np.linalg.norm(a[0], ord), rtol)
        check(linalg.norm(x[1], ord, keepdims=True), np.linalg.norm(a[1], ord, keepdims=True),
              rtol)


def test_norm_default_flattens_and_odd_shapes(session):
    for shape in [(), (1,), (7,), (2, 3, 4), (1023,), (0,), (0, 3), (2, 0, 4)]:
        a = rand(shape, np.float64) if shape else np.float64(-2.5)
        x = session.asarray(a)
        check(linalg.norm(x), np.linalg.norm(a))
        check(linalg.norm(x, keepdims=True), np.linalg.norm(a, keepdims=True))
    a = rand((0, 3), np.float32)
    x = session.asarray(a)
    for ord in (None, 1, 2, 0, 3):
        check(linalg.norm(x, ord, axis=0), np.linalg.norm(a, ord, axis=0))
    check(linalg.norm(x, "fro", axis=(0, 1)), np.linalg.norm(a, "fro", axis=(0, 1)))
    # A list and a numpy array are uploaded to the current session.
    check(linalg.norm([3.0, 4.0]), np.linalg.norm([3.0, 4.0]))
    check(linalg.norm(np.array([[1, 2], [3, 4]]), 1), np.linalg.norm([[1, 2], [3, 4]], 1))


def test_norm_of_bfloat16_stays_bfloat16(session):
    a = rand((3, 5), np.float32)
    x = session.asarray(a).astype("bfloat16")
    for ord, axis in ((None, None), (1, 1), (3, 1), (math.inf, 0), ("fro", (0, 1)), (1, (0, 1))):
        got = linalg.norm(x, ord, axis)
        assert got.dtype == "bfloat16"
        value = got.astype(np.float32).get()
        np.testing.assert_allclose(value, np.linalg.norm(a, ord, axis), rtol=2e-2)


def test_norm_errors(session):
    x = session.asarray(rand((2, 3, 4), np.float64))
    with pytest.raises(ValueError, match="Improper number of dimensions to norm."):
        linalg.norm(x, 1)
    with pytest.raises(ValueError, match="Improper number of dimensions to norm."):
        linalg.norm(x, axis=(0, 1, 2))
    with pytest.raises(ValueError, match="Invalid norm order 'fro' for vectors"):
        linalg.norm(x, "fro", axis=1)
    with pytest.raises(ValueError, match="Duplicate axes given."):
        linalg.norm(x, axis=(1, -2))
    with pytest.raises(ValueError, match="Invalid norm order for matrices."):
        linalg.norm(x, 3, axis=(0, 1))
    with pytest.raises(TypeError, match="'axis' must be None, an integer or a tuple"):
        linalg.norm(x, axis=[0, 1])
    with pytest.raises(gf._inference.AxisError):
        linalg.norm(x, axis=3)
    _norms_of_nothing_as_numpys(session)


# (shape, ord, axis) whose maximum runs over an empty axis: NumPy 1.x's max of
# nothing is a ValueError, NumPy 2's norm takes initial=0 (orders inf, and of
# matrices 1, inf and 2); the minimum orders still raise.
EMPTY_NORMS = [((3, 0), math.inf, 1), ((2, 3, 0), math.inf, -1), ((3, 0), 1, (0, 1)),
               ((0, 3), math.inf, (0, 1)), ((3, 0), 2, (0, 1)), ((2, 0, 3), 2, (1, 2)),
               ((4, 0), math.inf, (1, 0)), ((3, 0), -math.inf, 1), ((3, 0), -1, (0, 1)),
               ((3, 0), -2, (0, 1)), ((3, 0), "nuc", (0, 1)), ((0, 3), 1, (0, 1))]


def _norms_of_nothing_as_numpys(session, dtypes=(np.float64, np.float32, np.complex64)):
    """gpuflow's norm of each EMPTY_NORMS case is the installed NumPy's:
    its value (dtype, shape; keepdims too) or its ValueError."""
    for shape, ord_, axis in EMPTY_NORMS:
        for dtype in dtypes:
            host = np.zeros(shape, dtype)
            for keepdims in (False, True):
                try:
                    want = np.linalg.norm(host, ord_, axis=axis, keepdims=keepdims)
                except ValueError:
                    with pytest.raises(ValueError):
                        linalg.norm(session.asarray(host), ord_, axis=axis,
                                    keepdims=keepdims).get()
                    continue
                check(linalg.norm(session.asarray(host), ord_, axis=axis, keepdims=keepdims),
                      want)


def _max_with_initial_zero(a, axis=None, keepdims=False, **kw):
    return np.max(a, axis=axis, keepdims=keepdims, initial=0)


@pytest.mark.parametrize("numpy2", [False, True])
def test_norms_of_nothing_follow_either_numpy(session, monkeypatch, numpy2):
    # Both branches of _numpy_norm_of_nothing_is_zero, whichever NumPy is
    # installed: NumPy 1.x's norm raises for a maximum of nothing; NumPy 2's
    # is 0 (its max with initial=0), as a reference that forces it shows.
    monkeypatch.setattr(linalg, "_numpy_norm_of_nothing_is_zero", lambda o, m: numpy2)
    for shape, ord_, axis in EMPTY_NORMS[:7]:
        x = session.asarray(np.zeros(shape, np.float32))
        if not numpy2:
            with pytest.raises(ValueError):
                linalg.norm(x, ord_, axis=axis).get()
            continue
        host = np.zeros(shape, np.float32)
        if ord_ == 2:
            want = np.zeros(tuple(d for i, d in enumerate(shape) if i not in axis), np.float32)
        elif isinstance(axis, tuple):  # NumPy 2's sum then max(initial=0)
            row, col = axis
            summed = np.abs(host).sum(axis=col if ord_ == math.inf else row)
            keep = (row - (row > col)) if ord_ == math.inf else (col - (col > row))
            want = _max_with_initial_zero(summed, axis=keep)
        else:
            want = _max_with_initial_zero(np.abs(host), axis=axis)
        check(linalg.norm(x, ord_, axis=axis), want)


def _vector_norm_ref(a, axis=None, keepdims=False, ord=2):
    a = np.asarray(a)
    if axis is None:
        res = np.linalg.norm(a.ravel(), ord)
        return res.reshape((1,) * a.ndim) if keepdims else res
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(ax % a.ndim for ax in axes)
    rest = tuple(i for i in range(a.ndim) if i not in axes)
    moved = a.transpose(axes + rest).reshape((-1,) + tuple(a.shape[i] for i in rest))
    res = np.linalg.norm(moved, ord, axis=0)
    if keepdims:
        res = res.reshape(tuple(1 if i in axes else d for i, d in enumerate(a.shape)))
    return res


@pytest.mark.parametrize("dtype", INEXACT + [np.int16])
def test_vector_and_matrix_norm(session, dtype):
    a = rand((2, 3, 4), dtype)
    x = session.asarray(a)
    for axis in (None, 0, -1, (0, 2), (2, 0, 1), (1,)):
        for ord in (2, 1, math.inf, -math.inf, 0, 3):
            for keepdims in (False, True):
                check(linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord),
                      _vector_norm_ref(a, axis, keepdims, ord))
    for ord in ("fro", 1, -1, math.inf, -math.inf, 2, -2, "nuc"):
        for keepdims in (False, True):
            check(linalg.matrix_norm(x, keepdims=keepdims, ord=ord),
                  np.linalg.norm(a, ord, axis=(-2, -1), keepdims=keepdims))
    with pytest.raises(np.linalg.LinAlgError, match="1-dimensional array given"):
        linalg.matrix_norm(x[0, 0])
    with pytest.raises(ValueError, match="repeated axis"):
        linalg.vector_norm(x, axis=(0, -3))


# ---- det, slogdet, inv, solve ------------------------------------------------------------


@pytest.mark.parametrize("dtype", INEXACT)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (7, 7), (3, 4, 4), (2, 3, 6, 6)])
def test_det_slogdet(session, dtype, shape):
    a = rand(shape, dtype)
    x = session.asarray(a)
    check(linalg.det(x), np.linalg.det(a), atol_scale=0)
    sign, logdet = linalg.slogdet(x)
    want_sign, want_log = np.linalg.slogdet(a)
    check(sign, want_sign)
    check(logdet, want_log, rtol=RTOL[np.dtype(dtype).name] * 10)
    result = linalg.slogdet(x)
    assert result.sign is result[0] and result.logabsdet is result[1]


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.bool_])
def test_det_of_ints_and_bool_is_float64(session, dtype):
    a = rand((4, 3, 3), dtype)
    x = session.asarray(a)
    check(linalg.det(x), np.linalg.det(a), rtol=1e-12)
    check(linalg.slogdet(x)[0], np.linalg.slogdet(a)[0])


def test_det_singular_empty_and_pivoting(session):
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]],
                         [[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 3.0]]])
    x = session.asarray(singular)
    check(linalg.det(x), np.linalg.det(singular), atol_scale=1)
    sign, logdet = linalg.slogdet(x)
    np.testing.assert_array_equal(sign.get(), np.linalg.slogdet(singular)[0])
    np.testing.assert_array_equal(logdet.get(), np.linalg.slogdet(singular)[1])
    for shape in [(0, 0), (3, 0, 0), (0, 2, 2), (2, 0, 3, 3)]:
        for dtype in (np.float32, np.complex128, np.int32):
            a = np.zeros(shape, dtype)
            x = session.asarray(a)
            check(linalg.det(x), np.linalg.det(a))
            check(linalg.slogdet(x)[0], np.linalg.slogdet(a)[0])
            check(linalg.slogdet(x)[1], np.linalg.slogdet(a)[1])
            check(linalg.inv(x), np.linalg.inv(a))


def test_det_needs_no_execute_until_get(session):
    x = session.asarray(rand((3, 3), np.float64))
    d = linalg.det(x)
    assert isinstance(d, gf.RemoteArray) and d.shape == () and d.dtype == np.float64


@pytest.mark.parametrize("dtype", INEXACT + [np.int32])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (7, 7), (2, 5, 5), (2, 1, 4, 4)])
def test_inv(session, dtype, shape):
    a = rand(shape, dtype, seed=1)
    if np.dtype(dtype).kind == "i":
        a = a + (np.eye(shape[-1], dtype=dtype) * 10).astype(dtype)
    x = session.asarray(a)
    check(linalg.inv(x), np.linalg.inv(a), atol_scale=10)


def test_inv_beyond_one_graph(session):
    # 70 steps: more than linalg._STEPS_PER_GRAPH, so the elimination is
    # stored between graphs.
    a = rand((2, 70, 70), np.float64, seed=3)
    x = session.asarray(a)
    check(linalg.inv(x), np.linalg.inv(a), rtol=1e-9)
    check(linalg.det(x), np.linalg.det(a), rtol=1e-9, atol_scale=0)


@pytest.mark.parametrize("dtype", INEXACT)
def test_solve(session, dtype):
    a = rand((3, 5, 5), dtype, seed=2)
    b = rand((3, 5, 2), dtype, seed=4)
    x, y = session.asarray(a), session.asarray(b)
    check(linalg.solve(x, y), np.linalg.solve(a, b), atol_scale=10)
    check(linalg.solve(x[0], y[0, :, 0]), np.linalg.solve(a[0], b[0, :, 0]), atol_scale=10)
    # Batch axes broadcast.
    a2 = rand((2, 1, 4, 4), dtype, seed=5)
    b2 = rand((3, 4, 6), dtype, seed=6)
    check(linalg.solve(session.asarray(a2), session.asarray(b2)),
          np.linalg.solve(a2, b2[None]), atol_scale=10)
    # NumPy 2: a 1-D b is one vector for every matrix of the stack.
    v = rand((5,), dtype, seed=7)
    want = np.stack([np.linalg.solve(m, v) for m in a])
    check(linalg.solve(x, session.asarray(v)), want, atol_scale=10)
    # b of the stack's ndim - 1 is a stack of matrices in NumPy 2 (NumPy 1
    # took it for vectors).
    b3 = rand((5, 3), dtype, seed=8)
    check(linalg.solve(x, session.asarray(b3)), np.linalg.solve(a, b3[None]), atol_scale=10)


def test_solve_promotes_and_accepts_host_operands(session):
    a = rand((4, 4), np.float32, seed=2)
    b = rand((4,), np.complex64, seed=3)
    check(linalg.solve(session.asarray(a), b), np.linalg.solve(a, b), atol_scale=10)
    ai = rand((3, 3), np.int16) + 5 * np.eye(3, dtype=np.int16)
    check(linalg.solve(session.asarray(ai), [1, 2, 3]), np.linalg.solve(ai, [1, 2, 3]))
    e = np.zeros((0, 0))
    check(linalg.solve(session.asarray(e), session.asarray(np.zeros((0, 2)))),
          np.linalg.solve(e, np.zeros((0, 2))))


def test_singular_and_shape_errors(session):
    singular = session.asarray(np.array([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]]]))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        linalg.inv(singular)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        linalg.solve(singular, np.ones(2))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        linalg.inv(session.asarray(np.zeros((3, 3), np.complex64)))
    assert linalg.LinAlgError is np.linalg.LinAlgError
    rect = session.asarray(np.ones((2, 3)))
    vec = session.asarray(np.ones(3))
    for func in (linalg.det, linalg.slogdet, linalg.inv):
        with pytest.raises(np.linalg.LinAlgError, match="Last 2 dimensions of the array must be "
                                                        "square"):
            func(rect)
        with pytest.raises(np.linalg.LinAlgError, match="1-dimensional array given. Array must "
                                                        "be at least two-dimensional"):
            func(vec)
        with pytest.raises(TypeError, match="array type float16 is unsupported in linalg"):
            func(session.asarray(np.eye(2, dtype=np.float16)))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        linalg.solve(rect, vec)
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        linalg.solve(session.asarray(np.eye(3)), np.ones(2))
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        linalg.solve(session.asarray(np.eye(3)), np.ones((2, 2)))
    with pytest.raises(ValueError):
        linalg.solve(session.asarray(np.ones((2, 3, 3))), np.ones((4, 3, 1)))


# ---- matrix_power, multi_dot, tensorinv, tensorsolve ------------------------------------


@pytest.mark.parametrize("dtype", INEXACT + [np.int64, np.int8])
def test_matrix_power(session, dtype):
    a = rand((2, 3, 3), dtype) / (1 if np.dtype(dtype).kind in "iu" else 2)
    a = a.astype(dtype)
    x = session.asarray(a)
    for n in (0, 1, 2, 3, 5, 6, 11):
        check(linalg.matrix_power(x, n), np.linalg.matrix_power(a, n),
              rtol=1e-4 if np.dtype(dtype).kind in "fc" else None)
    if np.dtype(dtype).kind in "fc":
        for n in (-1, -2, -3):
            check(linalg.matrix_power(x, n), np.linalg.matrix_power(a, n), rtol=1e-3,
                  atol_scale=10)
    with pytest.raises(TypeError, match="exponent must be an integer"):
        linalg.matrix_power(x, 1.5)
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        linalg.matrix_power(session.asarray(np.ones((2, 3))), 2)
    e = np.zeros((0, 0), np.float32)
    check(linalg.matrix_power(session.asarray(e), 3), np.linalg.matrix_power(e, 3))


def test_multi_dot(session):
    shapes = [(7,), (7, 3), (3, 5), (5, 2), (2,)]
    arrays = [rand(s, np.float64, seed=i) for i, s in enumerate(shapes)]
    remote = [session.asarray(a) for a in arrays]
    for lo, hi in ((0, 5), (1, 4), (0, 3), (1, 5), (0, 2), (2, 4)):
        check(linalg.multi_dot(remote[lo:hi]), np.linalg.multi_dot(arrays[lo:hi]))
    c = [rand((2, 3), np.complex64), rand((3, 4), np.complex64), rand((4, 4), np.complex64)]
    check(linalg.multi_dot([session.asarray(m) for m in c]), np.linalg.multi_dot(c))
    with pytest.raises(ValueError, match="Expecting at least two arrays."):
        linalg.multi_dot([remote[1]])
    with pytest.raises(np.linalg.LinAlgError, match="3-dimensional array given. Array must be "
                                                    "two-dimensional"):
        linalg.multi_dot([remote[1], session.asarray(np.ones((3, 2, 2))), remote[3]])


def test_tensorinv_and_tensorsolve(session):
    a = np.eye(4 * 6).reshape(4, 6, 8, 3) + 0.1 * rand((4, 6, 8, 3), np.float64)
    check(linalg.tensorinv(session.asarray(a), ind=2), np.linalg.tensorinv(a, ind=2),
          rtol=1e-9)
    b = np.eye(4 * 6).reshape(24, 8, 3) + 0.1 * rand((24, 8, 3), np.float64, seed=2)
    check(linalg.tensorinv(session.asarray(b), ind=1), np.linalg.tensorinv(b, ind=1), rtol=1e-9)
    with pytest.raises(ValueError, match="Invalid ind argument."):
        linalg.tensorinv(session.asarray(a), ind=0)
    t = np.eye(2 * 3 * 4).reshape(2 * 3, 4, 2, 3, 4) + 0.1 * rand((6, 4, 2, 3, 4), np.float64)
    rhs = rand((6, 4), np.float64, seed=3)
    check(linalg.tensorsolve(session.asarray(t), session.asarray(rhs)),
          np.linalg.tensorsolve(t, rhs), rtol=1e-9)
    t2 = np.moveaxis(t, 2, 0).copy()
    check(linalg.tensorsolve(session.asarray(t2), rhs, axes=(0,)),
          np.linalg.tensorsolve(t2, rhs, axes=(0,)), rtol=1e-9)
    with pytest.raises(np.linalg.LinAlgError, match="Input arrays must satisfy"):
        linalg.tensorsolve(session.asarray(np.ones((6, 4, 2, 3))), rhs)


# ---- cholesky, qr, eigh, svd and what builds on them --------------------------------------


def hermitian(shape, dtype, seed=0):
    b = rand(shape, dtype, seed)
    return b + np.conj(np.swapaxes(b, -1, -2))


def positive_definite(shape, dtype, seed=0):
    b = rand(shape, dtype, seed)
    return (b @ np.conj(np.swapaxes(b, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close_to_rounding(got, want, dtype, factor=50):
    tol = factor * np.finfo(np.dtype(dtype)).eps
    value = got.get() if isinstance(got, gf.RemoteArray) else got
    want = np.asarray(want)
    assert value.dtype == want.dtype and value.shape == want.shape, (value.dtype, want.dtype,
                                                                     value.shape, want.shape)
    scale = max(np.max(np.abs(want)), 1) if want.size else 1
    np.testing.assert_allclose(value, want, rtol=0, atol=tol * scale)


def eye_like(x):
    n = x.shape[-1]
    return np.broadcast_to(np.eye(n), x.shape[:-2] + (n, n))


def ct(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("dtype", INEXACT)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (7, 7), (2, 3, 5, 5)])
def test_cholesky(session, dtype, shape):
    a = positive_definite(shape, dtype)
    # LAPACK reads one triangle: what the other holds does not matter.
    garbage = a + np.triu(np.full(shape, 9, dtype), 1)
    x = session.asarray(garbage)
    close_to_rounding(linalg.cholesky(x), np.linalg.cholesky(a), dtype)
    close_to_rounding(linalg.cholesky(session.asarray(a), upper=True), ct(np.linalg.cholesky(a)),
                      dtype)


def test_cholesky_errors_and_empty(session):
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        linalg.cholesky(session.asarray(np.array([[1.0, 2.0], [2.0, 1.0]])))
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        linalg.cholesky(session.asarray(np.stack([np.eye(2), -np.eye(2)])))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        linalg.cholesky(session.asarray(np.ones((2, 3))))
    check(linalg.cholesky(session.asarray(np.array([[4, 2], [2, 5]]))),
          np.linalg.cholesky(np.array([[4, 2], [2, 5]])))
    for shape in [(0, 0), (3, 0, 0)]:
        a = np.zeros(shape, np.complex64)
        check(linalg.cholesky(session.asarray(a)), np.linalg.cholesky(a))


@pytest.mark.parametrize("dtype", INEXACT)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (7, 3), (3, 7), (1, 4), (4, 1), (2, 4, 3)])
def test_qr(session, dtype, shape):
    a = rand(shape, dtype)
    x = session.asarray(a)
    for mode in ("reduced", "complete"):
        q, r = linalg.qr(x, mode)
        qn, rn = np.linalg.qr(a, mode)
        close_to_rounding(q, qn, dtype)
        close_to_rounding(r, rn, dtype)
    close_to_rounding(linalg.qr(x, "r"), np.linalg.qr(a, "r"), dtype)
    h, tau = linalg.qr(x, "raw")
    hn, taun = np.linalg.qr(a, "raw")
    close_to_rounding(h, hn, dtype)
    close_to_rounding(tau, taun, dtype)
    result = linalg.qr(x)
    assert result.Q is result[0] and result.R is result[1]


def test_qr_special_cases(session):
    # A zero column and an int input (float64), a rank-deficient matrix.
    a = np.array([[0, 1, 2], [0, 3, 4], [0, 5, 7]])
    for mode in ("reduced", "complete"):
        q, r = linalg.qr(session.asarray(a), mode)
        qn, rn = np.linalg.qr(a, mode)
        close_to_rounding(q, qn, np.float64)
        close_to_rounding(r, rn, np.float64)
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        e = np.zeros(shape)
        for mode in ("reduced", "complete", "raw"):
            q, r = linalg.qr(session.asarray(e), mode)
            qn, rn = np.linalg.qr(e, mode)
            check(q, qn)
            check(r, rn)
    # A stack in raw mode.
    s3 = rand((2, 3, 2), np.float64, seed=9)
    for got, want in zip(linalg.qr(session.asarray(s3), "raw"), np.linalg.qr(s3, "raw")):
        close_to_rounding(got, want, np.float64)
    h, tau = linalg.qr(session.asarray(a), "raw")
    hn, taun = np.linalg.qr(a, "raw")
    close_to_rounding(h, hn, np.float64)
    close_to_rounding(tau, taun, np.float64)
    with pytest.raises(ValueError, match="Unrecognized mode 'full'"):
        linalg.qr(session.asarray(a), "full")
    with pytest.raises(np.linalg.LinAlgError, match="1-dimensional array given"):
        linalg.qr(session.asarray(np.ones(3)))


@pytest.mark.parametrize("dtype", INEXACT)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (8, 8), (2, 3, 4, 4)])
def test_eigh(session, dtype, shape):
    a = hermitian(shape, dtype)
    x = session.asarray(a)
    w, v = linalg.eigh(x)
    wn, vn = np.linalg.eigh(a)
    close_to_rounding(w, wn, dtype)
    assert v.dtype == vn.dtype and v.shape == vn.shape
    vv = v.get()
    close_to_rounding(a @ vv, vv * wn[..., None, :].astype(vv.dtype), dtype, factor=200)
    close_to_rounding(ct(vv) @ vv, eye_like(vv).astype(vv.dtype), dtype, factor=200)
    close_to_rounding(linalg.eigvalsh(x), np.linalg.eigvalsh(a), dtype)
    result = linalg.eigh(x)
    assert result.eigenvalues is result[0] and result.eigenvectors is result[1]


def test_eigh_triangles_degenerate_and_empty(session):
    a = hermitian((5, 5), np.complex128)
    lower = a + np.triu(np.full((5, 5), 7 + 7j), 1)  # 'L' reads only the lower triangle
    upper = a + np.tril(np.full((5, 5), 7 + 7j), -1)
    close_to_rounding(linalg.eigvalsh(session.asarray(lower)), np.linalg.eigvalsh(a), np.float64)
    close_to_rounding(linalg.eigvalsh(session.asarray(upper), UPLO="U"),
                      np.linalg.eigvalsh(a, UPLO="U"), np.float64)
    # The diagonal's imaginary parts are ignored, as LAPACK's.
    skew = a + 3j * np.eye(5)
    close_to_rounding(linalg.eigh(session.asarray(skew))[0], np.linalg.eigh(skew)[0], np.float64)
    # Repeated and zero eigenvalues, a diagonal matrix, ints; 20 x 20 runs
    # over several stored graphs.
    for m in (np.eye(4), np.diag([2.0, 2.0, 0.0, -1.0]), np.zeros((3, 3)),
              np.array([[2, 1], [1, 2]]), hermitian((20, 20), np.float64, seed=3)):
        w, v = linalg.eigh(session.asarray(m))
        close_to_rounding(w, np.linalg.eigh(m)[0], np.float64)
        vv = v.get()
        close_to_rounding(m @ vv, vv * w.get()[None, :], np.float64, factor=500)
    for shape in [(0, 0), (2, 0, 0)]:
        e = np.zeros(shape, np.float32)
        w, v = linalg.eigh(session.asarray(e))
        check(w, np.linalg.eigh(e)[0])
        check(v, np.linalg.eigh(e)[1])
        check(linalg.eigvalsh(session.asarray(e)), np.linalg.eigvalsh(e))
    with pytest.raises(ValueError, match="UPLO argument must be 'L' or 'U'"):
        linalg.eigh(session.asarray(a), UPLO="X")
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        linalg.eigvalsh(session.asarray(np.ones((2, 3))))
    # float16: computed in float32, returned as float16 (CuPy's; NumPy
    # refuses it).
    h16 = hermitian((4, 4), np.float16, seed=2)
    w16, v16 = linalg.eigh(session.asarray(h16))
    assert w16.dtype == v16.dtype == np.float16
    w32 = np.linalg.eigvalsh(h16.astype(np.float32))
    np.testing.assert_allclose(w16.get(), w32, rtol=2e-3, atol=2e-3 * np.abs(w32).max())
    vv = v16.get().astype(np.float32)
    np.testing.assert_allclose(h16.astype(np.float32) @ vv, vv * w32, atol=2e-2 * np.abs(w32).max())
    check(linalg.eigvalsh(session.asarray(h16)).astype(np.float32), w32.astype(np.float16).astype(
        np.float32), rtol=2e-3, atol_scale=1)
    with pytest.raises(TypeError, match="float16"):
        np.linalg.eigh(h16)


@pytest.mark.parametrize("dtype", INEXACT)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (7, 3), (3, 7), (1, 4), (4, 1), (2, 3, 4, 2)])
def test_svd(session, dtype, shape):
    a = rand(shape, dtype)
    x = session.asarray(a)
    for full in (True, False):
        u, s, vh = linalg.svd(x, full_matrices=full)
        un, sn, vhn = np.linalg.svd(a, full_matrices=full)
        for got, want in ((u, un), (vh, vhn)):
            assert got.dtype == want.dtype and got.shape == want.shape
        close_to_rounding(s, sn, dtype)
        uu, vv = u.get(), vh.get()
        k = sn.shape[-1]
        close_to_rounding((uu[..., :, :k] * sn[..., None, :]) @ vv[..., :k, :], a, dtype,
                          factor=200)
        close_to_rounding(ct(uu) @ uu, eye_like(uu).astype(uu.dtype), dtype, factor=200)
        close_to_rounding(vv @ ct(vv), eye_like(ct(vv)).astype(vv.dtype), dtype, factor=200)
    close_to_rounding(linalg.svd(x, compute_uv=False), np.linalg.svd(a, compute_uv=False), dtype)
    close_to_rounding(linalg.svdvals(x), np.linalg.svd(a, compute_uv=False), dtype)
    result = linalg.svd(x)
    assert result.U is result[0] and result.S is result[1] and result.Vh is result[2]


def test_svd_rank_deficient_ints_and_empty(session):
    for a in (np.outer(np.arange(1.0, 6.0), np.arange(1.0, 4.0)), np.zeros((3, 4)),
              np.array([[1, 2], [2, 4], [3, 6]]), np.eye(3)[:, [0, 0, 1]]):
        u, s, vh = linalg.svd(session.asarray(a))
        close_to_rounding(s, np.linalg.svd(a, compute_uv=False), np.float64)
        uu, vv = u.get(), vh.get()
        close_to_rounding(uu.T @ uu, np.eye(uu.shape[0]), np.float64)
        close_to_rounding(vv @ vv.T, np.eye(vv.shape[0]), np.float64)
        k = min(a.shape)
        close_to_rounding((uu[:, :k] * s.get()) @ vv[:k], a.astype(np.float64), np.float64)
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        e = np.zeros(shape, np.complex64)
        for full in (True, False):
            got = linalg.svd(session.asarray(e), full_matrices=full)
            want = np.linalg.svd(e, full_matrices=full)
            for g, w in zip(got, want):
                assert g.shape == w.shape and g.dtype == w.dtype
        check(linalg.svd(session.asarray(e), compute_uv=False), np.linalg.svd(e, compute_uv=False))
    with pytest.raises(np.linalg.LinAlgError, match="1-dimensional array given"):
        linalg.svd(session.asarray(np.ones(3)))
    nan = np.array([[np.nan, 1.0], [1.0, 2.0]])
    for func in (np.linalg.svd, np.linalg.pinv, linalg.svd, linalg.pinv):
        with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
            func(nan if func.__module__.startswith("numpy") else session.asarray(nan))


@pytest.mark.parametrize("dtype", INEXACT)
def test_pinv(session, dtype):
    for shape in [(4, 4), (5, 3), (3, 5), (2, 4, 3)]:
        a = rand(shape, dtype)
        close_to_rounding(linalg.pinv(session.asarray(a)), np.linalg.pinv(a), dtype, factor=500)
    low = np.outer(np.arange(1.0, 5.0), np.arange(1.0, 4.0)).astype(dtype)
    # (rcond above the rounding noise of the zero singular values, which
    # differs between LAPACK and Jacobi.)
    noise = 1000 * float(np.finfo(np.dtype(dtype)).eps)
    close_to_rounding(linalg.pinv(session.asarray(low), rcond=noise),
                      np.linalg.pinv(low, rcond=noise), dtype, factor=500)
    close_to_rounding(linalg.pinv(session.asarray(low), rcond=0.5),
                      np.linalg.pinv(low, rcond=0.5), dtype, factor=500)
    e = np.zeros((0, 3), dtype)
    check(linalg.pinv(session.asarray(e)), np.linalg.pinv(e))


def test_pinv_rtol(session):
    a = np.diag([1.0, 1e-10, 0.0])
    check(linalg.pinv(session.asarray(a), rtol=None), np.diag([1.0, 1e10, 0.0]))
    check(linalg.pinv(session.asarray(a), rtol=1e-5), np.diag([1.0, 0.0, 0.0]))
    check(linalg.pinv(session.asarray(a)), np.linalg.pinv(a))


def test_matrix_rank(session):
    cases = [np.eye(4), np.outer(np.arange(1.0, 5.0), np.arange(1.0, 4.0)), np.zeros((3, 3)),
             np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])]), rand((5, 3), np.complex64),
             np.array([[1, 2], [2, 4]])]
    for a in cases:
        check(linalg.matrix_rank(session.asarray(a)), np.asarray(np.linalg.matrix_rank(a)))
    a = np.diag([1.0, 1e-3, 1e-8])
    check(linalg.matrix_rank(session.asarray(a), tol=1e-4),
          np.asarray(np.linalg.matrix_rank(a, 1e-4)))
    check(linalg.matrix_rank(session.asarray(a), rtol=1e-5), np.asarray(2))
    # Fewer than 2 axes: a 0-d array as CuPy's (NumPy's is an int).
    check(linalg.matrix_rank(session.asarray(np.ones(3))), np.asarray(np.linalg.matrix_rank(
        np.ones(3))))
    check(linalg.matrix_rank(session.asarray(np.zeros(3))), np.asarray(0))
    check(linalg.matrix_rank(session.asarray(np.float32(2))), np.asarray(1))
    _ranks_of_empty_as_numpys(session)


EMPTY_RANKS = [(0, 3), (3, 0), (0, 0), (2, 0, 3), (2, 3, 0)]


def _ranks_of_empty_as_numpys(session):
    """The installed NumPy's rank of empty matrices: NumPy 1.24's maximum of
    no singular values is a ValueError, NumPy 2.5's rank 0 (gh-30422); with
    ``tol`` both count nothing."""
    for shape in EMPTY_RANKS:
        host = np.zeros(shape)
        try:
            want = np.linalg.matrix_rank(host)
        except ValueError:
            with pytest.raises(ValueError):
                linalg.matrix_rank(session.asarray(host)).get()
        else:
            check(linalg.matrix_rank(session.asarray(host)), np.asarray(want))
        check(linalg.matrix_rank(session.asarray(host), tol=0.5),
              np.asarray(np.linalg.matrix_rank(host, tol=0.5)))


@pytest.mark.parametrize("numpy25", [False, True])
def test_ranks_of_empty_follow_either_numpy(session, monkeypatch, numpy25):
    # Both branches of _numpy_rank_of_empty_is_zero, whichever NumPy is
    # installed: NumPy 2.5 counts no singular values (int64 zeros of the
    # batch shape), NumPy 1.24 raises.
    monkeypatch.setattr(linalg, "_numpy_rank_of_empty_is_zero", lambda: numpy25)
    for shape in EMPTY_RANKS:
        x = session.asarray(np.zeros(shape, np.float32))
        if numpy25:
            check(linalg.matrix_rank(x), np.zeros(shape[:-2], np.int64))
            check(linalg.matrix_rank(x, rtol=0.1), np.zeros(shape[:-2], np.int64))
        else:
            with pytest.raises(ValueError):
                linalg.matrix_rank(x).get()


@pytest.mark.parametrize("dtype", INEXACT)
def test_lstsq(session, dtype):
    for a_shape, b_shape in [((6, 3), (6,)), ((6, 3), (6, 2)), ((3, 5), (3,)), ((4, 4), (4, 3))]:
        a, b = rand(a_shape, dtype), rand(b_shape, dtype, seed=1)
        x, resid, rank, s = linalg.lstsq(session.asarray(a), session.asarray(b))
        xn, residn, rankn, sn = np.linalg.lstsq(a, b, rcond=None)
        close_to_rounding(x, xn, dtype, factor=500)
        close_to_rounding(resid, residn, dtype, factor=500)
        assert rank == rankn and isinstance(rank, int)
        close_to_rounding(s, sn, dtype)
    low = np.outer(np.arange(1.0, 6.0), np.arange(1.0, 4.0)).astype(dtype)
    b = rand((5,), dtype, seed=2)
    x, resid, rank, s = linalg.lstsq(session.asarray(low), b)
    xn, residn, rankn, sn = np.linalg.lstsq(low, b, rcond=None)
    close_to_rounding(x, xn, dtype, factor=500)
    check(resid, residn)
    assert rank == rankn == 1
    # rcond < 0 is machine precision (LAPACK's); 0.5 drops more.
    a = rand((6, 3), dtype, seed=5)
    for rcond in (-1, 0.5, 0.9):
        got = linalg.lstsq(session.asarray(a), b[:1].repeat(6), rcond=rcond)
        want = np.linalg.lstsq(a, b[:1].repeat(6), rcond=rcond)
        close_to_rounding(got[0], want[0], dtype, factor=500)
        assert got[2] == want[2]


def test_lstsq_errors_and_empty(session):
    with pytest.raises(np.linalg.LinAlgError, match="Incompatible dimensions"):
        linalg.lstsq(session.asarray(np.ones((3, 2))), np.ones(4))
    with pytest.raises(np.linalg.LinAlgError, match="3-dimensional array given"):
        linalg.lstsq(session.asarray(np.ones((2, 3, 2))), np.ones(3))
    x, resid, rank, s = linalg.lstsq(session.asarray(np.zeros((0, 3))), np.zeros(0))
    xn, residn, rankn, sn = np.linalg.lstsq(np.zeros((0, 3)), np.zeros(0), rcond=None)
    check(x, xn)
    check(resid, residn)
    check(s, sn)
    assert rank == rankn == 0


@pytest.mark.parametrize("dtype", INEXACT)
def test_cond(session, dtype):
    a = rand((2, 4, 4), dtype)
    x = session.asarray(a)
    # The installed NumPy's dtype: real for every p (NumPy 2.5; 1.24 gives
    # complex input's dtype for the orders computed through inv).
    for p in COND_ORDERS:
        close_to_rounding(linalg.cond(x, p), np.linalg.cond(a, p), dtype, factor=5000)
    w = rand((3, 5), dtype)
    close_to_rounding(linalg.cond(session.asarray(w)), np.linalg.cond(w), dtype, factor=5000)


COND_ORDERS = (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc")


@pytest.mark.parametrize("numpy2", [False, True])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_cond_of_complex_follows_either_numpy(session, monkeypatch, numpy2, dtype):
    # Both branches of _numpy_cond_is_real, whichever NumPy is installed:
    # NumPy >= 2.3 gives the real dtype for every p (gh-18304), NumPy 1.24
    # the complex one where it computes norm(x) * norm(inv(x)); the values
    # are the same real numbers.
    monkeypatch.setattr(linalg, "_numpy_cond_is_real", lambda: numpy2)
    a = rand((2, 4, 4), dtype)
    real = np.dtype(dtype).char.lower()
    for p in COND_ORDERS:
        want = np.linalg.cond(a, p)
        through_svd = p is None or p in (2, -2)
        want = want.astype(real if numpy2 or through_svd else dtype)
        got = linalg.cond(session.asarray(a), p)
        close_to_rounding(got, want, dtype, factor=5000)


def test_cond_singular_and_errors(session):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for p in (1, math.inf, "fro"):
        check(linalg.cond(session.asarray(singular), p), np.linalg.cond(singular, p))
    assert np.isinf(linalg.cond(session.asarray(np.zeros((2, 2)))).get())
    with pytest.raises(np.linalg.LinAlgError, match="cond is not defined on empty arrays"):
        linalg.cond(session.asarray(np.zeros((0, 0))))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        linalg.cond(session.asarray(np.ones((2, 3))), 1)


# ---- NumPy 2's linalg namespace --------------------------------------------------------------


def test_numpy2_namespace_functions(session):
    a = rand((2, 3, 4), np.complex64)
    b = rand((2, 4, 5), np.complex64, seed=1)
    x, y = session.asarray(a), session.asarray(b)
    check(linalg.matmul(x, y), np.matmul(a, b))
    c = rand((3, 4, 6), np.complex64, seed=2)
    check(linalg.tensordot(x, session.asarray(c), axes=([1, 2], [0, 1])),
          np.tensordot(a, c, axes=([1, 2], [0, 1])))
    check(linalg.tensordot(x, session.asarray(c[0]), axes=1), np.tensordot(a, c[0], axes=1))
    check(linalg.matrix_transpose(x), np.swapaxes(a, -1, -2))
    check(linalg.diagonal(x), np.diagonal(a, axis1=-2, axis2=-1))
    check(linalg.diagonal(x, offset=1), np.diagonal(a, 1, axis1=-2, axis2=-1))
    check(linalg.trace(x), np.trace(a, axis1=-2, axis2=-1))
    check(linalg.trace(x, offset=-1, dtype=np.complex128),
          np.trace(a, -1, axis1=-2, axis2=-1, dtype=np.complex128))
    u, v = rand((7,), np.float32), rand((5,), np.float32, seed=1)
    check(linalg.outer(session.asarray(u), session.asarray(v)), np.outer(u, v))
    p, q = rand((4, 3), np.float64), rand((4, 3), np.float64, seed=1)
    check(linalg.cross(session.asarray(p), session.asarray(q)), np.cross(p, q))
    check(linalg.cross(session.asarray(p.T.copy()), session.asarray(q.T.copy()), axis=0),
          np.cross(p.T, q.T, axis=0))
    with pytest.raises(ValueError, match="Input array must be at least 2-dimensional"):
        linalg.matrix_transpose(session.asarray(u))
    with pytest.raises(ValueError, match="Input arrays must be one-dimensional, but they are "
                                         r"x1.ndim=2 and x2.ndim=1."):
        linalg.outer(session.asarray(p), session.asarray(v))
    with pytest.raises(ValueError, match="Both input arrays must be \\(arrays of\\) "
                                         "3-dimensional vectors, but they are 2 and 3"):
        linalg.cross(session.asarray(p[:, :2].copy()), session.asarray(q))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int8, np.int64])
def test_vecdot(session, dtype):
    a, b = rand((2, 3, 5), dtype), rand((3, 5), dtype, seed=1)
    x, y = session.asarray(a), session.asarray(b)
    want = (np.conj(a) * b).sum(axis=-1, dtype=np.result_type(a, b))
    check(linalg.vecdot(x, y), want)
    want0 = (np.conj(a) * rand((2, 3, 5), dtype, seed=2)).sum(axis=0, dtype=a.dtype)
    check(linalg.vecdot(x, session.asarray(rand((2, 3, 5), dtype, seed=2)), axis=0), want0)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        linalg.vecdot(x, session.asarray(np.ones((3, 4), dtype)))


def test_linalg_is_a_gpuflow_submodule():
    import gpuflow.linalg as by_path

    assert gf.linalg is by_path is linalg
    for name in linalg.__all__:
        assert hasattr(linalg, name), name
    # Every function of numpy.linalg's namespace is there (eig and eigvals
    # too: tests/python/test_linalg_eig.py).
    for name in ("eig", "eigvals", "eigh", "svd", "solve"):
        assert name in linalg.__all__


def test_loops_fit_a_small_graph_limit(make_server):
    # Each loop stores its state between graphs often enough for the
    # server's --max_graph_nodes.
    srv = make_server("--max_graph_nodes=600")
    client = gf.connect(srv.target)
    try:
        with client.session() as s:
            a = rand((12, 12), np.float64, seed=4)
            h = a + a.T
            spd = a @ a.T + 12 * np.eye(12)
            x = s.asarray(a)
            check(linalg.inv(x), np.linalg.inv(a), rtol=1e-9)
            check(linalg.det(x), np.linalg.det(a), rtol=1e-9, atol_scale=0)
            check(linalg.cholesky(s.asarray(spd)), np.linalg.cholesky(spd), rtol=1e-9)
            close_to_rounding(linalg.qr(x)[1], np.linalg.qr(a)[1], np.float64)
            close_to_rounding(linalg.eigvalsh(s.asarray(h)), np.linalg.eigvalsh(h), np.float64)
            w, v = linalg.eig(x)
            close_to_rounding(np.sort_complex(w.get()), np.sort_complex(np.linalg.eigvals(a)),
                              np.float64, factor=200)
            close_to_rounding(a @ v.get(), v.get() * w.get(), np.complex128, factor=200)
            u, sv, vh = linalg.svd(x)
            close_to_rounding(sv, np.linalg.svd(a, compute_uv=False), np.float64)
            close_to_rounding((u.get() * sv.get()) @ vh.get(), a, np.float64, factor=200)
    finally:
        client.close()
