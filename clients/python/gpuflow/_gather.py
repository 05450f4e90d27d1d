"""Gathers: numpy.take, numpy.take_along_axis and NumPy's integer-array
("advanced") indexing, built on the server's take and take_along_axis ops
and the shape ops.

    y = gf.take(x, [3, -1], axis=1)        # one take node
    y = x[:, idx]                          # the same: take along axis 1
    y = x[i0, i1]                          # x reshaped, one take of i0 * n1 + i1
    y = x[i0, :, i1]                       # the broadcast dims go first, as NumPy

Index arrays may be RemoteArrays, numpy arrays or lists. Those the client
holds (numpy, lists, ints) are checked here and raise NumPy's IndexError at
once; a RemoteArray's indices are checked by the server when the result is
evaluated (InvalidArgumentError with NumPy's message).
"""

import math
import operator

import numpy as np

from gpuflow import _inference

_INDEX_TYPE = "arrays used as indices must be of integer (or boolean) type"


def _remote():
    from gpuflow import remote_array

    return remote_array


def _host_indices(obj):
    """A list, tuple or numpy array as a numpy index array (an empty list is
    intp, as in NumPy); IndexError for what cannot index."""
    arr = np.asarray(obj)
    if arr.dtype == np.bool_:
        return arr
    if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(obj, np.ndarray):
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        if isinstance(obj, np.ndarray):
            raise IndexError(_INDEX_TYPE)
        from gpuflow._indexing import _VALID

        raise IndexError(_VALID)
    return arr


def _check_bounds(indices, size, message):
    """NumPy's IndexError for the first index of a host array outside
    [-size, size); ``message(index)`` words it."""
    if indices.size == 0:
        return
    flat = indices.reshape(-1)
    if indices.dtype.kind == "u":
        bad = flat[flat >= size]
    else:
        wide = flat.astype(np.int64)
        bad = flat[(wide < -size) | (wide >= size)]
    if bad.size:
        raise IndexError(message(int(bad[0])))


def _axis_message(axis, size):
    return lambda i: f"index {i} is out of bounds for axis {axis} with size {size}"


def _gather_operands(a, indices):
    """(a as a RemoteArray, the indices as a RemoteArray or numpy array)."""
    ra = _remote()
    session = ra.session_of([v for v in (a, indices) if isinstance(v, ra.RemoteArray)])
    if not isinstance(a, ra.RemoteArray):
        a = ra.asarray(a, session=session)
    if not isinstance(indices, ra.RemoteArray):
        if isinstance(indices, (bool, np.bool_)):
            indices = np.asarray(indices)
        elif isinstance(indices, (int, np.integer)):
            indices = np.asarray(operator.index(indices), dtype=np.int64)
        else:
            indices = np.asarray(indices)
            if indices.size == 0 and indices.dtype.kind == "f":
                indices = indices.astype(np.int64)
    return a, indices


def _dtype_of(indices):
    ra = _remote()
    return indices.dtype if isinstance(indices, ra.RemoteArray) else indices.dtype.name


def take(a, indices, axis=None, out=None, mode="raise"):
    """numpy.take: the elements of ``a`` at ``indices`` along ``axis`` (None:
    the flattened array). ``mode`` "raise" (negative indices count from the
    end, others out of bounds are an error), "wrap" or "clip", as NumPy."""
    ra = _remote()
    if mode is None:
        mode = "raise"
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got '{mode}')")
    a, indices = _gather_operands(a, indices)
    index_type = _inference.Type(str(_dtype_of(indices)), tuple(indices.shape))
    _inference.take_shape(a.shape, index_type, axis)  # NumPy's errors first
    if axis is None or a.ndim == 0:
        size, error_axis = math.prod(a.shape), 0
    else:
        error_axis = _inference.normalize_axis(axis, a.ndim)
        size = a.shape[error_axis]
    if mode != "raise" and size > 0:
        if isinstance(indices, ra.RemoteArray):
            indices = indices.astype("int64")
            indices = indices % size if mode == "wrap" else ra.apply(
                "clip", (indices, 0, size - 1))
        else:
            wide = indices.astype(np.int64)
            indices = np.mod(wide, size) if mode == "wrap" else np.clip(wide, 0, size - 1)
    elif not isinstance(indices, ra.RemoteArray):
        _check_bounds(indices, size, _axis_message(error_axis, size))
    attrs = {} if axis is None else {"axis": operator.index(axis)}
    result = ra.apply("take", (a, indices), attrs)
    return ra.rebind_out(out, result, "take")


