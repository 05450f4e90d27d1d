"""numpy.histogram, histogram_bin_edges, histogram2d, histogramdd and
digitize on the server's histogram, searchsorted and scatter ops.

    h, edges = gf.histogram(x, bins=256, range=(0.0, 1.0))   # lazy, no round trip
    h, edges = gf.histogram(x, bins=10)        # one Execute learns x.min(), x.max()
    h, edges = gf.histogram(x, bins="auto")    # one Execute for NumPy's estimator's inputs
    i = gf.digitize(x, [0.0, 0.5, 1.0])

The edges are computed here with NumPy 2's arithmetic (numpy.linspace in
the dtypes numpy.histogram picks under NEP 50), so they equal NumPy's bit
for bit; the server then bins each value with NumPy's own formula for
equal bins (its dtypes, its corrections by the edges) or by binary search
for given edges. Without ``range`` the data's minimum and maximum come
back in one Execute first (as numpy and CuPy read them).
"""

import builtins
import operator
import warnings

import numpy as np

from gpuflow import _inference

_Type = _inference.Type


def _ra():
    from gpuflow import remote_array

    return remote_array


def _host(x):
    """A host numpy array of ``x`` (downloading a RemoteArray)."""
    return x.get() if isinstance(x, _ra().RemoteArray) else np.asarray(x)


# ---- NumPy 2 scalar arithmetic: a Python number is weak, a numpy scalar strong ----

def _type_of(v):
    if isinstance(v, np.generic):
        return _Type(v.dtype.name, ())
    return _Type.weak_scalar(v)


def _result_type(*values):
    """numpy.result_type of arrays (dtype names), numpy scalars and Python
    numbers under NEP 50."""
    return _inference.promote_types(
        [_Type(v, ()) if isinstance(v, str) else _type_of(v) for v in values])


def _scalar_minus(v, d):
    """``v - d`` (d a Python float) as NumPy 2 computes it."""
    if not isinstance(v, np.generic):
        return v - d
    dtype = _result_type(v, d)
    return np.subtract(np.asarray(v, dtype), np.asarray(d, dtype), dtype=dtype)[()]


def _unsigned_subtract(a, b):
    """numpy.lib._histograms_impl._unsigned_subtract of two scalars: the
    difference in their result type, integers in its unsigned counterpart
    (so it cannot overflow). Returns a numpy scalar."""
    dt = np.dtype(_result_type(a, b))
    if dt.kind in "iu":
        udt = np.dtype(f"uint{dt.itemsize * 8}")
        mod = 1 << (dt.itemsize * 8)
        return udt.type((int(a) - int(b)) % mod)
    with np.errstate(all="ignore"):
        return np.subtract(np.asarray(a).astype(dt), np.asarray(b).astype(dt), dtype=dt)[()]


def _linspace(start, stop, num, dtype):
    """numpy.linspace(start, stop, num, endpoint=True, dtype=dtype) as NumPy
    2 computes it: in the inexact result type of start and stop, then cast."""
    dt = np.dtype(_inference.promote_types([_type_of(start), _type_of(stop),
                                            _Type("float64", (), True)]))
    s = np.asarray(start).astype(dt)
    e = np.asarray(stop).astype(dt)
    div = num - 1
    with np.errstate(all="ignore"):
        delta = np.subtract(e, s, dtype=dt)
        y = np.arange(0, num, dtype=dt)
        if div > 0:
            d = np.asarray(div).astype(dt)
            step = np.divide(delta, d, dtype=dt)
            if step == 0:
                y = np.multiply(np.divide(y, d, dtype=dt), delta, dtype=dt)
            else:
                y = np.multiply(y, step, dtype=dt)
        else:
            y = np.multiply(y, delta, dtype=dt)
        y = np.add(y, s, dtype=dt)
    if num > 1:
        y[-1] = e
    return y.astype(dtype, copy=False)


# ---- numpy.lib._histograms_impl, on a RemoteArray ------------------------------------

