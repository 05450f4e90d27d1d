"""gpuflow.sort, argsort, searchsorted, partition, lexsort and the
quantiles (median, percentile, quantile and their nan- forms) against NumPy
2, through the real server (GPUFLOW_TEST_BACKEND=cuda runs it unchanged).

NumPy 1.24 is what runs here: where NumPy 2 differs (a Python float q takes
a float array's dtype), the expected values are NumPy's with q given in
that dtype, which is what NumPy 2 computes.
"""

import warnings
import zlib

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]
FLOATS = ["float16", "float32", "float64"]
AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError


def make(dtype, shape, seed, special=True):
    """Few distinct values (ties), and for floats NaN of both signs, +-inf
    and signed zeros."""
    rng = np.random.default_rng(zlib.crc32(repr((dtype, shape, seed)).encode()))
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.integers(0, 2, size=n) == 1).reshape(shape)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(-5, 6, size=n)
        extremes = np.array([info.min, info.max], dtype=dtype)
        x = values.astype(dtype)
        if n >= 4:
            x[rng.integers(0, n, size=2)] = extremes
        return x.reshape(shape)
    x = rng.integers(-4, 5, size=n).astype(dtype) * np.asarray(0.5, dtype)
    if special and n >= 6:
        at = rng.permutation(n)[:6]
        x[at] = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0], dtype=dtype)
    return x.reshape(shape)


SHAPES_AXES = [((0,), -1), ((1,), 0), ((7,), -1), ((3, 5), 0), ((3, 5), 1), ((3, 5), None),
               ((2, 3, 4), 1), ((2, 3, 4), -3), ((2, 0, 3), 1), ((2, 0, 3), None), ((33,), None)]


