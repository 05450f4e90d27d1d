"""histogram, histogram_bin_edges and digitize against NumPy 2, through the
real server (GPUFLOW_TEST_BACKEND=cuda runs it unchanged): equal bins with
and without range, given edges, every dtype, NaN, weights, density, empty
and 0-d inputs, NumPy's errors."""

import warnings

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all
from numpy2_histogram import histogram as np_histogram
from numpy2_histogram import histogram_bin_edges as np_histogram_bin_edges

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

REAL = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
        "float32", "float64"]
RNG = np.random.default_rng(19)


def _data(dtype, n):
    if np.dtype(dtype).kind == "f":
        return (RNG.standard_normal(n) * 10).astype(dtype)
    if np.dtype(dtype).kind == "u":
        return RNG.integers(0, 100, n).astype(dtype)
    return RNG.integers(-50, 50, n).astype(dtype)


def _same(got, want):
    """(hist, edges) pairs equal bit for bit, dtypes included."""
    h, e = got
    wh, we = want
    check_all([(h, wh), (e, we)], exact=True)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", [1, 7, 1023, 65536 + 5])
def test_equal_bins_without_range_match_numpy(session, dtype, n):
    host = _data(dtype, n)
    x = session.asarray(host)
    for bins in (1, 10, 256):
        _same(gf.histogram(x, bins=bins), np_histogram(host, bins=bins))


@pytest.mark.parametrize("dtype", REAL)
def test_equal_bins_with_a_range_match_numpy(session, dtype):
    host = _data(dtype, 2049)
    x = session.asarray(host)
    for rng in [(-7, 13), (-7.5, 13.25), (0.1, 0.7), (np.float32(-3), np.float32(9)),
                (np.float64(0.1), 20.0), (5, 5)]:
        _same(gf.histogram(x, bins=7, range=rng), np_histogram(host, bins=7, range=rng))


def test_values_on_the_edges_take_numpys_bins(session):
    # Values at and around every edge, where NumPy's formula is corrected.
    for lo, hi, n in [(0.1, 0.7, 7), (-1.0, 1.0, 10), (0.0, 1.0, 3), (1e-3, 1e3, 99)]:
        edges = np.linspace(lo, hi, n + 1)
        host = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
        for dtype in ("float64", "float32", "float16"):
            h = host.astype(dtype)
            _same(gf.histogram(session.asarray(h), n, range=(lo, hi)),
                  np_histogram(h, n, range=(lo, hi)))


@pytest.mark.parametrize("dtype", REAL)
def test_given_edges_match_numpy(session, dtype):
    host = _data(dtype, 3001)
    x = session.asarray(host)
    for edges in ([-20, -3, 0, 0, 5, 40], np.array([-2.5, 0.5, 1.5, 99.0]),
                  np.array([0, 10], dtype=np.uint8), np.array([-1e30, 1e30]), [3.0]):
        got = gf.histogram(x, bins=edges)
        want = np_histogram(host, bins=edges)
        _same(got, want)


def test_nan_is_not_counted_unless_an_edge_is_nan(session):
    host = np.array([0.5, np.nan, 1.5, np.nan, 2.0, -np.inf, np.inf], dtype=np.float32)
    x = session.asarray(host)
    _same(gf.histogram(x, bins=[0, 1, 2]), np_histogram(host, bins=[0, 1, 2]))
    _same(gf.histogram(x, bins=3, range=(0, 2)), np_histogram(host, bins=3, range=(0, 2)))
    _same(gf.histogram(x, bins=[0, 1, np.nan]), np_histogram(host, bins=[0, 1, np.nan]))
    with pytest.raises(ValueError, match=r"autodetected range of \[nan, nan\] is not finite"):
        gf.histogram(x)


@pytest.mark.parametrize("wdtype", ["bool", "int8", "uint8", "int64", "uint64", "float16",
                                    "float32", "float64"])