def _ravel_and_check_weights(a, weights):
    ra = _ra()
    session = weights.session if isinstance(weights, ra.RemoteArray) else None
    a = a if isinstance(a, ra.RemoteArray) else ra.asarray(a, session=session)
    if a._expr.dtype == "bool":
        warnings.warn(f"Converting input from {a.dtype} to {np.dtype(np.uint8)} for "
                      "compatibility.", RuntimeWarning, stacklevel=3)
        a = a.astype("uint8")
    if weights is not None:
        weights = weights if isinstance(weights, ra.RemoteArray) else \
            ra.asarray(weights, session=a.session)
        if weights.shape != a.shape:
            raise ValueError("weights should have the same shape as a.")
        weights = weights.reshape(-1)
    return a.reshape(-1), weights


def _get_outer_edges(a, range, extremes=None):
    """NumPy's outer edges: ``range``, else the data's minimum and maximum
    (``extremes`` when the caller evaluated them already), widened by 0.5
    on each side when equal."""
    if range is not None:
        first_edge, last_edge = range
        if first_edge > last_edge:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first_edge) and np.isfinite(last_edge)):
            raise ValueError(f"supplied range of [{first_edge}, {last_edge}] is not finite")
    elif a.size == 0:
        first_edge, last_edge = 0, 1
    else:
        from gpuflow import _select

        if extremes is None:
            extremes = _select.evaluate_keeping([a.min(), a.max()], a)
        first_edge, last_edge = (x[()] for x in extremes)
        if not (np.isfinite(first_edge) and np.isfinite(last_edge)):
            raise ValueError(f"autodetected range of [{first_edge}, {last_edge}] is not finite")
    if first_edge == last_edge:
        first_edge = _scalar_minus(first_edge, 0.5)
        last_edge = _scalar_minus(last_edge, -0.5)
    return first_edge, last_edge


# ---- NumPy's bin estimators (numpy.lib._histograms_impl._hist_bin_selectors) ----------

_ESTIMATORS = ("stone", "auto", "doane", "fd", "rice", "scott", "sqrt", "sturges")


def _arith(op, a, b):
    """``op(a, b)`` (np.multiply or np.true_divide) of numpy scalars and
    Python numbers as NumPy 2 computes it: in their NEP 50 result type
    (true division of integers in float64). Returns a numpy scalar."""
    dt = np.dtype(_result_type(a, b))
    if op is np.true_divide and dt.kind in "iub":
        dt = np.dtype(np.float64)
    with np.errstate(all="ignore"):
        return op(np.asarray(a).astype(dt), np.asarray(b).astype(dt), dtype=dt)[()]


def _estimator_inputs(x, name):
    """The RemoteArrays an estimator reads, for one Execute: the minimum and
    maximum (for the ptp), then the standard deviation ('scott', 'doane'),
    Doane's g1 (the mean of the cubed standardized values, in NumPy's
    dtypes) or the 75th and 25th percentiles ('fd', 'auto')."""
    from gpuflow import _sorting, functions

    out = [x.min(), x.max()]
    if name in ("scott", "doane"):
        sigma = functions.std(x)
        out.append(sigma)
        if name == "doane" and x.size > 2:
            out.append(functions.mean(((x - functions.mean(x)) / sigma) ** 3))
    if name in ("fd", "auto"):
        out.append(_sorting.percentile(x, [75, 25]))
    return out


def _squared_norm(p):
    """``p.dot(p)`` as the installed NumPy computes it (its BLAS's rounding:
    some fuse the multiply and add, some do not), for the scores that a
    near-tie decides."""
    return p.dot(p)


