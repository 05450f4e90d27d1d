"""What running CuPy's own test suite against gpuflow found (issue 23): each
fix checked against NumPy 2's rules (NumPy 1.24 with weak promotion here),
through the real server.

Complex sorting and what rests on it (sets, median), complex NaN handling
(fmax, nan_to_num, the nan- reductions), round of complex with decimals and
of bool, the prepared-graph key of a Python bool, ``order=`` of the
creation functions, NumPy's axis 0/-1 on 0-d arrays, ``argmax(dtype=)``,
complex arange, the 64-dimension limit, RemoteArray.diagonal/trace/choose/
repeat, the memory-pool stand-ins and cupy.testing's marks.
"""

import unittest
import warnings

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import testing
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError
COMPLEX = ["complex64", "complex128"]
NAN, INF = np.nan, np.inf


def complex_values(dtype, n, seed):
    """Ties, every NaN class (R+nanj, nan+Rj, nan+nanj), infinities and
    signed zeros, in a shuffled order."""
    rng = np.random.default_rng(seed)
    parts = [-2.0, -0.0, 0.0, 1.0, 2.5, INF, -INF]
    special = [complex(1, NAN), complex(NAN, 1), complex(NAN, NAN), complex(NAN, -3),
               complex(2.5, NAN), complex(-INF, 0), complex(0, -0.0)]
    values = [complex(rng.choice(parts), rng.choice(parts)) for _ in range(n)]
    for i, v in enumerate(special[:max(0, n // 3)]):
        values[(i * 7) % n] = v
    return np.array(values, dtype=dtype)


def bits_equal(got, expected):
    """Equal to the bit (signed zeros, the sign of NaN ignored)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    real = np.dtype(expected.dtype).char.lower() if expected.dtype.kind == "c" else None
    g = got.view(real) if real else got
    e = expected.view(real) if real else expected
    same = (g == e) & (np.signbit(g) == np.signbit(e)) | (np.isnan(g) & np.isnan(e))
    assert same.all(), (got, expected)


# ---- complex sort, argsort, searchsorted -------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("n", [1, 7, 40])
def test_complex_sort_and_argsort_in_numpy_order(session, dtype, n):
    x = complex_values(dtype, n, n)
    m = np.stack([x, x[::-1], np.roll(x, 3)])
    r, rm = session.asarray(x), session.asarray(m)
    # gpuflow's sort is stable: ties (-0.0 and 0.0) keep their order, as NumPy's stable one.
    pairs = [(gf.sort(r), np.sort(x, kind="stable")),
             (gf.argsort(r, kind="stable"), np.argsort(x, kind="stable")),
             (gf.sort(rm, axis=0), np.sort(m, axis=0, kind="stable")),
             (gf.argsort(rm, axis=0, kind="stable"), np.argsort(m, axis=0, kind="stable")),
             (gf.sort(rm, axis=None), np.sort(m, axis=None, kind="stable")),
             (rm.argsort(axis=-1, kind="stable"), m.argsort(axis=-1, kind="stable"))]
    got = gf.evaluate(*(p for p, _ in pairs))
    for value, (_, expected) in zip(got, pairs):
        if expected.dtype.kind == "c":
            bits_equal(value, expected)
        else:
            np.testing.assert_array_equal(value, expected)
    rs = session.asarray(x.copy())
    rs.sort()
    bits_equal(rs.get(), np.sort(x, kind="stable"))


def test_complex_sort_empty_zero_d_and_errors(session):
    e = np.zeros((0, 3), np.complex64)
    z = np.array(1 - 2j, np.complex128)
    check_all([(gf.sort(session.asarray(e)), np.sort(e)),
               (gf.argsort(session.asarray(e), axis=0), np.argsort(e, axis=0)),
               (gf.sort(session.asarray(z), axis=None), np.sort(z, axis=None)),
               (gf.argsort(session.asarray(z)), np.argsort(z))])
    with pytest.raises(AxisError):
        gf.sort(session.asarray(z))
    with pytest.raises(AxisError):
        gf.sort(session.asarray(e), axis=2)


def test_argsort_of_zero_d_is_taken_as_one_d(session):
    x = np.array(4.5)
    r = session.asarray(x)
    check_all([(gf.argsort(r), np.argsort(x)), (gf.argsort(r, axis=0), np.argsort(x, axis=0)),
               (r.argsort(axis=None), x.argsort(axis=None))])
    with pytest.raises(AxisError):
        gf.argsort(r, axis=1)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("side", ["left", "right"])
def test_complex_searchsorted(session, dtype, side):
    a = np.sort(complex_values(dtype, 23, 5))
    v = np.concatenate([complex_values(dtype, 9, 6), a[::4]]).reshape(3, -1)
    ra = session.asarray(a)
    order = np.argsort(a[::-1], kind="stable")
    check_all([(gf.searchsorted(ra, session.asarray(v), side), np.searchsorted(a, v, side)),
               (gf.searchsorted(ra, 1 + 0j, side), np.searchsorted(a, 1 + 0j, side)),
               (gf.searchsorted(ra, session.asarray(v[:0]), side), np.searchsorted(a, v[:0], side)),
               (gf.searchsorted(session.asarray(a[::-1]), session.asarray(v), side,
                                sorter=order), np.searchsorted(a[::-1], v, side, sorter=order)),
               (ra.searchsorted(2.5, side), a.searchsorted(2.5, side))])
    real = np.array([0.5, 1.0, 3.0])
    check_all([(gf.searchsorted(session.asarray(real), session.asarray(v), side),
                np.searchsorted(real, v, side))])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_set_functions_of_complex_values(session, dtype):
    a = np.array([4, 1, 1, 9, 2 + 1j, 2 + 1j, complex(1, NAN), -0.0], dtype)
    b = np.array([4, 0, 5, 2 + 1j, 9, 9], dtype)
    ra, rb = session.asarray(a), session.asarray(b)
    got = gf.intersect1d(ra, rb, return_indices=True)
    expected = np.intersect1d(a, b, return_indices=True)
    check_all(list(zip(got, expected)))
    check_all([(gf.union1d(ra, rb), np.union1d(a, b)), (gf.setxor1d(ra, rb), np.setxor1d(a, b)),
               (gf.setdiff1d(ra, rb), np.setdiff1d(a, b)), (gf.unique(ra), np.unique(a)),
               (gf.intersect1d(ra[:4], rb[:4], assume_unique=True),
                np.intersect1d(a[:4], b[:4], assume_unique=True))])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_median_and_nanmedian(session, dtype):
    x = np.array([[1 + 2j, 3 - 1j, complex(NAN, 0), 2 + 2j], [1 + 1j, 2, 3, 4],
                  [complex(1, NAN), 2, 3, 4], [NAN, NAN, NAN, NAN]], dtype)
    r = session.asarray(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pairs = [(gf.median(r, axis=1), np.median(x, axis=1)),
                 (gf.median(r[:, :3], axis=1), np.median(x[:, :3], axis=1)),
                 (gf.median(r[1:2], axis=(0, 1), keepdims=True),
                  np.median(x[1:2], axis=(0, 1), keepdims=True)),
                 (gf.median(r[1]), np.median(x[1])),
                 (gf.nanmedian(r, axis=1), np.nanmedian(x, axis=1)),
                 (gf.nanmedian(r[:, :3], axis=-1), np.nanmedian(x[:, :3], axis=-1))]
    check_all(pairs)


# ---- complex NaN handling ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
def test_nan_reductions_of_complex_values(session, dtype):
    x = np.array([[1 + 1j, complex(NAN, 0), 2 + 3j, complex(1, NAN)], [1j, 2, 3, -1]], dtype)
    r = session.asarray(x)
    pairs = [(getattr(gf, f)(r, axis=1), getattr(np, f)(x, axis=1))
             for f in ("nansum", "nanprod", "nanmean", "nancumsum", "nancumprod")]
    pairs += [(gf.nansum(r), np.nansum(x)), (gf.nanmean(r, axis=0, keepdims=True),
                                             np.nanmean(x, axis=0, keepdims=True))]
    check_all(pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        allnan = np.full((2, 3), complex(NAN, 0), dtype)
        check_all([(gf.nanmean(session.asarray(allnan), axis=1), np.nanmean(allnan, axis=1))])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fmax_fmin_of_complex_ignore_nan(session, dtype):
    a = np.array([complex(NAN, 1), complex(1, NAN), 2, NAN, 1 + 5j, -3], dtype)
    b = np.array([1, 3, NAN, complex(1, NAN), 1 + 2j, -3 + 1j], dtype)
    ra, rb = session.asarray(a), session.asarray(b)
    for f in ("fmax", "fmin", "maximum", "minimum"):
        bits_equal(getattr(gf, f)(ra, rb).get(), getattr(np, f)(a, b))
    bits_equal(gf.fmax(ra, 2.0).get(), np.fmax(a, 2.0))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_nan_to_num_of_complex_parts(session, dtype):
    z = np.array([complex(x, y) for x in [0, -1, INF, -INF, NAN] for y in [0, INF, -INF, NAN]],
                 dtype)
    r = session.asarray(z)
    bits_equal(gf.nan_to_num(r).get(), np.nan_to_num(z))
    bits_equal(gf.nan_to_num(r, nan=5, posinf=7, neginf=-7).get(),
               np.nan_to_num(z, nan=5, posinf=7, neginf=-7))


# ---- round ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("decimals", [-2, -1, 1, 2, 5])
def test_round_of_complex_rounds_each_part(session, dtype, decimals):
    x = np.array([1.5 + 2.5j, -2.25 - 0.35j, 123.456 - 987.654j, complex(-0.004, 0.004),
                  complex(NAN, 1.26), complex(INF, -INF), 0j], dtype)
    r = session.asarray(x)
    bits_equal(gf.around(r, decimals).get(), np.around(x, decimals))
    bits_equal(r.round(decimals).get(), x.round(decimals))
    bits_equal(gf.round(r, decimals).get(), np.round(x, decimals))


def test_round_of_complex_far_decimals_and_bool(session):
    x = np.array([1e100 + 1e100j, 3e99 + 2e100j, 1.5 + 2.5j], np.complex128)
    r = session.asarray(x)
    for decimals in (-100, -99, 90, 100):
        check_all([(gf.around(r, decimals), np.around(x, decimals))], rtol=1e-15)
    b = np.array([True, False, True])
    check_all([(gf.around(session.asarray(b)), np.around(b)),
               (gf.round(session.asarray(b), 0), np.round(b, 0)),
               (session.asarray(b).round(), b.round())], exact=True)


def test_prepared_graph_tells_python_bool_from_numpy_bool(session):
    # One evaluation each: the graph of a fill of numpy.True_ is prepared
    # first; a fill of Python's True has the same ops but another scalar kind.
    for fill in (np.True_, True, np.False_, False, np.True_):
        check_all([(gf.full((3,), fill, dtype=bool), np.full((3,), fill, dtype=bool))])
        check_all([(gf.full((2,), fill), np.full((2,), fill))])
    check_all([(gf.ones((2, 2), dtype=bool), np.ones((2, 2), dtype=bool))])


# ---- creation: order=, shape None, ndmin, complex arange ---------------------------------


@pytest.mark.parametrize("order", ["C", "F", "c", "f", None])
def test_creation_functions_take_order(session, order):
    x = np.arange(6.0).reshape(2, 3)
    ref = session.asarray(x)
    check_all([(gf.zeros((2, 3), "int8", order), np.zeros((2, 3), "int8", order)),
               (gf.ones((2, 3), order=order), np.ones((2, 3), order=order)),
               (gf.empty(3, "float32", order=order).shape == (3,) and gf.zeros(3), np.zeros(3)),
               (gf.full((2, 1), 7, order=order), np.full((2, 1), 7, order=order)),
               (gf.asarray(x, order=order), np.asarray(x, order=order)),
               (gf.array(x, order=order), np.array(x, order=order)),
               (gf.zeros_like(ref, order=order), np.zeros_like(x, order=order)),
               (gf.ones_like(ref, None, order), np.ones_like(x, None, order)),
               (gf.full_like(ref, 2, order=order), np.full_like(x, 2, order=order))])


def test_order_errors_and_like_shape(session):
    x = np.ones(3)
    for order in ("A", "K"):  # NumPy: only C or F for new arrays
        for xp in (np, gf):
            with pytest.raises(ValueError, match="only 'C' or 'F' order is permitted"):
                xp.zeros(3, order=order)
        check_all([(gf.asarray(x, order=order), np.asarray(x, order=order)),
                   (gf.empty_like(session.asarray(x), order=order).shape == (3,) and
                    gf.zeros(3), np.zeros(3))])
    for bad in ("X", "", 3):
        for xp in (np, gf):
            with pytest.raises((ValueError, TypeError)):
                xp.ones(2, order=bad)
        with pytest.raises(ValueError, match="order must be one of"):
            gf.asarray(x, order=bad)
    ref = session.asarray(np.ones((2, 3)))
    check_all([(gf.zeros_like(ref, None, "K", True, (4,)),
                np.zeros_like(np.ones((2, 3)), None, "K", True, (4,)))])


def test_shape_none_is_zero_d_and_ndmin(session):
    # CuPy's shape None is (); NumPy deprecates it, so the reference is ().
    check_all([(gf.zeros(None), np.zeros(())), (gf.ones(None, "int16"), np.ones((), "int16")),
               (gf.full(None, 3.5), np.full((), 3.5)),
               (gf.array([1, 2], ndmin=3), np.array([1, 2], ndmin=3)),
               (gf.array(5, ndmin=1), np.array(5, ndmin=1)),
               (gf.array(np.ones((2, 2)), ndmin=1), np.array(np.ones((2, 2)), ndmin=1))])
    e = gf.empty(None, dtype="uint8")
    assert e.shape == () and e.dtype == np.uint8


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_arange_and_linspace(session, dtype):
    st, sp = np.array([0, 120], dtype), np.array([100, 0], dtype)
    check_all([(gf.arange(10, dtype=dtype), np.arange(10, dtype=dtype)),
               (gf.arange(1, 11, 2, dtype=dtype), np.arange(1, 11, 2, dtype=dtype)),
               (gf.arange(0.5, 3, dtype=dtype), np.arange(0.5, 3, dtype=dtype)),
               (gf.arange(3, 1, dtype=dtype), np.arange(3, 1, dtype=dtype)),
               (gf.linspace(st, sp, num=7, dtype=dtype), np.linspace(st, sp, num=7, dtype=dtype)),
               (gf.linspace(1 + 2j, 3 - 1j, 5, dtype=dtype),
                np.linspace(1 + 2j, 3 - 1j, 5, dtype=dtype))])


def test_bool_arange_length_limit(session):
    check_all([(gf.arange(0, 2, dtype=bool), np.arange(0, 2, dtype=bool)),
               (gf.arange(3, 1, dtype=bool), np.arange(3, 1, dtype=bool)),
               (gf.arange(1, dtype=bool), np.arange(1, dtype=bool))])
    for args in ((10,), (0, 3), (0, 5, 2)):
        for xp in (np, gf):
            with pytest.raises(TypeError, match="only supported for booleans"):
                xp.arange(*args, dtype=bool)


# ---- axes --------------------------------------------------------------------------------


def test_zero_d_arrays_take_axis_zero_and_minus_one(session):
    x = np.array(5.0)
    r = session.asarray(x)
    check_all([(r.squeeze(axis=0), x.squeeze(axis=0)), (gf.squeeze(r, -1), np.squeeze(x, -1)),
               (r.sum(axis=0), x.sum(axis=0)), (r.sum(axis=-1, keepdims=True),
                                                x.sum(axis=-1, keepdims=True)),
               (gf.all(r, axis=0), np.all(x, axis=0)), (r.max(axis=-1), x.max(axis=-1)),
               (gf.prod(r, 0), np.prod(x, 0)), (gf.cumsum(r, axis=0), np.cumsum(x, axis=0)),
               (r.argmax(axis=0), x.argmax(axis=0)), (gf.argmin(r, -1), np.argmin(x, -1))])
    for f in (lambda xp, a: a.squeeze(axis=1), lambda xp, a: a.squeeze(axis=(0,)),
              lambda xp, a: a.sum(axis=1), lambda xp, a: a.sum(axis=(0,)),
              lambda xp, a: a.mean(axis=0), lambda xp, a: xp.cumsum(a, axis=1)):
        for xp, a in ((np, x), (gf, r)):
            with pytest.raises(AxisError):
                f(xp, a)


def test_argmin_argmax_dtype(session):
    x = np.array([[3, 9, 1], [7, 7, 0]])
    r = session.asarray(x)
    for dtype in ("int8", "int16", "int32", np.int64):
        got = [gf.argmax(r, dtype=dtype), r.argmin(axis=1, dtype=dtype),
               gf.argmin(r, 0, keepdims=True, dtype=dtype)]
        expected = [np.argmax(x).astype(dtype), x.argmin(axis=1).astype(dtype),
                    np.argmin(x, 0, keepdims=True).astype(dtype)]
        check_all(list(zip(got, expected)))


def test_reshape_beyond_64_dimensions(session):
    # NumPy 2's limit is 64 dimensions (NumPy 1.24's, which runs here, 32).
    r = session.asarray(np.ones(64))
    assert r.reshape([1] * 63 + [64]).shape == (1,) * 63 + (64,)
    check_all([(r.reshape([1] * 31 + [64]).sum(axis=tuple(range(20))),
                np.ones(64).reshape([1] * 31 + [64]).sum(axis=tuple(range(20))))])
    with pytest.raises(ValueError, match="maximum supported dimension for an ndarray is currently "
                                         "64, found 65"):
        r.reshape([1] * 64 + [64])


# ---- RemoteArray methods -------------------------------------------------------------------


def test_diagonal_trace_choose_repeat_methods(session):
    a = np.arange(60).reshape(3, 4, 5)
    r = session.asarray(a)
    i = np.array([0, 2, 1, 2])
    c = np.arange(12).reshape(3, 4)
    ri = session.asarray(i)
    check_all([(r.diagonal(), a.diagonal()), (r.diagonal(1, 2, 0), a.diagonal(1, 2, 0)),
               (r.diagonal(-1, -1, -3), a.diagonal(-1, -1, -3)), (r.trace(), a.trace()),
               (r.trace(1, 0, 2, dtype="float32"), a.trace(1, 0, 2, dtype="float32")),
               (ri.choose(c), i.choose(c)), (ri.choose(c, mode="wrap"), i.choose(c, mode="wrap")),
               (session.asarray(np.array([0, 3, -1])).choose(c[:, :3], mode="clip"),
                np.array([0, 3, -1]).choose(c[:, :3], mode="clip")),
               (r.repeat(2, 1), a.repeat(2, 1)), (r.repeat(3), a.repeat(3))])
    for xp, x in ((np, a), (gf, r)):
        with pytest.raises(ValueError):
            x.diagonal(0, 1, 1)
    with pytest.raises(ValueError, match="clipmode"):
        ri.choose(c, mode="unknown")


def test_memory_pool_stand_ins(session):
    pool = gf.get_default_memory_pool()
    assert pool is gf.get_default_memory_pool()
    x = session.asarray(np.ones(1000))
    assert pool.used_bytes() == session.memory_used >= x.nbytes
    assert pool.total_bytes() == pool.used_bytes() and pool.free_bytes() == 0
    assert pool.free_all_blocks() is None and pool.n_free_blocks() == 0
    assert pool.get_limit() == 0
    with pytest.raises(NotImplementedError, match="memory_limit"):
        pool.set_limit(size=1 << 20)
    pinned = gf.get_default_pinned_memory_pool()
    assert pinned.free_all_blocks() is None and pinned.n_free_blocks() == 0


def test_cuda_module_stand_ins(session):
    # CuPy's tests branch on the platform: ``from cupy.cuda import runtime``.
    from gpuflow.cuda import runtime

    assert runtime is gf.cuda.runtime and runtime.is_hip is False
    assert "cuda" in gf.__all__ and set(gf.cuda.__all__) <= set(dir(gf.cuda))
    assert isinstance(gf.get_default_memory_pool(), gf.cuda.MemoryPool)
    assert isinstance(gf.get_default_pinned_memory_pool(), gf.cuda.PinnedMemoryPool)


# ---- gpuflow.testing: CuPy's marks ---------------------------------------------------------


@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")
def test_testing_marks_and_numpy_error():
    def f():
        return 1

    assert testing.gpu(f) is f and testing.slow(f) is f
    assert [m.name for m in f.pytestmark] == ["gpu", "slow"]
    mark = testing.multi_gpu(2)
    assert mark.name == "skipif" and mark.args == (True,)
    assert testing.multi_gpu(1).args == (False,)
    before = np.geterr()
    with testing.NumpyError(divide="ignore", invalid="raise"):
        assert np.geterr()["divide"] == "ignore" and np.geterr()["invalid"] == "raise"
        np.log(np.zeros(1))
        with pytest.raises(FloatingPointError):
            np.sqrt(-np.ones(1))
    assert np.geterr() == before
    assert testing.requires is testing.with_requires
    assert testing.requires("numpy>=1.0").args == (False,)
    assert testing.requires("numpy<1.0").args == (True,)


@pytest.mark.filterwarnings("ignore:numpy_cupy_raises is deprecated:DeprecationWarning")
def test_decorated_test_without_xp_still_collects(session):
    import inspect

    class TakesNoXp(unittest.TestCase):
        @testing.numpy_cupy_raises()
        def test_forgets_xp(self):  # the call then raises TypeError (CuPy's too)
            pass

    assert list(inspect.signature(TakesNoXp.test_forgets_xp).parameters) == ["self"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'xp'"):
        TakesNoXp("test_forgets_xp").test_forgets_xp()


# ---- ComplexWarning, gpuflow.exceptions ----------------------------------------------------


def test_casting_complex_to_real_warns_as_numpy(session):
    x = np.array([1 + 2j, -3j], np.complex64)
    r = session.asarray(x)
    warning = gf.exceptions.ComplexWarning
    for target in ("float32", "int8", np.float64, "uint16"):
        with pytest.warns(warning, match="discards the imaginary part"):
            expected = x.astype(target)
        with pytest.warns(warning, match="discards the imaginary part"):
            got = r.astype(target)
        check_all([(got, expected)])
    with pytest.warns(warning):
        expected = np.concatenate((x, x), dtype="float32", casting="unsafe")
    with pytest.warns(warning):
        got = gf.concatenate((r, r), dtype="float32", casting="unsafe")
    check_all([(got, expected)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning where NumPy gives none
        check_all([(r.astype(bool), x.astype(bool)), (r.astype("complex128"),
                                                      x.astype("complex128")),
                   (r.real.astype("float64"), x.real.astype("float64"))])


def test_exceptions_module_is_numpys_classes(session):
    ns = getattr(np, "exceptions", np)
    assert gf.exceptions.AxisError is ns.AxisError is AxisError
    assert gf.exceptions.ComplexWarning is ns.ComplexWarning
    assert issubclass(gf.exceptions.DTypePromotionError, TypeError)
    assert issubclass(gf.exceptions.VisibleDeprecationWarning, UserWarning)
    with pytest.raises(gf.exceptions.AxisError):
        gf.sum(session.asarray(np.ones(2)), axis=3)
    assert set(gf.exceptions.__all__) <= set(dir(gf.exceptions))


# ---- reshape and ravel in F order ----------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "float32", "complex128", "bool"])
def test_reshape_and_ravel_in_f_order(session, dtype):
    x = (np.arange(24) % 5).astype(dtype).reshape(2, 3, 4)
    r = session.asarray(x)
    pairs = [(r.reshape(shape, order=o), x.reshape(shape, order=o))
             for shape in [(4, 3, 2), (6, -1), (24,), (1, 24, 1), (2, 3, 4), (-1,)]
             for o in ("F", "f", "C")]
    pairs += [(gf.reshape(r, (3, 8), order="F"), np.reshape(x, (3, 8), order="F")),
              (gf.ravel(r, "F"), np.ravel(x, "F")), (r.ravel("F"), x.ravel("F")),
              (r.flatten("F"), x.flatten("F")), (r.T.reshape(4, 6, order="F"),
                                                 x.T.reshape(4, 6, order="F")),
              (r[:, ::2].ravel(order="F"), x[:, ::2].ravel(order="F")),
              (session.asarray(np.zeros((0, 3), dtype)).reshape((3, 0), order="F"),
               np.zeros((0, 3), dtype).reshape((3, 0), order="F")),
              (session.asarray(np.array(7, dtype)).reshape(1, 1, order="F"),
               np.array(7, dtype).reshape(1, 1, order="F"))]
    check_all(pairs)
    with pytest.raises(ValueError, match="cannot reshape array of size 24"):
        r.reshape(5, -1, order="F")


def test_layout_orders_of_reshape_and_ravel(session):
    x = np.arange(6).reshape(2, 3)
    r = session.asarray(x)
    for xp, a in ((np, x), (gf, r)):
        with pytest.raises(ValueError, match="order 'K' is not permitted for reshaping"):
            a.reshape(3, 2, order="K")
        with pytest.raises(ValueError, match="order must be one of"):
            a.reshape(3, 2, order="X")
        with pytest.raises(ValueError, match="order must be one of"):
            a.ravel("X")
        with pytest.raises(TypeError, match="order must be str, not int"):
            a.reshape(3, 2, order=1)
    # "A" and "K" follow a memory layout (NumPy's x.T is F-ordered, so
    # x.T.ravel("K") is [0 1 2 3 4 5]); gpuflow refuses instead of answering
    # in C order.
    for call in (lambda: r.reshape(3, 2, order="A"), lambda: r.T.ravel("K"),
                 lambda: gf.ravel(r, "A"), lambda: r.flatten("K")):
        with pytest.raises(NotImplementedError, match="memory layout"):
            call()
    check_all([(r.ravel(None), x.ravel(None)), (r.T.ravel("C"), x.T.ravel("C"))])
