"""Sorting and the statistics NumPy defines through it, on the server's
sort, argsort and searchsorted ops (docs/ops.md, "Sorting"):

    gf.sort(x, axis=0); gf.argsort(x); x.sort()          # one node each
    gf.searchsorted(edges, v, side="right", sorter=order)
    gf.partition(x, 3); gf.lexsort((b, a))
    gf.median(x, axis=-1); gf.quantile(x, [0.1, 0.9], method="nearest")
    gf.nanpercentile(x, 95, axis=(0, 1), keepdims=True)

Every sort is stable (``kind`` is accepted as NumPy takes it and every kind
gives the stable result), NaN sorts last. partition and argpartition sort
fully, which satisfies NumPy's contract. The quantiles sort once and gather
at positions computed as NumPy computes them: on the client from the axis
length, or, for the nan- functions, on the server from each row's count of
non-NaN values (NaNs sort last, so they are the first ``count``).
"""

import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, apply, asarray, session_of


def _remote(x, session=None):
    if isinstance(x, RemoteArray):
        return x
    return asarray(x, session=session_of((), session))


def _check_kind(kind, stable):
    if kind is not None and stable is not None:
        raise ValueError("`kind` and `stable` parameters can't be provided at the same time. "
                         "Use only one of them.")
    if kind is None:
        return
    if not isinstance(kind, str) or not kind or kind[0].lower() not in "qhms":
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")


def _check_order(order):
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")


def _complex_argsort(a, axis):
    """argsort of complex values in NumPy's order (R + Rj < R + nanj <
    nan + Rj < nan + nanj, then real part, then imaginary part): a lexsort
    of (NaN class, real, imag), as the server's sort takes no complex."""
    from gpuflow import functions

    if axis is None:
        a, axis = a.reshape(-1), -1
    else:
        axis = _inference.normalize_axis(operator.index(axis), a.ndim)
    real, imag = a.real, a.imag
    nan_class = functions.isnan(real).astype("int8") * 2 + functions.isnan(imag).astype("int8")
    return a, lexsort((imag, real, nan_class), axis=axis), axis


