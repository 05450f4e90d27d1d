"""numpy.repeat with per-element counts and numpy.mgrid/ogrid with array
or float bounds (issue 23: found by CuPy's own tests run against
gpuflow), checked against NumPy 2's rules (NumPy 1.24 with weak promotion
here) through the real server."""

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
COUNT_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"]


def values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, size=shape)
    if np.dtype(dtype).kind == "c":
        return (x + 1j * rng.integers(-9, 9, size=shape)).astype(dtype)
    if dtype == "bool":
        return x > 0
    return (np.abs(x) if np.dtype(dtype).kind == "u" else x).astype(dtype)


# ---- repeat ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_per_element_counts_every_dtype(session, dtype):
    a_np = values(dtype, (3, 5))
    a = session.asarray(a_np)
    cases = [([1, 0, 3], 0), ([2, 0, 1, 4, 1], 1), ([0, 3, 1, 0, 2], -1),
             (list(range(15)), None), ([4], 1), (2, None), ([5, 5, 5], 0)]
    pairs = []
    for counts, axis in cases:
        expected = np.repeat(a_np, counts, axis)
        pairs += [(gf.repeat(a, counts, axis), expected), (a.repeat(counts, axis), expected),
                  (gf.repeat(a, np.array(counts), axis), expected),
                  (gf.repeat(a, session.asarray(np.array(counts)), axis), expected)]
    check_all(pairs, exact=True)


@pytest.mark.parametrize("dtype", COUNT_DTYPES)
def test_repeat_counts_of_every_integer_dtype(session, dtype):
    a_np = np.arange(7, dtype=np.float32) * 1.5
    a = session.asarray(a_np)
    counts_np = np.array([0, 1, 2, 1, 0, 3, 1]).astype(dtype)
    expected = np.repeat(a_np, counts_np)
    check_all([(gf.repeat(a, counts_np), expected),
               (gf.repeat(a, session.asarray(counts_np)), expected),
               (a.repeat(session.asarray(counts_np)), expected),
               (gf.repeat(a_np, session.asarray(counts_np)), expected)], exact=True)


def test_repeat_odd_sizes_empty_and_zero_d(session):
    rng = np.random.default_rng(3)
    big_np = rng.standard_normal((37, 3))
    big_counts = rng.integers(0, 5, size=37)
    zero_d_np = np.array(2.5)
    empty_np = np.zeros((2, 0), np.int16)
    big, zero_d, empty = (session.asarray(v) for v in (big_np, zero_d_np, empty_np))
    pairs = [
        (gf.repeat(big, big_counts, 0), np.repeat(big_np, big_counts, 0)),
        (gf.repeat(big, session.asarray(big_counts), 0), np.repeat(big_np, big_counts, 0)),
        (gf.repeat(big, [0] * 37, 0), np.repeat(big_np, [0] * 37, 0)),
        (gf.repeat(big, session.asarray(np.zeros(37, np.int64)), 0),
         np.repeat(big_np, [0] * 37, 0)),
        (gf.repeat(zero_d, 3), np.repeat(zero_d_np, 3)),
        (gf.repeat(zero_d, [3], axis=0), np.repeat(zero_d_np, [3], axis=0)),
        (gf.repeat(zero_d, 2, axis=-1), np.repeat(zero_d_np, 2, axis=-1)),
        (gf.repeat(zero_d, session.asarray(np.array([4]))), np.repeat(zero_d_np, [4])),
        (gf.repeat(zero_d, session.asarray(np.array(0))), np.repeat(zero_d_np, 0)),
        (gf.repeat(empty, [], axis=1), np.repeat(empty_np, [], axis=1)),
        (gf.repeat(empty, session.asarray(np.zeros(0, np.int64)), axis=1),
         np.repeat(empty_np, [], axis=1)),
        (gf.repeat(empty, [1, 2], axis=0), np.repeat(empty_np, [1, 2], axis=0)),
        (gf.repeat(empty, [3]), np.repeat(empty_np, [3])),
        (gf.repeat(5, [2]), np.repeat(5, [2])),
        (gf.repeat([1, 2], [1, 2.7]), np.repeat([1, 2], [1, 2.7])),  # a list: truncated
        (gf.repeat([1, 2], [True, False]), np.repeat([1, 2], [True, False])),
    ]
    long_np = rng.integers(-9, 9, size=1023).astype(np.int8)
    long_counts = rng.integers(0, 4, size=1023).astype(np.uint16)
    long = session.asarray(long_np)
    one_np = np.array([[7 + 1j]], np.complex64)
    pairs += [(gf.repeat(long, long_counts), np.repeat(long_np, long_counts)),
              (gf.repeat(long, session.asarray(long_counts)), np.repeat(long_np, long_counts)),
              (gf.repeat(session.asarray(one_np), [3], 1), np.repeat(one_np, [3], 1)),
              (gf.repeat(session.asarray(one_np), session.asarray(np.array([2], np.int8)), 0),
               np.repeat(one_np, [2], 0))]
    check_all(pairs, exact=True)