@pytest.mark.parametrize("dtype", ALL)
def test_sort_and_argsort_match_numpy_stable(session, dtype):
    pairs = []
    for shape, axis in SHAPES_AXES:
        x = make(dtype, shape, 1)
        r = session.asarray(x)
        pairs.append((gf.sort(r, axis=axis), np.sort(x, axis=axis, kind="stable")))
        pairs.append((gf.argsort(r, axis=axis), np.argsort(x, axis=axis, kind="stable")))
        pairs.append((r.argsort(axis=axis), np.argsort(x, axis=axis, kind="stable")))
    check_all(pairs, exact=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_of_either_sign_sorts_last_keeping_its_bits(session, dtype):
    x = np.array([3, -np.nan, -0.0, np.inf, 0.0, np.nan, -np.inf, -0.0, -2], dtype=dtype)
    r = session.asarray(x)
    order, values = gf.evaluate(gf.argsort(r), gf.sort(r))
    np.testing.assert_array_equal(order, [6, 8, 2, 4, 7, 0, 3, 1, 5])
    np.testing.assert_array_equal(np.signbit(values), np.signbit(x[order]))
    assert np.isnan(values[-2:]).all()


def test_zero_d_and_kinds(session):
    z = session.asarray(np.array(4.5))
    check_all([(gf.sort(z, axis=None), np.sort(np.array(4.5), axis=None)),
               (gf.argsort(z, axis=None), np.argsort(np.array(4.5), axis=None))])
    with pytest.raises(AxisError, match="axis -1 is out of bounds for array of dimension 0"):
        gf.sort(z)
    x = session.asarray(np.array([3, 1, 2]))
    for kind in ("quicksort", "mergesort", "heapsort", "stable", "quick", None):
        check_all([(gf.argsort(x, kind=kind), np.array([1, 2, 0]))])
    check_all([(gf.sort(x, stable=True), np.array([1, 2, 3]))])
    with pytest.raises(ValueError, match=r"sort kind must be one of 'quick', 'heap', or "
                                         r"'stable' \(got 'bogus'\)"):
        gf.sort(x, kind="bogus")
    with pytest.raises(ValueError, match="`kind` and `stable`"):
        gf.sort(x, kind="stable", stable=True)
    with pytest.raises(ValueError, match="no fields"):
        gf.sort(x, order="a")
    with pytest.raises(AxisError):
        gf.argsort(x, axis=1)


def test_remote_array_sort_rebinds(session):
    x = np.array([[3, 1, 2], [0, -1, 5]], np.int16)
    r = session.asarray(x)
    before = r
    assert r.sort() is None
    expected = np.sort(x)
    check_all([(r, expected)])
    r.sort(axis=0)
    x.sort(axis=0)
    check_all([(r, np.sort(expected, axis=0))])
    assert before is r
    with pytest.raises(TypeError):
        r.sort(axis=None)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(session, dtype, side):
    a = np.sort(make(dtype, (23,), 2), kind="stable")
    v = make(dtype, (3, 4), 3)
    ra = session.asarray(a)
    pairs = [(gf.searchsorted(ra, session.asarray(v), side=side), np.searchsorted(a, v, side)),
             (ra.searchsorted(session.asarray(v[0]), side), np.searchsorted(a, v[0], side)),
             (gf.searchsorted(ra, v[1], side=side), np.searchsorted(a, v[1], side)),
             (gf.searchsorted(ra, session.asarray(v[:0]), side), np.searchsorted(a, v[:0], side))]
    check_all(pairs, exact=True)


def test_searchsorted_scalars_sorter_and_errors(session):
    a = np.array([-np.inf, 1, 2, 2, 3, np.nan, np.nan])
    ra = session.asarray(a)
    for v in (2, 2.5, np.nan, -np.inf, np.inf, True):
        for side in ("left", "right"):
            check_all([(gf.searchsorted(ra, v, side=side), np.searchsorted(a, v, side=side))])
    i8 = np.array([-100, 0, 100, 127], np.int8)
    check_all([(gf.searchsorted(session.asarray(i8), 1000), np.searchsorted(i8, 1000)),
               (gf.searchsorted(session.asarray(i8), -1000.5), np.searchsorted(i8, -1000.5))])
    unsorted = np.array([5.0, 1.0, 4.0, 2.0])
    order = np.argsort(unsorted)
    ru = session.asarray(unsorted)
    v = np.array([0, 2, 4.5, 9])
    check_all([(gf.searchsorted(ru, v, sorter=order), np.searchsorted(unsorted, v, sorter=order)),
               (gf.searchsorted(ru, v, "right", sorter=session.asarray(order)),
                np.searchsorted(unsorted, v, "right", sorter=order)),
               (gf.searchsorted(ru, v, sorter=gf.argsort(ru)),
                np.searchsorted(unsorted, v, sorter=order))])
    with pytest.raises(ValueError, match=r"search side must be 'left' or 'right' \(got 'mid'\)"):
        gf.searchsorted(ra, 1, side="mid")
    with pytest.raises(ValueError, match="object too deep for desired array"):
        gf.searchsorted(session.asarray(np.ones((2, 2))), 1)
    with pytest.raises(ValueError, match="object of too small depth for desired array"):
        gf.searchsorted(session.asarray(np.array(1.0)), 1)
    with pytest.raises(ValueError, match="Sorter index out of range."):
        gf.searchsorted(ru, 1, sorter=[0, 1, 2, 4])
    with pytest.raises(ValueError, match="sorter.size must equal a.size"):
        gf.searchsorted(ru, 1, sorter=[0])


def test_partition_is_a_full_sort(session):
    x = make("float32", (4, 9), 4)
    r = session.asarray(x)
    for kth, kth0 in ((0, 0), (3, 3), (-1, -1), ([1, 5], [1, 2])):
        got, got_idx = gf.evaluate(gf.partition(r, kth), gf.argpartition(r, kth0, axis=0))
        want = np.partition(x, kth)
        np.testing.assert_array_equal(got[:, kth], want[:, kth])
        np.testing.assert_array_equal(np.take_along_axis(x, got_idx, 0)[kth0],
                                      np.partition(x, kth0, axis=0)[kth0])
    check_all([(gf.partition(r, 2, axis=None), np.sort(x, axis=None))])
    m = session.asarray(x)
    m.partition(1)
    check_all([(m, np.sort(x))])
    with pytest.raises(ValueError, match=r"kth\(=9\) out of bounds \(9\)"):
        gf.partition(r, 9)
    with pytest.raises(ValueError, match="select kind must be 'introselect'"):
        gf.partition(r, 1, kind="quick")


def test_lexsort_matches_numpy(session):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, size=(4, 11))
    b = rng.integers(0, 3, size=(4, 11)).astype(np.float32)
    c = rng.integers(0, 2, size=(4, 11)).astype(bool)
    ra, rb, rc = (session.asarray(k) for k in (a, b, c))
    check_all([(gf.lexsort((ra, rb, rc)), np.lexsort((a, b, c))),
               (gf.lexsort((ra, b), axis=0), np.lexsort((a, b), axis=0)),
               (gf.lexsort(session.asarray(np.stack([a, a * 2]))), np.lexsort(np.stack([a, a * 2]))),
               (gf.lexsort([ra]), np.lexsort([a]))])
    with pytest.raises(TypeError, match="need sequence of keys with len > 0 in lexsort"):
        gf.lexsort([])
    with pytest.raises(ValueError, match="all keys need to be the same shape"):
        gf.lexsort((ra, session.asarray(a[:, :3])))


