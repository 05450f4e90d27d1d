"""cov, corrcoef, vander, the poly* functions and poly1d, choose, piecewise,
apply_along_axis, apply_over_axes, nanargmax and nanargmin (gpuflow._misc,
gpuflow._poly) against NumPy 2, through the real server: dtypes, shapes and
values, odd sizes, empty and 0-d inputs, NaN, NumPy's errors, and the
documented differences (all-NaN slices, callables in piecewise)."""

import warnings

import numpy as np
import pytest

import gpuflow as gf
import numpy_check

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

# NumPy's own warnings for degenerate inputs (no degrees of freedom, complex
# data cast to a real dtype); gpuflow's are asserted where they matter.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore:Casting complex values to real discards")

# numpy.AxisError is gone in NumPy 2 (numpy.exceptions.AxisError is NumPy >= 1.25's).
AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError
RNG = np.random.default_rng(2323)
RTOL = dict(numpy_check.RTOL, float16=4e-3)


def check_all(pairs):
    """Dtypes and shapes exactly; inexact values within the dtype's rtol of
    the largest magnitude."""
    values = gf.evaluate(*(got for got, _ in pairs))
    for (got, want), value in zip(pairs, values):
        want = np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want.dtype, want.shape)
        assert value.dtype == want.dtype and value.shape == want.shape, (got, value)
        if want.dtype.kind in "fc":
            rtol = RTOL[want.dtype.name]
            finite = np.abs(want[np.isfinite(want)])
            scale = max(1.0, float(finite.max(initial=0)))
            np.testing.assert_allclose(value, want, rtol=rtol, atol=rtol * scale, err_msg=repr(got))
        else:
            np.testing.assert_array_equal(value, want, err_msg=repr(got))


def _data(shape, dtype):
    kind = np.dtype(dtype).kind
    if kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if kind in "iu":
        return RNG.integers(0 if kind == "u" else -5, 6, shape).astype(dtype)
    if kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


# ---- cov and corrcoef ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8", "bool", "float32", "float64",
                                   "complex64"])