def _sort_op(op, a, axis):
    a = _remote(a)
    if _inference.is_complex(a._expr.dtype):
        from gpuflow._gather import take_along_axis

        a, order, axis = _complex_argsort(a, axis)
        return order if op == "argsort" else take_along_axis(a, order, axis)
    if axis is None:
        return apply(op, (a,))
    return apply(op, (a,), {"axis": operator.index(axis)})


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """numpy.sort: stable, NaN last; ``axis=None`` sorts the flattened
    array."""
    _check_kind(kind, stable)
    _check_order(order)
    return _sort_op("sort", a, axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """numpy.argsort: int64 indices, ties in index order (kind="stable");
    a 0-d array is taken as 1-d, as NumPy takes it."""
    _check_kind(kind, stable)
    _check_order(order)
    a = _remote(a)
    return _sort_op("argsort", a.reshape(1) if a.ndim == 0 else a, axis)


def _kth(kth, n):
    """NumPy's check of partition's kth against an axis of length n."""
    values = np.asarray(kth)
    if values.dtype.kind not in "iub":
        raise TypeError("Partition index must be integer")
    if values.ndim > 1:
        raise ValueError("kth array must have dimension <= 1")
    for k in values.reshape(-1).tolist():
        if not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")


def _partition(op, a, kth, axis, kind, order):
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    _check_order(order)
    a = _remote(a)
    if axis is None:
        n = a.size
    else:
        n = a.shape[_inference.normalize_axis(axis, a.ndim)] if a.ndim else 0
        if a.ndim == 0:
            raise _inference.AxisError(axis, 0)
    _kth(kth, n)
    return _sort_op(op, a, axis)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.partition: a full (stable) sort, which puts every kth element
    where NumPy's contract wants it."""
    return _partition("sort", a, kth, axis, kind, order)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.argpartition: the indices of a full stable sort."""
    return _partition("argsort", a, kth, axis, kind, order)


def lexsort(keys, axis=-1):
    """numpy.lexsort: the last key is the primary one; a stable argsort per
    key, from the first (least significant) to the last, each composed with
    the order so far (three nodes per key)."""
    from gpuflow._gather import take_along_axis

    if isinstance(keys, RemoteArray):
        if keys.ndim == 0:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        keys = [keys[i] for i in range(keys.shape[0])]
    else:
        keys = list(keys)
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    session = session_of([k for k in keys if isinstance(k, RemoteArray)])
    keys = [_remote(k, session) for k in keys]
    if any(k.shape != keys[0].shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    if keys[0].ndim == 0:
        return apply("argsort", (keys[0],))  # NumPy: the index of the one element
    order = argsort(keys[0], axis)
    for key in keys[1:]:
        gathered = take_along_axis(key, order, axis)
        order = take_along_axis(order, argsort(gathered, axis), axis)
    return order


def searchsorted(a, v, side="left", sorter=None):
    """numpy.searchsorted: ``a`` 1-D and sorted (or sorted by ``sorter``),
    ``v`` of any shape; int64 positions of v's shape."""
    from gpuflow._gather import take

    if side not in ("left", "right") and not (isinstance(side, str) and side[:1].lower() in "lr"
                                              and side):
        raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")
    side = "left" if side[0].lower() == "l" else "right"
    session = session_of([x for x in (a, v, sorter) if isinstance(x, RemoteArray)])
    a = _remote(a, session)
    if a.ndim > 1:
        raise ValueError("object too deep for desired array")
    if a.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if sorter is not None:
        if not isinstance(sorter, RemoteArray):
            host = np.asarray(sorter)
            if host.dtype.kind not in "iu":
                raise TypeError("sorter must only contain integers")
            if host.size != a.size:
                raise ValueError("sorter.size must equal a.size")
            if host.size and (host.min() < 0 or host.max() >= a.size):
                raise ValueError("Sorter index out of range.")
            sorter = host
        elif sorter.size != a.size:
            raise ValueError("sorter.size must equal a.size")
        a = take(a, sorter)
    if not isinstance(v, RemoteArray) and not isinstance(v, (bool, int, float, np.generic)):
        v = asarray(np.asarray(v), session=a.session)
    if _inference.is_complex(a._expr.dtype) or _inference.is_complex(
            v._expr.dtype if isinstance(v, RemoteArray) else np.asarray(v).dtype.name):
        return _complex_searchsorted(a, v, side)
    return apply("searchsorted", (a, v), {"side": side})


def _complex_searchsorted(a, v, side):
    """searchsorted where either side is complex (the server's op takes no
    complex): one complex-order lexsort of ``a`` and ``v`` together, ties
    putting v first (side left) or last (side right); each v's position is
    the count of a's elements sorted before it."""
    from gpuflow import functions
    from gpuflow._gather import take

    v = _remote(v, a.session)
    dtype = np.result_type(np.dtype(a._expr.dtype), np.dtype(v._expr.dtype), np.complex64).name
    shape = v.shape
    flat = functions.concatenate([a.astype(dtype), v.astype(dtype).reshape(-1)])
    from_v = functions.concatenate([functions.zeros(a.size, "int8", session=a.session),
                                    functions.ones(v.size, "int8", session=a.session)])
    tie = from_v if side == "right" else 1 - from_v
    real, imag = flat.real, flat.imag
    nan_class = functions.isnan(real).astype("int8") * 2 + functions.isnan(imag).astype("int8")
    order = lexsort((tie, imag, real, nan_class))
    from_a_sorted = order < a.size
    before = functions.cumsum(from_a_sorted.astype("int64")) - from_a_sorted.astype("int64")
    where = argsort(order)  # each element's place in the sorted order
    return take(before, where[a.size:]).reshape(shape)


# ---- quantiles -----------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")
_NUMPY_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                  "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
                  "normal_unbiased", "lower", "higher", "midpoint", "nearest")


def _check_method(method):
    if method not in _NUMPY_METHODS:
        keys = "dict_keys([" + ", ".join(repr(m) for m in _NUMPY_METHODS) + "])"
        raise ValueError(f"{method!r} is not a valid method. Use one of: {keys}")
    if method not in _METHODS:
        raise NotImplementedError(f"quantile method {method!r} is not available in gpuflow "
                                  f"(it has: {', '.join(_METHODS)})")


