"""The NumPy functions gpuflow composes of server ops (gpuflow._shapes,
_ranges, _stats) against NumPy, through the real server: dtypes, shapes
and values, NumPy's errors, edge cases (empty arrays, NaN, all-NaN slices,
non-uniform spacings)."""

import math

import numpy as np
import pytest

import gpuflow as gf
import numpy_check

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def check_all(pairs, rtol=None):
    numpy_check.check_all(pairs, rtol=rtol, atol=1e-12, rtols=RTOL)


def r(session, a):
    return session.asarray(np.asarray(a))


# ---- shapes ------------------------------------------------------------------------------


def test_stacking_functions(session):
    a_np, b_np = np.arange(3, dtype=np.int16), np.arange(3, 6, dtype=np.int8)
    m_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    a, b, m = r(session, a_np), r(session, b_np), r(session, m_np)
    s = r(session, np.array(7.0))
    check_all([
        (gf.vstack([a, b]), np.vstack([a_np, b_np])), (gf.vstack((m, a)), np.vstack((m_np, a_np))),
        (gf.row_stack([a, a]), np.vstack([a_np, a_np])),
        (gf.hstack([a, b]), np.hstack([a_np, b_np])), (gf.hstack([m, m]), np.hstack([m_np, m_np])),
        (gf.dstack([a, b]), np.dstack([a_np, b_np])), (gf.dstack([m, m]), np.dstack([m_np, m_np])),
        (gf.column_stack([a, b]), np.column_stack([a_np, b_np])),
        (gf.column_stack([m.T, a]), np.column_stack([m_np.T, a_np])),
        (gf.vstack([a, b], dtype=np.float32), np.vstack([a_np, b_np], dtype=np.float32)),
        (gf.atleast_1d(s), np.atleast_1d(np.array(7.0))), (gf.atleast_2d(a), np.atleast_2d(a_np)),
        (gf.atleast_3d(a), np.atleast_3d(a_np)), (gf.atleast_3d(m), np.atleast_3d(m_np)),
        (gf.atleast_3d(s), np.atleast_3d(np.array(7.0))), (gf.atleast_2d(m), m_np),
        (gf.concatenate([a, b], dtype=np.float64), np.concatenate([a_np, b_np], dtype=np.float64)),
        (gf.stack([a, b], axis=1, dtype=np.int32), np.stack([a_np, b_np], axis=1, dtype=np.int32)),
    ])
    x, y = gf.atleast_1d(a, s)
    assert (x.shape, y.shape) == ((3,), (1,))
    with pytest.raises(TypeError, match="Cannot cast array data"):
        gf.concatenate([m, a], dtype=np.int8)
    with pytest.raises(ValueError, match="need at least one array"):
        gf.concatenate([])


def test_broadcast_rollaxis_and_copies(session):
    x_np, y_np = np.arange(3.0).reshape(3, 1), np.arange(4, dtype=np.int8)
    x, y = r(session, x_np), r(session, y_np)
    bx, by = gf.broadcast_arrays(x, y)
    ex, ey = np.broadcast_arrays(x_np, y_np)
    b = gf.broadcast(x, y, 1.5)
    nb = np.broadcast(x_np, y_np, 1.5)
    assert (b.shape, b.ndim, b.nd, b.size, b.numiter) == (nb.shape, nb.ndim, nb.nd, nb.size,
                                                          nb.numiter)
    t_np = np.zeros((2, 3, 4, 5))
    t = r(session, t_np)
    for axis, start in ((3, 1), (2, 0), (1, 4), (-1, -3), (0, 2)):
        assert gf.rollaxis(t, axis, start).shape == np.rollaxis(t_np, axis, start).shape
    with pytest.raises(gf._inference.AxisError, match="'start' arg requires -4 <= start < 5"):
        gf.rollaxis(t, 0, 5)
    c = gf.copy(x)
    assert c.writable and c is not x
    check_all([(bx, ex), (by, ey), (c, x_np), (gf.asfortranarray(y, np.float32),
                                               np.asfortranarray(y_np, np.float32)),
               (gf.ascontiguousarray(y), y_np)])


def test_moveaxis_with_a_repeated_axis_raises_value_error(session):
    """Regression (issue 23): a repeated destination returned an array."""
    t = r(session, np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="repeated axis in `destination` argument"):
        gf.moveaxis(t, [0, 1], [0, 0])
    with pytest.raises(ValueError, match="repeated axis in `source` argument"):
        gf.moveaxis(t, [1, 1], [0, 2])
    with pytest.raises(ValueError):
        np.moveaxis(np.zeros((2, 3, 4)), [0, 1], [0, 0])
    with pytest.raises(gf._inference.AxisError):
        gf.moveaxis(t, 3, 0)
    check_all([(gf.moveaxis(t, [0, 2], [2, 0]), np.moveaxis(np.zeros((2, 3, 4)), [0, 2], [2, 0]))])


