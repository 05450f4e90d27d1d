"""NumPy's joining, splitting, tiling and shape functions, composed of the
server's shape ops (reshape, transpose, broadcast_to, slice, concatenate).

    gf.vstack([a, b]); gf.column_stack((x, y)); gf.atleast_2d(v)
    xs, ys = gf.broadcast_arrays(x[:, None], y)
    parts = gf.split(a, 3, axis=1); gf.tile(a, (2, 1)); gf.roll(a, 1)
    gf.tril(m, -1); gf.diagonal(m); gf.trace(m)

Results are new arrays (no views), as everywhere in gpuflow.
"""

import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, as_remote, session_of


_remote = as_remote  # an array-like as a RemoteArray (remote_array.as_remote)


def _remotes(arrays):
    arrays = list(arrays)
    session = session_of(arrays)
    return [_remote(a, session) for a in arrays]


def _one_or_tuple(results):
    return results[0] if len(results) == 1 else tuple(results)


def atleast_1d(*arys):
    """numpy.atleast_1d (several arrays: a tuple)."""
    return _one_or_tuple([a if a.ndim >= 1 else a.reshape(1) for a in _remotes(arys)])


def atleast_2d(*arys):
    """numpy.atleast_2d: a 1-D array of n becomes (1, n)."""
    out = []
    for a in _remotes(arys):
        out.append(a if a.ndim >= 2 else a.reshape((1,) * (2 - a.ndim) + a.shape))
    return _one_or_tuple(out)


