"""NumPy's functions that NumPy itself writes as compositions of ufuncs,
reductions and slices, written the same way on the server's ops (each fuses
into as few steps as its ops allow: an elementwise prologue feeds one
reduction, slices and a subtraction fuse into one kernel):

    gf.nanmean(x, axis=0); gf.nanmax(x); gf.ptp(x, axis=1); gf.average(x, weights=w)
    gf.isclose(a, b); gf.allclose(a, b); gf.array_equal(a, b); gf.nan_to_num(x)
    gf.diff(x, n=2); gf.gradient(f, 0.1); gf.unwrap(phase); gf.convolve(a, v, "same")
    gf.interp(x, xp, fp); gf.angle(x); gf.real(x); gf.count_nonzero(x, axis=0)

Where NumPy's answer depends on the data in a way a lazy graph cannot
branch on, the function evaluates that part first (``allclose`` returns a
bool; ``average`` checks that the weights do not sum to zero), as CuPy does.
"""

import math

import numpy as np

from gpuflow import _inference
from gpuflow._ufunc import UFUNCS, cast, prepare, type_of
from gpuflow.remote_array import RemoteArray, apply, asarray, reduce, scan, session_of

_isnan = UFUNCS["isnan"]


def _remote(x, session=None):
    if isinstance(x, RemoteArray):
        return x
    return asarray(x, session=session_of((), session))


def _is_float(a):
    return _inference.is_float(a._expr.dtype)


def _may_hold_nan(a):
    """Float or complex (a complex value with a NaN part is NaN)."""
    return _inference.is_float(a._expr.dtype) or _inference.is_complex(a._expr.dtype)


def _nan_free(a, fill):
    return apply("where", (apply("isnan", (a,)), fill, a))


def _float_limits(dtype):
    if dtype == "bfloat16":
        big = float(np.float32(3.3895313892515355e38))
        return big, -big
    info = np.finfo(dtype)
    return float(info.max), float(info.min)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """numpy.nan_to_num: NaN -> ``nan``, +-inf -> ``posinf``/``neginf`` (the
    dtype's largest finite values by default); integers unchanged."""
    x = _remote(x)
    if _inference.is_complex(x._expr.dtype):  # NumPy's: each part as a real array
        from gpuflow._bits import complex_from_parts

        return complex_from_parts(nan_to_num(x.real, copy, nan, posinf, neginf),
                                  nan_to_num(x.imag, copy, nan, posinf, neginf), x._expr.dtype)
    if not _is_float(x):
        return x.copy()
    big, small = _float_limits(x._expr.dtype)
    big = big if posinf is None else posinf
    small = small if neginf is None else neginf
    out = apply("where", (apply("isnan", (x,)), nan,
                          apply("where", (x == math.inf, big,
                                          apply("where", (x == -math.inf, small, x))))))
    return cast(out, x._expr.dtype)


# ---- NaN-ignoring reductions -------------------------------------------------------------


def _nan_extreme(op, a, axis, out, keepdims, fill):
    from gpuflow.remote_array import rebind_out

    a = _remote(a)
    if not _is_float(a):
        return reduce(op, a, axis, keepdims, out=out)
    value = reduce(op, _nan_free(a, fill), axis, keepdims)
    all_nan = reduce("all", apply("isnan", (a,)), axis, keepdims)
    return rebind_out(out, apply("where", (all_nan, math.nan, value)), "nan" + op)


def nanmin(a, axis=None, out=None, keepdims=False):
    """numpy.nanmin: NaNs ignored; an all-NaN slice gives NaN."""
    return _nan_extreme("min", a, axis, out, keepdims, math.inf)


