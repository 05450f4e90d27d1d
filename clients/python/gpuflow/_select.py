"""Selections whose size depends on the data, and writes through indices,
built on the server's flatnonzero and scatter ops.

    i = gf.flatnonzero(x > 0)          # one Execute learns the count, then lazy
    y = x[x > 0]                       # the same count, then one take
    x[idx] = v                         # one scatter (the last duplicate wins)
    z = x.at[idx].add(1)               # scatter-add: every duplicate counts
    h = gf.bincount(labels, minlength=10)

A selection's length depends on the data, so the client learns it first: one
Execute evaluates the count and stores the mask itself as a session array
(the RemoteArray is rebound to it, so it is not computed twice); the rest of
the graph is built with that length and stays lazy. The server checks the
count again when the selection runs.
"""

import math
import operator

import numpy as np

from gpuflow import _inference

_ZERO_D = ("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
           "instead. If the context of this error is of the form `arr[nonzero(cond)]`, just use "
           "`arr[cond]`.")


def _ra():
    from gpuflow import remote_array

    return remote_array


def _remote(a, session=None):
    ra = _ra()
    return a if isinstance(a, ra.RemoteArray) else ra.asarray(a, session=session)


def evaluate_keeping(values, keep):
    """Evaluates the RemoteArrays ``values`` (returned as numpy arrays) and
    stores ``keep`` as a session array in the same Execute, rebinding it to
    the stored array (a RemoteArray that is already one is read as it is)."""
    ra = _ra()
    session = keep.session
    exprs = [v._expr for v in values]
    if keep._expr.op is None:
        results, _ = ra._execute(session, exprs, [None] * len(exprs))
        return results
    name = session._new_temp_name()
    results, _ = ra._execute(session, exprs + [keep._expr], [None] * len(exprs) + [name])
    info = results[-1]
    keep._expr = ra._leaf(session, name, info.dtype, info.shape, owned=True)
    return results[:-1]


def count_and_keep(mask):
    """The number of nonzero elements of the RemoteArray ``mask`` (one
    Execute, which also stores ``mask``)."""
    from gpuflow import _stats

    (count,) = evaluate_keeping([_stats.count_nonzero(mask)], mask)
    return int(count)


def flatnonzero(a):
    """numpy.flatnonzero: the int64 flat indices of the nonzero elements."""
    ra = _ra()
    if not isinstance(a, ra.RemoteArray) and isinstance(a, (np.ndarray, list, tuple)):
        a = ra.asarray(a)
    a = _remote(a)
    return ra.apply("flatnonzero", (a,), {"size": count_and_keep(a)})


def _unravel(flat, shape):
    """The coordinate arrays of flat C-order indices into ``shape``."""
    if 0 in shape:
        return tuple(flat for _ in shape)  # no elements, so no indices
    out = []
    for i, d in enumerate(shape):
        stride = math.prod(shape[i + 1:])
        coord = flat // stride if stride != 1 else flat
        out.append(coord % d if i else coord)
    return tuple(out)


def nonzero(a):
    """numpy.nonzero: one int64 array of indices per dimension."""
    a = _remote(a)
    if a.ndim == 0:
        raise ValueError(_ZERO_D)
    flat = flatnonzero(a)
    return (flat,) if a.ndim == 1 else _unravel(flat, a.shape)


def argwhere(a):
    """numpy.argwhere: the indices of the nonzero elements, one row each."""
    from gpuflow import functions

    a = _remote(a)
    if a.ndim == 0:
        n = count_and_keep(a)
        return functions.zeros((n, 0), "int64", session=a.session)
    return functions.stack(nonzero(a), axis=1)


def _host_flat(condition):
    """A host condition's flat nonzero indices (numpy), or None for a
    RemoteArray."""
    if isinstance(condition, _ra().RemoteArray):
        return None
    return np.flatnonzero(np.asarray(condition)).astype(np.int64)