def test_weights_sum_as_numpy_sums_them(session, wdtype):
    n = 2 * 65536 + 77
    host = RNG.standard_normal(n).astype(np.float32)
    w = (RNG.random(n) * 4).astype(wdtype) if wdtype != "bool" else RNG.random(n) > 0.5
    x, wx = session.asarray(host), session.asarray(w)
    got = gf.histogram(x, bins=13, weights=wx)
    want = np_histogram(host, bins=13, weights=w)
    # float64 weights are summed by atomics on the CUDA backend: the last bits.
    if wdtype == "float64":
        check_all([(got[0], want[0])], rtol=1e-12)
    else:
        _same(got, want)
    if wdtype == "bool":
        with pytest.raises(TypeError, match=r"to dtype\('bool'\) with casting rule"):
            gf.histogram(x, bins=[-1.0, 0.0, 1.0], weights=wx)
        return
    got = gf.histogram(x, bins=[-3.0, -1.0, 0.0, 0.5, 2.0], weights=wx)
    want = np_histogram(host, bins=[-3.0, -1.0, 0.0, 0.5, 2.0], weights=w)
    if wdtype.startswith("float"):
        check_all([(got[0], want[0])], rtol={"float16": 1e-2, "float32": 1e-5,
                                             "float64": 1e-12}[wdtype])
    else:
        _same(got, want)


def test_density_matches_numpy(session):
    host = _data("float32", 4097)
    x = session.asarray(host)
    w = RNG.random(4097)
    for kw in ({}, {"weights": w}):
        got = gf.histogram(x, bins=9, density=True, **{k: session.asarray(v) for k, v in
                                                      kw.items()})
        want = np_histogram(host, bins=9, density=True, **kw)
        check_all([(got[0], want[0]), (got[1], want[1])], rtol=1e-12)
    got = gf.histogram(x, bins=[-30, 0, 1, 30], density=True)
    check_all([(got[0], np_histogram(host, bins=[-30, 0, 1, 30], density=True)[0])],
              rtol=1e-12)