def test_splitting_tiling_rolling(session):
    a_np = np.arange(24, dtype=np.int32).reshape(4, 6)
    a = r(session, a_np)
    pairs = []
    for ours, theirs in zip(gf.split(a, 3, axis=1), np.split(a_np, 3, axis=1)):
        pairs.append((ours, theirs))
    for ours, theirs in zip(gf.array_split(a, 3), np.array_split(a_np, 3)):
        pairs.append((ours, theirs))
    for ours, theirs in zip(gf.split(a, [1, 4], axis=1), np.split(a_np, [1, 4], axis=1)):
        pairs.append((ours, theirs))
    for fn in ("hsplit", "vsplit"):
        for ours, theirs in zip(getattr(gf, fn)(a, 2), getattr(np, fn)(a_np, 2)):
            pairs.append((ours, theirs))
    pairs += [
        (gf.tile(a, 2), np.tile(a_np, 2)), (gf.tile(a, (2, 1, 3)), np.tile(a_np, (2, 1, 3))),
        (gf.tile(a[0], (3, 1)), np.tile(a_np[0], (3, 1))),
        (gf.repeat(a, 2), np.repeat(a_np, 2)), (gf.repeat(a, 3, axis=0), np.repeat(a_np, 3, 0)),
        (gf.repeat(a, [2, 2, 2, 2, 2, 2], axis=1), np.repeat(a_np, 2, axis=1)),
        (gf.roll(a, 2), np.roll(a_np, 2)), (gf.roll(a, -1, axis=1), np.roll(a_np, -1, axis=1)),
        (gf.roll(a, (1, 2), axis=(0, 1)), np.roll(a_np, (1, 2), axis=(0, 1))),
        (gf.roll(a, 6, axis=1), np.roll(a_np, 6, axis=1)),
    ]
    check_all(pairs)
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        gf.split(a, 4, axis=1)
    check_all([(gf.repeat(a, [1, 2, 3, 4], axis=0), np.repeat(a_np, [1, 2, 3, 4], axis=0))])


def test_triangles_and_diagonals(session):
    m_np = np.arange(20, dtype=np.float32).reshape(4, 5)
    v_np = np.array([1, 2, 3], np.int16)
    b_np = np.arange(2 * 3 * 3).reshape(2, 3, 3)
    m, v, b = r(session, m_np), r(session, v_np), r(session, b_np)
    check_all([
        (gf.tril(m), np.tril(m_np)), (gf.tril(m, -1), np.tril(m_np, -1)),
        (gf.triu(m, 2), np.triu(m_np, 2)), (gf.triu(b), np.triu(b_np)), (gf.tril(v), np.tril(v_np)),
        (gf.tri(3, 4, 1, dtype=np.int8, session=session), np.tri(3, 4, 1, dtype=np.int8)),
        (gf.diagonal(m), np.diagonal(m_np)), (gf.diagonal(m, 2), np.diagonal(m_np, 2)),
        (gf.diagonal(m, -2), np.diagonal(m_np, -2)), (gf.diagonal(m, 9), np.diagonal(m_np, 9)),
        (gf.diagonal(b, 0, 1, 2), np.diagonal(b_np, 0, 1, 2)),
        (gf.diagonal(b, 1, 2, 0), np.diagonal(b_np, 1, 2, 0)),
        (gf.diag(v), np.diag(v_np)), (gf.diag(v, 2), np.diag(v_np, 2)),
        (gf.diag(v, -1), np.diag(v_np, -1)), (gf.diag(m, 1), np.diag(m_np, 1)),
        (gf.trace(m), np.trace(m_np)), (gf.trace(b, 1, 1, 2), np.trace(b_np, 1, 1, 2)),
    ])


# ---- ranges ------------------------------------------------------------------------------


def test_linspace_matches_numpy_to_the_bit(session):
    cases = [
        ((0, 1, 7), {}), ((-2.5, 10, 50), {}), ((0, 1, 5), {"endpoint": False}),
        ((1, 1, 4), {}), ((0, 10, 1), {}), ((0, 10, 0), {}), ((3, -3, 9), {}),
        ((0, 1, 6), {"dtype": np.float32}), ((0, 100, 7), {"dtype": np.int16}),
        ((np.float32(0.1), np.float32(0.7), 11), {}), ((0, 1e-310, 3), {}),
        ((0, 5, 1001), {}), ((np.int8(1), 3, 4), {}),
    ]
    pairs = []
    for args, kw in cases:
        pairs.append((gf.linspace(*args, session=session, **kw), np.linspace(*args, **kw)))
    got = gf.evaluate(*(p for p, _ in pairs))
    for (remote, expected), value in zip(pairs, got):
        assert remote.dtype == expected.dtype and value.shape == expected.shape, remote
        np.testing.assert_array_equal(value, expected)  # exactly NumPy's numbers
    y, step = gf.linspace(2.0, 3.0, 5, retstep=True, session=session)
    assert step == np.linspace(2.0, 3.0, 5, retstep=True)[1]
    with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative."):
        gf.linspace(0, 1, -1, session=session)


