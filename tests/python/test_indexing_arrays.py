"""Integer-array indexing, gpuflow.take, gpuflow.take_along_axis and
RemoteArray.take against NumPy 2, through the real server (either backend:
GPUFLOW_TEST_BACKEND=cuda runs it unchanged)."""

import re

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]

X = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)

# Keys whose arrays are host data (lists, numpy): placement of the broadcast
# dims, mixing with slices, integers, None and ..., negative indices.
KEYS = [
    ([0, 2],), ([-1, 0, -3],), (slice(None), [1, -1]), (Ellipsis, [4, 0]),
    ([0, 1], [1, 2]), ([[0], [1]], [1, 2, 3]), ([0, 1], slice(None), [1, 2]),
    (0, slice(None), [1, 2]), (slice(None), 0, [1, 2]), ([0], 0), ([0, 2], 1, 3),
    ([0, 1], None, [1, 2]), (None, [0, 1], [1, 2]), (slice(None), [[0]], [1, 2]),
    (slice(1, None), [2, 0], slice(None, None, -2)), (np.array([[2, 0]]),), ([],),
    (None, Ellipsis, [1], None), (np.array([1, 2], np.uint8), np.array([[3], [0]], np.int16)),
    ([2, 0], [[1, 2], [3, 0]], [4, -5]), (slice(None), slice(None), [[0, 1], [2, 3]]),
    ([], slice(None), []), (np.array([0, 1], np.uint64), slice(2, 3), 4),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_integer_array_keys_match_numpy(session, key):
    x = session.asarray(X)
    check_all([(x[key], X[key])])


@pytest.mark.parametrize("key", [(0,), (slice(None), 1), (0, slice(None), 2), (2, 1)],
                         ids=repr)
def test_remote_index_arrays_match_numpy(session, key):
    """Every position of the key that is a number here becomes a remote
    index array of that value and a neighbour."""
    idx_np = [np.array([k, k - 1]) if isinstance(k, int) else k for k in key]
    remote = [session.asarray(k) if isinstance(k, np.ndarray) else k for k in idx_np]
    x = session.asarray(X)
    check_all([(x[tuple(remote)], X[tuple(idx_np)])])


def test_remote_and_host_indices_mix(session):
    x = session.asarray(X)
    i = np.array([[2], [0]])
    check_all([(x[session.asarray(i), [1, 3]], X[i, [1, 3]]),
               (x[i, :, session.asarray(np.array([4, 0], np.int8))], X[i, :, [4, 0]]),
               (x[session.asarray(np.array(1))], X[1])])


@pytest.mark.parametrize("dtype", ALL)
def test_every_dtype_and_odd_sizes(session, dtype):
    rng = np.random.default_rng(sum(map(ord, dtype)))
    a = (rng.standard_normal((7, 1023)) * 50).astype(dtype)
    x = session.asarray(a)
    rows = rng.integers(-7, 7, size=5)
    cols = rng.integers(-1023, 1023, size=(3, 1))
    check_all([(x[rows], a[rows]), (x[:, cols], a[:, cols]), (x[rows[:3, None], cols.T], a[rows[
        :3, None], cols.T]), (x[0][[1022, 0]], a[0][[1022, 0]])])


@pytest.mark.parametrize("index_dtype", INTS)
def test_index_dtypes(session, index_dtype):
    a = np.arange(40, dtype=np.int64).reshape(8, 5)
    i = np.array([7, 0, 3], dtype=index_dtype)
    x = session.asarray(a)
    check_all([(x[i], a[i]), (x[:, i[1:] % 5], a[:, i[1:] % 5]),
               (x[session.asarray(i)], a[i])])


def test_zero_d_and_empty_arrays(session):
    e = np.zeros((0, 3), np.float32)
    s = np.array(5.0)
    x = session.asarray(e)
    check_all([(x[[]], e[[]]), (x[:, [2, 0]], e[:, [2, 0]]), (x[[], [1]][:0], e[[], [1]][:0])])
    with pytest.raises(IndexError, match="too many indices for array: array is 0-dimensional"):
        session.asarray(s)[[0]]
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        x[[0]]


@pytest.mark.parametrize("key,message", [
    (([0, 3],), "index 3 is out of bounds for axis 0 with size 3"),
    ((slice(None), [-5]), "index -5 is out of bounds for axis 1 with size 4"),
    ((0, 0, [5]), "index 5 is out of bounds for axis 2 with size 5"),
    (([0, 1], [0, 1, 2]), "shape mismatch: indexing arrays could not be broadcast together with "
                          "shapes (2,) (3,) "),
    (([0], [0], [0], [0]), "too many indices for array: array is 3-dimensional, but 4 were "
                           "indexed"),
    (([1.5],), "only integers, slices"),
    ((np.array([1.0]),), "arrays used as indices must be of integer (or boolean) type"),
])
def test_numpy_errors_at_the_call(session, key, message):
    with pytest.raises(IndexError) as numpy_error:
        X[key]
    assert message in str(numpy_error.value)
    x = session.asarray(X)
    with pytest.raises(IndexError, match=re.escape(message)):
        x[key]


def test_remote_out_of_bounds_indices_fail_at_evaluation(session):
    x = session.asarray(X)
    bad = session.asarray(np.array([0, 9]))
    for key, axis, size in [((bad,), 0, 3), ((slice(None), bad), 1, 4), ((bad, [1]), 0, 3),
                            (([1], slice(None), bad), 2, 5)]:
        y = x[key]
        with pytest.raises(gf.InvalidArgumentError,
                           match=f"index 9 is out of bounds for axis {axis} with size {size}"):
            y.get()


def test_boolean_masks_read_as_numpy(session):
    x = session.asarray(X)
    pairs = [(x[mask], X[host]) for mask, host in [
        (x > 3, X > 3), (X > 3, X > 3), ([True, False, True], [True, False, True]),
        (np.array([True, False, True]), np.array([True, False, True]))]]
    pairs.append((x[[1], x[0] > 3], X[[1], X[0] > 3]))
    check_all(pairs)


@pytest.mark.parametrize("dtype", ALL)
def test_take_functions_match_numpy(session, dtype):
    a = (np.arange(2 * 3 * 7) % 11 - 5).astype(dtype).reshape(2, 3, 7)
    x = session.asarray(a)
    i = np.array([[6, -7], [0, 3]])
    sort_idx = np.argsort(a.astype(np.float64), axis=2, kind="stable")
    check_all([
        (gf.take(x, i), np.take(a, i)), (gf.take(x, i, axis=2), np.take(a, i, axis=2)),
        (gf.take(x, 4, axis=-1), np.take(a, 4, axis=-1)), (x.take([0, -1], axis=1),
                                                            a.take([0, -1], axis=1)),
        (x.take(5), a.take(5)), (gf.take(x, [], axis=0), np.take(a, [], axis=0)),
        (gf.take(x, [9, -12], axis=2, mode="wrap"), np.take(a, [9, -12], axis=2, mode="wrap")),
        (gf.take(x, [9, -12], axis=2, mode="clip"), np.take(a, [9, -12], axis=2, mode="clip")),
        (gf.take(x, session.asarray(i), axis=2), np.take(a, i, axis=2)),
        (gf.take_along_axis(x, sort_idx, axis=2), np.take_along_axis(a, sort_idx, axis=2)),
        (gf.take_along_axis(x, sort_idx[:, :1], axis=-1), np.take_along_axis(a, sort_idx[:, :1],
                                                                             axis=-1)),
        (gf.take_along_axis(x, np.array([0, 41, -42]), axis=None),
         np.take_along_axis(a, np.array([0, 41, -42]), axis=None)),
        (gf.take(a, session.asarray(np.array([1]))), np.take(a, [1])),
    ])


def test_take_errors_as_numpy(session):
    x = session.asarray(X)
    with pytest.raises(IndexError, match="index 60 is out of bounds for axis 0 with size 60"):
        gf.take(x, [60])
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 2 with size 5"):
        x.take([-6], axis=2)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 2 with size 5"):
        gf.take_along_axis(x, np.full((1, 1, 1), 5), axis=2)
    # NumPy 2's text (NumPy 1 said "for size 60")
    with pytest.raises(IndexError, match="index 60 is out of bounds for axis 0 with size 60"):
        gf.take_along_axis(x, [60], axis=None)
    with pytest.raises(TypeError, match="Cannot cast array data"):
        gf.take(x, np.array([1.0]))
    with pytest.raises(IndexError, match="`indices` must be an integer array"):
        gf.take_along_axis(x, np.ones((1, 1, 1), bool), axis=0)
    with pytest.raises(ValueError, match="same number of dimensions"):
        gf.take_along_axis(x, [0], axis=0)
    with pytest.raises(gf.AxisError if hasattr(gf, "AxisError") else ValueError):
        gf.take(x, [0], axis=3)
    with pytest.raises(IndexError, match="cannot do a non-empty take from an empty axes."):
        gf.take(session.asarray(np.zeros((2, 0))), [0], axis=1)
    with pytest.raises(ValueError, match="clipmode must be one of"):
        gf.take(x, [0], mode="bogus")
    bad = gf.take(x, session.asarray(np.array([3, 60])))
    with pytest.raises(gf.InvalidArgumentError,
                       match="index 60 is out of bounds for axis 0 with size 60"):
        bad.get()


def test_take_out_rebinds(session):
    x = session.asarray(X)
    out = gf.zeros((2,), dtype="float64", session=session)
    result = gf.take(x, [1, 59], out=out)
    assert result is out and out.dtype == np.float64
    check_all([(out, np.array([1.0, 59.0]))])