def compress(condition, a, axis=None, out=None):
    """numpy.compress: the slices of ``a`` along ``axis`` (None: the
    flattened array) where the 1-D ``condition`` is true."""
    from gpuflow import _gather

    ra = _ra()
    shape = condition.shape if isinstance(condition, ra.RemoteArray) else np.shape(condition)
    if len(shape) != 1:
        raise ValueError("condition must be a 1-d array")
    a = _remote(a, condition.session if isinstance(condition, ra.RemoteArray) else None)
    idx = _host_flat(condition)
    if idx is None:
        idx = flatnonzero(condition)
    return _gather.take(a, idx, axis, out)


def extract(condition, arr):
    """numpy.extract: the elements of ``arr`` (flattened) where the
    (flattened) ``condition`` is true."""
    from gpuflow import _gather

    ra = _ra()
    session = condition.session if isinstance(condition, ra.RemoteArray) else None
    arr = _remote(arr, session)
    idx = _host_flat(condition)
    if idx is None:
        idx = flatnonzero(condition.reshape(-1))
    return _gather.take(arr.reshape(-1), idx)


# ---- masks in keys ----------------------------------------------------------------


def _as_mask(k):
    """``k`` as a boolean mask (RemoteArray or numpy), or None."""
    ra = _ra()
    if isinstance(k, list) and k and all(isinstance(e, (bool, np.bool_)) for e in k):
        return np.asarray(k)
    if isinstance(k, (ra.RemoteArray, np.ndarray)) and k.dtype == np.bool_:
        return k
    return None


def expand_masks(a, key):
    """``key`` (a tuple) with each boolean mask replaced by its nonzero
    index arrays, as NumPy defines it (a mask over k dimensions is k integer
    arrays); IndexError as NumPy when a mask does not fit."""
    masks = [_as_mask(k) for k in key]
    if all(m is None for m in masks):
        return key
    consumed = [m.ndim if m is not None else (0 if k is None or k is Ellipsis else 1)
                for k, m in zip(key, masks)]
    if sum(consumed) > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but "
                         f"{sum(consumed)} were indexed")
    out, axis = [], 0
    for i, (k, m) in enumerate(zip(key, masks)):
        if k is Ellipsis:
            axis = a.ndim - sum(consumed[i + 1:])
        if m is None:
            out.append(k)
            axis += consumed[i]
            continue
        if m.ndim == 0:
            raise IndexError("a 0-d boolean index (x[True], x[np.array(False)]) is not supported "
                             "by gpuflow; use x[None] and a mask of shape (1,)")
        for j, (d, n) in enumerate(zip(a.shape[axis:], m.shape)):
            if d != n:
                raise IndexError(f"boolean index did not match indexed array along axis "
                                 f"{axis + j}; size of axis is {d} but size of corresponding "
                                 f"boolean axis is {n}")
        if isinstance(m, np.ndarray):
            out.extend(np.nonzero(m))
        else:
            out.extend(nonzero(m))
        axis += m.ndim
    return tuple(out)


def getitem_mask(a, key):
    """``a[mask]`` for a key that is one mask over a's leading dimensions:
    one take of the mask's flat nonzero indices from ``a`` with those
    dimensions merged (no coordinate arrays); None for any other key."""
    ra = _ra()
    k = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    mask = _as_mask(k)
    if mask is None or mask.ndim == 0 or mask.ndim > a.ndim:
        return None
    if tuple(mask.shape) != a.shape[:mask.ndim]:
        return None  # expand_masks raises NumPy's error
    flat = _host_flat(mask)
    if flat is None:
        flat = flatnonzero(mask)
    lead = math.prod(a.shape[:mask.ndim])
    merged = ra.RemoteArray(a.session, a._expr)
    if mask.ndim != 1:
        merged = merged.reshape((lead,) + a.shape[mask.ndim:])
    return ra.apply("take", (merged, flat), {"axis": 0})