def atleast_3d(*arys):
    """numpy.atleast_3d: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
    out = []
    for a in _remotes(arys):
        if a.ndim == 0:
            a = a.reshape(1, 1, 1)
        elif a.ndim == 1:
            a = a.reshape(1, a.shape[0], 1)
        elif a.ndim == 2:
            a = a.reshape(a.shape + (1,))
        out.append(a)
    return _one_or_tuple(out)


def _as_list(tup):
    return list(tup) if isinstance(tup, (list, tuple)) else list(tup)


def _concat(arrays, axis, dtype, casting):
    from gpuflow import functions

    return functions.concatenate(arrays, axis=axis, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """numpy.vstack: along the first axis, 1-D arrays as rows."""
    arrs = atleast_2d(*_as_list(tup))
    return _concat(arrs if isinstance(arrs, tuple) else [arrs], 0, dtype, casting)


row_stack = vstack


def hstack(tup, *, dtype=None, casting="same_kind"):
    """numpy.hstack: along the second axis (the first for 1-D arrays)."""
    arrs = atleast_1d(*_as_list(tup))
    arrs = arrs if isinstance(arrs, tuple) else [arrs]
    return _concat(arrs, 0 if arrs[0].ndim == 1 else 1, dtype, casting)


def dstack(tup):
    """numpy.dstack: along the third axis."""
    arrs = atleast_3d(*_as_list(tup))
    return _concat(arrs if isinstance(arrs, tuple) else [arrs], 2, None, "same_kind")


def column_stack(tup):
    """numpy.column_stack: 1-D arrays as columns, then hstack."""
    cols = [a.reshape(-1, 1) if a.ndim < 2 else a for a in _remotes(_as_list(tup))]
    return _concat(cols, 1, None, "same_kind")


def broadcast_arrays(*args, subok=False):
    """numpy.broadcast_arrays (a tuple, as NumPy 2)."""
    from gpuflow import functions

    arrays = _remotes(args)
    shape = _inference.broadcast_shapes(*(a.shape for a in arrays))
    return tuple(a if a.shape == shape else functions.broadcast_to(a, shape) for a in arrays)


class broadcast:  # noqa: N801 - NumPy's name
    """numpy.broadcast: the broadcast ``shape``, ``ndim``/``nd``, ``size``
    and ``numiter`` of its arguments; ``values`` holds them broadcast (as
    cupy.broadcast)."""

    def __init__(self, *arrays):
        self.values = broadcast_arrays(*arrays)
        self.shape = self.values[0].shape if self.values else ()
        self.nd = self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.numiter = len(self.values)


def rollaxis(a, axis, start=0):
    """numpy.rollaxis (moveaxis is the better API, as NumPy says)."""
    a = _remote(a)
    n = a.ndim
    axis = _inference.normalize_axis(axis, n)
    start = operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise _inference.AxisError(
            f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return RemoteArray(a.session, a._expr)
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return a.transpose(axes)


def copy(a, order="K", subok=False):
    """numpy.copy: a new (writable) array."""
    return _remote(a).copy()


def ascontiguousarray(a, dtype=None):
    """numpy.ascontiguousarray: every gpuflow array is C-contiguous."""
    a = _remote(a)
    return a if dtype is None else a.astype(dtype, copy=False)


def asfortranarray(a, dtype=None):
    """numpy.asfortranarray: gpuflow keeps C order, so this is
    ascontiguousarray (flags.f_contiguous says which layout it is)."""
    return ascontiguousarray(a, dtype)


# ---- splitting -------------------------------------------------------------------------


def array_split(ary, indices_or_sections, axis=0):
    """numpy.array_split: sections may be unequal."""
    a = _remote(ary)
    axis_n = _inference.normalize_axis(axis, a.ndim)
    n = a.shape[axis_n]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        bounds = [0] + [operator.index(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        key = [slice(None)] * a.ndim
        key[axis_n] = slice(lo, hi)
        out.append(a[tuple(key)])
    return out


def split(ary, indices_or_sections, axis=0):
    """numpy.split: equal sections, or at the given indices."""
    a = _remote(ary)
    if isinstance(indices_or_sections, (int, np.integer)):
        n = a.shape[_inference.normalize_axis(axis, a.ndim)]
        if n % indices_or_sections:
            raise ValueError("array split does not result in an equal division")
    return array_split(a, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """numpy.hsplit."""
    a = _remote(ary)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(a, indices_or_sections, 1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """numpy.vsplit."""
    a = _remote(ary)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(a, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """numpy.dsplit."""
    a = _remote(ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(a, indices_or_sections, 2)


# ---- tiling and rolling ----------------------------------------------------------------


def tile(A, reps):  # noqa: N803 - numpy's name
    """numpy.tile, as one reshape, broadcast_to and reshape."""
    from gpuflow import functions

    a = _remote(A)
    reps = (operator.index(reps),) if isinstance(reps, (int, np.integer)) else tuple(
        operator.index(r) for r in reps)
    d = max(len(reps), a.ndim)
    reps = (1,) * (d - len(reps)) + reps
    shape = (1,) * (d - a.ndim) + a.shape
    if all(r == 1 for r in reps):
        return a.reshape(shape).copy()
    spread = [v for dim in shape for v in (1, dim)]
    target = [v for r, dim in zip(reps, shape) for v in (r, dim)]
    tiled = functions.broadcast_to(a.reshape(spread), target)
    return tiled.reshape([r * dim for r, dim in zip(reps, shape)])


def _host_repeats(repeats):
    """Host repeats as NumPy converts them (to intp, at most 1-D): a numpy
    array casts safely; lists, Python and numpy scalars as np.array(x, intp)."""
    if isinstance(repeats, np.ndarray):
        if repeats.ndim > 1:
            raise ValueError("object too deep for desired array")
        if not np.can_cast(repeats.dtype, np.intp, "safe"):
            what = "array data" if repeats.ndim else "scalar"
            raise TypeError(f"Cannot cast {what} from dtype('{repeats.dtype}') to "
                            f"dtype('{np.dtype(np.intp)}') according to the rule 'safe'")
        return repeats.astype(np.intp)
    counts = np.array(repeats, dtype=np.intp)
    if counts.ndim > 1:
        # NumPy's words for a nested sequence differ by version ("object too
        # deep for desired array"; NumPy 2.5: "setting an array element with a
        # sequence ..."): the running NumPy's error for these counts.
        raise (_inference.numpy_error(np.repeat, np.zeros(1), repeats)
               or ValueError("object too deep for desired array"))
    return counts


def _remote_repeats(repeats):
    """The int64 counts of a RemoteArray of repeats (NumPy's errors for its
    dtype and rank); a 0-d or one-element array is fetched (one Execute)
    and returned as a numpy array."""
    dtype = repeats._expr.dtype
    if repeats.ndim > 1:
        raise ValueError("object too deep for desired array")
    if not _inference.can_cast(dtype, "int64", "safe"):
        what = "array data" if repeats.ndim else "scalar"
        raise TypeError(f"Cannot cast {what} from dtype('{dtype}') to dtype('int64') "
                        "according to the rule 'safe'")
    if repeats.size == 1:
        return np.asarray(repeats.astype("int64").get())
    return repeats.astype("int64")


def repeat(a, repeats, axis=None):
    """numpy.repeat. One count for all (a scalar, or counts all equal): a
    reshape and broadcast_to. Counts that differ: a take of the positions
    ``searchsorted(cumsum(counts), arange(total), side='right')``; counts
    the client holds give the total at once, a RemoteArray's total (and
    NumPy's ValueError for a negative count) come from one Execute."""
    from gpuflow import _gather, _select, _sorting, functions

    remote_counts = isinstance(repeats, RemoteArray)
    a = _remote(a, repeats.session if remote_counts else None)
    counts = _remote_repeats(repeats) if remote_counts else _host_repeats(repeats)
    if a.ndim == 0:
        a = a.reshape(1)  # NumPy's 0-d array: 1-D whatever the axis
    elif axis is None:
        a = a.reshape(-1)
    axis = 0 if axis is None else _inference.normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if counts.ndim == 1 and counts.shape[0] != 1 and counts.shape[0] != n:
        raise ValueError("operands could not be broadcast together with shape "
                         f"({n},) ({counts.shape[0]},)")
    if isinstance(counts, np.ndarray):
        if counts.size > 1 and (counts < 0).any():
            raise ValueError("repeats may not contain negative values.")
        if counts.size <= 1 or (counts == counts.flat[0]).all():
            r = int(counts.flat[0]) if counts.size else 0
            if r < 0:  # one count, as NumPy: the negative length it gives
                if n:
                    raise ValueError("negative dimensions are not allowed")
                r = 0
            spread = a.shape[:axis + 1] + (1,) + a.shape[axis + 1:]
            target = a.shape[:axis + 1] + (r,) + a.shape[axis + 1:]
            out = functions.broadcast_to(a.reshape(spread), target)
            return out.reshape(a.shape[:axis] + (n * r,) + a.shape[axis + 1:])
        ends = np.cumsum(counts)
        total = int(ends[-1])
    elif n == 0:
        return a.copy()
    else:
        ends = functions.cumsum(counts)
        total, low = _select.evaluate_keeping([ends[-1], counts.min()], ends)
        if int(low) < 0:
            raise ValueError("repeats may not contain negative values.")
        total = int(total)
    positions = functions.arange(total, dtype="int64", session=a.session)
    index = _sorting.searchsorted(ends, positions, side="right")
    return _gather.take(a, index, axis)


