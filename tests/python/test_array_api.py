"""The CuPy-style array API (gpuflow.RemoteArray and the module functions)
against NumPy, through the real server.

Every check compares three things: the dtype and shape the client inferred
(without a round trip), the array the server computed, and NumPy's result
under NumPy 2 promotion rules.
"""

import gc
import operator

import numpy as np
import pytest

import gpuflow as gf
from gpuflow._inference import AxisError
from conftest import BACKEND

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

# NumPy warns about the reference values it computes (x / 0, ddof >= n).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def make(dtype, shape, seed, kind="any"):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        lo, hi = (1, 4) if kind == "positive" else (max(np.iinfo(dtype).min, -9), 9)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if kind == "positive":
        return rng.uniform(0.5, 4, size=shape).astype(dtype)
    return rng.uniform(-4, 4, size=shape).astype(dtype)


def check_all(pairs):
    """pairs: [(RemoteArray, numpy result)], evaluated in one Execute."""
    got = gf.evaluate(*(r for r, _ in pairs))
    for (remote, expected), value in zip(pairs, got):
        expected = np.asarray(expected)
        assert remote.dtype == expected.dtype, (remote, expected.dtype)
        assert remote.shape == expected.shape, (remote, expected.shape)
        assert value.dtype == expected.dtype and value.shape == expected.shape, (remote, value.dtype)
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, rtol=RTOL[expected.dtype.name], atol=1e-6)
        else:
            np.testing.assert_array_equal(value, expected)


BINARY_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
DTYPE_PAIRS = [
    ("int8", "int8"), ("int8", "uint8"), ("int32", "float32"), ("float16", "float32"),
    ("bool", "int16"), ("uint64", "int64"), ("float64", "float64"), ("int16", "float16"),
    ("uint8", "bool"), ("bool", "bool"),
]


@pytest.mark.parametrize("left,right", DTYPE_PAIRS)
def test_binary_operators_match_numpy(session, left, right):
    kind = "positive" if right != "bool" else "any"
    a_np = make(left, (3, 4), 1)
    b_np = make(right, (4,), 2, kind=kind)
    if right != "bool":
        b_np = np.where(b_np == 0, 1, b_np).astype(right)
    a, b = session.asarray(a_np), session.asarray(b_np)
    pairs = []
    for symbol, fn in BINARY_OPERATORS.items():
        if symbol == "**" and np.dtype(left).kind in "iub" and np.dtype(right).kind in "iub":
            b_exp = np.minimum(np.abs(b_np.astype(np.int64)), 3).astype(right)
            exp = session.asarray(b_exp)
        else:
            b_exp, exp = b_np, b
        with np.errstate(all="ignore"):
            try:
                expected = fn(a_np, b_exp)
            except TypeError:
                with pytest.raises(TypeError):
                    fn(a, exp)
                continue
        pairs.append((fn(a, exp), expected))
    check_all(pairs)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32"])
def test_python_scalars_are_weak(session, dtype):
    a_np = make(dtype, (5,), 3, kind="positive")
    a = session.asarray(a_np)
    pairs = []
    for scalar in (3, 2.5, True):
        for fn in (operator.add, operator.mul, operator.truediv, operator.lt, operator.eq):
            pairs.append((fn(a, scalar), fn(a_np, scalar)))
            pairs.append((fn(scalar, a), fn(scalar, a_np)))
    # numpy scalars are strong.
    pairs.append((a + np.float64(1), a_np + np.float64(1)))
    pairs.append((a * np.int16(2), a_np * np.int16(2)))
    check_all(pairs)


def test_numpy_operands_and_ufuncs(session):
    a_np = make("float32", (3, 4), 4)
    a = session.asarray(a_np)
    b_np = make("float64", (4,), 5)
    r = b_np + a  # ndarray.__add__ defers to the RemoteArray
    assert isinstance(r, gf.RemoteArray)
    s = np.sqrt(np.abs(a))  # a ufunc on a RemoteArray stays remote
    assert isinstance(s, gf.RemoteArray)
    check_all([(r, b_np + a_np), (s, np.sqrt(np.abs(a_np))),
               (np.maximum(a, 0.5), np.maximum(a_np, 0.5)),
               (a @ b_np.astype(np.float32), a_np @ b_np.astype(np.float32)),
               (a + [1, 2, 3, 4], a_np + np.array([1, 2, 3, 4]))])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "uint64", "float16",
                                   "float32", "float64"])