def has_array_entry(key):
    """Whether ``key`` holds an integer array or a boolean mask."""
    ra = _ra()
    key = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (ra.RemoteArray, np.ndarray, list)) for k in key)


# ---- writes -------------------------------------------------------------------------


def _fit_value(v, target):
    """``v`` reshaped to broadcast to ``target`` (NumPy drops leading unit
    dimensions of an assigned value); ValueError as NumPy's when it cannot."""
    shape = tuple(v.shape) if hasattr(v, "shape") else ()
    trimmed = shape
    while len(trimmed) > len(target) and trimmed[0] == 1:
        trimmed = trimmed[1:]
    try:
        fits = (len(trimmed) <= len(target)
                and _inference.broadcast_shapes(trimmed, target) == tuple(target))
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"shape mismatch: value array of shape {_inference.format_shape(shape)} could "
                         f"not be broadcast to indexing result of shape "
                         f"{_inference.format_shape(target)}")
    if trimmed != shape:
        v = v.reshape(trimmed)
    return v


def _leading_positions(a, first, n):
    """Flat positions of ``a[first]`` for int64 positions ``first`` (any
    shape) along axis 0: each row of the trailing dimensions in turn."""
    from gpuflow import functions

    inner = math.prod(a.shape[1:])
    if a.ndim == 1:
        return first
    ra = _ra()
    if not isinstance(first, ra.RemoteArray):
        first = ra.asarray(np.asarray(first, np.int64), session=a.session)
    rows = first.reshape(first.shape + (1,)) * inner
    flat = rows + functions.arange(inner, dtype="int64", session=a.session)
    return flat.reshape(first.shape + a.shape[1:])


def positions(a, key):
    """The flat indices of ``a[key]``, in its shape. A mask over every
    leading dimension or one integer array along axis 0 give them directly;
    other keys are applied to an arange of a's size (so the bounds checks
    and NumPy's placement are the gather's)."""
    from gpuflow import _gather, functions

    ra = _ra()
    k = key if isinstance(key, tuple) else (key,)
    if len(k) == 1 and a.ndim >= 1:
        mask = _as_mask(k[0])
        if mask is not None and mask.ndim >= 1 and tuple(mask.shape) == a.shape[:mask.ndim]:
            lead = a.shape[:mask.ndim]
            flat = _host_flat(mask)
            if flat is None:
                flat = flatnonzero(mask)
            if mask.ndim == a.ndim:
                return flat
            rest = math.prod(a.shape[mask.ndim:])
            view = ra.RemoteArray(a.session, a._expr).reshape((math.prod(lead), rest)) \
                if rest else None
            if view is None:
                return functions.zeros((flat.size,) + a.shape[mask.ndim:], "int64",
                                       session=a.session)
            return _leading_positions(view, flat, rest).reshape(
                (flat.size,) + a.shape[mask.ndim:])
        index = k[0]
        if mask is None and isinstance(index, (ra.RemoteArray, np.ndarray, list)):
            dim = a.shape[0]
            if isinstance(index, ra.RemoteArray):
                if np.dtype(index.dtype).kind in "iu" and index._expr.dtype != "bfloat16":
                    if a.ndim == 1:  # the scatter checks them, with the same message
                        return index
                    return _leading_positions(a, _gather._checked_remote(ra, index, dim, 0), dim)
            else:
                host = _gather._host_indices(index)
                if host.dtype != np.bool_:
                    _gather._check_bounds(host, dim, _gather._axis_message(0, dim))
                    wide = host.astype(np.int64)
                    return _leading_positions(a, np.where(wide < 0, wide + dim, wide), dim)
    line = functions.arange(a.size, dtype="int64", session=a.session)
    return line.reshape(a.shape)[key]