def test_cov_and_corrcoef_match_numpy(session, dtype):
    pairs = []
    for shape in [(3, 7), (1, 5), (4, 1 + 1), (5,), (2, 33)]:
        h = _data(shape, dtype)
        x = session.asarray(h)
        pairs += [(gf.cov(x), np.cov(h)), (gf.cov(x, bias=True), np.cov(h, bias=True)),
                  (gf.cov(x, ddof=0), np.cov(h, ddof=0)),
                  (gf.corrcoef(x), np.corrcoef(h))]
        if h.ndim == 2:
            # NumPy >= 2.2 transposes a single row too (1.x returned a scalar).
            pairs += [(gf.cov(x, rowvar=False), np.cov(h.T)),
                      (gf.corrcoef(x, rowvar=False), np.corrcoef(h.T))]
    h, g = _data((2, 9), dtype), _data((9,), dtype)
    x, y = session.asarray(h), session.asarray(g)
    pairs += [(gf.cov(x, y), np.cov(h, g)), (gf.corrcoef(x, y), np.corrcoef(h, g)),
              (gf.cov(x.T, y, rowvar=False), np.cov(h.T, g, rowvar=False)),
              (gf.cov(x, dtype=np.float32), np.cov(h, dtype=np.float32))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_all(pairs)


def test_cov_weights_match_numpy(session):
    h = _data((3, 8), "float64")
    x = session.asarray(h)
    f = np.array([1, 2, 0, 3, 1, 1, 4, 2])
    a = RNG.random(8)
    check_all([
        (gf.cov(x, fweights=f), np.cov(h, fweights=f)),
        (gf.cov(x, aweights=a), np.cov(h, aweights=a)),
        (gf.cov(x, fweights=session.asarray(f), aweights=session.asarray(a)),
         np.cov(h, fweights=f, aweights=a)),
        (gf.cov(x, fweights=f, aweights=a, ddof=0), np.cov(h, fweights=f, aweights=a, ddof=0)),
        (gf.cov(x, aweights=a, bias=True), np.cov(h, aweights=a, bias=True)),
        (gf.cov(x.astype(np.float32), aweights=a, dtype=np.float32),
         np.cov(h.astype(np.float32), aweights=a, dtype=np.float32)),
    ])


def test_cov_edge_cases_and_errors(session):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_all([
            (gf.cov(session.asarray(np.ones((0, 3)))), np.cov(np.ones((0, 3)))),
            (gf.cov(session.asarray(np.ones((2, 0)))), np.cov(np.ones((2, 0)))),
            (gf.corrcoef(session.asarray(np.array([1.0, 2.0, 4.0]))),
             np.corrcoef([1.0, 2.0, 4.0])),
            (gf.corrcoef(session.asarray(np.array([1.0, 1.0, 1.0])),
                         session.asarray(np.array([1.0, 2.0, 3.0]))),
             np.corrcoef([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])),
        ])
    x = session.asarray(np.array([1.0, 2.0, 3.0]))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
        got = gf.cov(x, ddof=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_all([(got, np.cov([1.0, 2.0, 3.0], ddof=3))])
    with pytest.warns(DeprecationWarning, match="bias and ddof have no effect"):
        gf.corrcoef(x, bias=True)
    for kwargs, error, message in [
            ({"fweights": [1.5, 1, 1]}, TypeError, "fweights must be integer"),
            ({"fweights": [-1, 1, 1]}, ValueError, "fweights cannot be negative"),
            ({"fweights": [[1, 1, 1]]}, RuntimeError, "cannot handle multidimensional fweights"),
            ({"fweights": [1, 1]}, RuntimeError, "incompatible numbers of samples and fweights"),
            ({"aweights": [-1, 1, 1]}, ValueError, "aweights cannot be negative"),
            ({"aweights": [1, 1]}, RuntimeError, "incompatible numbers of samples and aweights"),
            ({"ddof": 1.5}, ValueError, "ddof must be integer")]:
        with pytest.raises(error, match=message):
            np.cov([1.0, 2.0, 3.0], **kwargs)
        with pytest.raises(error, match=message):
            gf.cov(x, **kwargs)
    with pytest.raises(ValueError, match="m has more than 2 dimensions"):
        gf.cov(session.asarray(np.ones((2, 2, 2))))
    with pytest.raises(ValueError, match="y has more than 2 dimensions"):
        gf.cov(x, session.asarray(np.ones((2, 2, 2))))


def test_corrcoef_clips_to_one(session):
    # Perfectly correlated rows whose rounding leaves |r| a hair above 1.
    h = np.array([[0.1, 0.2, 0.3, 0.7], [0.3, 0.6, 0.9, 2.1], [-0.2, -0.4, -0.6, -1.4]])
    got = gf.corrcoef(session.asarray(h)).get()
    assert np.all(np.abs(got) <= 1.0)
    np.testing.assert_allclose(got, np.corrcoef(h), rtol=1e-12)
    c = h + 1j * h[::-1]
    got = gf.corrcoef(session.asarray(c)).get()
    assert np.all(np.abs(got.real) <= 1.0) and np.all(np.abs(got.imag) <= 1.0)
    np.testing.assert_allclose(got, np.corrcoef(c), rtol=1e-12, atol=1e-15)


# ---- vander and polynomials ---------------------------------------------------------------


POLY_DTYPES = ["int8", "uint8", "int64", "uint64", "bool", "float16", "float32", "float64",
               "complex64"]


@pytest.mark.parametrize("dtype", POLY_DTYPES)
def test_vander_matches_numpy(session, dtype):
    pairs = []
    for n in (1, 5, 0):
        h = _data((n,), dtype)
        x = session.asarray(h)
        for N in (None, 0, 1, 3, 6):
            pairs.append((gf.vander(x, N), np.vander(h, N)))
            pairs.append((gf.vander(x, N, increasing=True), np.vander(h, N, increasing=True)))
    check_all(pairs)
    with pytest.raises(ValueError, match="x must be a one-dimensional array or sequence."):
        gf.vander(session.asarray(np.ones((2, 2), dtype)))
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        gf.vander(session.asarray(np.ones(2, dtype)), -1)


@pytest.mark.parametrize("dtype", POLY_DTYPES)
def test_polyval_matches_numpy(session, dtype):
    pairs = []
    for np_ in (0, 1, 4, 9):
        p = _data((np_,), dtype)
        for xs in [(), (7,), (3, 5)]:
            h = _data(xs, "float32" if dtype == "bool" else dtype)
            x = session.asarray(h)
            pairs.append((gf.polyval(session.asarray(p), x), np.polyval(p, h)))
            pairs.append((gf.polyval(p, x), np.polyval(p, h)))
    pairs.append((gf.polyval(session.asarray(np.array([1.0, 2.0, 3.0])), 2.0),
                  np.polyval(np.array([1.0, 2.0, 3.0]), 2.0)))
    pairs.append((gf.polyval([3, 0, 1], session.asarray(np.arange(4, dtype=np.int16))),
                  np.polyval([3, 0, 1], np.arange(4, dtype=np.int16))))
    check_all(pairs)
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        gf.polyval(session.asarray(np.array(2.0)), session.asarray(np.ones(2)))


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8", "float32", "float64", "complex64"])
def test_polyadd_polysub_polyder_polyint_match_numpy(session, dtype):
    pairs = []
    for la, lb in [(3, 3), (2, 5), (5, 1), (1, 1), (0, 2)]:
        a, b = _data((la,), dtype), _data((lb,), dtype)
        x, y = session.asarray(a), session.asarray(b)
        pairs += [(gf.polyadd(x, y), np.polyadd(a, b)), (gf.polysub(x, y), np.polysub(a, b)),
                  (gf.polyadd(x, b), np.polyadd(a, b))]
    for n in (0, 1, 2, 6):
        p = _data((n,), dtype)
        x = session.asarray(p)
        for m in (0, 1, 2, 7):
            pairs.append((gf.polyder(x, m), np.polyder(p, m)))
        for m, k in [(0, None), (1, None), (2, None), (1, 3), (3, 2.5), (2, [1.0, -2.0]),
                     (3, [1, 2, 3, 4])]:
            pairs.append((gf.polyint(x, m, k), np.polyint(p, m, k)))
    pairs.append((gf.polyadd(session.asarray(np.array(3.0)), session.asarray(np.ones(2))),
                  np.polyadd(np.array(3.0), np.ones(2))))
    check_all(pairs)


def test_polynomial_errors(session):
    x = session.asarray(np.ones(3))
    with pytest.raises(ValueError, match="Order of derivative must be positive"):
        gf.polyder(x, -1)
    with pytest.raises(ValueError, match="Order of integral must be positive"):
        gf.polyint(x, -1)
    with pytest.raises(ValueError, match="k must be a scalar or a rank-1 array of length 1 or >m"):
        gf.polyint(x, 3, [1.0, 2.0])
    with pytest.raises(TypeError, match="len"):
        gf.polyder(session.asarray(np.array(3.0)))
    with pytest.raises(ValueError, match="Polynomial must be 1d only."):
        gf.polymul(session.asarray(np.ones((2, 2))), x)


@pytest.mark.parametrize("dtype", ["int8", "int64", "float32", "float64", "complex64", "bool"])
def test_polymul_trims_leading_zeros_as_numpy(session, dtype):
    pairs = []
    for a, b in [([1, 2, 3], [4, 5]), ([0, 0, 1, 2], [0, 3]), ([0, 0], [1, 2]), ([2], [3]),
                 ([1, 0, 0], [0, 1, 1, 0])]:
        ha, hb = np.array(a).astype(dtype), np.array(b).astype(dtype)
        pairs.append((gf.polymul(session.asarray(ha), session.asarray(hb)), np.polymul(ha, hb)))
        pairs.append((gf.polymul(session.asarray(ha), hb), np.polymul(ha, hb)))
    ha = _data((17,), dtype)
    hb = _data((6,), dtype)
    pairs.append((gf.polymul(session.asarray(ha), session.asarray(hb)), np.polymul(ha, hb)))
    check_all(pairs)


def test_poly1d(session):
    c = np.array([0.0, 2.0, -3.0, 1.0])
    q = np.array([1.0, 4.0])
    p = gf.poly1d(session.asarray(c))
    n = np.poly1d(c)
    assert p.order == n.order == 2 and len(p) == len(n)
    assert p.variable == "x"
    x = _data((5,), "float64")
    r = gf.poly1d(q)
    check_all([
        (p.coeffs, n.coeffs), (p.c, n.c), (p(session.asarray(x)), n(x)), (p(2.5), n(2.5)),
        ((p + r).coeffs, (n + np.poly1d(q)).coeffs),
        ((p - r).coeffs, (n - np.poly1d(q)).coeffs),
        ((r - p).coeffs, (np.poly1d(q) - n).coeffs),
        ((p * r).coeffs, (n * np.poly1d(q)).coeffs),
        ((p * 3).coeffs, (n * 3).coeffs), ((2 * p).coeffs, (2 * n).coeffs),
        ((p + 1.5).coeffs, (n + 1.5).coeffs), ((-p).coeffs, (-n).coeffs),
        (p.deriv().coeffs, n.deriv().coeffs), (p.deriv(2).coeffs, n.deriv(2).coeffs),
        (p.integ().coeffs, n.integ().coeffs), (p.integ(2, k=1.0).coeffs,
                                               n.integ(2, k=1.0).coeffs),
        (gf.poly1d([0, 0]).coeffs, np.poly1d([0, 0]).coeffs),
        ((p - p).coeffs, (n - n).coeffs),
        (gf.polyadd(p, q).coeffs, np.polyadd(n, q).coeffs),
        (gf.polyder(p).coeffs, np.polyder(n).coeffs),
    ])
    assert isinstance(gf.polyadd(p, q), gf.poly1d) and not isinstance(
        gf.polyadd(c, q), gf.poly1d)
    np.testing.assert_array_equal(np.asarray(p), np.asarray(n))


@pytest.mark.parametrize("c", [[1.0, -3.0, 2.0], [0.0, 2.0, -3.0, 1.0], [1, 0, 1], [2, 0, 0],
                               [1.0, 1j, -2.0], [5.0]])
def test_poly1d_roots_and_from_roots_are_numpys(session, c):
    # roots: numpy.roots of the coefficients (eigenvalues, in another order)
    p, n = gf.poly1d(session.asarray(np.asarray(c))), np.poly1d(c)
    got, want = p.roots.get(), n.roots
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.sort_complex(got), np.sort_complex(want), atol=1e-10)
    assert p.r.shape == want.shape
    # r=True: the coefficients of numpy.poly of the roots
    check_all([(gf.poly1d(session.asarray(np.asarray(c)), r=True).coeffs,
                np.poly1d(c, r=True).coeffs),
               (gf.poly1d(c, r=True, variable="z").coeffs, np.poly1d(c, r=True).coeffs),
               (gf.poly1d([], r=True).coeffs, np.poly1d([], r=True).coeffs)])
    assert gf.poly1d(c, r=True, variable="z").variable == "z"


# ---- choose, piecewise ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose_matches_numpy(session, mode):
    pairs = []
    choices = [_data((4, 5), "int8"), _data((5,), "float32"), _data((4, 1), "int16")]
    remote = [session.asarray(c) for c in choices]
    for idx_dtype in ("int64", "int8", "uint8", "bool"):
        top = 2 if idx_dtype == "bool" else 3
        low = 0 if mode == "raise" or idx_dtype in ("uint8", "bool") else -7
        high = top if mode == "raise" else (top + 4 if idx_dtype != "bool" else top)
        a = RNG.integers(low, high, (4, 5)).astype(idx_dtype)
        pairs.append((gf.choose(session.asarray(a), remote[:top], mode=mode),
                      np.choose(a, choices[:top], mode=mode)))
        pairs.append((gf.choose(a, remote[:top], mode=mode),
                      np.choose(a, choices[:top], mode=mode)))
    a = np.array([[0], [1], [1]])
    pairs.append((gf.choose(session.asarray(a), [session.asarray(np.arange(3)), 7], mode=mode),
                  np.choose(a, [np.arange(3), 7], mode=mode)))
    pairs.append((gf.choose(session.asarray(np.array(1)), remote[:2], mode=mode),
                  np.choose(np.array(1), choices[:2], mode=mode)))
    stacked = _data((3, 6), "float64")
    a = np.array([2, 0, 1, 1, 0, 2])
    pairs.append((gf.choose(session.asarray(a), session.asarray(stacked), mode=mode),
                  np.choose(a, stacked, mode=mode)))
    empty = np.zeros((0,), np.int64)
    pairs.append((gf.choose(session.asarray(empty), [np.ones(0), np.zeros(0)], mode=mode),
                  np.choose(empty, [np.ones(0), np.zeros(0)], mode=mode)))
    check_all(pairs)


def test_choose_errors(session):
    c = [np.array([1, 2]), np.array([3, 4])]
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        gf.choose(np.array([0, 2]), [session.asarray(x) for x in c])
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        gf.choose(np.array([0, -1]), [session.asarray(x) for x in c])
    for a in (np.array([0.0, 1.0]), np.array([0, 1], np.uint64)):
        with pytest.raises(TypeError, match="according to the rule 'safe'"):
            np.choose(a, c)
        with pytest.raises(TypeError, match="according to the rule 'safe'"):
            gf.choose(session.asarray(a), [session.asarray(x) for x in c])
    with pytest.raises(ValueError, match="clipmode must be one of 'clip', 'raise', or 'wrap'"):
        gf.choose(session.asarray(np.array([0])), [session.asarray(x) for x in c], mode="bad")
    with pytest.raises(ValueError, match="0-length sequence."):
        gf.choose(session.asarray(np.array([0])), [])
    with pytest.raises(ValueError, match="broadcast"):
        gf.choose(session.asarray(np.array([0, 1])),
                  [session.asarray(np.arange(3)), session.asarray(np.arange(3))])
    # Indices on the server: out of range is an error when evaluated.
    got = gf.choose(session.asarray(np.array([0, 2])), [session.asarray(x) for x in c])
    with pytest.raises(gf.InvalidArgumentError):
        got.get()
    got = gf.choose(session.asarray(np.array([0, -1])), [session.asarray(x) for x in c])
    with pytest.raises(gf.InvalidArgumentError):
        got.get()


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "complex64"])
def test_piecewise_matches_numpy(session, dtype):
    h = _data((3, 7), dtype) if dtype != "uint8" else RNG.integers(0, 9, (3, 7)).astype(dtype)
    x = session.asarray(h)
    key = h.real if np.iscomplexobj(h) else h
    kx = x.real if np.iscomplexobj(h) else x
    pairs = [
        (gf.piecewise(x, [kx < 1, kx > 2], [3, 1]), np.piecewise(h, [key < 1, key > 2], [3, 1])),
        (gf.piecewise(x, [kx < 1, kx > 2], [7, 8, 9]),
         np.piecewise(h, [key < 1, key > 2], [7, 8, 9])),
        (gf.piecewise(x[0], kx[0] < 1, [2.7, 3.1]), np.piecewise(h[0], key[0] < 1, [2.7, 3.1])),
        (gf.piecewise(x, [kx < 1], [2.7, 3.1]), np.piecewise(h, [key < 1], [2.7, 3.1])),
        (gf.piecewise(x, [kx < 1, kx < 3], [lambda v: v * 2, lambda v: v + 1, 0]),
         np.piecewise(h, [key < 1, key < 3], [lambda v: v * 2, lambda v: v + 1, 0])),
        (gf.piecewise(x, [kx > 0], [lambda v, a, b=0: v * a + b], 3, b=1),
         np.piecewise(h, [key > 0], [lambda v, a, b=0: v * a + b], 3, b=1)),
        (gf.piecewise(x, [key > 0], [5]), np.piecewise(h, [key > 0], [5])),
    ]
    z = np.array(2, dtype)
    pairs.append((gf.piecewise(session.asarray(z), True, [4]), np.piecewise(z, True, [4])))
    e = np.zeros((0,), dtype)
    pairs.append((gf.piecewise(session.asarray(e), [e == 0], [1, 2]),
                  np.piecewise(e, [e == 0], [1, 2])))
    check_all(pairs)