def test_unary_operators_and_functions(session, dtype):
    a_np = make(dtype, (7,), 6)
    p_np = make(dtype, (7,), 7, kind="positive")
    a, p = session.asarray(a_np), session.asarray(p_np)
    pairs = [(abs(a), np.abs(a_np)), (gf.absolute(a), np.absolute(a_np))]
    cases = [
        (operator.neg, np.negative, a, a_np), (operator.invert, np.invert, a, a_np),
        (gf.sqrt, np.sqrt, p, p_np), (gf.exp, np.exp, a, a_np), (gf.log, np.log, p, p_np),
        (gf.log1p, np.log1p, p, p_np), (gf.sin, np.sin, a, a_np), (gf.tanh, np.tanh, a, a_np),
        (gf.square, np.square, a, a_np), (gf.sign, np.sign, a, a_np),
        (gf.isnan, np.isnan, a, a_np), (gf.logical_not, np.logical_not, a, a_np),
    ]
    if np.dtype(dtype).kind == "f":
        cases += [(gf.floor, np.floor, a, a_np), (gf.ceil, np.ceil, a, a_np),
                  (gf.rint, np.rint, a, a_np), (gf.round, np.round, a, a_np),
                  (gf.reciprocal, np.reciprocal, p, p_np)]
    for ours, theirs, x, x_np in cases:
        with np.errstate(all="ignore"):
            try:
                expected = theirs(x_np)
            except TypeError:
                with pytest.raises(TypeError):
                    ours(x)
                continue
        pairs.append((ours(x), expected))
    check_all(pairs)