def test_repeat_errors_as_numpy(session):
    a_np = np.arange(6).reshape(2, 3)
    a = session.asarray(a_np)
    cases = [
        ([1, 2, 3], 0, ValueError, r"operands could not be broadcast together with shape \(2,\) \(3,\)"),
        ([1, 2], 1, ValueError, r"operands could not be broadcast together with shape \(3,\) \(2,\)"),
        ([1, -1], 0, ValueError, "repeats may not contain negative values."),
        (-1, None, ValueError, "negative dimensions are not allowed"),
        ([-2], 1, ValueError, "negative dimensions are not allowed"),
        # NumPy 2.5 words it "setting an array element with a sequence. The
        # requested array would exceed the maximum number of dimension of 1."
        ([[1, 2]], 0, ValueError, "object too deep for desired array|setting an array element "
                                  "with a sequence"),
        (np.array([1.0, 2.0]), 0, TypeError,
         r"Cannot cast array data from dtype\('float64'\) to dtype\('int64'\) according to "
         r"the rule 'safe'"),
        (np.array([1, 2], np.uint64), 0, TypeError, r"dtype\('uint64'\)"),
        (np.array(2.0), 0, TypeError, r"Cannot cast scalar from dtype\('float64'\)"),
        ([1, 2], 2, AxisError, "axis 2 is out of bounds for array of dimension 2"),
    ]
    for counts, axis, error, message in cases:
        with pytest.raises(error, match=message) as want:
            np.repeat(a_np, counts, axis)
        with pytest.raises(error, match=message) as got:
            gf.repeat(a, counts, axis)
        if isinstance(counts, list) and np.ndim(counts) > 1:
            assert str(got.value) == str(want.value)  # the running NumPy's words
        if isinstance(counts, np.ndarray) or error is not TypeError:
            remote = session.asarray(np.array(counts))
            with pytest.raises(error, match=message):
                gf.repeat(a, remote, axis)
            with pytest.raises(error, match=message):
                a.repeat(remote, axis)
    with pytest.raises(ValueError, match=r"with shape \(1,\) \(0,\)"):
        gf.repeat(5, [])
    # One negative count over an empty axis is a length of zero, as in NumPy.
    empty_np = np.zeros((0, 2), np.float32)
    empty = session.asarray(empty_np)
    check_all([(gf.repeat(empty, -3, 0), np.repeat(empty_np, -3, 0)),
               (gf.repeat(empty, [-1], 0), np.repeat(empty_np, [-1], 0)),
               (gf.repeat(empty, session.asarray(np.array([-2])), 0),
                np.repeat(empty_np, [-2], 0))])
    with pytest.raises(AxisError, match="axis 1 is out of bounds for array of dimension 1"):
        gf.repeat(session.asarray(np.array(5)), 2, axis=1)


def test_repeat_remote_counts_learn_the_size_in_one_execute(session):
    a = session.asarray(np.arange(4.0))
    counts = session.asarray(np.array([1, 0, 2, 3])) + 0  # an unevaluated graph
    out = gf.repeat(a, counts)
    assert out.shape == (6,)  # known at the call, the counts evaluated once
    np.testing.assert_array_equal(out.get(), np.repeat(np.arange(4.0), [1, 0, 2, 3]))
    np.testing.assert_array_equal(counts.get(), [1, 0, 2, 3])


# ---- mgrid and ogrid -------------------------------------------------------------------------


def test_grids_of_scalar_bounds_as_numpy(session):
    keys = [np.s_[0:5:3j, 0:1:0.25], np.s_[0.5:3], np.s_[0:], np.s_[:4], np.s_[0:1:1j],
            np.s_[np.float32(0):1:3j, 0:2], np.s_[0:5:np.complex64(3j)], np.s_[0:3, 0:2.5:0.5],
            np.s_[1:1:0j], np.s_[0:4:2, 1:5:1.5], np.s_[-1:1:5j], np.s_[0:3, 0:2],
            np.s_[0:3, ], np.s_[2:-3:-1, 0:1:2j], np.s_[0:7:3], np.s_[0:1:0.3],
            np.s_[np.int32(0):np.int32(4)], np.s_[-2.5:2.5:4j, 0:3:1j, 1:4]]
    pairs = []
    for key in keys:
        dense, dense_np = gf.mgrid[key], np.mgrid[key]
        pairs.append((dense, dense_np))
        sparse, sparse_np = gf.ogrid[key], np.ogrid[key]
        if isinstance(key, slice):
            pairs.append((sparse, sparse_np))
        else:
            assert isinstance(sparse, tuple) and len(sparse) == len(sparse_np)
            pairs += list(zip(sparse, sparse_np))
    check_all(pairs, rtol=1e-15)
    check_all([(gf.mgrid[()], np.mgrid[()])])