def test_linspace_logspace_with_arrays_and_axes(session):
    lo_np, hi_np = np.array([0.0, 1.0, -2.0]), np.array([1.0, 11.0, 2.0])
    lo, hi = r(session, lo_np), r(session, hi_np)
    f_np = np.array([1.0, 2.0], np.float32)
    f = r(session, f_np)
    check_all([
        (gf.linspace(lo, hi, 5), np.linspace(lo_np, hi_np, 5)),
        (gf.linspace(lo, hi, 4, axis=1), np.linspace(lo_np, hi_np, 4, axis=1)),
        (gf.linspace(lo, 3, 6, endpoint=False), np.linspace(lo_np, 3, 6, endpoint=False)),
        # NumPy 2 keeps float32 here (the 0 is a weak Python int); NumPy 1.x
        # made it float64, so the reference is spelled so that both agree.
        (gf.linspace(0, f, 3), np.linspace(np.float32(0), f_np, 3)),
        (gf.logspace(0, 3, 4, session=session), np.logspace(0, 3, 4)),
        (gf.logspace(1, 2, 5, base=2.0, session=session), np.logspace(1, 2, 5, base=2.0)),
        (gf.logspace(0, 1, 3, dtype=np.float32, session=session),
         np.logspace(0, 1, 3, dtype=np.float32)),
        (gf.logspace(lo, hi, 3, axis=-1), np.logspace(lo_np, hi_np, 3, axis=-1)),
        # NumPy 2 keeps float32 here too: the 0 is weak, and so is a Python
        # base (a numpy float64 base is not). NumPy 1.x under this file's
        # weak-promotion emulation gives float64 (its linspace makes the 0 a
        # 0-d array, which the emulation takes as strong), so the references
        # are spelled so that both agree.
        (gf.logspace(0, f, 3), np.logspace(np.float32(0), f_np, 3)),
        (gf.logspace(np.float32(0), np.float32(1), 3, session=session),
         np.logspace(np.float32(0), np.float32(1), 3)),
        (gf.logspace(0, f, 3, base=2), np.logspace(np.float32(0), f_np, 3, base=2)),
        (gf.logspace(0, f, 3, base=np.float64(2.0)),
         np.logspace(np.float32(0), f_np, 3, base=np.float64(2.0))),
    ])
    # An array base is broadcast with start and stop, which NumPy 2 makes
    # arrays of as many dimensions (a Python scalar among them strong, so
    # float64 here); the samples' axis goes into the base too. NumPy 1.x
    # could not broadcast these, so the references are spelled out.
    s_np = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    b_np = np.array([2.0, 3.0, 10.0], np.float32)
    s, b = r(session, s_np), r(session, b_np)
    check_all([
        (gf.logspace(0, 1, 3, base=f), np.power(f_np, np.linspace(0.0, 1.0, 3)[:, None])),
        (gf.logspace(0, f, 3, base=f, axis=-1),
         np.power(f_np[:, None], np.linspace(np.zeros(1), f_np.astype(np.float64), 3, axis=-1))),
        (gf.logspace(0, s, 4, base=b, axis=1),
         np.power(b_np, np.linspace(np.zeros((1, 1)), s_np, 4, axis=1))),
    ])


def test_eye_identity_meshgrid_and_grids(session):
    x_np, y_np, z_np = np.arange(3), np.linspace(0, 1, 4), np.array([5, 6], np.int8)
    x, y, z = r(session, x_np), r(session, y_np), r(session, z_np)
    pairs = [
        (gf.eye(3, session=session), np.eye(3)), (gf.eye(2, 4, k=1, session=session),
                                                  np.eye(2, 4, k=1)),
        (gf.eye(4, 3, k=-2, dtype=np.int8, session=session), np.eye(4, 3, k=-2, dtype=np.int8)),
        (gf.eye(0, session=session), np.eye(0)), (gf.eye(3, k=5, dtype=bool, session=session),
                                                  np.eye(3, k=5, dtype=bool)),
        (gf.identity(3, np.float32, session=session), np.identity(3, np.float32)),
    ]
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            ours = gf.meshgrid(x, y, z, indexing=indexing, sparse=sparse)
            theirs = np.meshgrid(x_np, y_np, z_np, indexing=indexing, sparse=sparse)
            pairs += list(zip(ours, theirs))
    pairs += list(zip(gf.meshgrid(x, y), np.meshgrid(x_np, y_np)))
    pairs += [(gf.mgrid[0:5], np.mgrid[0:5]), (gf.mgrid[1:2:5j], np.mgrid[1:2:5j]),
              (gf.mgrid[0:3, 0:2], np.mgrid[0:3, 0:2]),
              (gf.mgrid[0:1:3j, -1:1:0.5], np.mgrid[0:1:3j, -1:1:0.5]),
              (gf.mgrid[-1:1:5j], np.mgrid[-1:1:5j])]
    pairs += list(zip(gf.ogrid[0:3, 0:4:2], np.ogrid[0:3, 0:4:2]))
    pairs += list(zip(gf.ogrid[0:1:4j, 2:4], np.ogrid[0:1:4j, 2:4]))
    check_all(pairs)
    assert isinstance(gf.meshgrid(x, y), tuple) and gf.meshgrid() == ()
    with pytest.raises(ValueError, match="Valid values for `indexing` are 'xy' and 'ij'."):
        gf.meshgrid(x, indexing="yx")
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        gf.eye(-1, session=session)


# ---- NaN functions, statistics ---------------------------------------------------------------


NAN_FUNCS = ["nanmin", "nanmax", "nansum", "nanprod", "nanmean", "nanvar", "nanstd"]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_functions_match_numpy(session, dtype):
    x_np = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, np.nan, np.nan],
                     [0.5, 4.0, np.nan, 8.0]], dtype=dtype)
    x = r(session, x_np)
    pairs = []
    for name in NAN_FUNCS:
        for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": 1, "keepdims": True}):
            pairs.append((getattr(gf, name)(x, **kw), getattr(np, name)(x_np, **kw)))
    pairs += [(gf.nanvar(x, axis=1, ddof=1), np.nanvar(x_np, axis=1, ddof=1)),
              (gf.nanstd(x, axis=0, ddof=2), np.nanstd(x_np, axis=0, ddof=2)),
              (gf.nanmean(x, axis=0, dtype=np.float64), np.nanmean(x_np, axis=0, dtype=np.float64)),
              (gf.nancumsum(x, axis=1), np.nancumsum(x_np, axis=1)),
              (gf.nancumprod(x), np.nancumprod(x_np)),
              (gf.nan_to_num(x), np.nan_to_num(x_np)),
              (gf.nan_to_num(x, nan=-1.0), np.nan_to_num(x_np, nan=-1.0))]
    check_all(pairs, rtol=5e-3 if dtype == "float16" else None)