def test_binary_functions(session):
    a_np, b_np = make("float32", (2, 5), 8), make("float32", (5,), 9, kind="positive")
    i_np, j_np = make("int16", (2, 5), 10), make("int16", (5,), 11, kind="positive")
    a, b, i, j = (session.asarray(v) for v in (a_np, b_np, i_np, j_np))
    check_all([
        (gf.add(a, b), a_np + b_np), (gf.subtract(a, b), a_np - b_np),
        (gf.multiply(a, 2), a_np * 2), (gf.divide(i, j), i_np / j_np),
        (gf.floor_divide(i, j), i_np // j_np), (gf.remainder(i, j), i_np % j_np),
        (gf.power(b, 2), b_np ** 2), (gf.maximum(a, b), np.maximum(a_np, b_np)),
        (gf.minimum(a, 0), np.minimum(a_np, 0)), (gf.arctan2(a, b), np.arctan2(a_np, b_np)),
        (gf.logical_and(a > 0, b > 1), np.logical_and(a_np > 0, b_np > 1)),
        (gf.bitwise_xor(i, j), i_np ^ j_np), (gf.greater_equal(i, 0), i_np >= 0),
        (gf.where(a > 0, a, b), np.where(a_np > 0, a_np, b_np)),
        (gf.where(i > 0, i, 0.5), np.where(i_np > 0, i_np, 0.5)),
        (gf.clip(a, -1, 1), np.clip(a_np, -1, 1)), (a.clip(0, None), np.clip(a_np, 0, None)),
        (a.astype(np.int32), a_np.astype(np.int32)), (i.astype("float16"), i_np.astype("float16")),
    ])


def test_bfloat16_promotion_agrees_with_the_server(session):
    words = gf.float32_to_bfloat16(np.array([1.5, -2.0, 3.25], np.float32))
    x = session.asarray(words, dtype="bfloat16")
    assert x.dtype == "bfloat16"
    cases = [
        (x + np.int8(1), "bfloat16"), (x + np.int16(1), "float32"), (x + np.float16(1), "float32"),
        (x * 2, "bfloat16"), (x * 2.0, "bfloat16"), (gf.sqrt(x), "bfloat16"),
        (x.sum(), "bfloat16"), (x.mean(), "bfloat16"), (x > 0, "bool"),
    ]
    values = gf.evaluate(*(remote for remote, _ in cases))
    for (remote, name), value in zip(cases, values):
        assert remote.dtype == (name if name == "bfloat16" else np.dtype(name))
        assert value.dtype == (np.uint16 if name == "bfloat16" else np.dtype(name))
    np.testing.assert_array_equal(gf.bfloat16_to_float32(values[3]), [3.0, -4.0, 6.5])
    t = x.astype(np.float32)
    np.testing.assert_array_equal(t.get(), [1.5, -2.0, 3.25])


REDUCTION_AXES = [None, 0, -1, (0, 2), ()]


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
def test_reductions_with_axis_and_keepdims(session, dtype):
    x_np = make(dtype, (4, 5, 6), 12)
    x = session.asarray(x_np)
    pairs = []
    for axis in REDUCTION_AXES:
        for keepdims in (False, True):
            kw = dict(axis=axis, keepdims=keepdims)
            for name in ("sum", "prod", "mean", "min", "max", "any", "all"):
                pairs.append((getattr(x, name)(**kw), getattr(x_np, name)(**kw)))
            if dtype != "bool":
                pairs.append((x.var(**kw), x_np.var(**kw)))
                pairs.append((gf.std(x, ddof=1, **kw), np.std(x_np, ddof=1, **kw)))
            pairs.append((gf.sum(x, dtype=np.float64, **kw), np.sum(x_np, dtype=np.float64, **kw)))
    for axis in (None, 1, -1):
        for keepdims in (False, True):
            pairs.append((x.argmax(axis=axis, keepdims=keepdims),
                          x_np.argmax(axis=axis, keepdims=keepdims)))
            pairs.append((gf.argmin(x, axis=axis, keepdims=keepdims),
                          np.argmin(x_np, axis=axis, keepdims=keepdims)))
    check_all(pairs)


def test_scans_softmax_logsumexp(session):
    x_np = make("float32", (3, 5), 13)
    i_np = make("int8", (3, 5), 14)
    x, i = session.asarray(x_np), session.asarray(i_np)

    def softmax(v, axis):
        e = np.exp(v - v.max(axis=axis, keepdims=True))
        return (e / e.sum(axis=axis, keepdims=True)).astype(v.dtype)

    lse = np.log(np.exp(x_np.astype(np.float64)).sum(axis=1)).astype(np.float32)
    check_all([
        (x.cumsum(axis=1), x_np.cumsum(axis=1)), (gf.cumsum(i), np.cumsum(i_np)),
        (gf.cumprod(i, axis=0), np.cumprod(i_np, axis=0)),
        (gf.softmax(x, axis=-1), softmax(x_np, -1)),
        (gf.softmax(x), softmax(x_np.reshape(-1), 0).reshape(3, 5)),
        (gf.log_softmax(x, axis=0), np.log(softmax(x_np, 0))),
        (gf.logsumexp(x, axis=1), lse),
    ])


def test_matmul_and_dot(session):
    a_np, b_np = make("float32", (3, 4), 15), make("float32", (4, 2), 16)
    v_np = make("float32", (4,), 17)
    batch_np = make("float32", (2, 3, 4), 18)
    a, b, v, batch = (session.asarray(t) for t in (a_np, b_np, v_np, batch_np))
    check_all([
        (a @ b, a_np @ b_np), (a @ v, a_np @ v_np), (v @ b, v_np @ b_np), (v @ v, v_np @ v_np),
        (batch @ b, batch_np @ b_np), (gf.matmul(a, b_np), a_np @ b_np),
        (a_np.T @ a, a_np.T @ a_np), (a.dot(b), a_np.dot(b_np)), (gf.dot(v, v), v_np.dot(v_np)),
        (a.T @ a, a_np.T @ a_np),
    ])
    with pytest.raises(ValueError, match="not aligned"):
        a @ a


INDEX_KEYS = [
    0, -1, 3, (1, 2), (-1, -2, 3), slice(None, None, -1), (slice(1, None, 2), slice(None, None, -2)),
    (Ellipsis, 1), (None, 0, Ellipsis, None), (slice(-2, None), None, slice(5, 0, -2)),
    (slice(10, -10, -1),), (slice(None), 3, slice(None, None, -3)), (), Ellipsis,
    (1, slice(3, 3)), (slice(-100, 100), slice(None, None, 7)), (slice(None, -1, -1),),
    (np.int64(2), slice(None), np.int32(-1)), (Ellipsis, slice(None, None, -1), None),
]


def test_indexing_matches_numpy(session):
    x_np = np.arange(4 * 5 * 6, dtype=np.int32).reshape(4, 5, 6)
    x = session.asarray(x_np)
    check_all([(x[key], x_np[key]) for key in INDEX_KEYS])
    rows = list(x)
    assert len(rows) == 4
    np.testing.assert_array_equal(rows[3].get(), x_np[3])


def test_shape_methods(session):
    x_np = make("float32", (2, 3, 4), 19)
    x = session.asarray(x_np)
    one = session.asarray(x_np[:, :1])
    check_all([
        (x.T, x_np.T), (x.transpose(1, 0, 2), x_np.transpose(1, 0, 2)),
        (x.transpose((2, 0, 1)), x_np.transpose((2, 0, 1))), (gf.transpose(x), x_np.T),
        (x.reshape(6, -1), x_np.reshape(6, -1)), (x.reshape((4, 6)), x_np.reshape((4, 6))),
        (gf.reshape(x, -1), x_np.reshape(-1)), (x.ravel(), x_np.ravel()),
        (one.squeeze(), x_np[:, :1].squeeze()), (gf.squeeze(one, axis=1), x_np[:, :1].squeeze(1)),
        (gf.expand_dims(x, (0, -1)), np.expand_dims(x_np, (0, -1))),
        (x.swapaxes(0, 2), x_np.swapaxes(0, 2)), (gf.moveaxis(x, 0, -1), np.moveaxis(x_np, 0, -1)),
        (gf.flip(x, 1), np.flip(x_np, 1)), (gf.flip(x), np.flip(x_np)),
        (gf.broadcast_to(x[:, :1], (2, 5, 4)), np.broadcast_to(x_np[:, :1], (2, 5, 4))),
        (gf.concatenate([x, x_np], axis=1), np.concatenate([x_np, x_np], axis=1)),
        (gf.stack([x, x * 2], axis=-1), np.stack([x_np, x_np * 2], axis=-1)),
        (x[None], x_np[None]), (x[:, gf.newaxis], x_np[:, None]),
    ])
    assert (x.ndim, x.size, x.nbytes, x.itemsize, len(x)) == (3, 24, 96, 4, 2)


def test_creation_functions(session):
    z = gf.zeros((2, 3), gf.float32, session=session)
    base = session.asarray(np.ones((2, 2), np.int16))
    check_all([
        (z, np.zeros((2, 3), np.float32)), (gf.ones(4, session=session), np.ones(4)),
        (gf.full((2,), 7, np.uint8, session=session), np.full((2,), 7, np.uint8)),
        (gf.full((), 2.5, session=session), np.full((), 2.5)),
        (gf.empty(3, bool, session=session), np.zeros(3, bool)),
        (gf.arange(5, session=session), np.arange(5)),
        (gf.arange(1.0, 2.0, 0.25, session=session), np.arange(1.0, 2.0, 0.25)),
        (gf.arange(2, 11, 3, dtype=np.int8, session=session), np.arange(2, 11, 3, dtype=np.int8)),
        (gf.zeros_like(base), np.zeros((2, 2), np.int16)),
        (gf.full_like(base, 3, dtype=np.float32), np.full((2, 2), 3, np.float32)),
        (gf.ones_like(base, shape=(3,)), np.ones(3, np.int16)),
    ])
    assert z.writable and not base.writable and not (z + 1).writable and (z + 1).copy().writable
    u1 = gf.random_uniform((100,), seed=7, session=session).get()
    u2 = gf.random_uniform((100,), seed=7, session=session).get()
    assert u1.dtype == np.float32 and np.array_equal(u1, u2) and 0 <= u1.min() and u1.max() < 1
    n = gf.random_normal((4000,), seed=1, mean=2, std=0.5, dtype=np.float64, session=session).get()
    assert abs(n.mean() - 2) < 0.05 and abs(n.std() - 0.5) < 0.05


def test_current_session_is_the_innermost_with_block(client):
    assert gf.current_session() is None
    with client.session(label="outer") as outer:
        assert gf.current_session() is outer
        with client.session(label="inner") as inner:
            assert gf.zeros(2).session is inner
        assert gf.current_session() is outer
        assert gf.asarray([1, 2]).session is outer


def test_shape_and_dtype_need_no_round_trip(client):
    with client.session() as s:
        x = s.asarray(np.ones((3, 4), np.int8))
        y = gf.sqrt(x.sum(axis=0, keepdims=True) / 2)
    # The session is closed: nothing can reach the server, but the types are known.
    assert y.shape == (1, 4) and y.dtype == np.float64 and y.ndim == 2
    with pytest.raises(gf.SessionClosedError, match="closed"):
        y.get()
    with pytest.raises(gf.SessionClosedError):
        x + 1
    with pytest.raises(gf.SessionClosedError):
        s.asarray(np.ones(2))
    assert isinstance(gf.SessionClosedError("x"), gf.NotFoundError)


def test_evaluate_runs_one_execute_with_shared_work(session, client):
    x = session.asarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    h = gf.exp(x / 10)
    before = client.info().plan_cache
    result = gf.evaluate(h.sum(axis=0), h.max(), h * 2, x, profile=True)
    after = client.info().plan_cache
    assert (after.misses + after.memory_hits) - (before.misses + before.memory_hits) == 1
    e = np.exp(np.arange(12.0).reshape(3, 4) / 10)
    np.testing.assert_allclose(result[0], e.sum(axis=0))
    np.testing.assert_allclose(result[1], e.max())
    np.testing.assert_allclose(result[2], e * 2)
    np.testing.assert_array_equal(result[3], np.arange(12.0).reshape(3, 4))
    assert result.timings.total_seconds > 0 and len(result.timings.steps) >= 1
    assert gf.evaluate() == []


def test_persist_stores_and_rebinds(session):
    x = session.asarray(np.arange(6, dtype=np.float32))
    y = (x * 3).persist("y")
    assert "session array 'y'" in repr(y)
    np.testing.assert_array_equal(session.download("y"), np.arange(6) * 3)
    infos = gf.persist({"x_copy": x, "z": y + 1})
    assert [i.name for i in infos] == ["x_copy", "z"]
    np.testing.assert_array_equal(session.download("z"), np.arange(6) * 3 + 1)
    np.testing.assert_array_equal(session.array("x_copy").get(), np.arange(6))


def test_large_results_and_operands_travel_as_arrays(make_server):
    srv = make_server("--max_inline_bytes=1KiB")
    with gf.connect(srv.target) as c, c.session() as s:
        big = np.arange(10_000, dtype=np.float64)
        x = s.asarray(big)
        y = x * 2 + big  # the numpy operand is too big for a literal: uploaded
        a, b = gf.evaluate(y, y[:3])
        np.testing.assert_array_equal(a, big * 3)
        np.testing.assert_array_equal(b, big[:3] * 3)
        assert np.array_equal(y.get(), big * 3)
        del y, a
        gc.collect()
        gf.evaluate(x[:1])  # deletes released temporaries first
        assert [i.name for i in s.list()] == [x._expr.array_name]


def test_temporaries_are_deleted_when_unreferenced(session):
    x = session.asarray(np.ones(100))
    y = x + 1
    del x
    gc.collect()
    assert len(session.list()) == 1  # y still needs the upload
    del y
    gc.collect()
    z = session.asarray(np.zeros(1))
    assert [i.name for i in session.list()] == [z._expr.array_name]


def test_numpy_interop(session):
    x_np = make("float32", (3, 4), 20)
    x = session.asarray(x_np)
    np.testing.assert_array_equal(np.asarray(x), x_np)
    np.testing.assert_array_equal(np.from_dlpack(x * 1), x_np)
    np.testing.assert_array_equal(gf.to_numpy(x), x_np)
    assert float(x[1, 2]) == float(x_np[1, 2]) and int(x[0, 0] > 100) == 0
    assert x[0, 1].item() == x_np[0, 1].item() and x.tolist() == x_np.tolist()
    assert str(x) == str(x_np)
    out = np.empty((3, 4), np.float32)
    assert x.get(out=out) is out and np.array_equal(out, x_np)

    class DLPackOnly:  # a producer with only the DLPack protocol
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, stream=None):
            return self._a.__dlpack__()

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    class ArrayOnly:
        def __array__(self, dtype=None):
            return np.arange(3, dtype=np.int16)

    check_all([(session.asarray(DLPackOnly(x_np)), x_np),
               (gf.asarray(ArrayOnly(), session=session), np.arange(3, dtype=np.int16)),
               (session.asarray([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]])),
               (session.asarray(2.5), np.array(2.5)),
               (session.asarray(x_np, dtype=np.float64), x_np.astype(np.float64)),
               (gf.array(x_np, session=session), x_np)])
    assert gf.array(x_np, session=session).writable