def roll(a, shift, axis=None):
    """numpy.roll: two slices concatenated per rolled axis."""
    from gpuflow import functions

    a = _remote(a)
    if axis is None:
        return roll(a.reshape(-1), shift, 0).reshape(a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else [shift]
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total = {}
    for s, ax in zip(shifts, axes):
        ax = _inference.normalize_axis(ax, a.ndim)
        total[ax] = total.get(ax, 0) + operator.index(s)
    for ax, s in total.items():
        n = a.shape[ax]
        s = s % n if n else 0
        if s == 0:
            continue
        head = [slice(None)] * a.ndim
        tail = [slice(None)] * a.ndim
        head[ax], tail[ax] = slice(n - s, None), slice(None, n - s)
        a = functions.concatenate([a[tuple(head)], a[tuple(tail)]], axis=ax)
    return a.copy()


# ---- triangles and diagonals -----------------------------------------------------------


def _tri_mask(n, m, k, session):
    from gpuflow import functions

    i = functions.arange(n, session=session).reshape(n, 1)
    j = functions.arange(m, session=session).reshape(1, m)
    return j <= i + k


def tri(N, M=None, k=0, dtype=float, *, session=None):  # noqa: N803
    """numpy.tri: ones at and below the k-th diagonal."""
    M = N if M is None else M  # noqa: N806
    return _tri_mask(operator.index(N), operator.index(M), operator.index(k),
                     session).astype(dtype)


def _triangle(m, k, lower):
    from gpuflow import functions

    m = _remote(m)
    if m.ndim == 0:
        raise ValueError("tril/triu need an array of at least one dimension")
    n, cols = m.shape[-2:] if m.ndim >= 2 else (m.shape[0], m.shape[0])  # 1-D: as NumPy, rows
    keep = _tri_mask(n, cols, operator.index(k) - (0 if lower else 1), m.session)
    if not lower:
        keep = ~keep
    zero = functions.zeros((), m.dtype, session=m.session)
    return functions.where(keep, m, zero)


def tril(m, k=0):
    """numpy.tril: zeros above the k-th diagonal (of the last two axes)."""
    return _triangle(m, k, True)


def triu(m, k=0):
    """numpy.triu: zeros below the k-th diagonal (of the last two axes)."""
    return _triangle(m, k, False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the diagonal becomes the last axis (a strided slice
    of the flattened pair of axes)."""
    from gpuflow import functions

    a = _remote(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1 = _inference.normalize_axis(axis1, a.ndim)
    a2 = _inference.normalize_axis(axis2, a.ndim)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    a = functions.moveaxis(a, [a1, a2], [-2, -1])
    n, m = a.shape[-2:]
    offset = operator.index(offset)
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    flat = a.reshape(a.shape[:-2] + (n * m,))
    start = offset if offset >= 0 else -offset * m
    if length == 0:
        return flat[..., 0:0]
    return flat[..., start:start + (length - 1) * (m + 1) + 1:m + 1]


def diag(v, k=0):
    """numpy.diag: the k-th diagonal of a 2-D array, or a 2-D array with a
    1-D array on its k-th diagonal."""
    from gpuflow import functions

    v = _remote(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + abs(k)
    padded = functions.concatenate([v, functions.zeros(abs(k), v.dtype, session=v.session)]) \
        if k else v
    i = functions.arange(n, session=v.session).reshape(n, 1)
    j = functions.arange(n, session=v.session).reshape(1, n)
    values = padded.reshape(n, 1) if k >= 0 else padded.reshape(1, n)
    return functions.where(j == i + k, values, functions.zeros((), v.dtype, session=v.session))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """numpy.trace: the sum of a diagonal."""
    return diagonal(a, offset, axis1, axis2).sum(axis=-1, dtype=dtype, out=out)


# ---- flips, rotations, padding --------------------------------------------------------


def fliplr(m):
    """numpy.fliplr: reversed along axis 1."""
    from gpuflow import functions

    m = _remote(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return functions.flip(m, 1)


def flipud(m):
    """numpy.flipud: reversed along axis 0."""
    from gpuflow import functions

    m = _remote(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return functions.flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    """numpy.rot90: k quarter turns from the first axis towards the second."""
    from gpuflow import functions

    m = _remote(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if not (-m.ndim <= axes[0] < m.ndim and -m.ndim <= axes[1] < m.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k = operator.index(k) % 4
    if k == 0:
        return m.copy()
    if k == 2:
        return functions.flip(functions.flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return functions.flip(m, axes[1]).transpose(perm)
    return functions.flip(m.transpose(perm), axes[1])


def _pairs(value, ndim, as_index=False):
    """numpy.pad's ``_as_pairs``: ``value`` broadcast to ``ndim`` (before,
    after) pairs, NumPy's shortcuts and errors included (one value for all,
    one pair for all, ``[[1], [2]]`` one value per axis)."""
    v = np.array(value)
    if as_index:
        v = np.round(v).astype(np.intp, copy=False)
    if v.ndim < 3 and (v.size == 1 or (v.size == 2 and v.shape != (2, 1))):
        v = v.ravel()
        if as_index and (v < 0).any():
            raise ValueError("index can't contain negative values")
        return [[v[0].item(), v[-1].item()]] * ndim
    if as_index and v.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(v, (ndim, 2)).tolist()


# numpy.pad's modes and the keywords each takes.
_PAD_KWARGS = {
    "empty": (), "edge": (), "wrap": (), "constant": ("constant_values",),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def pad(array, pad_width, mode="constant", **kwargs):
    """numpy.pad for the modes 'constant' (constant_values), 'empty'
    (zeros), 'edge', 'wrap', 'reflect' and 'symmetric' (pads up to the axis
    length; the 'even' reflect_type), with slices and one concatenate per padded axis.
    ``pad_width`` and the keywords are checked as NumPy checks them: a
    pad_width not of a signed integer type (``[]`` is float64) raises
    TypeError, a mode NumPy does not know ValueError; NumPy's other modes
    (and a callable mode) raise NotImplementedError."""
    from gpuflow import functions

    a = _remote(array)
    if np.asarray(pad_width).dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    widths = _pairs(pad_width, a.ndim, as_index=True)
    if callable(mode):
        raise NotImplementedError("gpuflow.pad takes no padding function (mode=callable)")
    try:
        unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    except (KeyError, TypeError):
        raise ValueError(f"mode '{mode}' is not supported") from None
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode not in ("constant", "empty", "edge", "wrap", "reflect", "symmetric"):
        raise NotImplementedError(f"gpuflow pads with 'constant', 'empty', 'edge', 'wrap', "
                                  f"'reflect' and 'symmetric', not {mode!r}")
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError(f"gpuflow pads with reflect_type 'even', not "
                                  f"{kwargs['reflect_type']!r}")
    if mode == "empty":  # gpuflow's "uninitialised" is zeros, as in gpuflow.empty
        mode = "constant"
    values = _pairs(kwargs.get("constant_values", 0), a.ndim) if mode == "constant" else None
    if mode != "constant" and a.size == 0:
        # NumPy's rule: only 'constant' and 'empty' extend an empty axis;
        # the result of any other padding has no elements.
        for axis, pair in enumerate(widths):
            if a.shape[axis] == 0 and any(pair):
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
        return functions.zeros([n + sum(pair) for n, pair in zip(a.shape, widths)], a.dtype,
                               session=a.session)
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = a.shape[axis]
        # A length-1 axis reflects as its edge (NumPy's legacy rule).
        axis_mode = "edge" if mode in ("reflect", "symmetric") and n == 1 else mode
        limit = {"reflect": n - 1, "edge": None, "constant": None}.get(axis_mode, n)
        if limit is not None and max(before, after) > limit:
            raise NotImplementedError(f"gpuflow pads with mode {mode!r} up to {limit} elements "
                                      f"on axis {axis}")

        def piece(key, axis=axis):
            full = [slice(None)] * a.ndim
            full[axis] = key
            return a[tuple(full)]

        def block(width, side, axis=axis, n=n, mode=axis_mode):
            if mode == "constant":
                shape = list(a.shape)
                shape[axis] = width
                fill = values[axis][side]
                return functions.full(shape, fill, a.dtype, session=a.session)
            if mode == "edge":
                edge = piece(slice(0, 1) if side == 0 else slice(n - 1, n))
                shape = list(a.shape)
                shape[axis] = width
                return functions.broadcast_to(edge, shape)
            if mode == "wrap":
                return piece(slice(n - width, n) if side == 0 else slice(0, width))
            if mode == "reflect":
                return functions.flip(piece(slice(1, width + 1) if side == 0
                                            else slice(n - 1 - width, n - 1)), axis)
            return functions.flip(piece(slice(0, width) if side == 0 else slice(n - width, n)),
                                  axis)

        parts = ([block(before, 0)] if before else []) + [a] + (
            [block(after, 1)] if after else [])
        a = functions.concatenate(parts, axis=axis)
    return a if a is not array else a.copy()


def append(arr, values, axis=None):
    """numpy.append: concatenated (flattened first when axis is None)."""
    from gpuflow import functions

    arr, values = _remotes((arr, values))
    if axis is None:
        arr, values, axis = arr.reshape(-1), values.reshape(-1), 0
    return functions.concatenate([arr, values], axis=axis)


def resize(a, new_shape):
    """numpy.resize: the flattened data repeated (or cut) to the new shape."""
    from gpuflow import functions

    a = _remote(a)
    shape = (operator.index(new_shape),) if isinstance(new_shape, (int, np.integer)) else tuple(
        operator.index(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    n = math.prod(shape)
    if a.size == 0 or n == 0:
        return functions.zeros(shape, a.dtype, session=a.session)
    flat = a.reshape(-1)
    repeats = -(-n // a.size)
    return tile(flat, repeats)[:n].reshape(shape)


def indices(dimensions, dtype=int, sparse=False, *, session=None):
    """numpy.indices: the index grids of an array of shape ``dimensions``."""
    from gpuflow import functions

    dims = tuple(operator.index(d) for d in dimensions)
    session = session_of((), session)
    grids = []
    for i, d in enumerate(dims):
        shape = [1] * len(dims)
        shape[i] = d
        grids.append(functions.arange(d, dtype=dtype, session=session).reshape(shape))
    if sparse:
        return tuple(grids)
    if not dims:
        return functions.zeros((0,), dtype, session=session)
    return functions.stack([functions.broadcast_to(g, dims) for g in grids])


__all__ = [
    "append", "fliplr", "flipud", "indices", "pad", "resize", "rot90",
    "array_split", "ascontiguousarray", "asfortranarray", "atleast_1d", "atleast_2d",
    "atleast_3d", "broadcast", "broadcast_arrays", "column_stack", "copy", "diag", "diagonal",
    "dsplit", "dstack", "hsplit", "hstack", "repeat", "roll", "rollaxis", "row_stack", "split",
    "tile", "trace", "tri", "tril", "triu", "vsplit", "vstack",
]