def test_nan_functions_of_integers_are_the_plain_ones(session):
    i_np = np.arange(12, dtype=np.int16).reshape(3, 4)
    i = r(session, i_np)
    check_all([(getattr(gf, n)(i, axis=1), getattr(np, n)(i_np, axis=1)) for n in NAN_FUNCS]
              + [(gf.nancumsum(i), np.nancumsum(i_np)), (gf.nan_to_num(i), i_np)])


def test_nan_to_num_replaces_infinities(session):
    for dtype in ("float16", "float32", "float64"):
        x_np = np.array([np.inf, -np.inf, np.nan, 1.5], dtype)
        x = r(session, x_np)
        check_all([(gf.nan_to_num(x), np.nan_to_num(x_np)),
                   (gf.nan_to_num(x, posinf=9.0, neginf=-9.0, nan=0.5),
                    np.nan_to_num(x_np, posinf=9.0, neginf=-9.0, nan=0.5))])


def test_ptp_average_count_nonzero(session):
    x_np = np.array([[1, 7, 3], [4, -2, 6]], np.int8)
    f_np = np.array([[0.5, 1.5, 2.0], [4.0, -1.0, 3.0]], np.float32)
    w_np = np.array([1.0, 2.0, 3.0])
    x, f, w = r(session, x_np), r(session, f_np), r(session, w_np)
    avg, scale = gf.average(f, axis=1, weights=w, returned=True)
    e_avg, e_scale = np.average(f_np, axis=1, weights=w_np, returned=True)
    n_avg, n_scale = gf.average(x, axis=0, returned=True)
    en_avg, en_scale = np.average(x_np, axis=0, returned=True)
    check_all([
        (gf.ptp(x), np.ptp(x_np)), (gf.ptp(f, axis=1), np.ptp(f_np, axis=1)),
        (gf.ptp(x, axis=0, keepdims=True), np.ptp(x_np, axis=0, keepdims=True)),
        (gf.average(f), np.average(f_np)), (gf.average(x, axis=1), np.average(x_np, axis=1)),
        (gf.average(f, weights=f_np * 0 + 2), np.average(f_np, weights=f_np * 0 + 2)),
        (gf.average(x, axis=1, weights=w), np.average(x_np, axis=1, weights=w_np)),
        (gf.average(x, axis=1, weights=[1, 2, 3], keepdims=True),
         np.average(x_np, axis=1, weights=[1, 2, 3], keepdims=True)),
        (avg, e_avg), (scale, e_scale), (n_avg, en_avg), (n_scale, en_scale),
        (gf.count_nonzero(x > 2), np.array(np.count_nonzero(x_np > 2))),
        (gf.count_nonzero(f, axis=0), np.count_nonzero(f_np, axis=0)),
    ])
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero, can't be normalized"):
        gf.average(f, axis=1, weights=[1.0, -1.0, 0.0])
    with pytest.raises(TypeError, match="Axis must be specified"):
        gf.average(f, weights=w)
    with pytest.raises(ValueError, match="Length of weights not compatible"):
        gf.average(f, axis=0, weights=w)
    with pytest.raises(TypeError):
        gf.ptp(r(session, np.array([True, False])))


def test_isclose_allclose_array_equal(session):
    a_np = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 100.0, 0.0])
    b_np = np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, 0.0, 100.002, -1e-300])
    a, b = r(session, a_np), r(session, b_np)
    i_np = np.array([1, 2, 300], np.int16)
    i = r(session, i_np)
    check_all([
        (gf.isclose(a, b), np.isclose(a_np, b_np)),
        (gf.isclose(a, b, equal_nan=True), np.isclose(a_np, b_np, equal_nan=True)),
        (gf.isclose(a, b, rtol=0, atol=1e-3), np.isclose(a_np, b_np, rtol=0, atol=1e-3)),
        (gf.isclose(i, i_np + 1, atol=1), np.isclose(i_np, i_np + 1, atol=1)),
        (gf.isclose(a, 1), np.isclose(a_np, 1)), (gf.isclose(2.0, a), np.isclose(2.0, a_np)),
        (gf.isclose(r(session, np.array([1, 2], np.int8)), r(session, np.array([1, 3], np.int8))),
         np.isclose(np.array([1, 2], np.int8), np.array([1, 3], np.int8))),
        (gf.array_equal(a, a), np.array(np.array_equal(a_np, a_np))),
        (gf.array_equal(a, a, equal_nan=True), np.array(np.array_equal(a_np, a_np,
                                                                       equal_nan=True))),
        (gf.array_equal(i, i_np), np.array(True)),
        (gf.array_equal(i, i_np[:2]), np.array(False)),
        (gf.array_equiv(i, i_np[None]), np.array(np.array_equiv(i_np, i_np[None]))),
        (gf.array_equiv(i, [1, 2]), np.array(False)),
    ])
    assert gf.allclose(a[:1], b[:1]) is True and gf.allclose(a, b) is False
    assert gf.allclose(a, b, equal_nan=True) is np.allclose(a_np, b_np, equal_nan=True)