def test_empty_0d_and_bool_inputs(session):
    for host in (np.zeros(0, np.float32), np.float64(2.5), np.array([[1, 2], [3, 4]], np.int16)):
        x = session.asarray(np.asarray(host))
        _same(gf.histogram(x), np_histogram(host))
        _same(gf.histogram(x, bins=[0, 1, 5]), np_histogram(host, bins=[0, 1, 5]))
    b = np.array([True, False, True])
    with pytest.warns(RuntimeWarning, match="Converting input from bool to uint8"):
        got = gf.histogram(session.asarray(b), bins=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(got, np_histogram(b, bins=3))
    got = gf.histogram(session.asarray(np.arange(5.0)), bins=np.array([], np.float64))
    check_all([(got[0], np.zeros(0, np.int64))])


def test_numpys_errors(session):
    x = session.asarray(np.arange(10.0))
    with pytest.raises(ValueError, match="`bins` must be positive, when an integer"):
        gf.histogram(x, bins=0)
    with pytest.raises(TypeError, match="`bins` must be an integer, a string, or an array"):
        gf.histogram(x, bins=2.5)
    with pytest.raises(ValueError, match="`bins` must increase monotonically, when an array"):
        gf.histogram(x, bins=[0, 2, 1])
    with pytest.raises(ValueError, match="`bins` must be 1d, when an array"):
        gf.histogram(x, bins=[[0, 1]])
    with pytest.raises(ValueError, match="max must be larger than min in range parameter."):
        gf.histogram(x, range=(2, 1))
    with pytest.raises(ValueError, match=r"supplied range of \[nan, 1\] is not finite"):
        gf.histogram(x, range=(np.nan, 1))
    with pytest.raises(ValueError, match=r"supplied range of \[0, inf\] is not finite"):
        gf.histogram(x, range=(0, np.inf))
    with pytest.raises(ValueError, match="weights should have the same shape as a."):
        gf.histogram(x, weights=np.ones(3))
    with pytest.raises(ValueError, match="Too many bins for data range. Cannot create 4 "
                                         "finite-sized bins."):
        gf.histogram(session.asarray(np.float32([1.0, np.nextafter(np.float32(1), 2)])), 4)
    with pytest.raises(ValueError, match="Too many bins for data range"):
        gf.histogram(x, 4, range=(-1e308, 1e308))


def test_histogram_bin_edges_match_numpy(session):
    host = _data("float16", 101)
    x = session.asarray(host)
    for kw in ({}, {"bins": 5, "range": (-1, 1)}, {"bins": [0.0, 1.0, 3.0]}):
        check_all([(gf.histogram_bin_edges(x, **kw), np_histogram_bin_edges(host, **kw))],
                  exact=True)


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float32", "float64"])
def test_digitize_matches_numpy(session, dtype):
    host = _data(dtype, 257).reshape(1, 257)
    x = session.asarray(host)
    for bins in ([-10, 0, 0, 10, 50], [50.5, 10, 0, -10], np.array([3.0])):
        for right in (False, True):
            check_all([(gf.digitize(x, bins, right=right), np.digitize(host, bins, right=right))])
    with pytest.raises(ValueError, match="bins must be monotonically increasing or decreasing"):
        gf.digitize(x, [0, 2, 1])
    with pytest.raises(TypeError, match="x may not be complex"):
        gf.digitize(session.asarray(np.ones(2, np.complex64)), [0, 1])


# ---- string bins: NumPy's estimators ---------------------------------------------------

ESTIMATORS = ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"]


def _np2_estimated_bins(host, name, range=None, dot=None):
    """NumPy 2's number of bins for a string ``bins``: NumPy's own selectors
    (its _hist_bin_selectors; 'auto' as NumPy >= 2.3 defines it, FD held to
    half the sqrt width), on the values inside range, an integer width of at
    least 1, ceil(range / width). ``dot`` stands for 'stone''s p_k.dot(p_k)
    (None: NumPy's own)."""
    import numpy2_histogram

    try:
        from numpy.lib import _histograms_impl as impl
    except ImportError:
        from numpy.lib import histograms as impl
    subtract = getattr(numpy2_histogram, "_unsigned_subtract", impl._unsigned_subtract)
    a = host.ravel()
    a = a.astype(np.uint8) if a.dtype == np.bool_ else a
    first, last = impl._get_outer_edges(a, range)
    if range is not None:
        wide = a.astype(np.float64)  # NumPy 2 compares an uint8 with -5 (1.24 raises)
        a = a[(wide >= float(first)) & (wide <= float(last))]
    if a.size == 0:
        return 1
    if name == "auto":
        width = min(max(impl._hist_bin_fd(a, None), impl._hist_bin_sqrt(a, None) / 2),
                    impl._hist_bin_sturges(a, None))
    elif name == "stone":
        width = _np2_stone(a, (first, last), impl._ptp(a), dot)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            width = impl._hist_bin_selectors[name](a, (first, last))
    if not width:
        return 1
    if a.dtype.kind in "iu" and width < 1:
        width = 1
    return int(np.ceil(subtract(last, first) / width))


def _np2_stone(x, range, ptp_x, dot=None):
    """NumPy 2's _hist_bin_stone, its histograms NumPy 2's (numpy2_histogram)."""
    n = x.size
    if n <= 1 or ptp_x == 0:
        return 0

    def jhat(nbins):
        hh = ptp_x / nbins
        p_k = np_histogram(x, bins=nbins, range=range)[0] / n
        return (2 - (n + 1) * (p_k.dot(p_k) if dot is None else dot(p_k))) / hh

    return ptp_x / min(range_(1, max(100, int(np.sqrt(n))) + 1), key=jhat)


range_ = range


def _estimated(session, host, name, range=None):
    x = session.asarray(host)
    n = _np2_estimated_bins(host, name, range)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # stone's "may be suboptimal"
        got = gf.histogram(x, bins=name, range=range)
        edges = gf.histogram_bin_edges(x, bins=name, range=range)
    want = np_histogram(host, bins=n, range=range)
    _same(got, want)
    check_all([(edges, want[1])], exact=True)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int16", "uint8", "int64"])
def test_string_bins_match_numpy(session, name, dtype):
    # NumPy's float16 std sums squares in float16 (inf past 65504); gpuflow's
    # does not overflow, so 'scott' and 'doane' of float16 stop at 50 values.
    sizes = (1, 2, 3, 50) if dtype == "float16" and name in ("scott", "doane") else \
        (1, 2, 3, 50, 1001)
    for n in sizes:
        host = _data(dtype, n)
        _estimated(session, host, name)
        _estimated(session, host, name, range=(-5, 7))  # trims to the range first


@pytest.mark.parametrize("name", ESTIMATORS)
def test_string_bins_of_special_data(session, name):
    rng = np.random.default_rng(5)
    skewed = rng.exponential(3.0, 2000)
    flat_iqr = np.concatenate([np.zeros(900), rng.standard_normal(100)])  # FD width 0
    spread = rng.integers(-3, 4, 5000).astype(np.int32)  # integer widths below 1
    for host in (skewed, flat_iqr, spread, np.full(20, 3.5), np.array([np.inf, 1.0])[1:]):
        _estimated(session, host, name)
    _estimated(session, skewed, name, range=(1.0, 1.0))  # equal ends widen by 0.5
    _estimated(session, skewed, name, range=(100.0, 200.0))  # nothing inside: one bin
    _estimated(session, np.zeros(0), name)
    _estimated(session, np.float64(2.5), name)  # 0-d
    b = rng.integers(0, 2, 301) > 0
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        got = gf.histogram(session.asarray(b), bins=name)
    _same(got, np_histogram(b.astype(np.uint8), bins=_np2_estimated_bins(b, name)))


def _correctly_rounded_dot(p):
    """p.dot(p) rounded once (as a dot that fuses its multiply-adds gives
    it for two nonzero terms)."""
    from fractions import Fraction

    return np.float64(float(sum(Fraction(float(v)) ** 2 for v in p)))


def _unfused_dot(p):
    """p.dot(p) as one multiply and one add after another."""
    total = np.float64(0)
    for v in p:
        total = total + v * v
    return total


def test_stone_ties_follow_numpys_dot(session, monkeypatch):
    # Three values, two of them in one bin of 9 bins (of none of 10 or
    # more): Stone's score of 9 bins equals that of 1 bin exactly, so the
    # rounding of NumPy's p_k.dot(p_k) picks the bin count (0.5555555555555556
    # unfused: 9 bins; fused or correctly rounded, 0.5555555555555555: 1 bin,
    # as NumPy 2.5's host computes it). gpuflow scores such near-ties again
    # with the installed NumPy's dot.
    for host in (np.array([0, 10, 99], np.int16), np.array([0.0, 10.0, 99.0]),
                 np.array([99, 0, 10], np.uint8)):
        _estimated(session, host, "stone")
        picked = set()
        for dot in (_correctly_rounded_dot, _unfused_dot):
            monkeypatch.setattr(gf._histogram, "_squared_norm", dot)
            want = _np2_estimated_bins(host, "stone", dot=dot)
            got, _ = gf.histogram(session.asarray(host), bins="stone")
            assert got.shape == (want,), (host, dot)
            picked.add(want)
        monkeypatch.undo()
        assert picked == {1, 9}, host  # the two roundings do pick apart


def test_string_bins_errors_are_numpys(session):
    x = session.asarray(np.arange(10.0))
    with pytest.raises(ValueError, match="'blah' is not a valid estimator for `bins`"):
        gf.histogram(x, bins="blah")
    with pytest.raises(TypeError, match="Automated estimation of the number of bins is not "
                                        "supported for weighted data"):
        gf.histogram(x, bins="auto", weights=np.ones(10))
    with pytest.raises(TypeError, match="Automated estimation"):
        gf.histogram_bin_edges(x, bins="fd", weights=np.ones(10))
    with pytest.raises(ValueError, match=r"autodetected range of \[nan, nan\] is not finite"):
        gf.histogram(session.asarray(np.array([0.0, np.nan])), bins="auto")


def test_stone_warns_at_its_upper_bound_as_numpy(session):
    host = np.arange(10000.0) % 137  # 137 equal spikes: the most bins score best
    with pytest.warns(RuntimeWarning, match="The number of bins estimated may be suboptimal"):
        np.histogram_bin_edges(host, bins="stone")
    with pytest.warns(RuntimeWarning, match="The number of bins estimated may be suboptimal"):
        edges = gf.histogram_bin_edges(session.asarray(host), bins="stone")
    check_all([(edges, np_histogram_bin_edges(host, bins=_np2_estimated_bins(host, "stone")))],
              exact=True)


# ---- histogramdd and histogram2d ---------------------------------------------------------


def _same_dd(got, want):
    hist, edges = got
    check_all([(hist, want[0])] + list(zip(edges, want[1])), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "uint8"])