def scatter(a, flat, values, mode="set"):
    """One scatter node: ``a`` with ``a.flat[flat] = values`` (or combined
    with them by ``mode``); ``values`` already of a's dtype."""
    return _ra().apply("scatter", (a, flat, _fit_value(values, tuple(flat.shape))),
                       {"mode": mode})


def scatter_key(a, key, value, mode="set"):
    """The value ``a`` has after ``a[key] = value`` for a key with integer
    arrays or masks (mode "set"), or after ``ufunc.at(a, key, value)``."""
    from gpuflow import _indexing

    flat = positions(a, key)
    return scatter(a, flat, _indexing._value(a, value), mode)


def _cyclic(values, n, session):
    """``values`` flattened and repeated cyclically to ``n`` elements."""
    from gpuflow import functions

    ra = _ra()
    if not isinstance(values, ra.RemoteArray):
        return np.resize(np.asarray(values), n) if n else np.asarray(values).reshape(-1)[:0]
    flat = values.reshape(-1)
    if flat.size == n:
        return flat
    return flat.take(functions.arange(n, dtype="int64", session=session) % flat.size)


def _array_arg(a, name):
    if not isinstance(a, _ra().RemoteArray):
        raise TypeError(f"{name}: first argument must be a gpuflow array")


def put(a, ind, v, mode="raise"):
    """numpy.put: ``a.flat[ind] = v`` (v repeated as needed); rebinds ``a``."""
    from gpuflow import _gather, _indexing

    _array_arg(a, "put")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got '{mode}')")
    a_flat = a.reshape(-1)
    _, ind = _gather._gather_operands(a_flat, ind)
    ind = ind.reshape(-1)
    vsize = v.size if hasattr(v, "size") else np.size(v)
    if vsize == 0 or ind.size == 0:
        return
    size = a.size
    ra = _ra()
    if isinstance(ind, ra.RemoteArray):
        ind = ind.astype("int64")
        if mode == "wrap":
            ind = ind % size
        elif mode == "clip":
            ind = ra.apply("clip", (ind, 0, size - 1))
    else:
        wide = ind.astype(np.int64)
        if mode == "raise":
            _gather._check_bounds(wide, size, _gather._axis_message(0, size))
        ind = np.mod(wide, size) if mode == "wrap" else (
            np.clip(wide, 0, size - 1) if mode == "clip" else wide)
    values = _indexing._value(a, _cyclic(v, ind.size, a.session))
    a._expr = scatter(a, ind, values)._expr


def put_along_axis(arr, indices, values, axis):
    """numpy.put_along_axis: ``values`` written at ``indices`` along
    ``axis`` (None: the flattened array); rebinds ``arr``."""
    from gpuflow import _gather, _indexing, functions

    _array_arg(arr, "put_along_axis")
    line = functions.arange(arr.size, dtype="int64", session=arr.session).reshape(arr.shape)
    flat = _gather.take_along_axis(line, indices, axis)
    arr._expr = scatter(arr, flat, _indexing._value(arr, values))._expr


def _same_size(a, mask, name):
    shape = mask.shape if hasattr(mask, "shape") else np.shape(mask)
    if math.prod(shape) != a.size:
        raise ValueError(f"{name}: mask and data must be the same size")


def place(arr, mask, vals):
    """numpy.place: the elements of ``arr`` where ``mask`` is true take
    ``vals`` in order (repeated as needed); rebinds ``arr``."""
    from gpuflow import _indexing

    _array_arg(arr, "place")
    _same_size(arr, mask, "place")
    flat = _host_flat(mask)
    if flat is None:
        flat = flatnonzero(mask.reshape(-1))
    vsize = vals.size if hasattr(vals, "size") else np.size(vals)
    if flat.size and not vsize:
        raise ValueError("Cannot insert from an empty array!")
    if not flat.size:
        return
    values = _indexing._value(arr, _cyclic(vals, flat.size, arr.session))
    arr._expr = scatter(arr, flat, values)._expr