@pytest.mark.parametrize("dtype", ["int16", "int64", "uint8", "float16", "float32", "float64"])
def test_grids_of_array_bounds_as_numpy(session, dtype):
    x_np, y_np = np.zeros(10, dtype), np.arange(1, 11).astype(dtype)
    x, y = session.asarray(x_np), session.asarray(y_np)
    col_x, col_y = x_np[:, None], y_np[:, None]
    pairs = []
    for grid, grid_np in ((gf.mgrid, np.mgrid), (gf.ogrid, np.ogrid)):
        pairs += [
            (grid[x_np[:, None]:y_np[:, None]:10j], grid_np[col_x:col_y:10j]),
            (grid[x[:, None]:y[:, None]:4j], grid_np[col_x:col_y:4j]),
            (grid[x_np:y_np:10j], grid_np[x_np:y_np:10j]),
            (grid[x:y:10j], grid_np[x_np:y_np:10j]),
            (grid[x_np:y:10j], grid_np[x_np:y_np:10j]),
            (grid[x:y_np:1j], grid_np[x_np:y_np:1j]),
            (grid[0:y[:, None]:3j], grid_np[0:col_y:3j]),
            (grid[x[:, None]:2.5:5j], grid_np[col_x:2.5:5j]),
            ]
    check_all(pairs)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_grids_of_several_slices_with_array_bounds(session, dtype):
    # CuPy's test_mgrid5/test_ogrid5: arrays in every slice, complex steps.
    x_np, y_np = np.zeros(10, dtype)[:, None], np.arange(1, 11).astype(dtype)[:, None]
    v_np = np.linspace(-1, 1, 4).astype(dtype)
    x, y, v = session.asarray(x_np), session.asarray(y_np), session.asarray(v_np)
    pairs = []
    for grid, grid_np in ((gf.mgrid, np.mgrid), (gf.ogrid, np.ogrid)):
        cases = [(grid[x:y:10j, x:y:10j], grid_np[x_np:y_np:10j, x_np:y_np:10j]),
                 (grid[x_np:y:10j, x:y_np:10j], grid_np[x_np:y_np:10j, x_np:y_np:10j]),
                 (grid[x_np:y_np:10j, 0:1:10j], grid_np[x_np:y_np:10j, 0:1:10j]),
                 (grid[0:3:3j, v:2:4j], grid_np[0:3:3j, v_np:2:4j]),
                 (grid[0:2, v:v + 1:4j], grid_np[0:2, v_np:v_np + 1:4j])]
        for ours, theirs in cases:
            if isinstance(theirs, np.ndarray):
                pairs.append((ours, theirs))
            else:
                assert isinstance(ours, tuple) and len(ours) == len(theirs)
                pairs += list(zip(ours, theirs))
    check_all(pairs)


def test_grid_errors_as_numpy(session):
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        np.mgrid[5:0, 0:2]
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        gf.mgrid[5:0, 0:2]
    x = session.asarray(np.zeros(3))
    with pytest.raises(ValueError, match=r"broadcast together with shapes \(4,\) \(3,\)"):
        np.mgrid[np.zeros(3):np.ones(3):4j]
    with pytest.raises(ValueError, match=r"broadcast together with shapes \(4,\) \(3,\)"):
        gf.mgrid[x:1:4j]
    deep_np = np.zeros((2, 1, 1))
    message = r"could not broadcast input array from shape \(2,3,4\) into shape \(3,4\)"
    with pytest.raises(ValueError, match=message):
        np.mgrid[0:3:3j, deep_np:1:4j]
    with pytest.raises(ValueError, match=message):
        gf.mgrid[0:3:3j, session.asarray(deep_np):1:4j]
    with pytest.raises(ValueError, match=message):
        gf.mgrid[0:3:3j, deep_np:1:4j]
    with pytest.raises(ValueError, match=r"broadcast together with shapes \(3,4\) \(5,\)"):
        np.mgrid[0:3:3j, np.zeros(5):1:4j]
    with pytest.raises(ValueError, match=r"broadcast together with shapes \(3,4\) \(5,\)"):
        gf.mgrid[0:3:3j, session.asarray(np.zeros(5)):1:4j]