def _numpy_dtype(dtype):
    return np.float32 if dtype == "bfloat16" else np.dtype(dtype)


def _quantiles(a, q, percent):
    """q as NumPy's quantile takes it: a Python int or float in the array's
    float dtype, anything else as its own array; percentiles divided by 100
    in that dtype; the range checked."""
    if isinstance(q, RemoteArray):
        q = q.get()
    if isinstance(q, (int, float)) and _inference.kind(a._expr.dtype) == "f":
        q = np.asarray(q, dtype=_numpy_dtype(a._expr.dtype))
    else:
        q = np.asarray(q)
    if q.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    if percent:
        q = np.asarray(np.true_divide(q, 100))
    with np.errstate(invalid="ignore"):
        valid = bool(np.all(q >= 0) and np.all(q <= 1))
    if not valid:
        raise ValueError("Percentiles must be in the range [0, 100]" if percent
                         else "Quantiles must be in the range [0, 1]")
    return q


def _rows(a, axis):
    """(a with the reduced axes merged last, the kept shape with keepdims,
    the shape of the other axes)."""
    if axis is None:
        axes = list(range(a.ndim))
    else:
        axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        axes = _inference.normalize_axes(axes, a.ndim)
    rest = [d for d in range(a.ndim) if d not in axes]
    rest_shape = tuple(a.shape[d] for d in rest)
    kept = tuple(1 if d in axes else a.shape[d] for d in range(a.ndim))
    n = math.prod(a.shape[d] for d in axes)
    x = a
    if rest + axes != list(range(a.ndim)):
        x = x.transpose(rest + axes)
    if x.shape != rest_shape + (n,):
        x = x.reshape(rest_shape + (n,))
    return x, kept, rest_shape


def _finish(result, q_shape, rest_shape, kept, keepdims):
    """result (rest + q's dims) as NumPy places it: q's dims first."""
    k = len(q_shape)
    if k:
        r = len(rest_shape)
        result = result.transpose(list(range(r, r + k)) + list(range(r)))
    if keepdims:
        result = result.reshape(q_shape + kept)
    return result


def _float_result(dtype):
    return dtype if _inference.kind(dtype) in "fc" else "float64"


def _fill_nan(shape, dtype, session):
    from gpuflow import functions

    return functions.full(shape, math.nan, dtype=dtype, session=session)


def _lerp(lo, hi, gamma):
    """NumPy's _lerp: lo + (hi - lo) * t, or hi - (hi - lo) * (1 - t) where
    t >= 0.5."""
    diff = hi - lo
    near = lo + diff * gamma
    far = hi - diff * (1 - gamma)
    return apply("where", (gamma >= 0.5, far, near))


def _host_positions(n, q, method):
    """NumPy's positions for an axis of n values: (indices,) for lower,
    higher and nearest; (previous, next, gamma) for linear and midpoint,
    computed in q's dtype as NumPy computes them."""
    virtual = (n - 1) * q
    if method == "lower":
        return (np.floor(virtual).astype(np.int64),)
    if method == "higher":
        return (np.ceil(virtual).astype(np.int64),)
    if method == "nearest":
        return (np.around(virtual).astype(np.int64),)
    if method == "linear" and np.asarray(virtual).dtype.kind in "iub":
        return (np.asarray(virtual).astype(np.int64),)  # integer q: no interpolation
    if method == "midpoint":
        virtual = 0.5 * (np.floor(virtual) + np.ceil(virtual))
    virtual = np.asarray(virtual)
    previous = np.asarray(np.floor(virtual))
    following = np.asarray(previous + 1)
    above = virtual >= n - 1
    previous[above] = -1
    following[above] = -1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    gamma = np.asarray(virtual - previous, dtype=virtual.dtype)
    if method == "midpoint":
        gamma = np.where(gamma == 0, 0.0, 0.5).astype(virtual.dtype)
    return previous.astype(np.int64), following.astype(np.int64), gamma