NUMPY2 = int(np.__version__.split(".")[0]) >= 2


def numpy2_q(x, q):
    """q as NumPy 2's quantile takes it: a Python int or float in the
    array's float dtype."""
    if isinstance(q, (int, float)) and x.dtype.kind == "f":
        return np.asarray(q, dtype=x.dtype)
    return q


def expected(fn, x, q, exact_pairs, close_pairs, remote, **kw):
    """fn(x, q) as NumPy 2 gives it. NumPy 1 computes the interpolation
    weight of a float16 or float32 q in float64 (NumPy 2 in q's dtype) and
    places a 2-D q of the nan- functions after the first kept axis: there
    the values are NumPy 1's, compared within the dtype's tolerance, in
    NumPy 2's dtype and shape."""
    q2 = numpy2_q(x, q)
    qd = np.asarray(q2).dtype
    want = fn(x, q2, **kw)
    if NUMPY2:
        exact_pairs.append((remote, want))
        return
    if np.asarray(q2).ndim > 1 and fn in (np.nanquantile, np.nanpercentile):
        flat = [fn(x, qi, **kw) for qi in np.asarray(q2).reshape(-1)]
        want = np.stack(flat).reshape(np.shape(q2) + np.shape(flat[0]))
    interpolates = kw.get("method", "linear") in ("linear", "midpoint") and qd.kind == "f"
    if interpolates and qd.itemsize < 8:
        close_pairs.append((remote, np.asarray(want).astype(np.result_type(x.dtype, qd))))
    else:
        exact_pairs.append((remote, want))


QUANTILE_CASES = [((7,), None, 0.5), ((8,), 0, 0.3), ((5, 6), -1, [0.0, 0.25, 1.0]),
                  ((5, 6), 0, 0.75), ((2, 3, 4), (0, 2), [[0.1], [0.9]]),
                  ((2, 3, 4), None, 1), ((3, 1), 1, 0.4), ((4, 5), -2, np.float32(0.35))]
METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("dtype", ["int16", "uint8", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("method", METHODS)
def test_quantile_and_percentile_match_numpy(session, dtype, method):
    pairs, close = [], []
    for i, (shape, axis, q) in enumerate(QUANTILE_CASES):
        x = make(dtype, shape, 10 + i, special=False)
        r = session.asarray(x)
        for keepdims in (False, True):
            expected(np.quantile, x, q, pairs, close,
                     gf.quantile(r, q, axis=axis, method=method, keepdims=keepdims),
                     axis=axis, method=method, keepdims=keepdims)
        p = np.multiply(q, 100) if not isinstance(q, (int, float)) else q * 100
        expected(np.percentile, x, p, pairs, close,
                 gf.percentile(r, p, axis=axis, method=method), axis=axis, method=method)
    check_all(pairs, exact=True)
    if close:
        check_all(close)


@pytest.mark.parametrize("dtype", FLOATS)
def test_quantiles_of_rows_with_nan_are_nan(session, dtype):
    x = make(dtype, (4, 9), 20, special=False)
    x[1, 3] = np.nan
    x[2, 0] = -np.nan
    r = session.asarray(x)
    pairs = []
    for method in METHODS:
        pairs.append((gf.quantile(r, [0.2, 0.5], axis=1, method=method),
                      np.quantile(x, [0.2, 0.5], axis=1, method=method)))
    pairs.append((gf.median(r, axis=1), np.median(x, axis=1)))
    pairs.append((gf.median(r), np.median(x)))
    check_all(pairs, exact=True)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float32", "float64"])
def test_median_matches_numpy(session, dtype):
    pairs = []
    for i, (shape, axis) in enumerate([((7,), None), ((8,), 0), ((5, 6), -1), ((5, 6), 0),
                                       ((2, 3, 4), (0, 2)), ((2, 3, 4), None), ((3, 1), 1)]):
        x = make(dtype, shape, 30 + i, special=False)
        r = session.asarray(x)
        pairs.append((gf.median(r, axis=axis), np.median(x, axis=axis)))
        pairs.append((gf.median(r, axis=axis, keepdims=True),
                      np.median(x, axis=axis, keepdims=True)))
    check_all(pairs, exact=True)


def test_median_of_empty_is_nan(session):
    x = np.zeros((0, 3), np.float32)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.median(x, axis=0)
    check_all([(gf.median(session.asarray(x), axis=0), want)])
    with pytest.raises(IndexError):
        gf.quantile(session.asarray(x), 0.5, axis=0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("method", METHODS)
def test_nanquantile_matches_numpy(session, dtype, method):
    x = make(dtype, (5, 8), 40, special=False)
    x[0, [1, 4, 6]] = np.nan
    x[2, :] = np.nan
    x[3, 7] = -np.nan
    x[4, :7] = np.nan
    r = session.asarray(x)
    pairs, close = [], []
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        for q, axis in ((0.5, 1), ([0.0, 0.3, 1.0], -1), ([[0.25], [0.6]], 1), (0.7, None)):
            expected(np.nanquantile, x, q, pairs, close,
                     gf.nanquantile(r, q, axis=axis, method=method), axis=axis, method=method)
        expected(np.nanpercentile, x, 40.0, pairs, close,
                 gf.nanpercentile(r, 40.0, axis=1, method=method, keepdims=True), axis=1,
                 method=method, keepdims=True)
    check_all(pairs, exact=True)
    if close:
        check_all(close)


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "float64"])
def test_nanmedian_matches_numpy(session, dtype):
    x = make(dtype, (5, 8), 50, special=False)
    if dtype.startswith("float"):
        x[0, [1, 4, 6]] = np.nan
        x[2, :] = np.nan
        x[4, :7] = np.nan
    r = session.asarray(x)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pairs = [(gf.nanmedian(r, axis=1), np.nanmedian(x, axis=1)),
                 (gf.nanmedian(r, axis=0, keepdims=True), np.nanmedian(x, axis=0, keepdims=True)),
                 (gf.nanmedian(r), np.nanmedian(x))]
    check_all(pairs, exact=True)


def test_quantile_errors(session):
    r = session.asarray(np.arange(5.0))
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        gf.quantile(r, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        gf.percentile(r, [-1, 50])
    with pytest.raises(ValueError, match="'bogus' is not a valid method"):
        gf.quantile(r, 0.5, method="bogus")
    with pytest.raises(TypeError, match="boolean subtract"):
        gf.quantile(session.asarray(np.array([True, False])), 0.5)
    check_all([(gf.quantile(session.asarray(np.array([True, False])), 0.5, method="lower"),
                np.quantile(np.array([True, False]), 0.5, method="lower"))])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint16", "float16"])
def test_large_sorts_match_numpy(session, dtype):
    """Sizes where the CUDA backend's CUB sorts take over from small-case
    paths: one long row (radix sort) and many rows along either axis
    (segmented sort), NaNs and ties included."""
    rng = np.random.default_rng(7)
    if np.dtype(dtype).kind == "f":
        x = (rng.integers(-1000, 1000, size=1 << 18) / 8).astype(dtype)
        x[rng.integers(0, x.size, size=50)] = np.nan
        x[rng.integers(0, x.size, size=50)] = -0.0
    else:
        x = rng.integers(0, 1000, size=1 << 18).astype(dtype)
    m = x.reshape(512, 512)
    r, rm = session.asarray(x), session.asarray(m)
    for pair in [(gf.sort(r), np.sort(x, kind="stable")),
                 (gf.argsort(r), np.argsort(x, kind="stable")),
                 (gf.argsort(rm, axis=1), np.argsort(m, axis=1, kind="stable")),
                 (gf.argsort(rm, axis=0), np.argsort(m, axis=0, kind="stable")),
                 (gf.sort(rm, axis=0), np.sort(m, axis=0)),
                 (gf.searchsorted(gf.sort(r), r[:1000]),
                  np.searchsorted(np.sort(x), x[:1000]))]:
        check_all([pair], exact=True)
    # The signs of sorted zeros as a stable sort leaves them.
    got = gf.sort(r).get()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.sort(x, kind="stable")))