def test_differences(session):
    x_np = np.array([1.0, 4.0, 9.0, 16.0, 25.0, 36.0])
    m_np = np.arange(12, dtype=np.int32).reshape(3, 4) ** 2
    b_np = np.array([True, False, False, True])
    x, m, b = r(session, x_np), r(session, m_np), r(session, b_np)
    check_all([
        (gf.diff(x), np.diff(x_np)), (gf.diff(x, 2), np.diff(x_np, 2)),
        (gf.diff(m, axis=0), np.diff(m_np, axis=0)), (gf.diff(m, n=3), np.diff(m_np, n=3)),
        (gf.diff(b), np.diff(b_np)), (gf.diff(x, n=0), x_np),
        (gf.diff(x, prepend=0), np.diff(x_np, prepend=0)),
        (gf.diff(m, append=[[1], [2], [3]]), np.diff(m_np, append=[[1], [2], [3]])),
        (gf.ediff1d(m), np.ediff1d(m_np)),
        (gf.ediff1d(x, to_begin=-1, to_end=[7, 8]), np.ediff1d(x_np, to_begin=-1, to_end=[7, 8])),
    ])
    with pytest.raises(ValueError, match="order must be non-negative"):
        gf.diff(x, -1)
    with pytest.raises(ValueError, match="diff requires input that is at least one dimensional"):
        gf.diff(r(session, np.array(1.0)))
    with pytest.raises(TypeError, match="dtype of `to_begin` must be compatible"):
        gf.ediff1d(m, to_begin=0.5)


def test_gradient(session):
    f_np = np.array([1.0, 2.0, 4.0, 7.0, 11.0, 16.0])
    g_np = np.arange(20, dtype=np.float32).reshape(4, 5) ** 2
    i_np = np.array([1, 4, 9, 16, 25], np.int16)
    coords = np.array([0.0, 1.0, 1.5, 3.5, 4.0, 6.0])
    f, g, i = r(session, f_np), r(session, g_np), r(session, i_np)
    pairs = [
        (gf.gradient(f), np.gradient(f_np)), (gf.gradient(f, 2.0), np.gradient(f_np, 2.0)),
        (gf.gradient(f, coords), np.gradient(f_np, coords)),
        (gf.gradient(f, edge_order=2), np.gradient(f_np, edge_order=2)),
        (gf.gradient(f, coords, edge_order=2), np.gradient(f_np, coords, edge_order=2)),
        (gf.gradient(i), np.gradient(i_np)), (gf.gradient(g, axis=1), np.gradient(g_np, axis=1)),
        (gf.gradient(g, np.float64(0.5), axis=0), np.gradient(g_np, np.float64(0.5), axis=0)),
        (gf.gradient(f, [0, 1, 2, 3, 4, 5]), np.gradient(f_np, [0, 1, 2, 3, 4, 5])),
    ]
    pairs += list(zip(gf.gradient(g, 1.0, 2.0), np.gradient(g_np, 1.0, 2.0)))
    check_all(pairs)
    with pytest.raises(ValueError, match="Shape of array too small"):
        gf.gradient(f[:2], edge_order=2)
    with pytest.raises(ValueError, match="distances must match the length"):
        gf.gradient(f, [1.0, 2.0])
    with pytest.raises(TypeError, match="invalid number of arguments"):
        gf.gradient(f, 1.0, 2.0)


def test_gradient_of_complex_and_bool_arrays_keeps_numpy_dtypes(session):
    # NumPy keeps an inexact dtype (complex too: the imaginary parts are
    # differentiated); only integers go to float64; bool stays bool, so its
    # subtraction raises NumPy's TypeError.
    z_np = np.array([1 + 1j, 2 + 0j, 4j, -3 + 2.5j, 0.5 - 1j], np.complex64)
    w_np = (np.arange(12, dtype=np.float64).reshape(3, 4) ** 2) * (1 - 2j)
    coords = np.array([0.0, 1.0, 3.0, 3.5, 6.0])
    z, w = r(session, z_np), r(session, w_np)
    pairs = [(gf.gradient(z), np.gradient(z_np)),
             (gf.gradient(z, 0.5, edge_order=2), np.gradient(z_np, 0.5, edge_order=2)),
             (gf.gradient(z, coords), np.gradient(z_np, coords)),
             (gf.gradient(z, coords, edge_order=2), np.gradient(z_np, coords, edge_order=2))]
    pairs += list(zip(gf.gradient(w), np.gradient(w_np)))
    check_all(pairs, rtol=1e-6)  # dtypes, shapes and values
    b_np = np.array([True, False, True, True])
    with pytest.raises(TypeError) as want:
        np.gradient(b_np)
    with pytest.raises(TypeError) as got:
        gf.gradient(r(session, b_np))
    assert str(got.value) == str(want.value)


def test_unwrap(session):
    phase_np = np.array([0.0, 0.78, 5.49, 6.28, 12.0, -3.0, 3.14159, -3.14159])
    m_np = np.array([[0.0, 3.5, 7.0], [1.0, -2.5, 8.0]])
    i_np = np.array([0, 3, 7, 11, 2], np.int64)
    p, m, i = r(session, phase_np), r(session, m_np), r(session, i_np)
    check_all([
        (gf.unwrap(p), np.unwrap(phase_np)), (gf.unwrap(m, axis=0), np.unwrap(m_np, axis=0)),
        (gf.unwrap(m, discont=4.0), np.unwrap(m_np, discont=4.0)),
        (gf.unwrap(p, period=360.0), np.unwrap(phase_np, period=360.0)),
        (gf.unwrap(i, period=8), np.unwrap(i_np, period=8)),
        (gf.unwrap(r(session, phase_np.astype(np.float32))),
         np.unwrap(phase_np.astype(np.float32))),
    ])


