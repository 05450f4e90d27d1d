"""NumPy's index helpers (numpy/lib/_index_tricks_impl.py and its kin),
composed of the server's arange, flatnonzero, comparisons and scatter:

    rows, cols = gf.tril_indices(4, k=-1); m[gf.triu_indices_from(m)]
    i, j = gf.unravel_index(flat, (3, 5)); flat = gf.ravel_multi_index((i, j), (3, 5))
    sub = x[gf.ix_([0, 2], mask)]; gf.fill_diagonal(m, 0); gf.copyto(dst, src, where=m > 0)

Index arrays are int64 RemoteArrays. Indices the client holds are checked
here and raise NumPy's errors at once; a RemoteArray's are checked by one
Execute that learns their minimum and maximum (as CuPy checks them on the
device). ``fill_diagonal`` and ``copyto`` rebind their first argument, as
the client's other writes do (see gpuflow._select).
"""

import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, apply, asarray, dtype_name, session_of

_EMPTY_FLOAT = ("indices must be integral: the provided empty sequence was inferred as float. "
                "Wrap it with 'np.array(indices, dtype=np.intp)'")
_INT_ONLY = "only int indices permitted"
_BAD_COORDS = "invalid entry in coordinates array"


def _functions():
    from gpuflow import functions

    return functions


def _int64_range(n, session):
    return _functions().arange(max(n, 0), dtype="int64", session=session)


# ---- triangles and diagonals ------------------------------------------------------


def _tril_count(n, m, k):
    """How many (i, j) of an n x m grid have j <= i + k."""
    if n <= 0 or m <= 0:
        return 0
    return int(np.clip(np.arange(n, dtype=np.int64) + k + 1, 0, m).sum())


def _grid_indices(n, m, keep, count, session):
    """The row and column indices (C order) where the n x m boolean
    RemoteArray ``keep`` holds, ``count`` of them (known here, so no
    Execute learns it)."""
    if count == 0:
        empty = _int64_range(0, session)
        return empty, empty
    flat = apply("flatnonzero", (keep,), {"size": count})
    return flat // m, flat % m


def _triangle_indices(n, k, m, session, lower):
    n, k = operator.index(n), operator.index(k)
    m = n if m is None else operator.index(m)
    n, m = max(n, 0), max(m, 0)
    session = session_of((), session)
    if n == 0 or m == 0:
        empty = _int64_range(0, session)
        return empty, empty
    i = _int64_range(n, session).reshape(n, 1)
    j = _int64_range(m, session).reshape(1, m)
    if lower:
        return _grid_indices(n, m, j <= i + k, _tril_count(n, m, k), session)
    return _grid_indices(n, m, j >= i + k, n * m - _tril_count(n, m, k - 1), session)


def tril_indices(n, k=0, m=None, *, session=None):
    """numpy.tril_indices: the int64 row and column indices of the lower
    triangle (at and below the k-th diagonal) of an n x m array."""
    return _triangle_indices(n, k, m, session, True)


def triu_indices(n, k=0, m=None, *, session=None):
    """numpy.triu_indices: the int64 row and column indices of the upper
    triangle (at and above the k-th diagonal) of an n x m array."""
    return _triangle_indices(n, k, m, session, False)


def _shape_and_session(arr):
    if isinstance(arr, RemoteArray):
        return arr.shape, arr.session
    return np.shape(arr), None