def putmask(a, mask, values):
    """numpy.putmask: ``a.flat[i] = values.flat[i % values.size]`` where
    ``mask.flat[i]``; rebinds ``a`` (one where, no count needed)."""
    from gpuflow import _indexing

    ra = _ra()
    _array_arg(a, "putmask")
    _same_size(a, mask, "putmask")
    vshape = values.shape if isinstance(values, ra.RemoteArray) else np.shape(values)
    if math.prod(vshape) == 0:
        return
    if vshape not in ((), a.shape):
        values = _cyclic(values, a.size, a.session).reshape(a.shape)
    mask = mask.reshape(a.shape) if isinstance(mask, ra.RemoteArray) else \
        np.reshape(np.asarray(mask, dtype=np.bool_), a.shape)
    v = _indexing._value(a, values)
    a._expr = ra.apply("where", (mask, v, a), session=a.session)._expr


# bincount of at most this many bins runs as a histogram (the CUDA
# histogram keeps up to 2047 bins in shared memory).
_HISTOGRAM_BINCOUNT = 2047


def bincount(x, weights=None, minlength=0):
    """numpy.bincount: counts (or ``weights`` summed in float64) over
    length max(x) + 1 (at least ``minlength``): a histogram of equal bins
    [k - 0.5, k + 0.5) up to 2047 of them, else a scatter-add into zeros;
    the maximum, and NumPy's ValueError for a negative element, come from
    one Execute."""
    from gpuflow import functions

    ra = _ra()
    x = _remote(x, weights.session if isinstance(weights, ra.RemoteArray) else None)
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if x.ndim != 1:
        raise ValueError("object too deep for desired array" if x.ndim else
                         "object of too small depth for desired array")
    dtype = x._expr.dtype
    if not _inference.can_cast(dtype, "int64", "safe"):
        raise TypeError(f"Cannot cast array data from dtype('{dtype}') to dtype('int64') "
                        "according to the rule 'safe'")
    if weights is not None:
        weights = _remote(weights, x.session)
        if weights.shape != x.shape:
            raise ValueError("The weights and list don't have the same length.")
        if not _inference.can_cast(weights._expr.dtype, "float64", "safe"):
            raise TypeError(f"Cannot cast array data from dtype('{weights._expr.dtype}') to "
                            "dtype('float64') according to the rule 'safe'")
    length = minlength
    if x.size:
        top, bottom = evaluate_keeping([x.max(), x.min()], x)
        if int(bottom) < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = max(int(top) + 1, minlength)
    index = x if dtype != "bool" else x.astype("int64")
    if 0 < length <= _HISTOGRAM_BINCOUNT:
        # Few bins: the histogram op's equal bins [k - 0.5, k + 0.5) count in
        # shared memory on the device instead of contending global atomics.
        edges = np.arange(length + 1, dtype=np.float64) - 0.5
        w = None if weights is None else weights.astype("float64")
        operands = (x, edges) if w is None else (x, edges, w)
        return ra.apply("histogram", operands, {
            "uniform": True, "first_edge": -0.5, "norm_denom": float(length),
            "sub_dtype": "float64", "div_dtype": "float64"}, session=x.session)
    if weights is None:
        base = functions.zeros(length, "int64", session=x.session)
        return scatter(base, index, np.int64(1), "add")
    base = functions.zeros(length, "float64", session=x.session)
    return scatter(base, index, weights.astype("float64"), "add")