@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (5, 5), (1, 4), (10, 1), (6, 4)])
def test_convolve_and_correlate(session, n, m):
    rng = np.random.default_rng(n * 10 + m)
    a_np, v_np = rng.standard_normal(n), rng.standard_normal(m)
    ai_np, vi_np = rng.integers(-5, 5, n).astype(np.int16), rng.integers(-5, 5, m).astype(np.int8)
    a, v, ai, vi = (r(session, t) for t in (a_np, v_np, ai_np, vi_np))
    pairs = []
    for mode in ("full", "same", "valid"):
        pairs += [(gf.convolve(a, v, mode), np.convolve(a_np, v_np, mode)),
                  (gf.correlate(a, v, mode), np.correlate(a_np, v_np, mode)),
                  (gf.convolve(ai, vi, mode), np.convolve(ai_np, vi_np, mode))]
    check_all(pairs)
    with pytest.raises(ValueError, match="v cannot be empty"):
        gf.convolve(a, r(session, np.zeros(0)))


def test_interp(session):
    xp_np = np.array([0.0, 1.0, 1.5, 3.0, 3.0, 5.0])
    fp_np = np.array([10.0, -2.0, 4.0, 0.0, 7.0, 1.0])
    x_np = np.array([-1.0, 0.0, 0.25, 1.0, 1.2, 2.9, 3.0, 4.0, 5.0, 6.0, np.nan])
    x, xp, fp = r(session, x_np), r(session, xp_np), r(session, fp_np)
    check_all([
        (gf.interp(x, xp, fp), np.interp(x_np, xp_np, fp_np)),
        (gf.interp(x, xp_np, fp_np, left=-9.0, right=9.0),
         np.interp(x_np, xp_np, fp_np, left=-9.0, right=9.0)),
        (gf.interp(x, [1.0], [3.0]), np.interp(x_np, [1.0], [3.0])),
        (gf.interp(x, xp, fp, period=4.0), np.interp(x_np, xp_np, fp_np, period=4.0)),
        (gf.interp(r(session, np.array([1, 2], np.int8)), [0, 4], [0, 8]),
         np.interp(np.array([1, 2], np.int8), [0, 4], [0, 8])),
    ])
    with pytest.raises(ValueError, match="fp and xp are not of the same length"):
        gf.interp(x, xp, fp[:3])


def test_real_parts_of_real_arrays(session):
    x_np = np.array([-1.5, 0.0, -0.0, 2.0])
    i_np = np.array([-3, 0, 4], np.int8)
    x, i = r(session, x_np), r(session, i_np)
    check_all([
        (gf.real(x), np.real(x_np)), (gf.imag(x), np.imag(x_np)), (gf.imag(i), np.imag(i_np)),
        (gf.conj(i), np.conj(i_np)), (gf.conjugate(x), np.conjugate(x_np)),
        (gf.real_if_close(x), np.real_if_close(x_np)), (gf.angle(x), np.angle(x_np)),
        (gf.angle(i, deg=True), np.angle(i_np, deg=True)),
        (gf.iscomplex(i), np.iscomplex(i_np)), (gf.isreal(x), np.isreal(x_np)),
    ])
    assert gf.iscomplexobj(x) is False and gf.isrealobj(x) is True


def test_round_with_decimals(session):
    x_np = np.array([1.2345, -2.5, 2.5, 3.14159, 1234.5678, -0.5])
    i_np = np.array([15, 25, -35, 149, 151], np.int32)
    x, i = r(session, x_np), r(session, i_np)
    check_all([(gf.round(x, 2), np.round(x_np, 2)), (gf.around(x, -2), np.around(x_np, -2)),
               (x.round(1), x_np.round(1)), (gf.round(i, -1), np.round(i_np, -1)),
               (gf.round(i, 2), np.round(i_np, 2)),
               (gf.round(r(session, x_np.astype(np.float32)), 3),
                np.round(x_np.astype(np.float32), 3))])


def test_result_type_and_can_cast(session):
    x = r(session, np.ones(2, np.int8))
    assert gf.result_type(x, 1.5) == np.result_type(np.ones(2, np.int8), 1.5) == np.float64
    assert gf.result_type(x, np.int16) == np.int16 and gf.result_type(x, 3) == np.int8
    assert gf.result_type(x, "bfloat16") == "bfloat16"
    assert gf.can_cast(x, np.int16) and not gf.can_cast(x, np.uint8)
    assert gf.can_cast(np.float64, np.float32, "same_kind") and not gf.can_cast(
        np.float64, np.int64, "same_kind")
    assert math.isnan(float(gf.nanmax(r(session, np.array([np.nan, np.nan])))))