def test_piecewise_errors(session):
    x = session.asarray(np.arange(5.0))
    with pytest.raises(ValueError, match=r"with 2 condition\(s\), either 2 or 3 functions"):
        gf.piecewise(x, [x < 2, x > 3], [1])
    with pytest.raises(ValueError, match=r"with 1 condition\(s\), either 1 or 2 functions"):
        gf.piecewise(x, [x < 2], [1, 2, 3])
    with pytest.raises(IndexError, match="boolean index did not match indexed array"):
        gf.piecewise(x, [[True, False, True]], [7])


# ---- apply_along_axis, apply_over_axes -----------------------------------------------------


def test_apply_along_axis_matches_numpy(session):
    h = _data((3, 4, 5), "float32")
    x = session.asarray(h)
    i = _data((2, 3), "int16")
    pairs = []
    for axis in (0, 1, 2, -1):
        pairs.append((gf.apply_along_axis(gf.sum, axis, x), np.apply_along_axis(np.sum, axis, h)))
        pairs.append((gf.apply_along_axis(lambda v: v[::-1] * 2, axis, x),
                      np.apply_along_axis(lambda v: v[::-1] * 2, axis, h)))
        pairs.append((gf.apply_along_axis(lambda v: gf.outer(v, v[:2]), axis, x),
                      np.apply_along_axis(lambda v: np.outer(v, v[:2]), axis, h)))
    pairs.append((gf.apply_along_axis(lambda v, k: v.max() * k, 1, session.asarray(i), 3),
                  np.apply_along_axis(lambda v, k: v.max() * k, 1, i, 3)))
    pairs.append((gf.apply_along_axis(lambda v: 1.5, 0, session.asarray(i)),
                  np.apply_along_axis(lambda v: 1.5, 0, i)))
    v = _data((6,), "float64")
    pairs.append((gf.apply_along_axis(gf.cumsum, 0, session.asarray(v)),
                  np.apply_along_axis(np.cumsum, 0, v)))
    pairs.append((gf.apply_along_axis(gf.sum, 0, session.asarray(np.ones((0, 3)))),
                  np.apply_along_axis(np.sum, 0, np.ones((0, 3)))))
    check_all(pairs)
    with pytest.raises(ValueError, match="Cannot apply_along_axis when any iteration dimensions"):
        gf.apply_along_axis(gf.sum, 1, session.asarray(np.ones((0, 3))))
    with pytest.raises(AxisError):
        gf.apply_along_axis(gf.sum, 2, session.asarray(np.ones((2, 3))))