def test_histogramdd_matches_numpy(session, dtype):
    host = np.stack([_data(dtype, 1001) for _ in range(3)], axis=1)
    x = session.asarray(host)
    for kw in ({}, {"bins": 4}, {"bins": (3, 5, 2)}, {"bins": [[-20, 0, 20], 4, np.arange(9.0)]},
               {"range": [(-5, 5), None, (0, 30)]}, {"bins": 6, "density": True},
               {"bins": (3, [-50, 0, 0.5, 50], 2), "density": True}):
        _same_dd(gf.histogramdd(x, **kw), np.histogramdd(host, **kw))
    w = RNG.standard_normal(1001).astype(np.float32)
    _same_dd(gf.histogramdd(x, bins=3, weights=session.asarray(w)),
             np.histogramdd(host, bins=3, weights=w))


def test_histogramdd_edges_nan_sequences_and_empty(session):
    edges = np.linspace(0.0, 1.0, 5)
    host = np.stack([np.concatenate([edges, [np.nan, -1.0, 2.0]])] * 2, axis=1)
    host[3, 1] = np.nan
    x = session.asarray(host)
    # Values on every edge (the last in the last bin), NaN and outliers dropped.
    _same_dd(gf.histogramdd(x, bins=[edges, edges]), np.histogramdd(host, bins=[edges, edges]))
    cols = [RNG.standard_normal(50), RNG.integers(0, 9, 50)]
    _same_dd(gf.histogramdd([session.asarray(c) for c in cols], bins=4),
             np.histogramdd(cols, bins=4))
    _same_dd(gf.histogramdd(cols, bins=(2, 3)), np.histogramdd(cols, bins=(2, 3)))
    one = RNG.standard_normal(30)
    _same_dd(gf.histogramdd(session.asarray(one)), np.histogramdd(one))
    empty = np.zeros((0, 2))
    _same_dd(gf.histogramdd(session.asarray(empty), bins=3), np.histogramdd(empty, bins=3))
    with pytest.raises(ValueError, match="autodetected range of \\[nan, nan\\] is not finite"):
        gf.histogramdd(x, bins=3)