def _quantile(a, q, axis, method, keepdims, percent, nan):
    from gpuflow._gather import take

    a = _remote(a)
    _check_method(method)
    q = _quantiles(a, q, percent)
    x, kept, rest_shape = _rows(a, axis)
    n = x.shape[-1]
    dtype = a._expr.dtype
    floating = _inference.kind(dtype) == "f"
    if nan and floating:
        return _nan_quantile(x, q, method, kept, rest_shape, keepdims)
    if n == 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    s = sort(x, axis=-1)
    positions = _host_positions(n, q, method)
    if len(positions) == 1:
        result = take(s, positions[0], axis=-1)
    else:
        previous, following, gamma = positions
        result = _lerp(take(s, previous, axis=-1), take(s, following, axis=-1), gamma)
    if floating:
        last = s[..., -1:] if q.ndim else s[..., -1]
        if q.ndim > 1:
            last = last.reshape(rest_shape + (1,) * q.ndim)
        result = apply("where", (apply("isnan", (last,)), last, result))
    return _finish(result, q.shape, rest_shape, kept, keepdims)


def _nan_quantile(x, q, method, kept, rest_shape, keepdims):
    """nanquantile along the last axis of x: each row's first `count` sorted
    values are its non-NaN ones; positions from (count - 1) * q in q's
    dtype, as NumPy's _nanquantile_1d computes them on the row without its
    NaNs; a row of NaNs only gives NaN."""
    from gpuflow import functions
    from gpuflow._gather import take_along_axis

    n = x.shape[-1]
    out_dtype = _inference.promote_types([_inference.Type(x._expr.dtype, ()),
                                          _inference.Type(q.dtype.name, ())]) \
        if method in ("linear", "midpoint") else x._expr.dtype
    if n == 0:
        return _finish(_fill_nan(rest_shape + q.shape, out_dtype, x.session), q.shape,
                       rest_shape, kept, keepdims)
    s = sort(x, axis=-1)
    count = functions.sum(~apply("isnan", (x,)), axis=-1, keepdims=True)  # rest + (1,)
    count = count.reshape(rest_shape + (1,) * max(q.ndim, 1))
    qd = q.dtype.name
    qs = q.reshape((1,) * len(rest_shape) + q.shape) if q.ndim else q
    virtual = (count - 1).astype(qd) * qs

    def gather(index):
        index = index.astype("int64")
        index = apply("where", (index < 0, index + count, index))  # -1: the last valid value
        if q.ndim == 0:
            return take_along_axis(s, index, axis=-1).reshape(rest_shape)
        flat = index.reshape(rest_shape + (-1,)) if q.ndim > 1 else index
        if flat.shape != rest_shape + (q.size,):
            flat = apply("broadcast_to", (flat,), {"shape": list(rest_shape + (q.size,))})
        got = take_along_axis(s, flat, axis=-1)
        return got.reshape(rest_shape + q.shape) if q.ndim > 1 else got

    if method in ("lower", "higher", "nearest"):
        op = {"lower": "floor", "higher": "ceil", "nearest": "round"}[method]
        result = gather(apply(op, (virtual,)))
    else:
        if method == "midpoint":
            virtual = 0.5 * (apply("floor", (virtual,)) + apply("ceil", (virtual,)))
        floor = apply("floor", (virtual,))
        above = virtual >= count - 1
        below = virtual < 0
        previous = apply("where", (above, -1, apply("where", (below, 0, floor))))
        following = apply("where", (above, -1, apply("where", (below, 0, floor + 1))))
        gamma = (virtual - previous).astype(virtual.dtype)
        if method == "midpoint":
            gamma = apply("where", (gamma == 0, 0.0, 0.5)).astype(virtual.dtype)
        if q.ndim == 0:
            gamma = gamma.reshape(rest_shape)
        result = _lerp(gather(previous), gather(following), gamma)
    return _finish(result, q.shape, rest_shape, kept, keepdims)


