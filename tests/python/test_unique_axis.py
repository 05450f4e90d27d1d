"""unique(..., axis=k) against NumPy 2, through the real server
(GPUFLOW_TEST_BACKEND=cuda runs it unchanged): every real dtype, every axis
of 1-D to 4-D arrays, duplicates, NaN in rows, empty axes, the index,
inverse (1-D, as NumPy 2) and counts, NumPy's AxisError."""

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

# numpy.AxisError is gone in NumPy 2 (numpy.exceptions.AxisError is NumPy >= 1.25's).
AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
RNG = np.random.default_rng(31)


def _data(dtype, shape):
    values = RNG.integers(0, 3, shape)  # few values: many equal sub-arrays
    return values > 0 if dtype == "bool" else values.astype(dtype)


def _check(session, host, axis, **kw):
    x = session.asarray(host)
    got = gf.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis,
                    **kw)
    want = np.unique(host, return_index=True, return_inverse=True, return_counts=True,
                     axis=axis)
    want = (want[0], want[1], want[2].reshape(-1), want[3])  # NumPy 2: a 1-D inverse
    check_all(list(zip(got, want)) + [(gf.unique(x, axis=axis), want[0])])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_and_columns_match_numpy(session, dtype):
    host = _data(dtype, (23, 3))
    for axis in (0, 1, -1, -2):
        _check(session, host, axis)


@pytest.mark.parametrize("shape", [(9,), (5, 4, 3), (2, 3, 2, 4), (1, 5), (7, 1)])
def test_every_axis_of_nd_arrays(session, shape):
    host = _data("int32", shape)
    for axis in range(-len(shape), len(shape)):
        _check(session, host, axis)


def test_nan_rows_never_collapse_and_sort_last(session):
    host = np.array([[np.nan, 1.0], [0.0, 2.0], [np.nan, 1.0], [0.0, 2.0], [np.nan, 0.0],
                     [1.0, np.nan], [1.0, np.nan], [-np.inf, 3.0]], np.float32)
    _check(session, host, 0)
    _check(session, host, 0, equal_nan=False)  # equal_nan plays no part with an axis
    _check(session, host.T.copy(), 1)


def test_many_columns_and_long_axis(session):
    host = _data("int64", (40, 300))
    host[::3] = host[1]
    _check(session, host, 0)
    _check(session, _data("uint8", (2001, 2)), 0)


def test_empty_axes(session):
    for shape, axis in [((0, 3), 0), ((3, 0), 0), ((3, 0), 1), ((2, 0, 3), 0), ((2, 0, 3), 2),
                        ((0,), 0)]:
        _check(session, np.zeros(shape, np.float64), axis)


def test_axis_errors_are_numpys(session):
    x2 = session.asarray(np.zeros((2, 3)))
    for x, axis in [(x2, 2), (x2, -3), (session.asarray(np.float32(1)), 0)]:
        with pytest.raises(AxisError) as want:
            np.unique(np.zeros(x.shape), axis=axis)
        with pytest.raises(AxisError) as got:
            gf.unique(x, axis=axis)
        assert str(got.value) == str(want.value)
    with pytest.raises(TypeError):
        gf.unique(x2, axis=1.0)