def test_apply_over_axes_matches_numpy(session):
    h = _data((2, 3, 4), "int32")
    x = session.asarray(h)
    check_all([
        (gf.apply_over_axes(gf.sum, x, [0, 2]), np.apply_over_axes(np.sum, h, [0, 2])),
        (gf.apply_over_axes(gf.sum, x, 1), np.apply_over_axes(np.sum, h, 1)),
        (gf.apply_over_axes(gf.mean, x, (-1, 0)), np.apply_over_axes(np.mean, h, (-1, 0))),
        (gf.apply_over_axes(lambda a, ax: gf.max(a, axis=ax, keepdims=True), x, [1]),
         np.apply_over_axes(lambda a, ax: np.max(a, axis=ax, keepdims=True), h, [1])),
        (gf.apply_over_axes(gf.sum, x, []), np.apply_over_axes(np.sum, h, [])),
    ])
    with pytest.raises(ValueError, match="function is not returning an array of the correct"):
        gf.apply_over_axes(lambda a, ax: a.sum(), x, [0])


# ---- nanargmax, nanargmin ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int8", "uint16",
                                   "bool"])
def test_nanargmax_nanargmin_match_numpy(session, dtype):
    h = _data((5, 7), dtype)
    if h.dtype.kind in "fc":
        h[RNG.random(h.shape) < 0.3] = np.nan
        h[:, 0] = np.nan  # a NaN first in every row
        h[-1, :] = _data((7,), dtype)  # no all-NaN row or column
        h[:, -1] = _data((5,), dtype)
        h[2, 3] = -np.inf
    x = session.asarray(h)
    pairs = []
    for f, g in [(gf.nanargmax, np.nanargmax), (gf.nanargmin, np.nanargmin)]:
        pairs += [(f(x), g(h)), (f(x, axis=1), g(h, axis=1)), (f(x, axis=0), g(h, axis=0)),
                  (f(x, axis=-1, keepdims=True), g(h, axis=-1, keepdims=True)),
                  (f(x, keepdims=True), g(h, keepdims=True))]
    one = np.array([np.nan, -np.inf, 2.0, np.nan]).astype(dtype) if h.dtype.kind in "fc" else h[0]
    pairs += [(gf.nanargmax(session.asarray(one)), np.nanargmax(one)),
              (gf.nanargmin(session.asarray(one)), np.nanargmin(one))]
    check_all(pairs)


def test_nanargmax_of_all_nan_slices_is_minus_one_as_cupy(session):
    h = np.array([[np.nan, 1.0, np.nan], [np.nan, np.nan, np.nan], [3.0, np.nan, 2.0]])
    x = session.asarray(h)
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        np.nanargmax(h, axis=1)
    out = gf.zeros(3, np.int64, session=session)
    assert gf.nanargmax(x, axis=1, out=out) is out
    check_all([(gf.nanargmax(x, axis=1), np.array([1, -1, 0])),
               (gf.nanargmin(x, axis=1), np.array([1, -1, 2])), (out, np.array([1, -1, 0])),
               (gf.nanargmax(session.asarray(np.full(4, np.nan))), np.array(-1))])
    check_all([(gf.nanargmax(session.asarray(np.ones((0, 3))), axis=1),
                np.nanargmax(np.ones((0, 3)), axis=1))])
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        gf.nanargmax(session.asarray(np.ones((0, 3))), axis=0)