def _check_unsupported(out, overwrite_input, weights, interpolation):
    if out is not None:
        raise NotImplementedError("out= is not supported for quantiles")
    if weights is not None:
        raise NotImplementedError("weights= is not supported for quantiles")
    if interpolation is not None:
        raise TypeError("the `interpolation=` argument was renamed to `method=` (NumPy 1.22)")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None, interpolation=None):
    """numpy.quantile (methods linear, lower, higher, midpoint, nearest);
    NaN anywhere in a row gives NaN."""
    _check_unsupported(out, overwrite_input, weights, interpolation)
    return _quantile(a, q, axis, method, keepdims, percent=False, nan=False)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """numpy.percentile: quantile of q / 100."""
    _check_unsupported(out, overwrite_input, weights, interpolation)
    return _quantile(a, q, axis, method, keepdims, percent=True, nan=False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """numpy.nanquantile: quantiles of each row's non-NaN values."""
    _check_unsupported(out, overwrite_input, weights, interpolation)
    return _quantile(a, q, axis, method, keepdims, percent=False, nan=True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """numpy.nanpercentile: nanquantile of q / 100."""
    _check_unsupported(out, overwrite_input, weights, interpolation)
    return _quantile(a, q, axis, method, keepdims, percent=True, nan=True)


def _middle_mean(lo, hi, dtype):
    """NumPy's mean of the two middle values: in float64 for ints and bool,
    in float32 (rounded back) for float16 and bfloat16, else in the dtype
    (complex too)."""
    if _inference.kind(dtype) not in "fc":
        return (lo.astype("float64") + hi.astype("float64")) / 2.0
    if dtype in ("float16", "bfloat16"):
        return ((lo.astype("float32") + hi.astype("float32")) / 2.0).astype(dtype)
    return (lo + hi) / 2.0


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy.median: the middle value, or the mean of the two middle ones;
    NaN anywhere in a row gives NaN; ints and bool give float64."""
    if out is not None:
        raise NotImplementedError("out= is not supported for median")
    a = _remote(a)
    x, kept, rest_shape = _rows(a, axis)
    n = x.shape[-1]
    dtype = a._expr.dtype
    if n == 0:
        return _finish(_fill_nan(rest_shape, _float_result(dtype), a.session), (), rest_shape,
                       kept, keepdims)
    s = sort(x, axis=-1)
    k = n // 2
    if n % 2:
        result = s[..., k].astype(_float_result(dtype))
    else:
        result = _middle_mean(s[..., k - 1], s[..., k], dtype)
    if _inference.kind(dtype) in "fc":  # complex: NaN sorts last too; NumPy gives nan+0j
        last = s[..., -1]
        nan = last if _inference.kind(dtype) == "f" else math.nan
        result = apply("where", (apply("isnan", (last,)), nan, result))
    return _finish(result, (), rest_shape, kept, keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy.nanmedian: the median of each row's non-NaN values (NaN for a
    row of NaNs only)."""
    from gpuflow import functions
    from gpuflow._gather import take_along_axis

    if out is not None:
        raise NotImplementedError("out= is not supported for nanmedian")
    a = _remote(a)
    dtype = a._expr.dtype
    if _inference.kind(dtype) not in "fc":
        return median(a, axis, keepdims=keepdims)
    x, kept, rest_shape = _rows(a, axis)
    if x.shape[-1] == 0:
        return _finish(_fill_nan(rest_shape, dtype, a.session), (), rest_shape, kept, keepdims)
    s = sort(x, axis=-1)
    count = functions.sum(~apply("isnan", (x,)), axis=-1, keepdims=True)
    lo = take_along_axis(s, apply("maximum", ((count - 1) // 2, 0)), axis=-1)
    hi = take_along_axis(s, apply("minimum", (count // 2, x.shape[-1] - 1)), axis=-1)
    mid = apply("where", (count % 2 == 1, hi, _middle_mean(lo, hi, dtype)))
    result = apply("where", (count == 0, math.nan, mid)).reshape(rest_shape)
    return _finish(result, (), rest_shape, kept, keepdims)


__all__ = ["argpartition", "argsort", "lexsort", "median", "nanmedian", "nanpercentile",
           "nanquantile", "partition", "percentile", "quantile", "searchsorted", "sort"]