def tril_indices_from(arr, k=0):
    """numpy.tril_indices_from: :func:`tril_indices` for a 2-D array's
    shape (in its session)."""
    shape, session = _shape_and_session(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(shape[-2], k=k, m=shape[-1], session=session)


def triu_indices_from(arr, k=0):
    """numpy.triu_indices_from: :func:`triu_indices` for a 2-D array's
    shape (in its session)."""
    shape, session = _shape_and_session(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(shape[-2], k=k, m=shape[-1], session=session)


def diag_indices(n, ndim=2, *, session=None):
    """numpy.diag_indices: ``ndim`` times the same int64 arange(n)."""
    idx = _int64_range(operator.index(n), session_of((), session))
    return (idx,) * operator.index(ndim)


def diag_indices_from(arr):
    """numpy.diag_indices_from: the main diagonal's indices of an array
    whose dimensions are all equal."""
    shape, session = _shape_and_session(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if any(d != shape[0] for d in shape):
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape), session=session)


def diagflat(v, k=0):
    """numpy.diagflat: a 2-D array with the flattened input on its k-th
    diagonal (:func:`gpuflow.diag` of the raveled input)."""
    from gpuflow import _shapes

    v = v if isinstance(v, RemoteArray) else asarray(v)
    return _shapes.diag(v.reshape(-1), k)


# ---- flat and multi-dimensional indices -------------------------------------------


def _dims(shape):
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


def _check_order(order):
    if order in ("A", "K"):
        raise ValueError("only 'C' or 'F' order is permitted")
    if order not in ("C", "F"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


def _integer_operand(x, session):
    """``x`` (host or RemoteArray) as integer indices: a RemoteArray, or a
    numpy array the client checks; NumPy's TypeErrors for other dtypes."""
    if isinstance(x, RemoteArray):
        dtype = x._expr.dtype
        if _inference.kind(dtype) not in "iub":
            raise TypeError(_INT_ONLY)
        return x
    host = np.asarray(x)
    if host.size == 0 and host.dtype.kind == "f" and not isinstance(x, np.ndarray):
        raise TypeError(_EMPTY_FLOAT)
    if host.dtype.kind not in "iub":
        raise TypeError(_INT_ONLY)
    return host


def _remote_bounds(arrays):
    """The (min, max) of each non-empty RemoteArray of ``arrays``, in one
    Execute; None for the others."""
    from gpuflow.remote_array import evaluate

    live = [a for a in arrays if isinstance(a, RemoteArray) and a.size]
    found = evaluate(*(r for a in live for r in (a.min(), a.max()))) if live else []
    out, n = [], 0
    for a in arrays:
        if isinstance(a, RemoteArray) and a.size:
            out.append((int(found[n]), int(found[n + 1])))
            n += 2
        else:
            out.append(None)
    return out


def _strides(dims, order):
    out, stride = [0] * len(dims), 1
    for i in (reversed(range(len(dims))) if order == "C" else range(len(dims))):
        out[i] = stride
        stride *= dims[i]
    return out


def unravel_index(indices, shape, order="C"):
    """numpy.unravel_index: the int64 coordinate arrays of flat indices into
    ``shape`` (each of the indices' shape; 0-d RemoteArrays for a scalar).
    An index outside [0, size) raises NumPy's ValueError: at once when the
    client holds the indices, after one Execute (their minimum and maximum)
    for a RemoteArray."""
    _check_order(order)
    dims = _dims(shape)
    session = session_of((indices,))
    idx = _integer_operand(indices, session)
    size = math.prod(dims)
    if not dims and (idx.ndim or idx.size != 1):
        raise ValueError("multiple indices are not supported for 0d arrays")
    if isinstance(idx, RemoteArray):
        bounds = _remote_bounds([idx])[0]
        if bounds is not None and (bounds[0] < 0 or bounds[1] >= size):
            host = idx.get()
            bad = host.reshape(-1)[(host.reshape(-1) < 0) | (host.reshape(-1) >= size)]
            raise ValueError(f"index {int(bad[0])} is out of bounds for array with size {size}")
        flat = idx.astype("int64", copy=False)
    else:
        line = idx.reshape(-1)
        if idx.dtype.kind == "u":
            bad = line[line >= max(size, 0)]
        else:
            wide = line.astype(np.int64)
            bad = line[(wide < 0) | (wide >= size)]
        if bad.size:
            raise ValueError(f"index {int(bad[0])} is out of bounds for array with size {size}")
        flat = asarray(idx.astype(np.int64), session=session)
    if not dims:
        return ()
    out = []
    for i, (d, stride) in enumerate(zip(dims, _strides(dims, order))):
        coord = flat // stride if stride != 1 else flat
        outermost = i == 0 if order == "C" else i == len(dims) - 1
        out.append(coord if outermost else coord % d)
    return tuple(c if c is not flat else c.copy() for c in out)


def _clip_modes(mode, n):
    modes = [mode] * n if isinstance(mode, str) else list(mode)
    if len(modes) != n:
        raise ValueError(f"list of clipmodes has wrong length ({len(modes)} instead of {n})")
    for m in modes:
        if m not in ("raise", "wrap", "clip"):
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {m!r})")
    return modes


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """numpy.ravel_multi_index: the int64 flat indices of coordinate arrays
    (broadcast together) into ``dims``; ``mode`` "raise", "wrap" or "clip"
    (one, or one per dimension). With "raise" a coordinate outside [0, d)
    raises NumPy's ValueError: at once for coordinates the client holds,
    after one Execute (their minima and maxima) for RemoteArrays."""
    dims = _dims(dims)
    _check_order(order)
    if isinstance(multi_index, RemoteArray):
        multi_index = [multi_index[i] for i in range(multi_index.shape[0])] \
            if multi_index.ndim else [multi_index]
    elif isinstance(multi_index, np.ndarray):
        multi_index = list(multi_index)
    else:
        multi_index = list(multi_index)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = _clip_modes(mode, len(dims))
    total = 1
    for d in dims:
        total *= d
        if total > np.iinfo(np.int64).max:
            raise ValueError("invalid dims: array size defined by dims is larger than the "
                             "maximum possible size.")
    session = session_of(multi_index)
    coords = [_integer_operand(c, session) for c in multi_index]
    shapes = [tuple(c.shape) for c in coords]
    try:
        shape = _inference.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError("operands could not be broadcast together with shapes "
                         + " ".join(str(s).replace(" ", "") for s in shapes) + " ") from None
    if not dims:
        return asarray(np.zeros(shape, np.int64), session=session)
    if math.prod(shape) and 0 in dims:
        raise ValueError("cannot unravel if shape has zero entries (is empty).")
    remote_checks = [c if m == "raise" else None for c, m in zip(coords, modes)]
    bounds = _remote_bounds(remote_checks)
    result = None
    for c, d, m, stride, b in zip(coords, dims, modes, _strides(dims, order), bounds):
        if m == "raise":
            if isinstance(c, RemoteArray):
                if b is not None and (b[0] < 0 or b[1] >= d):
                    raise ValueError(_BAD_COORDS)
            elif c.size and ((c.dtype.kind == "i" and (c < 0).any()) or (c >= d).any()):
                raise ValueError(_BAD_COORDS)
        c = asarray(c.astype(np.int64), session=session) if not isinstance(c, RemoteArray) \
            else c.astype("int64", copy=False)
        if m == "wrap":
            c = c % d
        elif m == "clip":
            c = apply("clip", (c, 0, d - 1))
        term = c * stride if stride != 1 else c
        result = term if result is None else result + term
    if result.shape != shape:
        result = _functions().broadcast_to(result, shape)
    return result


def ix_(*args):
    """numpy.ix_: open-mesh index arrays (RemoteArrays), the k-th of shape
    (1, ..., n, ..., 1); a boolean argument becomes its nonzero indices (a
    RemoteArray mask costs one Execute for its count)."""
    from gpuflow import _select

    session = session_of(args)
    out, nd = [], len(args)
    for k, new in enumerate(args):
        if not isinstance(new, RemoteArray):
            was_array = isinstance(new, np.ndarray)
            new = np.asarray(new)
            if new.size == 0 and not was_array:
                new = new.astype(np.int64)
        if new.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if new.dtype == np.bool_:
            new = _select.flatnonzero(new) if isinstance(new, RemoteArray) else \
                np.flatnonzero(new).astype(np.int64)
        if not isinstance(new, RemoteArray):
            new = asarray(new, session=session)
        out.append(new.reshape((1,) * k + (new.size,) + (1,) * (nd - k - 1)))
    return tuple(out)


# ---- writes -----------------------------------------------------------------------


def fill_diagonal(a, val, wrap=False):
    """numpy.fill_diagonal: ``a.flat[::step] = val`` along the main diagonal
    (``val`` repeated as needed; a tall 2-D array's diagonal wraps with
    ``wrap``); rebinds ``a`` (one scatter)."""
    from gpuflow import _select

    if not isinstance(a, RemoteArray):
        raise TypeError("fill_diagonal: first argument must be a gpuflow array")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    end = a.size
    if a.ndim == 2:
        step = a.shape[1] + 1
        if not wrap:
            end = min(end, a.shape[1] * a.shape[1])
    else:
        if any(d != a.shape[0] for d in a.shape):
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + sum(math.prod(a.shape[:i + 1]) for i in range(a.ndim - 1))
    if end <= 0:
        return
    positions = _functions().arange(0, end, step, dtype="int64", session=a.session)
    _select.put(a, positions, val)


def _scalar_operand(value, dst_dtype, casting):
    """A Python scalar as copyto sees it (NumPy 2): the dtype common to it
    and dst's, holding exactly its value."""
    dtype = _inference.promote_types([_inference.Type(dst_dtype, ()),
                                      _inference.Type.weak_scalar(value)])
    if dtype != dst_dtype and casting == "equiv":
        raise TypeError(f"cannot cast Python {type(value).__name__} to {np.dtype(dtype)} under "
                        "the casting rule 'equiv'")
    return _inference.convert_scalar(value, dtype), dtype


def copyto(dst, src, casting="same_kind", where=True):
    """numpy.copyto: ``src`` (broadcast to dst's shape) written into ``dst``
    where ``where`` holds, with NumPy's casting check (a Python scalar is
    weak: it takes dst's dtype when of its kind); rebinds ``dst`` (one
    where)."""
    functions = _functions()
    if not isinstance(dst, RemoteArray):
        raise TypeError(f"copyto() argument 1 must be gpuflow.ndarray, not {type(dst).__name__}")
    _inference.check_casting(casting)
    target = dst._expr.dtype
    if isinstance(src, (bool, int, float, complex)) and not isinstance(src, np.generic):
        value, source = _scalar_operand(src, target, casting)
        shape, scalar = (), True
    else:
        value = src if isinstance(src, RemoteArray) else np.asarray(src)
        source = value._expr.dtype if isinstance(value, RemoteArray) else dtype_name(value.dtype)
        shape, scalar = tuple(value.shape), value.ndim == 0
    if not _inference.can_cast(source, target, casting):
        raise TypeError(f"Cannot cast {'scalar' if scalar else 'array data'} from "
                        f"dtype('{source}') to dtype('{target}') according to the rule "
                        f"'{casting}'")
    trimmed = shape
    while len(trimmed) > dst.ndim and trimmed[0] == 1:
        trimmed = trimmed[1:]
    if len(trimmed) > dst.ndim or _broadcast_or_none(trimmed, dst.shape) != dst.shape:
        raise ValueError(f"could not broadcast input array from shape {_inference.format_shape(shape)} "
                         f"into shape {_inference.format_shape(dst.shape)}")
    if not isinstance(value, RemoteArray):
        value = asarray(np.asarray(value), dtype=source, session=dst.session)
    if trimmed != shape:
        value = value.reshape(trimmed)
    value = value.astype(target, copy=False)
    mask = where
    if isinstance(mask, RemoteArray) or not (np.ndim(mask) == 0 and bool(mask)):
        mshape = tuple(mask.shape) if isinstance(mask, RemoteArray) else np.shape(mask)
        if _broadcast_or_none(mshape, dst.shape) != dst.shape:
            raise ValueError(f"could not broadcast where mask from shape "
                             f"{_inference.format_shape(mshape)} into shape {_inference.format_shape(dst.shape)}")
        mdtype = mask._expr.dtype if isinstance(mask, RemoteArray) else (
            dtype_name(mask.dtype) if isinstance(mask, (np.ndarray, np.generic)) else "bool")
        if mdtype != "bool":  # NumPy converts arrays to a bool mask by the 'safe' rule
            raise TypeError(f"Cannot cast array data from dtype('{mdtype}') to dtype('bool') "
                            "according to the rule 'safe'")
        if not isinstance(mask, RemoteArray):
            mask = np.asarray(mask, dtype=np.bool_)
        result = apply("where", (mask, value, dst))
    else:
        result = value if value.shape == dst.shape else functions.broadcast_to(value, dst.shape)
    dst._expr = result._expr


def _broadcast_or_none(a, b):
    try:
        return _inference.broadcast_shapes(a, b)
    except ValueError:
        return None


__all__ = ["copyto", "diag_indices", "diag_indices_from", "diagflat", "fill_diagonal", "ix_",
           "ravel_multi_index", "tril_indices", "tril_indices_from", "triu_indices",
           "triu_indices_from", "unravel_index"]