def test_histogram2d_matches_numpy(session):
    hx, hy = RNG.standard_normal(777), RNG.standard_normal(777).astype(np.float32)
    x, y = session.asarray(hx), session.asarray(hy)
    for kw in ({}, {"bins": 7}, {"bins": (3, 8)}, {"bins": [-1.0, 0.0, 0.5, 2.0]},
               {"bins": [np.arange(-3.0, 3.0), 4]}, {"range": [(-1, 1), (0, 2)], "bins": 5},
               {"density": True, "bins": 6}, {"weights": RNG.random(777), "bins": 3}):
        got = gf.histogram2d(x, y, **kw)
        want = np.histogram2d(hx, hy, **kw)
        check_all(list(zip(got, want)), rtol=1e-12)


def test_histogramdd_errors_are_numpys(session):
    x = session.asarray(np.zeros((5, 2)))
    for kw, error in [({"bins": (2, 3, 4)}, ValueError), ({"range": [(0, 1)]}, ValueError),
                      ({"bins": 0}, ValueError), ({"bins": 2.5}, TypeError),
                      ({"bins": [[0, 2, 1], 3]}, ValueError), ({"bins": [[[0, 1]], 3]}, ValueError),
                      ({"weights": np.ones(4)}, ValueError)]:
        with pytest.raises(error) as want:
            np.histogramdd(np.zeros((5, 2)), **kw)
        with pytest.raises(error) as got:
            gf.histogramdd(x, **kw)
        assert str(got.value).split() == str(want.value).split()  # 1.24: "the  sample"
    with pytest.raises(ValueError, match="x and y must have the same length."):
        gf.histogram2d(session.asarray(np.zeros(3)), session.asarray(np.zeros(4)))