def nanmax(a, axis=None, out=None, keepdims=False):
    """numpy.nanmax: NaNs ignored; an all-NaN slice gives NaN."""
    return _nan_extreme("max", a, axis, out, keepdims, -math.inf)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    """numpy.nansum: NaNs count as zero."""
    a = _remote(a)
    return reduce("sum", _nan_free(a, 0) if _may_hold_nan(a) else a, axis, keepdims, dtype=dtype,
                  out=out)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False):
    """numpy.nanprod: NaNs count as one."""
    a = _remote(a)
    return reduce("prod", _nan_free(a, 1) if _may_hold_nan(a) else a, axis, keepdims, dtype=dtype,
                  out=out)


def nancumsum(a, axis=None, dtype=None, out=None):
    """numpy.nancumsum: NaNs count as zero."""
    a = _remote(a)
    return scan("cumsum", _nan_free(a, 0) if _may_hold_nan(a) else a, axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """numpy.nancumprod: NaNs count as one."""
    a = _remote(a)
    return scan("cumprod", _nan_free(a, 1) if _may_hold_nan(a) else a, axis, dtype, out)


def _count(a, axis, keepdims):
    return reduce("sum", apply("logical_not", (apply("isnan", (a,)),)), axis, keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """numpy.nanmean: the mean of the non-NaN values (NaN for none), in the
    sum's dtype."""
    from gpuflow.remote_array import rebind_out

    a = _remote(a)
    if not _may_hold_nan(a):
        return reduce("mean", a, axis, keepdims, dtype=dtype, out=out)
    total = reduce("sum", _nan_free(a, 0), axis, keepdims, dtype=dtype)
    mean = cast(total / _count(a, axis, keepdims), total._expr.dtype)
    return rebind_out(out, mean, "nanmean")


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """numpy.nanvar: NaNs ignored; NaN where fewer than ddof + 1 values."""
    from gpuflow.remote_array import rebind_out

    a = _remote(a)
    if not _is_float(a):
        return _var(a, axis, dtype, out, ddof, keepdims)
    nan = apply("isnan", (a,))
    arr = _nan_free(a, 0)
    count = _count(a, axis, True)
    avg = reduce("sum", arr, axis, True, dtype=dtype)
    avg = cast(avg / count, avg._expr.dtype)
    dev = apply("where", (nan, 0, cast(arr - avg, arr._expr.dtype)))
    var = reduce("sum", dev * dev, axis, keepdims, dtype=dtype)
    if not keepdims:
        count = _count(a, axis, False)
    dof = count - ddof
    var = cast(var / dof, var._expr.dtype)
    return rebind_out(out, apply("where", (dof <= 0, math.nan, var)), "nanvar")


def _var(a, axis, dtype, out, ddof, keepdims):
    from gpuflow import functions

    return functions.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """numpy.nanstd: the square root of nanvar."""
    from gpuflow import functions
    from gpuflow.remote_array import rebind_out

    a = _remote(a)
    if not _is_float(a):
        return functions.std(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
    var = nanvar(a, axis, dtype, None, ddof, keepdims)
    return rebind_out(out, cast(apply("sqrt", (var,)), var._expr.dtype), "nanstd")


def ptp(a, axis=None, out=None, keepdims=False):
    """numpy.ptp: max - min (same dtype; integers wrap, as NumPy)."""
    from gpuflow.remote_array import rebind_out

    a = _remote(a)
    spread = reduce("max", a, axis, keepdims) - reduce("min", a, axis, keepdims)
    return rebind_out(out, spread, "ptp")


def count_nonzero(a, axis=None, *, keepdims=False):
    """numpy.count_nonzero (a 0-d int64 array for axis=None, as CuPy)."""
    return reduce("sum", _remote(a) != 0, axis, keepdims)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """numpy.average. Weights that sum to zero raise ZeroDivisionError, as in
    NumPy, which means evaluating their sum first (one Execute)."""
    from gpuflow import functions

    a = _remote(a)
    if weights is None:
        avg = reduce("mean", a, axis, keepdims)
        scale = functions.full(avg.shape, a.size / max(avg.size, 1), avg.dtype, session=a.session)
        return (avg, scale) if returned else avg
    w = _remote(weights, a.session)
    if _inference.kind(a._expr.dtype) in "biu":
        result = _inference.promote_types([_inference.Type(a._expr.dtype, ()),
                                           _inference.Type(w._expr.dtype, ()),
                                           _inference.Type("float64", ())])
    else:
        result = _inference.promote_dtypes(a._expr.dtype, w._expr.dtype)
    if a.shape != w.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.ndim != 1:
            raise TypeError("1D weights expected when shapes of a and weights differ.")
        ax = _inference.normalize_axis(axis, a.ndim)
        if w.shape[0] != a.shape[ax]:
            raise ValueError("Length of weights not compatible with specified axis.")
        shape = [1] * a.ndim
        shape[ax] = w.shape[0]
        w = w.reshape(shape)
    scale = reduce("sum", functions.broadcast_to(w, a.shape), axis, keepdims, dtype=result)
    if bool(reduce("any", scale == 0)):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = reduce("sum", UFUNCS["multiply"](a, w, dtype=result), axis, keepdims) / scale
    if returned:
        return avg, (scale if scale.shape == avg.shape else functions.broadcast_to(scale,
                                                                                  avg.shape))
    return avg


# ---- comparisons ------------------------------------------------------------------------


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.isclose, NumPy 2's formula: |a - b| <= atol + rtol * |b| for
    finite b, or a == b (infinities)."""
    session = session_of((a, b, rtol, atol))
    x, y = prepare(a, session), prepare(b, session)
    if isinstance(y, (RemoteArray, np.generic)):
        y = cast(y, _inference.promote_types([type_of(y), _inference.Type.weak_scalar(1.0)]))
    elif isinstance(y, int) and not isinstance(y, bool):
        y = float(y)
    finite_y = UFUNCS["isfinite"](y)
    close = apply("le", (abs(x - y), atol + rtol * abs(y)), session=session)
    result = (close & finite_y) | apply("eq", (x, y))
    if equal_nan:
        result = result | (apply("isnan", (x,)) & apply("isnan", (y,)))
    return result


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.allclose: a Python bool (evaluates, as NumPy and CuPy)."""
    return bool(reduce("all", isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    """numpy.array_equal, as a 0-d bool array (CuPy's form; ``if`` and
    ``bool()`` evaluate it)."""
    from gpuflow import functions

    session = session_of((a1, a2))
    a1, a2 = _remote(a1, session), _remote(a2, session)
    if a1.shape != a2.shape:
        return functions.full((), False, session=session)
    same = a1 == a2
    if equal_nan and _is_float(a1) and _is_float(a2):
        same = same | (apply("isnan", (a1,)) & apply("isnan", (a2,)))
    return reduce("all", same)


def array_equiv(a1, a2):
    """numpy.array_equiv: equal after broadcasting (a 0-d bool array)."""
    from gpuflow import functions

    session = session_of((a1, a2))
    a1, a2 = _remote(a1, session), _remote(a2, session)
    try:
        _inference.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return functions.full((), False, session=session)
    return reduce("all", a1 == a2)


# ---- differences -----------------------------------------------------------------------


def _along(ndim, axis, key):
    full = [slice(None)] * ndim
    full[axis] = key
    return tuple(full)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """numpy.diff: ``n`` times a[1:] - a[:-1] along ``axis`` (not_equal
    for bool), after prepending/appending values."""
    from gpuflow import functions

    if n == 0:
        return _remote(a)
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = _remote(a)
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = _inference.normalize_axis(axis, a.ndim)
    def edge(values):
        values = _remote(values, a.session)
        if values.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            values = functions.broadcast_to(values, shape)
        return values

    parts = ([edge(prepend)] if prepend is not None else []) + [a] + (
        [edge(append)] if append is not None else [])
    if len(parts) > 1:
        a = functions.concatenate(parts, axis)
    for _ in range(n):
        hi, lo = a[_along(a.ndim, axis, slice(1, None))], a[_along(a.ndim, axis, slice(None, -1))]
        a = hi != lo if a._expr.dtype == "bool" else hi - lo
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """numpy.ediff1d: differences of the flattened array, with values
    before and after (which must cast to its dtype under same_kind)."""
    from gpuflow import functions

    a = _remote(ary).reshape(-1)
    pieces = []
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is None:
            pieces.append(None)
            continue
        extra = _remote(extra, a.session)
        if not _inference.can_cast(extra._expr.dtype, a._expr.dtype, "same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                            "`same_kind` rule.")
        pieces.append(extra.reshape(-1).astype(a.dtype, copy=False))
    d = a[1:] - a[:-1]
    parts = [p for p in (pieces[0], d, pieces[1]) if p is not None]
    return functions.concatenate(parts) if len(parts) > 1 else d


def gradient(f, *varargs, axis=None, edge_order=1):
    """numpy.gradient: second-order central differences inside, first- or
    second-order one-sided ones at the edges; spacings as scalars or
    coordinate arrays (evaluated here, as NumPy inspects them)."""
    from gpuflow import functions

    f = _remote(f)
    nd = f.ndim
    axes = list(range(nd)) if axis is None else [
        _inference.normalize_axis(x, nd) for x in (axis if isinstance(axis, (tuple, list))
                                                    else [axis])]
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    if not varargs:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        dx = []
        for i, distances in enumerate(varargs):
            distances = np.asarray(distances)
            if distances.ndim == 0:
                dx.append(distances[()])
                continue
            if distances.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(distances) != f.shape[axes[i]]:
                raise ValueError("when 1d, distances must match the length of the corresponding "
                                 "dimension")
            if distances.dtype.kind in "iub":
                distances = distances.astype(np.float64)
            step = np.diff(distances)
            dx.append(step[0] if (step == step[0]).all() else step)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f._expr.dtype
    if _inference.kind(otype) in "iu":
        # NumPy: integers in float64; inexact dtypes (complex too) keep theirs,
        # bool stays bool (its subtraction raises NumPy's TypeError).
        f, otype = f.astype("float64"), "float64"
    outs = []
    for ax, h in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")

        def at(key, ax=ax):
            return f[_along(nd, ax, key)]

        uniform = np.ndim(h) == 0
        if not uniform:
            shape = [1] * nd
            shape[ax] = -1
            d1, d2 = h[:-1], h[1:]
            ca = (-d2 / (d1 * (d1 + d2))).reshape(shape)
            cb = ((d2 - d1) / (d1 * d2)).reshape(shape)
            cc = (d1 / (d2 * (d1 + d2))).reshape(shape)
            inner = ca * at(slice(None, -2)) + cb * at(slice(1, -1)) + cc * at(slice(2, None))
        else:
            inner = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * h)
        if edge_order == 1:
            first = (at(slice(1, 2)) - at(slice(0, 1))) / (h if uniform else h[0])
            last = (at(slice(-1, None)) - at(slice(-2, -1))) / (h if uniform else h[-1])
        else:
            if uniform:
                a, b, c = -1.5 / h, 2.0 / h, -0.5 / h
            else:
                d1, d2 = h[0], h[1]
                a = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
                b = (d1 + d2) / (d1 * d2)
                c = -d1 / (d2 * (d1 + d2))
            first = a * at(slice(0, 1)) + b * at(slice(1, 2)) + c * at(slice(2, 3))
            if uniform:
                a, b, c = 0.5 / h, -2.0 / h, 1.5 / h
            else:
                d1, d2 = h[-2], h[-1]
                a = d2 / (d1 * (d1 + d2))
                b = -(d2 + d1) / (d1 * d2)
                c = (2.0 * d2 + d1) / (d2 * (d1 + d2))
            last = a * at(slice(-3, -2)) + b * at(slice(-2, -1)) + c * at(slice(-1, None))
        pieces = [cast(p, otype) for p in (first, inner, last)]
        outs.append(functions.concatenate(pieces, axis=ax))
    return outs[0] if len(outs) == 1 else tuple(outs)


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    """numpy.unwrap: jumps larger than ``discont`` (period / 2) taken back
    by multiples of ``period``."""
    from gpuflow import functions

    p = _remote(p)
    axis = _inference.normalize_axis(axis, p.ndim)
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = _inference.promote_types([_inference.Type(dd._expr.dtype, dd.shape),
                                      _inference.Type.weak_scalar(period)])
    if _inference.kind(dtype) in "iu":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = apply("mod", (dd - low, period)) + low
    if ambiguous:
        ddmod = apply("where", ((ddmod == low) & (dd > 0), high, ddmod))
    correction = apply("where", (abs(dd) < discont, 0, ddmod - dd))
    head = p[_along(p.ndim, axis, slice(0, 1))].astype(dtype, copy=False)
    tail = p[_along(p.ndim, axis, slice(1, None))] + scan("cumsum", correction, axis)
    return functions.concatenate([head, cast(tail, dtype)], axis=axis)


# ---- convolution and interpolation --------------------------------------------------------

# convolve builds a (shorter) x (sum of lengths) shifted copy of the longer
# operand for one matmul; beyond this many elements an FFT would be needed.
_CONVOLVE_LIMIT = 1 << 28


def convolve(a, v, mode="full"):
    """numpy.convolve of 1-D arrays, as one matmul of the shorter operand
    with shifted copies of the longer one (O(len(a) * len(v)))."""
    from gpuflow import functions

    session = session_of((a, v))
    a, v = _remote(a, session), _remote(v, session)
    a = a.reshape(1) if a.ndim == 0 else a
    v = v.reshape(1) if v.ndim == 0 else v
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError("object too deep for desired array")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    modes = {"full": 2, "same": 1, "valid": 0, 2: 2, 1: 1, 0: 0}
    if mode not in modes:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    if m * (n + m) > _CONVOLVE_LIMIT:
        raise NotImplementedError(f"convolve of lengths {n} and {m} needs an FFT op gpuflow does "
                                  "not have")
    length = n + m
    padded = functions.concatenate([a, functions.zeros(m, a.dtype, session=session)])
    rows = functions.broadcast_to(padded, (m, length)).reshape(-1)[:m * (length - 1)]
    full = functions.matmul(v, rows.reshape(m, length - 1))
    kind = modes[mode]
    if kind == 2:
        return full
    if kind == 1:
        start = (m - 1) // 2
        return full[start:start + n]
    return full[m - 1:n]


def correlate(a, v, mode="valid"):
    """numpy.correlate of 1-D arrays (real: convolve with v reversed)."""
    from gpuflow import functions

    session = session_of((a, v))
    a, v = _remote(a, session), _remote(v, session)
    swapped = v.size > a.size
    if swapped:
        a, v = v, a
    result = convolve(a, functions.flip(v), mode)
    return functions.flip(result) if swapped else result


def interp(x, xp, fp, left=None, right=None, period=None):
    """numpy.interp (float64), as one reduction over the intervals
    (O(len(x) * len(xp)); xp must increase, as NumPy requires)."""
    from gpuflow import functions

    session = session_of((x, xp, fp))
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        xp_h, fp_h = np.asarray(xp, np.float64), np.asarray(fp, np.float64)
        if xp_h.ndim != 1 or fp_h.ndim != 1:
            raise ValueError("Data points must be 1-D sequences")
        if xp_h.shape[0] != fp_h.shape[0]:
            raise ValueError("fp and xp are not of the same length")
        xp_h = xp_h % period
        order = np.argsort(xp_h)
        xp_h, fp_h = xp_h[order], fp_h[order]
        xp_h = np.concatenate((xp_h[-1:] - period, xp_h, xp_h[0:1] + period))
        fp_h = np.concatenate((fp_h[-1:], fp_h, fp_h[0:1]))
        x = apply("mod", (cast(_remote(x, session), "float64"), period))
        xp, fp = xp_h, fp_h
    x = cast(_remote(x, session), "float64")
    xp = cast(_remote(xp, session), "float64")
    fp = cast(_remote(fp, session), "float64")
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("Data points must be 1-D sequences")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("fp and xp are not of the same length.")
    if xp.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    m = xp.shape[0]
    left = fp[0] if left is None else left
    right = fp[-1] if right is None else right
    if m == 1:  # NumPy's one-point rule: NaN falls through to fp[0]
        return functions.where(x < xp[0], left, functions.where(x > xp[0], right, fp[0]))
    xs = functions.expand_dims(x, -1)
    lo_x, hi_x, lo_f, hi_f = xp[:-1], xp[1:], fp[:-1], fp[1:]
    slope = (hi_f - lo_f) / (hi_x - lo_x)
    there = slope * (xs - lo_x) + lo_f
    back = slope * (xs - hi_x) + hi_f
    value = functions.where(_isnan(there), functions.where(
        _isnan(back) & (lo_f == hi_f), lo_f, back), there)
    value = functions.where(xs == lo_x, lo_f, value)
    inside = (lo_x <= xs) & (xs < hi_x)
    inner = reduce("sum", functions.where(inside, value, 0.0), -1)
    result = functions.where(x == xp[-1], fp[-1], inner)
    result = functions.where(x > xp[-1], right, functions.where(x < xp[0], left, result))
    return functions.where(_isnan(x), x, result)


# ---- real and imaginary parts (gpuflow's dtypes are real) ------------------------------


def real(val):
    """numpy.real: the real part (the array itself for real dtypes)."""
    return _remote(val).real


def imag(val):
    """numpy.imag: the imaginary part (zeros for real dtypes)."""
    return _remote(val).imag


def _is_complex(a):
    return _inference.is_complex(a._expr.dtype)


def real_if_close(a, tol=100):
    """numpy.real_if_close: the real part when every imaginary part is within
    ``tol`` machine epsilons of zero (``tol`` > 1), else the array. Deciding
    needs the values, so a complex array is evaluated here."""
    a = _remote(a)
    if not _is_complex(a):
        return a
    if tol > 1:
        tol = tol * float(np.finfo(_inference.real_dtype(a._expr.dtype)).eps)
    close = reduce("all", abs(a.imag) < tol, None)
    return a.real if bool(close.get()) else a


def angle(z, deg=False):
    """numpy.angle: arctan2(imag, real) in radians (degrees with ``deg``);
    for a real array arctan2(0, z) (0, or pi for negatives)."""
    session = session_of((z,))
    z = prepare(z, session)
    if isinstance(z, RemoteArray) and _is_complex(z):
        a = apply("angle", (z,))
    elif isinstance(z, (complex, np.complexfloating)):
        a = apply("angle", (asarray(np.asarray(z), session=session),))
    else:
        a = UFUNCS["arctan2"](0, z)
    return cast(a * (180.0 / math.pi), a._expr.dtype) if deg else a


def iscomplexobj(x):
    """numpy.iscomplexobj: whether the dtype is complex (not the values)."""
    if isinstance(x, RemoteArray):
        return _is_complex(x)
    return bool(np.iscomplexobj(x))


def isrealobj(x):
    """numpy.isrealobj: not iscomplexobj."""
    return not iscomplexobj(x)


def iscomplex(x):
    """numpy.iscomplex: imag != 0 for complex arrays, all false otherwise."""
    x = _remote(x)
    if _is_complex(x):
        return x.imag != 0
    return apply("full", (False,), {"shape": list(x.shape)}, session=x.session)


def isreal(x):
    """numpy.isreal: imag == 0 for complex arrays, all true otherwise."""
    x = _remote(x)
    if _is_complex(x):
        return x.imag == 0
    return apply("full", (True,), {"shape": list(x.shape)}, session=x.session)


# ---- more of NumPy's compositions --------------------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """numpy.trapezoid (trapz): sum(d * (y[1:] + y[:-1]) / 2) along axis."""
    y = _remote(y)
    axis = _inference.normalize_axis(axis, y.ndim)
    if x is None:
        d = dx
    else:
        x = _remote(x, y.session)
        if x.ndim == 1:
            d = diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(x, axis=axis)
    upper = y[_along(y.ndim, axis, slice(1, None))]
    lower = y[_along(y.ndim, axis, slice(None, -1))]
    return reduce("sum", d * (upper + lower) / 2.0, axis)


trapz = trapezoid


# The machine epsilon of each float dtype (sin(eps) / eps rounds to 1 in each).
_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def sinc(x):
    """numpy.sinc: sin(pi x) / (pi x), NumPy 2's formula. ``pi`` is a weak
    Python float, so float16 and float32 keep their dtype (integers and
    bool give float64); where pi x is 0 it becomes the dtype's eps, whose
    sinc rounds to exactly 1."""
    y = math.pi * _remote(x)
    y = apply("where", (y != 0, y, _EPS[y._expr.dtype]))
    return apply("sin", (y,)) / y


def _select_operand(value, session):
    """A choice or default of numpy.select as NumPy 2 takes it: a Python
    int, float or complex (exactly, so not a bool) stays a weak scalar,
    anything else is an array (a 0-d one a strong numpy scalar here)."""
    if type(value) in (int, float, complex) or isinstance(value, RemoteArray):
        return value
    v = np.asarray(value)
    return v[()] if v.ndim == 0 else _remote(v, session)


def _select_value(value, dtype):
    """A weak choice or default in select's result dtype, converted as NumPy
    2 converts it: the scalar only takes part in finding the dtype, its
    value then goes through an int64 (float64) array that full and copyto
    cast, so an int out of the dtype's range wraps (no OverflowError)."""
    if isinstance(value, complex) and not _inference.is_complex(dtype):
        raise TypeError("cannot convert a complex value to " + dtype)
    if dtype == "bfloat16":
        return float(value)
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()]


def select(condlist, choicelist, default=0):
    """numpy.select: the first choice whose condition holds, else default.
    Python scalars among the choices and the default are weak, as in
    NumPy 2: ``select([m > 5], [m], 0)`` keeps an int16 m int16."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    session = session_of(list(condlist) + list(choicelist) + [default])
    values = [_select_operand(v, session) for v in list(choicelist) + [default]]
    dtype = _inference.promote_types([type_of(v) for v in values])
    values = [_select_value(v, dtype) if type(v) in (int, float, complex) else v
              for v in values]
    conds = [_remote(c, session) for c in condlist]
    for i, c in enumerate(conds):
        if c._expr.dtype != "bool":
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = values[-1]
    for c, v in zip(reversed(conds), reversed(values[:-1])):
        result = apply("where", (c, v, result))
    shape = _inference.broadcast_shapes(*([c.shape for c in conds] +
                                          [np.shape(v) if not isinstance(v, RemoteArray)
                                           else v.shape for v in values]))
    from gpuflow import functions

    return functions.broadcast_to(cast(result, dtype), shape)


__all__ = [
    "select", "sinc", "trapezoid", "trapz",
    "allclose", "angle", "array_equal", "array_equiv", "average", "convolve", "correlate",
    "count_nonzero", "diff", "ediff1d", "gradient", "imag", "interp", "iscomplex",
    "iscomplexobj", "isclose", "isreal", "isrealobj", "nan_to_num", "nancumprod", "nancumsum",
    "nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar", "ptp", "real",
    "real_if_close", "unwrap",
]