def take_along_axis(arr, indices, axis=-1):
    """numpy.take_along_axis: ``indices`` (integers, of ``arr``'s rank)
    broadcast against ``arr`` along every axis but ``axis`` (None: the
    flattened array, 1-D indices)."""
    ra = _remote()
    arr, indices = _gather_operands(arr, indices)
    index_type = _inference.Type(str(_dtype_of(indices)), tuple(indices.shape))
    _inference.take_along_axis_shape(arr.shape, index_type, axis)
    if not isinstance(indices, ra.RemoteArray):
        if axis is None:
            size = math.prod(arr.shape)
            _check_bounds(indices, size, _axis_message(0, size))
        else:
            ax = _inference.normalize_axis(axis, arr.ndim)
            _check_bounds(indices, arr.shape[ax], _axis_message(ax, arr.shape[ax]))
    attrs = {} if axis is None else {"axis": operator.index(axis)}
    return ra.apply("take_along_axis", (arr, indices), attrs)


# ---- integer-array indexing ---------------------------------------------------------


def _is_array_entry(k):
    ra = _remote()
    return isinstance(k, (ra.RemoteArray, np.ndarray, list, tuple))


def advanced_key(a, key):
    """The key of ``a[key]`` as entries when it holds integer arrays:
    ("none",), ("slice", s), ("int", i, axis) and ("array", indices, axis),
    with ``...`` expanded and host indices checked; boolean masks become
    their nonzero index arrays (one Execute for a RemoteArray mask). None for
    a basic key; NumPy's IndexErrors."""
    from gpuflow import _indexing

    from gpuflow import _select

    ra = _remote()
    key = key if isinstance(key, tuple) else (key,)
    if not any(_is_array_entry(k) for k in key):
        return None
    key = _select.expand_masks(a, key)
    entries = []
    for k in key:
        if isinstance(k, ra.RemoteArray):
            if k.dtype == np.bool_:
                raise IndexError(_indexing._BOOL_MASK)
            if k._expr.dtype == "bfloat16" or np.dtype(k.dtype).kind not in "iu":
                raise IndexError(_INDEX_TYPE)
            entries.append(("array", k))
        elif isinstance(k, (np.ndarray, list, tuple)):
            host = _host_indices(k)
            if host.dtype == np.bool_:
                raise IndexError(_indexing._BOOL_MASK)
            if host.ndim == 0:
                entries.append(("int", int(host)))
            else:
                entries.append(("array", host))
        elif k is None:
            entries.append(("none",))
        elif k is Ellipsis:
            entries.append(("ellipsis",))
        elif isinstance(k, slice):
            entries.append(("slice", k))
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError(_indexing._BOOL_MASK)
        else:
            try:
                entries.append(("int", operator.index(k)))
            except TypeError:
                raise IndexError(_indexing._VALID) from None
    if not any(e[0] == "array" for e in entries):
        return None  # 0-d integer arrays only: integers, basic indexing
    if sum(1 for e in entries if e[0] == "ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    real = sum(1 for e in entries if e[0] in ("slice", "int", "array"))
    if real > a.ndim:
        raise IndexError(
            f"too many indices for array: array is {a.ndim}-dimensional, but {real} were indexed")
    fill = [("slice", slice(None))] * (a.ndim - real)
    expanded = []
    for e in entries:
        expanded.extend(fill if e[0] == "ellipsis" else [e])
    if not any(e[0] == "ellipsis" for e in entries):
        expanded.extend(fill)
    out, axis = [], 0
    for e in expanded:
        if e[0] == "none":
            out.append(e)
            continue
        dim = a.shape[axis]
        if e[0] == "int":
            if not -dim <= e[1] < dim:
                raise IndexError(f"index {e[1]} is out of bounds for axis {axis} with size {dim}")
            out.append(("int", e[1], axis))
        elif e[0] == "array":
            if isinstance(e[1], np.ndarray):
                _check_bounds(e[1], dim, _axis_message(axis, dim))
            out.append(("array", e[1], axis))
        else:
            out.append(e)
        axis += 1
    shapes = [tuple(e[1].shape) for e in out if e[0] == "array"]
    try:
        _inference.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with "
                         "shapes " + "".join(_inference.format_shape(s) + " " for s in shapes)
                         ) from None
    return out