def test_torch_interop(session):
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    x = session.asarray(t)
    assert x.dtype == np.float32 and x.shape == (3, 4)
    back = gf.to_torch(x * 2)
    assert isinstance(back, torch.Tensor) and torch.equal(back, t * 2)
    b = session.asarray(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    assert b.dtype == "bfloat16"
    assert torch.equal(gf.to_torch(b * 2), torch.tensor([3.0, -4.0], dtype=torch.bfloat16))
    if torch.cuda.is_available():
        c = session.asarray(t.cuda())
        assert torch.equal(gf.to_torch(c + 1, device="cuda").cpu(), t + 1)


def test_to_torch_without_torch_is_a_clear_error(session):
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs PyTorch"):
            gf.to_torch(session.asarray(np.ones(2)))
    else:
        pytest.skip("torch is installed")


# ---- misuse ---------------------------------------------------------------------------


def test_shape_mismatch_raises_at_once(session):
    a, b = session.asarray(np.ones((3, 4))), session.asarray(np.ones(5))
    with pytest.raises(ValueError) as e:
        a + b
    with pytest.raises(ValueError) as want:  # NumPy's message, shapes as it prints them
        np.ones((3, 4)) + np.ones(5)
    assert str(e.value) == str(want.value)
    with pytest.raises(ValueError, match="cannot reshape array of size 12 into shape"):
        a.reshape(5, -1)
    with pytest.raises(AxisError):
        a.sum(axis=2)
    with pytest.raises(ValueError, match="not aligned"):
        gf.matmul(a, b)
    with pytest.raises(ValueError, match="same shape"):
        gf.stack([a, b])
    with pytest.raises(ValueError, match="zero-size array"):
        session.asarray(np.ones((0, 3))).max(axis=0)


def test_indexing_misuse(session):
    x = session.asarray(np.ones((3, 4)))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        x[0, 4]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        x[np.array([0.0, 1.0])]
    with pytest.raises(IndexError, match="boolean"):
        x[True]
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    with pytest.raises(ValueError, match="could not broadcast input array from shape"):
        x[0] = np.ones(3)


def test_operand_and_dtype_misuse(session, client):
    x = session.asarray(np.ones(3, np.float32))
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError, match="gpuflow has no dtype"):
        x.astype(np.longdouble)
    with pytest.raises(TypeError, match="gpuflow has no dtype"):
        session.asarray(np.ones(2, np.clongdouble))
    with pytest.raises(TypeError, match="out must be a gpuflow RemoteArray"):
        x.sum(out=np.empty(()))
    with pytest.raises(TypeError, match="ufunc 'bitwise_and' not supported for the input types"):
        x & 1
    with pytest.raises(TypeError, match="The numpy boolean negative"):
        -(x > 0)
    with client.session() as other:
        y = other.asarray(np.ones(3, np.float32))
        with pytest.raises(ValueError, match="different sessions"):
            x + y
        moved = other.asarray(x)  # an explicit move works
        np.testing.assert_array_equal((moved + y).get(), np.full(3, 2, np.float32))