def _unique_along(ar, axis, return_index, return_inverse, return_counts):
    """numpy.unique with ``axis``: the sub-arrays along ``axis`` as rows of
    a 2-D view, ordered by a lexsort of its columns (the first column the
    primary key, NaN last, as NumPy's sort of the rows as structured
    values), a row new where any element differs from the previous row's
    (so rows with NaN never collapse, as NumPy's; equal_nan does not apply
    here, as in NumPy). The inverse is 1-D, as NumPy 2 gives it."""
    from gpuflow import _sorting, functions

    if ar.ndim == 0:
        raise _inference.AxisError(axis, 0)
    axis = _inference.normalize_axis(operator.index(axis), ar.ndim)
    session = ar.session
    moved = functions.moveaxis(ar, axis, 0)
    n, rest = moved.shape[0], moved.shape[1:]
    rows = moved.reshape((n, math.prod(rest)))
    m = rows.shape[1]
    if n == 0:
        empty = functions.zeros(0, "int64", session=session)
        extra = [empty] * (return_index + return_inverse + return_counts)
        return (ar, *extra) if extra else ar
    if m == 0:
        order = functions.arange(n, dtype="int64", session=session)
    else:
        order = _sorting.lexsort([rows[:, j] for j in range(m - 1, -1, -1)])
    s = rows.take(order, axis=0)
    new = functions.any(s[1:] != s[:-1], axis=1)
    starts = functions.concatenate([functions.ones(1, "bool", session=session), new])
    first = flatnonzero(starts)
    values = s.take(first, axis=0).reshape((first.size,) + rest)
    values = functions.moveaxis(values, 0, axis)
    extra = []
    if return_index:
        extra.append(order.take(first))
    if return_inverse:
        ranks = functions.cumsum(starts.astype("int64")) - 1
        extra.append(scatter(functions.zeros(n, "int64", session=session), order, ranks))
    if return_counts:
        ends = functions.concatenate([first[1:], functions.full(1, n, "int64", session=session)])
        extra.append(ends - first)
    return (values, *extra) if extra else values


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True):
    """numpy.unique: sorted values (equal NaNs collapse unless ``equal_nan``
    is False), and the first index of each, the inverse (in ar's shape, as
    NumPy 2) and the counts, of the flattened array; with ``axis``, the
    unique sub-arrays along it (see _unique_along; the inverse 1-D). One
    stable argsort (a lexsort of the rows with ``axis``), one Execute for
    the number of values, then a take, a scatter and differences."""
    from gpuflow import _sorting, functions

    ar = _remote(ar)
    if axis is not None:
        return _unique_along(ar, axis, return_index, return_inverse, return_counts)
    flat = ar.reshape(-1)
    n = flat.size
    session = ar.session
    if n == 0:
        values = flat
        extra = [functions.zeros(0, "int64", session=session)] * (return_index + return_counts)
        inverse = [functions.zeros(ar.shape, "int64", session=session)] if return_inverse else []
    else:
        order = _sorting.argsort(flat, kind="stable")
        s = flat.take(order)
        new = s[1:] != s[:-1]
        if equal_nan and _inference.kind(flat._expr.dtype) in "fc":
            # A complex value with a NaN part sorts after every other (NumPy's
            # order), and NumPy takes all of them as one NaN.
            both_nan = functions.logical_and(functions.isnan(s[1:]), functions.isnan(s[:-1]))
            new = functions.logical_and(new, functions.logical_not(both_nan))
        starts = functions.concatenate([functions.ones(1, "bool", session=session), new])
        first = flatnonzero(starts)  # positions in the sorted array
        values = s.take(first)
        extra = []
        if return_index:
            extra.append(order.take(first))
        if return_inverse:
            ranks = functions.cumsum(starts.astype("int64")) - 1
            base = functions.zeros(n, "int64", session=session)
            inverse = [scatter(base, order, ranks).reshape(ar.shape)]
        else:
            inverse = []
        if return_counts:
            ends = functions.concatenate([first[1:], functions.full(1, n, "int64",
                                                                    session=session)])
            counts = ends - first
            extra.append(counts)
    if return_inverse:
        extra = extra[:1] + inverse + extra[1:] if return_index else inverse + extra
    return (values, *extra) if extra else values


__all__ = ["argwhere", "bincount", "compress", "extract", "flatnonzero", "nonzero", "place",
           "put", "put_along_axis", "putmask", "unique"]