def _stone_width(x, ptp_x, edges_range):
    """NumPy's _hist_bin_stone: the nbins in 1 .. max(100, sqrt(n)) of the
    least estimated integrated squared error. One Execute sums every
    histogram's squared frequencies on the server; the scores within
    rounding of the least (the formula ties exactly for some data: 3
    values, two of them in one of 9 bins, score as 1 bin does) are scored
    again here from their counts as NumPy does (``p_k.dot(p_k)`` of the
    installed NumPy, whose rounding then picks the bin count, the first
    of equal scores as ``min``)."""
    from gpuflow import _select, functions

    n = x.size
    if n <= 1 or ptp_x == 0:
        return 0
    upper = max(100, int(np.sqrt(n)))
    first_edge, last_edge = edges_range
    dots = []
    for nbins in builtins.range(1, upper + 1):
        edges, uniform = _equal_edges(x, first_edge, last_edge, nbins)
        p = _counts(x, None, edges, uniform) / n
        dots.append(functions.sum(p * p))
    dots = _select.evaluate_keeping(dots, x)

    def jhat(nbins, dot):
        hh = np.float64(_arith(np.true_divide, ptp_x, nbins))
        return (2 - (n + 1) * np.float64(dot)) / hh

    def slack(nbins, dot):  # a bound far above the rounding of either sum
        hh = np.float64(_arith(np.true_divide, ptp_x, nbins))
        return 1e-9 * (2 + (n + 1) * abs(np.float64(dot))) / abs(hh)

    scores = [jhat(k, dots[k - 1]) for k in builtins.range(1, upper + 1)]
    best = min(builtins.range(1, upper + 1), key=lambda k: scores[k - 1])
    close = [k for k in builtins.range(1, upper + 1)
             if scores[k - 1] - scores[best - 1]
             <= slack(k, dots[k - 1]) + slack(best, dots[best - 1])]
    if len(close) > 1:
        counts = _select.evaluate_keeping(
            [_counts(x, None, *_equal_edges(x, first_edge, last_edge, k)) for k in close], x)
        exact = {k: jhat(k, _squared_norm(c / n)) for k, c in zip(close, counts)}
        best = min(close, key=exact.__getitem__)
    if best == upper:
        warnings.warn("The number of bins estimated may be suboptimal.", RuntimeWarning,
                      stacklevel=4)
    return _arith(np.true_divide, ptp_x, best)


def _width(name, x, values, edges_range):
    """NumPy 2's estimate of the bin width from the evaluated inputs."""
    n = x.size
    ptp_x = _unsigned_subtract(values[1][()], values[0][()])

    def sqrt():
        return _arith(np.true_divide, ptp_x, np.sqrt(np.float64(n)))

    def sturges():
        return _arith(np.true_divide, ptp_x, np.log2(np.float64(n)) + 1.0)

    def fd():
        q75, q25 = values[2]
        return _arith(np.multiply, _arith(np.multiply, 2.0, np.subtract(q75, q25)),
                      n ** (-1.0 / 3.0))

    if name == "sqrt":
        return sqrt()
    if name == "sturges":
        return sturges()
    if name == "rice":
        return _arith(np.true_divide, ptp_x, 2.0 * n ** (1.0 / 3))
    if name == "scott":
        return _arith(np.multiply, (24.0 * np.pi ** 0.5 / n) ** (1.0 / 3.0), values[2][()])
    if name == "doane":
        if n > 2 and values[2][()] > 0.0:
            sg1 = np.sqrt(np.float64(6.0 * (n - 2) / ((n + 1.0) * (n + 3))))
            g1 = np.float64(np.absolute(values[3][()]))
            return _arith(np.true_divide, ptp_x,
                          1.0 + np.log2(np.float64(n)) + np.log2(1.0 + g1 / sg1))
        return 0.0
    if name == "fd":
        return fd()
    if name == "auto":
        # NumPy >= 2.3: FD held to at least half the sqrt width (gh-28426).
        return min(max(fd(), sqrt() / 2), sturges())
    return _stone_width(x, ptp_x, edges_range)