def test_products(session):
    rng = np.random.default_rng(17)
    a_np, b_np = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3, 5))
    u_np, v_np = np.array([1, 2, 3], np.int8), np.array([4, -5, 6], np.int16)
    m_np, n_np = np.arange(4).reshape(2, 2), np.array([[0, 1], [1, 0]], np.int8)
    a, b, u, v, m, n = (r(session, t) for t in (a_np, b_np, u_np, v_np, m_np, n_np))
    p2_np, q2_np = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0], [7.0, 8.0]])
    p2, q2 = r(session, p2_np), r(session, q2_np)
    check_all([
        (gf.outer(u, v), np.outer(u_np, v_np)), (gf.outer(m, u), np.outer(m_np, u_np)),
        (gf.inner(u, v), np.inner(u_np, v_np)), (gf.inner(a, a[0, 0]), np.inner(a_np, a_np[0, 0])),
        (gf.inner(u, 3), np.inner(u_np, 3)), (gf.vdot(m, m), np.vdot(m_np, m_np)),
        (gf.tensordot(a, b, axes=([1, 2], [1, 0])),
         np.tensordot(a_np, b_np, axes=([1, 2], [1, 0]))),
        (gf.tensordot(u, v, axes=0), np.tensordot(u_np, v_np, axes=0)),
        (gf.tensordot(m, m, 1), np.tensordot(m_np, m_np, 1)),
        (gf.tensordot(m, m), np.tensordot(m_np, m_np)),
        (gf.kron(m, n), np.kron(m_np, n_np)), (gf.kron(u, m), np.kron(u_np, m_np)),
        (gf.kron(a[0], m), np.kron(a_np[0], m_np)),
        # 2-vectors: CuPy's (and NumPy 1's) z-component; NumPy 2.x refuses them.
        (gf.cross(u, v), np.cross(u_np, v_np)),
        (gf.cross(p2, q2), p2_np[..., 0] * q2_np[..., 1] - p2_np[..., 1] * q2_np[..., 0]),
        (gf.cross(a[:, :, :3], b[0, :, :3]), np.cross(a_np[:, :, :3], b_np[0, :, :3])),
        # A 3-vector with a 2-vector: the 2-vector's z is 0 (NumPy 2.x
        # refuses the pair, so the reference pads it).
        (gf.cross(a[:, :3, 0], q2_np, axisa=1),
         np.cross(a_np[:, :3, 0], np.concatenate([q2_np, np.zeros(q2_np.shape[:-1] + (1,))],
                                                 axis=-1), axisa=1)),
    ])
    with pytest.raises(ValueError, match="shape-mismatch for sum"):
        gf.tensordot(a, b, axes=([0], [0]))
    with pytest.raises(ValueError, match="incompatible dimensions for cross product"):
        gf.cross(m_np, np.ones((2, 4)))


# numpy.trapz became numpy.trapezoid in NumPy 2.0 (and trapz went in 2.4).
_np_trapezoid = getattr(np, "trapezoid", None) or getattr(np, "trapz")


def test_flips_pads_and_friends(session):
    m_np = np.arange(12, dtype=np.int16).reshape(3, 4)
    v_np = np.array([1.0, 2.0, 3.0, 4.0])
    m, v = r(session, m_np), r(session, v_np)
    pairs = [
        (gf.fliplr(m), np.fliplr(m_np)), (gf.flipud(m), np.flipud(m_np)),
        (gf.rot90(m), np.rot90(m_np)), (gf.rot90(m, 2), np.rot90(m_np, 2)),
        (gf.rot90(m, -1), np.rot90(m_np, -1)), (gf.rot90(m, 4), np.rot90(m_np, 4)),
        (gf.rot90(m.reshape(3, 2, 2), 1, (2, 0)), np.rot90(m_np.reshape(3, 2, 2), 1, (2, 0))),
        (gf.pad(m, 1), np.pad(m_np, 1)), (gf.pad(m, ((1, 0), (2, 3)), constant_values=7),
                                          np.pad(m_np, ((1, 0), (2, 3)), constant_values=7)),
        (gf.pad(v, (2, 1), constant_values=(-1, 9)), np.pad(v_np, (2, 1), constant_values=(-1, 9))),
        (gf.pad(m, 2, mode="edge"), np.pad(m_np, 2, mode="edge")),
        (gf.pad(m, ((3, 1), (4, 0)), mode="wrap"), np.pad(m_np, ((3, 1), (4, 0)), mode="wrap")),
        (gf.pad(v, 3, mode="reflect"), np.pad(v_np, 3, mode="reflect")),
        (gf.pad(m, ((2, 1), (1, 3)), mode="symmetric"),
         np.pad(m_np, ((2, 1), (1, 3)), mode="symmetric")),
        (gf.append(m, [1, 2]), np.append(m_np, [1, 2])),
        (gf.append(m, m_np[:1], axis=0), np.append(m_np, m_np[:1], axis=0)),
        (gf.resize(m, (5, 3)), np.resize(m_np, (5, 3))), (gf.resize(v, 2), np.resize(v_np, 2)),
        (gf.indices((2, 3), session=session), np.indices((2, 3))),
        (gf.trapezoid(v), _np_trapezoid(v_np)),
        (gf.trapz(m, axis=0), _np_trapezoid(m_np, axis=0)),
        (gf.trapezoid(v, x=[0.0, 0.5, 2.0, 2.5]), _np_trapezoid(v_np, x=[0.0, 0.5, 2.0, 2.5])),
        (gf.trapezoid(v, dx=0.5), _np_trapezoid(v_np, dx=0.5)),
        (gf.sinc(v - 2), np.sinc(v_np - 2)), (gf.sinc(r(session, np.array([0, 1], np.int8))),
                                              np.sinc(np.array([0, 1], np.int8))),
        (gf.select([v > 3, v > 1], [v * 10, v], -1.0), np.select([v_np > 3, v_np > 1],
                                                                 [v_np * 10, v_np], -1.0)),
        # NumPy 2 keeps a Python int choice or default weak (m's int16);
        # NumPy 1.x's select made it a 0-d array, int64 under the emulation,
        # so the references are spelled so that both agree.
        (gf.select([m > 5], [m], 0), np.select([m_np > 5], [m_np], np.int16(0))),
        (gf.select([m > 5, m < 2], [3, m], m), np.select([m_np > 5, m_np < 2],
                                                        [np.int16(3), m_np], m_np)),
        (gf.select([m > 5], [m], True), np.select([m_np > 5], [m_np], True)),
        (gf.select([m > 5], [m], np.int32(-1)), np.select([m_np > 5], [m_np], np.int32(-1))),
        (gf.select([m > 5], [7], 0), np.select([m_np > 5], [7], 0)),
        # The weak default sets the dtype only; NumPy 2's select then casts
        # it from an int64 array, so 40000 wraps in int16 (no OverflowError).
        (gf.select([m > 5], [m], 40000),
         np.where(m_np > 5, m_np, np.array(40000).astype(np.int16))),
        # pi is a weak float in NumPy 2's sinc: float32 stays float32 (NumPy
        # 1.x's where made its 1e-20 a 0-d float64 array, float64 under the
        # emulation, hence the reference's cast).
        (gf.sinc(m.astype(np.float32) / 8 - 0.5),
         np.sinc(m_np.astype(np.float32) / 8 - 0.5).astype(np.float32)),
        (gf.isin(m, [1, 5, 11]), np.isin(m_np, [1, 5, 11])),
        (gf.isin(v, r(session, np.array([2.0, 4.0])), invert=True),
         np.isin(v_np, [2.0, 4.0], invert=True)),
        (gf.positive(m), np.positive(m_np)),
    ]
    pairs += list(zip(gf.indices((2, 3), sparse=True, session=session),
                      np.indices((2, 3), sparse=True)))
    check_all(pairs)
    p = m.copy()
    gf.putmask(p, p > 6, -3)
    q = v.copy()
    gf.putmask(q, q < 3, v * 100)
    ep, eq = m_np.copy(), v_np.copy()
    np.putmask(ep, ep > 6, -3)
    np.putmask(eq, eq < 3, v_np * 100)
    check_all([(p, ep), (q, eq)])
    with pytest.raises(ValueError, match="Input must be >= 2-d."):
        gf.fliplr(v)
    with pytest.raises(NotImplementedError, match="gpuflow pads with"):
        gf.pad(v, 2, mode="mean")
    with pytest.raises(TypeError, match="invalid entry 0 in condlist"):
        gf.select([m], [m])
    with pytest.raises(TypeError, match="ufunc 'positive' did not contain a loop"):
        gf.positive(m > 1)