def test_server_errors_surface_at_evaluation(session):
    session.upload(np.ones(3, np.int8), name="x")
    g = gf.Graph()
    y = g.add(g.array("x"), 300)  # NumPy 2: out of bounds for int8; the server checks it too
    with pytest.raises(gf.InvalidArgumentError, match="300 out of bounds for int8"):
        session.execute(g, outputs=[y])
    x = session.asarray(np.ones(3, np.int8))
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        x + 300  # the client knows first, and raises what NumPy raises, at the call


def test_no_session_is_a_clear_error():
    assert gf.current_session() is None
    with pytest.raises(ValueError, match="no session"):
        gf.zeros(3)
    with pytest.raises(ValueError, match="no session"):
        gf.sqrt(np.ones(3))


def test_repr_does_not_evaluate(session):
    x = session.asarray(np.ones(3))
    assert repr(gf.exp(x)) == "RemoteArray(shape=(3,), dtype=float64, lazy exp)"
    assert BACKEND in ("cpu", "cuda")


ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]


def _ones(session, dtype):
    if dtype == "bfloat16":
        return session.asarray(np.full(2, 0x3F80, np.uint16), dtype="bfloat16")  # 1.0
    return session.asarray(np.ones(2, dtype))


@pytest.mark.skipif(BACKEND != "cpu", reason="a rule check, backend-independent; on CUDA it "
                    "would compile thousands of one-op kernels")