def _estimated_bins(a, name, range, weights):
    """(first_edge, last_edge, n) for a string ``bins``, as NumPy's
    _get_bin_edges: the estimator reads the values inside ``range`` (one
    Execute learns how many there are), its inputs come back in one
    Execute (with the minimum and maximum when there is no range), and the
    number of bins is ceil(range / width) (integer data: a width of at
    least 1; a zero width: one bin)."""
    from gpuflow import _select

    if name not in _ESTIMATORS:
        raise ValueError(f"{name!r} is not a valid estimator for `bins`")
    if weights is not None:
        raise TypeError("Automated estimation of the number of bins is not supported for "
                        "weighted data")
    if _inference.is_complex(a._expr.dtype):
        # NumPy's estimators fail on complex data (its ceil of a complex
        # width, or NumPy 2's percentile of complex values): the running
        # NumPy's error for a small complex sample of the same dtype.
        raise (_inference.numpy_error(np.histogram_bin_edges, np.array([0, 1j], a._expr.dtype),
                                      bins=name)
               or _inference._no_loop("ceil"))
    x = a
    if range is not None:
        first_edge, last_edge = _get_outer_edges(a, range)
        keep = _select.flatnonzero((a >= first_edge) & (a <= last_edge))
        if keep.size != a.size:
            x = a.take(keep)
    if x.size == 0:
        if range is None:
            first_edge, last_edge = _get_outer_edges(a, None)
        return first_edge, last_edge, 1
    values = _select.evaluate_keeping(_estimator_inputs(x, name), x)
    if range is None:
        first_edge, last_edge = _get_outer_edges(a, None, values[:2])
    width = _width(name, x, values, (first_edge, last_edge))
    if not width:
        return first_edge, last_edge, 1
    if _inference.kind(x._expr.dtype) in "iu" and width < 1:
        width = 1
    with np.errstate(all="ignore"):
        n = int(np.ceil(_arith(np.true_divide, _unsigned_subtract(last_edge, first_edge),
                               width)))
    return first_edge, last_edge, n


def _equal_edges(a, first_edge, last_edge, n):
    """NumPy's n + 1 equal edges in its bin type, and the uniform triple."""
    bin_type = _result_type(first_edge, last_edge, a._expr.dtype)
    if _inference.kind(bin_type) in "iu":
        bin_type = _inference.promote_types([_Type(bin_type, ()), _Type("float64", (), True)])
    edges = _linspace(first_edge, last_edge, n + 1, bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"Too many bins for data range. Cannot create {n} finite-sized bins.")
    return edges, (first_edge, last_edge, n)