def test_estimators_and_histogramdd_evaluate_as_documented(session, monkeypatch):
    from gpuflow import remote_array

    calls = []
    real = remote_array._execute
    monkeypatch.setattr(remote_array, "_execute",
                        lambda *args, **kw: calls.append(1) or real(*args, **kw))
    x = session.asarray(_data("float32", 3003))
    for make, executes in [(lambda: gf.histogram(x, bins="auto"), 1),  # min, max, percentiles
                           (lambda: gf.histogram(x, bins="doane", range=(-5, 5)), 2),  # + count
                           (lambda: gf.histogram(x, bins="stone"), 2),  # + the sums of squares
                           (lambda: gf.histogramdd(x.reshape((-1, 3)), bins=4), 1)]:
        del calls[:]
        result = make()
        assert len(calls) == executes
        gf.evaluate(result[0])


# ---- complex weights (issue 23) ---------------------------------------------------------

@pytest.mark.parametrize("wdtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [0, 1, 7, 1023])
def test_complex_weights_give_complex_counts(session, wdtype, n):
    """NumPy sums the real and imaginary weights apart: the counts are
    NumPy 2's real histograms of each part, in the weights' dtype."""
    host = _data("float32", n)
    w_host = (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(wdtype)
    w_host[:3] = [complex(-0.0, np.inf), complex(np.nan, -0.0), 2.5j][:n]
    x, w = session.asarray(host), session.asarray(w_host)
    pairs = []
    for kw in ({"bins": 5}, {"bins": 3, "range": (-4, 4)}, {"bins": [-20.0, -1.0, 0.0, 2.0, 20.0]},
               {"bins": 1}):
        got, edges = gf.histogram(x, weights=w, **kw)
        re, want_edges = np_histogram(host, weights=w_host.real, **kw)
        im, _ = np_histogram(host, weights=w_host.imag, **kw)
        want = np.empty(re.shape, wdtype)
        want.real, want.imag = re, im
        pairs += [(got, want), (edges, want_edges)]
    got = gf.evaluate(*(r for r, _ in pairs))
    for (remote, want), value in zip(pairs, got):
        assert remote.dtype == want.dtype and value.dtype == want.dtype
        # Each part on its own, a NaN as NaN: which NaN a sum with NaN gives
        # is the hardware's (x86 keeps the operand's payload, NVIDIA GPUs
        # give their canonical NaN); and a float64 sum to rounding: the
        # device adds a block's weights with atomics, in no fixed order.
        parts, want_parts = value.view(value.real.dtype), want.view(want.real.dtype)
        nan = np.isnan(want_parts)
        assert (np.isnan(parts) == nan).all(), (value, want)
        np.testing.assert_allclose(parts[~nan], want_parts[~nan], atol=0,
                                   rtol=1e-12 if parts.dtype == np.float64 else 0)
    # density divides the complex counts as NumPy does (finite weights).
    if n > 3:
        d, _ = gf.histogram(x[3:], bins=4, weights=w[3:], density=True)
        want_d, _ = np.histogram(host[3:], bins=np_histogram_bin_edges(host[3:], bins=4),
                                 weights=w_host[3:], density=True)
        assert np.isfinite(want_d).all()
        check_all([(d, want_d)], rtol=1e-4)  # complex128: counts / float64 widths


def test_complex_weights_in_histogramdd_and_bincount_raise_numpys_error(session):
    w = np.array([1j, 2, 3])
    for fn, args in [(gf.histogramdd, (np.ones((3, 1)),)), (gf.histogram2d, (np.ones(3),
                                                                           np.ones(3)))]:
        with pytest.raises(TypeError) as want:
            getattr(np, fn.__name__)(*args, weights=w)
        with pytest.raises(TypeError) as got:
            fn(*(session.asarray(a) for a in args), weights=session.asarray(w))
        assert str(got.value) == str(want.value)
    with pytest.raises(TypeError) as want:
        np.bincount(np.array([0, 1, 1]), weights=w)
    with pytest.raises(TypeError) as got:
        gf.bincount(session.asarray(np.array([0, 1, 1])), weights=session.asarray(w))
    assert str(got.value) == str(want.value)


# ---- complex data (issue 23) ------------------------------------------------------------

def _complex_data(dtype, n):
    x = (RNG.integers(-3, 4, n) + 1j * RNG.integers(-2, 3, n)).astype(dtype)
    x[:n // 3] += (RNG.standard_normal(n // 3) * (1 + 1j)).astype(dtype)
    if n > 5:  # a NaN in either part sorts after every edge: in no bin
        x[:3] = [complex(np.nan, 1), complex(1, np.nan), 2 + 0j]
    return x


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [1, 7, 1023])
def test_complex_data_is_binned_in_numpys_complex_order(session, dtype, n):
    """Values ordered by real part, then imaginary part, as NumPy's sort
    and comparisons order them: explicit real or complex edges (edges of
    equal real parts too), equal bins of a range or of the data's complex
    minimum and maximum; no weights, real and complex weights."""
    host = _complex_data(dtype, n)
    w_host = RNG.standard_normal(n).astype(np.float32)
    cw_host = (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(np.complex64)
    # NumPy 2's histogram: given edges, and equal bins of a real range, where
    # its estimate of the bin from the real parts is corrected by the edges.
    cases = [({"bins": [-3, -1, 0, 0.5, 2, 3]}, host), ({"bins": [-3, -1 + 1j, 0, 2j, 2, 3]}, host),
             ({"bins": np.array([-2, -2 + 1j, 1, 1 + 1j, 1 + 2j, 3])}, host),
             ({"bins": [0, 1, 1, 2]}, host), ({"bins": 4, "range": (-2.0, 2.0)}, host),
             ({"bins": 3, "range": (-2.5, 2.5)}, host), ({"bins": 2, "range": (-1.0, 1.0)}, host)]
    finite = slice(3, None) if n > 5 else slice(None)  # the data's own range must be finite
    for bins in (1, 5):
        cases.append(({"bins": bins}, host[finite]))
    pairs = []
    for kw, data in cases:
        x = session.asarray(data)
        w, cw = w_host[finite] if data is not host else w_host, \
            cw_host[finite] if data is not host else cw_host
        edges = np_histogram_bin_edges(data, **kw)
        if "range" not in kw and np.ndim(kw["bins"]) == 0:
            # Equal bins of the complex minimum and maximum: NumPy's estimate
            # divides by a complex width and may land bins away, so the
            # reference is NumPy's histogram against those edges.
            kw_ref = {"bins": edges}
        else:
            kw_ref = kw
        got, got_edges = gf.histogram(x, **kw)
        want, _ = np_histogram(data, **kw_ref)
        pairs += [(got, want), (got_edges, edges)]
        wgot, _ = gf.histogram(x, weights=session.asarray(w), **kw)
        pairs.append((wgot, np_histogram(data, weights=w, **kw_ref)[0]))
        cgot, _ = gf.histogram(x, weights=session.asarray(cw), **kw)
        re, _ = np_histogram(data, weights=cw.real, **kw_ref)
        im, _ = np_histogram(data, weights=cw.imag, **kw_ref)
        pairs.append((cgot, (re + 1j * im).astype(np.complex64)))
    # NumPy sums float32 weights of given edges as a float32 cumsum (gpuflow
    # in float64): a few units in the last place apart.
    check_all(pairs, rtol=1e-4, atol=1e-4)
    # The counts are exact, and NumPy 1.24's own histogram agrees where it
    # runs (given edges).
    for kw, data in cases[:4]:
        h, _ = gf.histogram(session.asarray(data), **kw)
        np.testing.assert_array_equal(h.get(), np.histogram(data, **kw)[0])


def test_complex_data_edges_density_and_errors_are_numpys(session):
    host = np.array([1 + 2j, 3, 2 - 1j, 5j, -1 - 1j, 0.5 + 0j])
    x = session.asarray(host)
    check_all([(gf.histogram_bin_edges(x, bins=4), np.histogram_bin_edges(host, bins=4)),
               (gf.histogram(x, bins=[0, 1, 2, 3])[0], np.histogram(host, bins=[0, 1, 2, 3])[0])],
              exact=True)
    with pytest.warns(getattr(np, "exceptions", np).ComplexWarning):
        want, _ = np.histogram(host, bins=3, density=True)
    with pytest.warns(getattr(np, "exceptions", np).ComplexWarning):
        got, _ = gf.histogram(x, bins=3, density=True)
    check_all([(got, want)])
    # The estimators' errors are the running NumPy's: NumPy 1.x's ceil of a
    # complex width, NumPy 2's percentile of complex values for 'auto'; the
    # weights are refused first.
    for kw in ({"bins": "auto"}, {"bins": "sqrt"}, {"bins": "fd"}, {"bins": "scott"},
               {"bins": "sqrt", "weights": np.ones(6)}, {"bins": [0, 1, 2, 3j]}):
        with pytest.raises((TypeError, ValueError)) as want:
            np.histogram(host, **kw)
        with pytest.raises(type(want.value)) as got:
            gf.histogram(x, **kw)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value), kw
    with pytest.raises(ValueError, match=r"autodetected range of \[\(nan\+1j\), \(nan\+1j\)\] "
                       "is not finite"):
        gf.histogram(session.asarray(np.array([complex(np.nan, 1), 2])))
    # A real sample against complex edges is compared as complex.
    r_host = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    check_all([(gf.histogram(session.asarray(r_host), bins=[-1, 1j, 1 - 1j, 2])[0],
                np.histogram(r_host, bins=[-1, 1j, 1 - 1j, 2])[0])], exact=True)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_histogramdd_of_complex_samples_matches_numpy(session, dtype):
    """Each dimension searched in NumPy's complex order (a value on the
    last edge in the last bin, NaN in none), equal bins between the
    complex minimum and maximum or given (complex) edges, density."""
    sample = np.stack([_complex_data(dtype, 101), _complex_data(dtype, 101)], axis=1)
    sample[:3] = sample[3:6]  # the data's own ranges must be finite
    sample[7] = [complex(np.nan, 0), 1]
    x = session.asarray(sample)
    pairs = []
    for kw in ({"bins": 3, "range": [(-3.0, 3.0), (-2.0, 2.0)]},
               {"bins": [[-3, -1 + 1j, 0, 2j, 3], [-3, 0, 3]]}, {"bins": [[-3, 0, 3], 4],
                                                                  "range": [None, (-2.0, 2.5)]},
               {"bins": [[-3, 0, 3], [-3, 0, 3]], "density": True}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, want_edges = np.histogramdd(sample, **kw)
        got, got_edges = gf.histogramdd(x, **kw)
        pairs += [(got, want)] + list(zip(got_edges, want_edges))
    clean = sample[8:]
    want, want_edges = np.histogramdd(clean, bins=(2, 5))
    got, got_edges = gf.histogramdd(session.asarray(clean), bins=(2, 5))
    pairs += [(got, want)] + list(zip(got_edges, want_edges))
    h2, xe, ye = gf.histogram2d(session.asarray(clean[:, 0]), session.asarray(clean[:, 1].real),
                                bins=[[-3, 1j, 3], [-3, 0, 3]])
    w2, wxe, wye = np.histogram2d(clean[:, 0], clean[:, 1].real, bins=[[-3, 1j, 3], [-3, 0, 3]])
    pairs += [(h2, w2), (xe, wxe), (ye, wye)]
    check_all(pairs, rtol=1e-5)