# (array, pad_width, keywords): NumPy's argument rules, each value or error.
_PAD_CASES = [
    # pad_width not of a signed integer type: TypeError ([] is float64)
    ((3, 4), [], {}), ((3, 4), (), {}), ((3, 4), [[]], {}), ((3, 4), np.zeros((0, 2)), {}),
    ((3, 4), 1.5, {}), ((3, 4), [1.0, 2.0], {}), ((3, 4), True, {}), ((3, 4), np.uint8(1), {}),
    # the shortcuts and broadcasts of _as_pairs, and its ValueErrors
    ((3, 4), [(1,)], {}), ((3, 4), [[1], [2]], {}), ((3, 4), [[1, 2]], {}),
    ((3, 4), [[[1, 2]]], {}), ((3, 4), np.array([[1], [2]], np.int8), {}),
    ((3, 4), ((1, 2), (3, 0)), {}), ((3, 4), ((1, 2), (3, 4), (5, 6)), {}),
    ((3, 4), -1, {}), ((3, 4), ((1, 2), (3, -1)), {}), ((3, 4), np.zeros((0, 2), int), {}),
    ((3, 4), 1, {"constant_values": [[1], [2]]}),
    ((3, 4), 1, {"constant_values": ((1, 2), (3, 4))}),
    ((3, 4), 1, {"constant_values": ((1, 2), (3, 4), (5, 6))}),
    # modes and their keywords
    ((3, 4), 1, {"mode": "foo"}), ((3, 4), 1, {"mode": "edge", "constant_values": 1}),
    ((3, 4), 1, {"mode": "constant", "reflect_type": "even"}),
    ((3, 4), 2, {"mode": "reflect", "reflect_type": "even"}),
    # length-1 axes reflect as their edge; empty arrays
    ((1, 3), 2, {"mode": "reflect"}), ((1, 3), ((3, 2), (1, 1)), {"mode": "symmetric"}),
    ((0, 3), ((0, 0), (5, 5)), {"mode": "wrap"}), ((0, 3), 1, {"mode": "edge"}),
    ((0, 3), 2, {}),
]


@pytest.mark.parametrize("shape,pad_width,kw", _PAD_CASES)
def test_pad_arguments_as_numpy(session, shape, pad_width, kw):
    a_np = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    try:
        expected = np.pad(a_np, pad_width, **kw)
    except Exception as e:  # noqa: BLE001 - gpuflow must raise the same class
        with pytest.raises(type(e)):
            gf.pad(r(session, a_np), pad_width, **kw)
        return
    check_all([(gf.pad(r(session, a_np), pad_width, **kw), expected)])


def test_pad_modes_numpy_has_and_gpuflow_lacks(session):
    # 'empty' leaves NumPy's padding uninitialised; gpuflow's is zeros
    v_np = np.arange(1.0, 6.0)
    v = r(session, v_np)
    check_all([(gf.pad(v, (1, 2), mode="empty"), np.pad(v_np, (1, 2)))])
    with pytest.raises(NotImplementedError, match="gpuflow pads with"):
        gf.pad(v, 2, mode="mean", stat_length=2)
    with pytest.raises(NotImplementedError, match="reflect_type"):
        gf.pad(v, 2, mode="reflect", reflect_type="odd")
    with pytest.raises(NotImplementedError, match="padding function"):
        gf.pad(v, 2, mode=lambda vector, width, axis, kw: None)