def _get_bin_edges(a, bins, range, weights=None):
    """(edges as a host array, (first_edge, last_edge, n) for equal bins or
    None)."""
    if isinstance(bins, str):
        first_edge, last_edge, n = _estimated_bins(a, bins, range, weights)
        return _equal_edges(a, first_edge, last_edge, n)
    if np.ndim(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError as e:
            raise TypeError("`bins` must be an integer, a string, or an array") from e
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first_edge, last_edge = _get_outer_edges(a, range)
        return _equal_edges(a, first_edge, last_edge, n)
    if np.ndim(bins) == 1:
        edges = _host(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return edges, None
    raise ValueError("`bins` must be 1d, when an array")


def _counts(a, weights, edges, uniform):
    """The histogram node: int64 counts or the weights' dtype (complex
    weights: their real and imaginary parts binned apart, as NumPy sums
    them)."""
    from gpuflow import _bits, functions

    ra = _ra()
    ntype = "int64" if weights is None else weights._expr.dtype
    if (edges.dtype.kind == "c" or _inference.is_complex(a._expr.dtype)) and edges.size:
        return _complex_counts(a, weights, edges)
    if _inference.is_complex(ntype) and edges.size:
        parts = [_counts(a, ra.apply(part, (weights,)), edges, uniform)
                 for part in ("real", "imag")]
        return _bits.complex_from_parts(parts[0], parts[1], ntype)
    if edges.size == 0:
        return functions.zeros(0, ntype, session=a.session)
    if weights is not None and ntype == "bool" and uniform is None:
        raise _inference.UFuncTypeError(
            "Cannot cast ufunc 'add' output from dtype('int64') to dtype('bool') with casting "
            "rule 'same_kind'")
    operands = (a, edges) if weights is None else (a, edges, weights)
    if uniform is None:
        return ra.apply("histogram", operands, session=a.session)
    first_edge, last_edge, n = uniform
    norm_denom = _unsigned_subtract(last_edge, first_edge)
    sub_dtype = _result_type(edges.dtype.name, first_edge)
    div_dtype = _inference.promote_types([_Type(sub_dtype, ()),
                                          _Type(norm_denom.dtype.name, ())])
    attrs = {"uniform": True, "first_edge": float(first_edge),
             "norm_denom": float(norm_denom), "sub_dtype": sub_dtype, "div_dtype": div_dtype}
    return ra.apply("histogram", operands, attrs, session=a.session)


def _lexicographic_rank(a, edges):
    """int64, a's shape: how many edges are <= each value of ``a`` (complex
    data or edges) in NumPy's complex order (real part, then imaginary
    part); len(edges) for a value with a NaN part, which NumPy sorts after
    every edge. Edges whose real parts increase strictly are searched by
    the real part (one searchsorted, then one look at the edge of equal
    real part); others compare with each edge."""
    from gpuflow import _sorting

    ra = _ra()
    m = edges.size
    e = edges.astype(np.complex128)
    if np.all(e.real[:-1] < e.real[1:]):
        re = ra.apply("cast", (ra.apply("real", (a,)),), {"dtype": "float64"})
        im = ra.apply("cast", (ra.apply("imag", (a,)),), {"dtype": "float64"})
        e_re = ra.asarray(e.real, session=a.session)
        j = _sorting.searchsorted(e_re, re, side="left")
        at = ra.apply("minimum", (j, np.int64(m - 1)))
        tie = (e_re.take(at) == re) & (ra.asarray(e.imag, session=a.session).take(at) <= im)
        k = j + (tie & (j < m)).astype("int64")
    else:
        k = None
        for edge in e:
            step = (a >= edge).astype("int64")
            k = step if k is None else k + step
    return ra.apply("where", (ra.apply("isnan", (a,)), np.int64(m), k))


def _complex_counts(a, weights, edges):
    """NumPy's histogram of complex data (or of data against complex
    edges): each value in bin i where edges[i] <= value < edges[i + 1] in
    NumPy's complex order, a value equal to the last edge in the last bin
    (as NumPy's searchsorted of the sorted data places it); the bin
    indices are then counted (or weighted) by the histogram op's equal
    bins [k - 0.5, k + 0.5), as bincount counts them."""
    from gpuflow import functions

    ra = _ra()
    m = edges.size
    if m < 2:
        ntype = "int64" if weights is None else weights._expr.dtype
        return functions.zeros(0, ntype, session=a.session)
    k = _lexicographic_rank(a, edges)
    last = np.complex128(edges[-1])
    index = ra.apply("where", ((k == m) & (a == last), np.int64(m - 2), k - 1))
    centres = np.arange(m, dtype=np.float64) - 0.5
    return _counts(index, weights, centres, (-0.5, float(m) - 1.5, m - 1))


def histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram: (hist, bin_edges) as RemoteArrays; NumPy's edges,
    bins and sums (see docs/ops.md, histogram)."""
    a, weights = _ravel_and_check_weights(a, weights)
    edges, uniform = _get_bin_edges(a, bins, range, weights)
    n = _counts(a, weights, edges, uniform)
    bin_edges = _ra().asarray(edges, session=a.session)
    if density:
        widths = np.diff(edges)
        if widths.dtype.kind == "c":  # NumPy's float array of them drops the imaginary parts
            warnings.warn("Casting complex values to real discards the imaginary part",
                          getattr(np, "exceptions", np).ComplexWarning, stacklevel=2)
            widths = widths.real
        db = np.array(widths, float)
        return n / db / n.sum(), bin_edges
    return n, bin_edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """numpy.histogram_bin_edges: the edges numpy.histogram would use."""
    a, weights = _ravel_and_check_weights(a, weights)
    edges, _ = _get_bin_edges(a, bins, range, weights)
    return _ra().asarray(edges, session=a.session)


def _monotonicity(bins):
    """numpy's check_array_monotonic: 1 non-decreasing, -1 non-increasing,
    0 neither (compared as float64, so NaN breaks an increasing run)."""
    b = np.asarray(bins, dtype=np.float64)
    if b.size == 0:
        return 1
    last = b[0]
    i = 1
    while i < b.size and b[i] == last:
        i += 1
    if i == b.size:
        return 1
    nxt = b[i]
    if last < nxt:
        for j in range(i + 1, b.size):
            last, nxt = nxt, b[j]
            if last > nxt:
                return 0
        return 1
    for j in range(i + 1, b.size):
        last, nxt = nxt, b[j]
        if last < nxt:
            return 0
    return -1


def digitize(x, bins, right=False):
    """numpy.digitize: the index of the bin of each value of ``x`` (int64,
    x's shape), through searchsorted."""
    from gpuflow import _sorting

    ra = _ra()
    session = x.session if isinstance(x, ra.RemoteArray) else \
        (bins.session if isinstance(bins, ra.RemoteArray) else None)
    if not isinstance(x, ra.RemoteArray):
        x = ra.asarray(x, session=session)
    if _inference.is_complex(x._expr.dtype):
        raise TypeError("x may not be complex")
    host = _host(bins)
    if host.ndim > 1:
        raise ValueError("object too deep for desired array")
    if host.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    mono = _monotonicity(host)
    if mono == 0:
        raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    b = bins if isinstance(bins, ra.RemoteArray) else ra.asarray(host, session=x.session)
    if mono == -1:
        return len(host) - _sorting.searchsorted(b[::-1], x, side=side)
    return _sorting.searchsorted(b, x, side=side)


# ---- numpy.histogramdd and histogram2d ------------------------------------------------

def _sample_columns(sample):
    """NumPy's (N, D) sample: a 2-D array as it is, anything else (a
    sequence of coordinate arrays) as the columns of atleast_2d(sample).T."""
    from gpuflow import functions

    ra = _ra()
    if isinstance(sample, (ra.RemoteArray, np.ndarray)) and sample.ndim == 2:
        return sample if isinstance(sample, ra.RemoteArray) else ra.asarray(sample)
    if isinstance(sample, ra.RemoteArray):
        if sample.ndim > 2:
            raise ValueError(f"too many values to unpack (expected 2, got {sample.ndim})")
        return sample.reshape((-1, 1))
    if isinstance(sample, (list, tuple)) and any(isinstance(s, ra.RemoteArray) for s in sample):
        session = ra.session_of(list(sample))
        cols = [s if isinstance(s, ra.RemoteArray) else ra.asarray(s, session=session)
                for s in sample]
        if any(c.ndim != 1 for c in cols):
            raise ValueError("gpuflow.histogramdd takes a sequence of 1-D coordinate arrays")
        return functions.stack(cols, axis=1)
    host = np.atleast_2d(np.asarray(sample)).T
    if host.ndim != 2:
        raise ValueError(f"too many values to unpack (expected 2, got {host.ndim})")
    return ra.asarray(host)


def _scattered_counts(flat, weights, length, session):
    """numpy.bincount(flat, weights, minlength=length) for int64 indices
    known to lie in [0, length): int64 counts or float64 sums."""
    from gpuflow import _select, functions

    if weights is None:
        return _select.scatter(functions.zeros(length, "int64", session=session), flat,
                               np.int64(1), "add")
    return _select.scatter(functions.zeros(length, "float64", session=session), flat,
                           weights.astype("float64"), "add")


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """numpy.histogramdd: (hist, edges), the float64 histogram of the (N, D)
    sample (or a sequence of D coordinate arrays) and a list of D edge
    arrays, as NumPy computes them: per dimension equal edges
    (numpy.linspace of the outer edges) or the given ones, each value's bin
    from searchsorted (side right; a value on the last edge goes in the last
    bin), one scatter-add of the flattened multi-index. The minima and
    maxima come back in one Execute for every dimension without a range."""
    from gpuflow import _select, _sorting

    ra = _ra()
    x = _sample_columns(sample)
    n_samples, dims = x.shape
    session = x.session
    if weights is not None:
        weights = weights if isinstance(weights, ra.RemoteArray) else \
            ra.asarray(weights, session=session)
        if weights.shape != (n_samples,):
            raise ValueError("The weights and list don't have the same length.")
        if _inference.is_complex(weights._expr.dtype):  # NumPy's bincount of the weights
            raise TypeError(f"Cannot cast array data from dtype('{weights._expr.dtype}') to "
                            "dtype('float64') according to the rule 'safe'")
    try:
        if len(bins) != dims:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
    except TypeError:
        bins = dims * [bins]
    if range is None:
        range = (None,) * dims
    elif len(range) != dims:
        raise ValueError("range argument must have one entry per dimension")
    extremes = None
    if n_samples and any(np.ndim(bins[i]) == 0 and range[i] is None
                         for i in builtins.range(dims)):
        extremes = _select.evaluate_keeping([x.min(axis=0), x.max(axis=0)], x)
    edges, nbin = [], []
    for i in builtins.range(dims):
        column = x[:, i]
        if np.ndim(bins[i]) == 0:
            if bins[i] < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            own = None if extremes is None else (extremes[0][i], extremes[1][i])
            smin, smax = _get_outer_edges(column, range[i], own)
            try:
                n = operator.index(bins[i])
            except TypeError as e:
                raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
            dt = _inference.promote_types([_type_of(smin), _type_of(smax),
                                           _Type("float64", (), True)])
            edge = _linspace(smin, smax, n + 1, dt)
        elif np.ndim(bins[i]) == 1:
            edge = _host(bins[i])
            if np.any(edge[:-1] > edge[1:]):
                raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
        else:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
        edges.append(edge)
        nbin.append(len(edge) + 1)  # an outlier bin at each end
    flat = None
    stride = 1
    for i in reversed(builtins.range(dims)):
        column = x[:, i]
        if _inference.is_complex(column._expr.dtype) or edges[i].dtype.kind == "c":
            index = _lexicographic_rank(column, edges[i])  # searchsorted's in complex order
        else:
            index = _sorting.searchsorted(ra.asarray(edges[i], session=session), column,
                                          side="right")
        index = index - (column == edges[i][-1]).astype("int64")
        term = index * stride if stride != 1 else index
        flat = term if flat is None else flat + term
        stride *= nbin[i]
    hist = _scattered_counts(flat, weights, stride, session).astype("float64")
    hist = hist.reshape(tuple(nbin))[(slice(1, -1),) * dims]
    if density:
        s = hist.sum()
        for i in builtins.range(dims):
            shape = [1] * dims
            shape[i] = nbin[i] - 2
            hist = hist / ra.asarray(np.diff(edges[i]).reshape(shape), session=session)
        hist = hist / s
    return hist, [ra.asarray(e, session=session) for e in edges]


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """numpy.histogram2d: histogramdd of the coordinates (x, y); returns
    (hist, xedges, yedges)."""
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    try:
        count = len(bins)
    except TypeError:
        count = 1
    if count != 1 and count != 2:
        both = _host(bins)
        bins = [both, both]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


__all__ = ["digitize", "histogram", "histogram2d", "histogram_bin_edges", "histogramdd"]