def test_inferred_dtypes_match_the_server_for_every_dtype(session):
    """The client's dtype rules (gpuflow/_inference.py) against the server's,
    for every op family and dtype (pair)."""
    arrays = {d: _ones(session, d) for d in ALL_DTYPES}
    binary = ["add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum",
              "atan2", "eq", "lt", "logical_and", "bitwise_and"]
    unary = ["neg", "abs", "sign", "square", "sqrt", "exp", "floor", "relu", "reciprocal",
             "isnan", "logical_not", "bitwise_not", "real", "imag", "conj", "angle", "round"]
    reductions = ["sum", "prod", "mean", "var", "std", "min", "argmax", "any", "logsumexp",
                  "cumsum", "softmax"]
    from gpuflow.remote_array import apply

    for left in ALL_DTYPES:
        built = []
        for right in ALL_DTYPES:
            for op in binary:
                try:
                    built.append(apply(op, (arrays[left], arrays[right])))
                except TypeError:
                    pass  # refused client-side (checked against NumPy elsewhere)
        for scalar in (True, 2, 2.5, np.float16(2), 1j, np.complex64(1j)):
            built += [apply("add", (arrays[left], scalar)), apply("div", (scalar, arrays[left]))]
        built.append(apply("where", (arrays["bool"], arrays[left], 1.5)))
        built.append(apply("clip", (arrays[left], arrays["int8"], 3)))
        for op in unary:
            try:
                built.append(apply(op, (arrays[left],)))
            except TypeError:
                pass
        for op in reductions:
            attrs = {"axis": 0} if op in ("softmax", "cumsum") else {}
            try:
                built.append(apply(op, (arrays[left],), attrs))
            except TypeError:
                pass  # logsumexp and softmax of complex
        built.append(gf.matmul(arrays[left], arrays["float16"]))
        built.append(gf.concatenate([arrays[left], arrays["uint8"], arrays["int8"]]))
        expected = [(r._expr.dtype, r.shape, repr(r)) for r in built]
        # Stored outputs report the server's dtype (inline bfloat16 arrives as uint16 words).
        infos = gf.persist({f"t{i}": r for i, r in enumerate(built)})
        assert len(infos) > 150
        for (dtype, shape, what), info in zip(expected, infos):
            assert (info.dtype, info.shape) == (dtype, shape), (left, what)
        for info in infos:
            session.delete(info.name)