def _checked_remote(ra, indices, size, axis):
    """A RemoteArray of indices as int64 in [0, size): a take from an
    arange along ``axis``, so an index out of bounds fails with NumPy's
    message for that axis."""
    from gpuflow import functions

    line = functions.arange(size, dtype="int64", session=indices.session)
    if axis:
        line = line.reshape((1,) * axis + (size,))
    picked = ra.apply("take", (line, indices), {"axis": axis})
    return picked.reshape(indices.shape) if picked.shape != indices.shape else picked


def getitem_advanced(a, entries):
    """``a[key]`` for the entries of advanced_key: the basic part (slices
    and integers) first, then one take, then NumPy's placement of the
    broadcast index dims (in place when the advanced indices, integers
    included, are next to each other in the key, else first), then the new
    axes of None."""
    from gpuflow import _indexing

    ra = _remote()
    basic = []
    for e in entries:
        if e[0] == "slice":
            basic.append(e[1])
        elif e[0] == "int":
            basic.append(e[1])
        elif e[0] == "array":
            basic.append(slice(None))
    y = _indexing._basic_getitem(a, tuple(basic)) if basic else a
    # Dims of y: the slice and array entries, in order.
    positions, arrays, axes = [], [], []
    pos = 0
    for e in entries:
        if e[0] == "array":
            positions.append(pos)
            arrays.append(e[1])
            axes.append(e[2])
        if e[0] in ("slice", "array"):
            pos += 1
    block = _inference.broadcast_shapes(*(tuple(x.shape) for x in arrays))
    if len(arrays) == 1:
        z = ra.apply("take", (y, arrays[0]), {"axis": positions[0]})
        at = positions[0]
    else:
        sizes = [y.shape[p] for p in positions]
        flat = None  # host part
        remote = None
        stride = 1
        for x, size, axis in reversed(list(zip(arrays, sizes, axes))):
            if isinstance(x, ra.RemoteArray):
                term = _checked_remote(ra, x, size, axis) * stride if stride != 1 else \
                    _checked_remote(ra, x, size, axis)
                remote = term if remote is None else remote + term
            else:
                wide = x.astype(np.int64)
                term = np.where(wide < 0, wide + size, wide) * stride
                flat = term if flat is None else flat + term
            stride *= size
        if remote is None:
            index = np.ascontiguousarray(np.broadcast_to(flat, block))
        else:
            index = remote if flat is None else remote + flat
            if index.shape != block:
                index = ra.apply("broadcast_to", (index,), {"shape": list(block)})
        total = math.prod(sizes)
        consecutive = positions == list(range(positions[0], positions[0] + len(positions)))
        if consecutive:
            p = positions[0]
            merged = y.shape[:p] + (total,) + y.shape[p + len(positions):]
            z = ra.apply("take", (y.reshape(merged), index), {"axis": p})
            at = p
        else:
            others = [d for d in range(y.ndim) if d not in positions]
            moved = y.transpose(positions + others)
            moved = moved.reshape((total,) + tuple(y.shape[d] for d in others))
            z = ra.apply("take", (moved, index), {"axis": 0})
            at = 0
    # Where NumPy puts the block: in place of adjacent advanced indices
    # (after the slices before them), else first.
    advanced = [i for i, e in enumerate(entries) if e[0] in ("int", "array")]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    target = sum(1 for e in entries[:advanced[0]] if e[0] == "slice") if adjacent else 0
    n = len(block)
    if target != at:
        rest = [d for d in range(z.ndim) if not at <= d < at + n]
        z = z.transpose(rest[:target] + list(range(at, at + n)) + rest[target:])
    new_axes, out_pos = [], 0 if adjacent else n
    placed = False
    for e in entries:
        if e[0] == "none":
            new_axes.append(out_pos)
            out_pos += 1
        elif e[0] == "slice":
            out_pos += 1
        elif adjacent and not placed:
            out_pos += n
            placed = True
    if new_axes:
        z = ra.apply("expand_dims", (z,), {"axes": new_axes})
    return z
