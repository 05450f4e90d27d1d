"""take and take_along_axis against NumPy, through the real server (the
graph ops; gpuflow.take, RemoteArray.take and integer-array indexing are in
test_indexing_arrays.py).

Backend-agnostic, as test_conformance.py: GPUFLOW_TEST_BACKEND=cuda runs it
against the CUDA backend, whose out-of-bounds indices are found on the
device (docs/ops.md, "Shape").
"""

import re
import zlib

import numpy as np
import pytest

import gpuflow

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def rng_for(*parts):
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def make(dtype, shape, rng):
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.integers(0, 2, size=n) == 1).reshape(shape)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype).reshape(shape)
    return (rng.standard_normal(size=n) * 10).astype(dtype).reshape(shape)


def indices(dtype, shape, size, rng, negative=True):
    """Valid indices into an axis of `size`, negative ones too where the
    dtype has them."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.integers(0, min(size, 2), size=n) == 1).reshape(shape)
    lo = -size if negative and np.dtype(dtype).kind == "i" else 0
    hi = size - 1
    info = np.iinfo(dtype)
    lo, hi = max(lo, info.min), min(hi, info.max)
    return rng.integers(lo, hi, size=n, endpoint=True).astype(dtype).reshape(shape)


def execute(session, arrays, build):
    g = gpuflow.Graph()
    nodes = []
    for i, x in enumerate(arrays):
        session.upload(x, name=f"a{i}")
        nodes.append(g.array(f"a{i}"))
    return session.execute(g, outputs=[build(g, *nodes)])[0]


def same(got, want):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,axis", [((), None), ((), 0), ((7,), None), ((7,), 0),
                                        ((3, 5), None), ((3, 5), 1), ((3, 5), -2),
                                        ((2, 1, 1023), 2), ((2, 1, 1023), 1), ((0, 4), 1)])
def test_take_matches_numpy_for_every_dtype(session, dtype, shape, axis):
    rng = rng_for("take", dtype, shape, axis)
    a = make(dtype, shape, rng)
    size = a.size if axis is None or a.ndim == 0 else shape[axis]
    for ishape in [(), (0,), (4,), (2, 3)]:
        if size == 0 and ishape != (0,):
            continue
        idx = indices("int64", ishape, size, rng)
        want = np.take(a, idx, axis=axis)
        same(execute(session, [a, idx], lambda g, x, i: g.take(x, i, axis=axis) if axis is not
                     None else g.take(x, i)), want)


@pytest.mark.parametrize("index_dtype", INTS + ["bool"])
def test_take_accepts_every_integer_index_dtype(session, index_dtype):
    rng = rng_for("take-index", index_dtype)
    a = make("float32", (5, 130), rng)
    idx = indices(index_dtype, (3, 7), 130, rng)
    same(execute(session, [a, idx], lambda g, x, i: g.take(x, i, axis=1)),
         np.take(a, idx.astype(np.int64), axis=1))
    idx0 = indices(index_dtype, (9,), a.size, rng)
    same(execute(session, [a, idx0], lambda g, x, i: g.take(x, i)),
         np.take(a, idx0.astype(np.int64)))


def test_take_of_an_odd_large_size(session):
    rng = rng_for("large")
    a = make("float64", ((1 << 20) + 3,), rng)
    idx = indices("int32", (1 << 20) + 7, a.size, rng)
    session.upload(a, name="a")
    session.upload(idx, name="i")
    g = gpuflow.Graph()
    session.execute(g, outputs={"out": g.take(g.array("a"), g.array("i"), axis=0)})
    same(session.download("out"), np.take(a, idx))


@pytest.mark.parametrize("dtype", ALL)
def test_take_along_axis_matches_numpy_for_every_dtype(session, dtype):
    rng = rng_for("along", dtype)
    a = make(dtype, (4, 7, 3), rng)
    for axis, ishape in [(0, (2, 7, 3)), (1, (4, 5, 3)), (2, (4, 7, 6)), (-1, (4, 7, 0)),
                         (1, (1, 5, 1)), (0, (6, 1, 3))]:
        idx = indices("int64", ishape, a.shape[axis], rng)
        want = np.take_along_axis(a, idx, axis=axis)
        same(execute(session, [a, idx], lambda g, x, i: g.take_along_axis(x, i, axis=axis)), want)
    flat = indices("int16", (11,), a.size, rng)
    same(execute(session, [a, flat], lambda g, x, i: g.take_along_axis(x, i)),
         np.take_along_axis(a, flat, axis=None))


@pytest.mark.parametrize("index_dtype", INTS)
def test_take_along_axis_of_argsorted_rows(session, index_dtype):
    rng = rng_for("argsort", index_dtype)
    a = make("float32", (9, 33), rng)
    idx = np.argsort(a, axis=1).astype(index_dtype)
    same(execute(session, [a, idx], lambda g, x, i: g.take_along_axis(x, i, axis=1)),
         np.sort(a, axis=1))


def test_take_along_axis_broadcasts_the_array_too(session):
    a = np.arange(5, dtype=np.int16).reshape(1, 5)
    idx = np.array([[4, -1], [0, 2], [-5, 1]], dtype=np.int8)
    same(execute(session, [a, idx], lambda g, x, i: g.take_along_axis(x, i, axis=1)),
         np.take_along_axis(a, idx, axis=1))


def numpy_message(fn):
    with pytest.raises(IndexError) as e:
        fn()
    return str(e.value)


@pytest.mark.parametrize("op,shape,axis,bad", [
    ("take", (5,), 0, 7), ("take", (5,), None, -6), ("take", (2, 3), None, 6),
    ("take", (2, 3), 1, 3), ("take", (2, 3), -1, -4),
    ("take_along_axis", (2, 3), 1, 3), ("take_along_axis", (2, 3), 0, -3),
    ("take_along_axis", (2, 3), None, 6)])
@pytest.mark.parametrize("index_dtype", ["int8", "int64", "uint32"])
def test_out_of_bounds_index_fails_with_numpys_message(session, op, shape, axis, bad,
                                                        index_dtype):
    if bad < 0 and index_dtype.startswith("u"):
        pytest.skip("no negative unsigned index")
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if op == "take":
        idx = np.array([0, bad, 1], dtype=index_dtype)
        expected = numpy_message(lambda: np.take(a, idx, axis=axis))
    else:
        ishape = (3,) if axis is None else tuple(1 for _ in shape)
        idx = np.full(ishape, bad, dtype=index_dtype)
        expected = numpy_message(lambda: np.take_along_axis(a, idx, axis=axis))
        if axis is None:  # NumPy 1 said "for size 6"; gpuflow gives NumPy 2's text
            expected = f"index {bad} is out of bounds for axis 0 with size {a.size}"
    kwargs = {} if axis is None else {"axis": axis}
    with pytest.raises(gpuflow.InvalidArgumentError, match=re.escape(expected)):
        execute(session, [a, idx], lambda g, x, i: getattr(g, op)(x, i, **kwargs))


def test_huge_unsigned_index_is_out_of_bounds(session):
    a = np.arange(4, dtype=np.int32)
    idx = np.array([2**63, 1], dtype=np.uint64)
    with pytest.raises(gpuflow.InvalidArgumentError,
                       match="index 9223372036854775808 is out of bounds for axis 0 with size 4"):
        execute(session, [a, idx], lambda g, x, i: g.take(x, i))


def test_a_failed_gather_stores_nothing_and_the_next_run_is_clean(session):
    a = np.arange(10, dtype=np.float64)
    session.upload(a, name="a")
    session.upload(np.array([1, 99], dtype=np.int64), name="bad")
    session.upload(np.array([1, 9], dtype=np.int64), name="good")
    g = gpuflow.Graph()
    out = g.mul(g.take(g.array("a"), g.array("bad")), 2)
    with pytest.raises(gpuflow.InvalidArgumentError, match="index 99 is out of bounds"):
        session.execute(g, outputs={"stored": out})
    assert "stored" not in [info.name for info in session.list()]
    for _ in range(3):
        g = gpuflow.Graph()
        got = session.execute(g, outputs=[g.take(g.array("a"), g.array("good"))])[0]
        same(got, np.array([1.0, 9.0]))


def test_the_first_failing_gather_of_a_plan_is_reported(session):
    a = np.arange(6, dtype=np.int32)
    session.upload(a, name="a")
    session.upload(np.array([7], dtype=np.int64), name="i7")
    session.upload(np.array([8], dtype=np.int64), name="i8")
    g = gpuflow.Graph()
    first = g.take(g.array("a"), g.array("i7"))
    second = g.take(g.add(g.array("a"), 1), g.array("i8"))
    with pytest.raises(gpuflow.InvalidArgumentError, match="index 7 is out of bounds"):
        session.execute(g, outputs=[g.add(first, second)])


@pytest.mark.parametrize("build,error", [
    (lambda g, x, i: g.take(x, i, axis=2), "axis 2 is out of bounds for array of dimension 2"),
    (lambda g, x, i: g.take_along_axis(x, i, axis=1),
     "`indices` and `arr` must have the same number of dimensions"),
])
def test_shape_errors_at_validation(session, build, error):
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(gpuflow.InvalidArgumentError, match=re.escape(error)):
        execute(session, [a, np.array([0], np.int64)], build)


def test_float_and_bool_indices_are_refused_as_numpy_refuses_them(session):
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(gpuflow.InvalidArgumentError, match="Cannot cast array data"):
        execute(session, [a, np.array([0.0])], lambda g, x, i: g.take(x, i))
    with pytest.raises(gpuflow.InvalidArgumentError, match="must be an integer array"):
        execute(session, [a, np.array([[True]])], lambda g, x, i: g.take_along_axis(x, i, axis=1))
    with pytest.raises(gpuflow.InvalidArgumentError, match="non-empty take from an empty axes"):
        execute(session, [np.zeros((2, 0)), np.array([0])], lambda g, x, i: g.take(x, i, axis=1))
