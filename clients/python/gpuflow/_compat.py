"""NumPy 2's array-API names and the CuPy/NumPy names gpuflow lacked,
composed of existing client functions (lazy, one Execute where a result's
shape does not depend on the data):

    gf.cumulative_sum(x, include_initial=True); gf.unique_counts(x).counts
    gf.vecdot(a, b); gf.matvec(m, v); gf.unstack(x, axis=1); gf.bitwise_count(x)
    gf.block([[a, b], [c, d]]); gf.insert(x, [1, 3], 0); gf.delete(x, slice(0, None, 2))
    gf.r_[0:1:5j, 7, x]; gf.c_[a, b]

NumPy 2's algorithms (numpy/_core/fromnumeric.py, shape_base.py,
numpy/lib/_function_base_impl.py, _index_tricks_impl.py, _polynomial_impl.py)
and its errors. The host interop names (asnumpy, save/load, fromfile ...)
are in gpuflow._compat_host, poly, polydiv and polyfit in gpuflow._compat_poly.
"""

import collections
import functools
import warnings

import numpy as np

from gpuflow import _inference
from gpuflow._compat_host import *  # noqa: F401,F403
from gpuflow._compat_host import __all__ as _host_names
from gpuflow._compat_poly import *  # noqa: F401,F403
from gpuflow._compat_poly import __all__ as _poly_names
from gpuflow._ufunc import cast, type_of, ufunc
from gpuflow.remote_array import (
    RemoteArray,
    apply,
    as_remote,
    dtype_name,
    rebind_out,
    session_of,
)


def _functions():
    from gpuflow import functions

    return functions


_remote = as_remote  # an array-like as a RemoteArray (remote_array.as_remote)


# ---- cumulative_sum, cumulative_prod (NumPy 2) ---------------------------------------


def _cumulative(op, identity, x, axis, dtype, out, include_initial):
    from gpuflow.remote_array import scan

    x = _remote(x)
    if x.ndim == 0:
        x = x.reshape(1)
    if axis is None:
        if x.ndim >= 2:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is "
                             "required.")
        axis = 0
    axis = _inference.normalize_axis(axis, x.ndim)
    result = scan(op, x, axis, dtype)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        first = _functions().full(shape, identity, result._expr.dtype, session=x.session)
        result = _functions().concatenate([first, result], axis=axis)
    return rebind_out(out, result, "cumulative_" + op[3:])


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """numpy.cumulative_sum (NumPy 2): cumsum that needs ``axis`` for
    ndim > 1, takes 0-d input as 1-D and with ``include_initial`` starts
    with a 0 (one more element along the axis). Dtypes as cumsum's."""
    return _cumulative("cumsum", 0, x, axis, dtype, out, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """numpy.cumulative_prod (NumPy 2): as :func:`cumulative_sum`, the
    initial value 1."""
    return _cumulative("cumprod", 1, x, axis, dtype, out, include_initial)


# ---- unique_all, unique_counts, unique_inverse, unique_values (NumPy 2) --------------

UniqueAllResult = collections.namedtuple(
    "UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = collections.namedtuple("UniqueInverseResult",
                                             ["values", "inverse_indices"])


def _unique(x, **kwargs):
    from gpuflow import _select

    return _select.unique(_remote(x), equal_nan=False, **kwargs)


def unique_all(x):
    """numpy.unique_all: values, first indices, inverse (x's shape) and
    counts; every NaN is its own value (equal_nan=False, as NumPy 2)."""
    return UniqueAllResult(*_unique(x, return_index=True, return_inverse=True,
                                    return_counts=True))


def unique_counts(x):
    """numpy.unique_counts: values and counts (NaNs not merged)."""
    return UniqueCountsResult(*_unique(x, return_counts=True))


def unique_inverse(x):
    """numpy.unique_inverse: values and the inverse in x's shape."""
    return UniqueInverseResult(*_unique(x, return_inverse=True))


def unique_values(x):
    """numpy.unique_values: the sorted unique values (NaNs not merged)."""
    return _unique(x)


# ---- array-API spellings of existing functions ---------------------------------------


def matrix_transpose(x, /):
    """numpy.matrix_transpose: the last two axes swapped."""
    x = _remote(x)
    if x.ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional")
    return x.swapaxes(-1, -2)


def permute_dims(a, axes=None):
    """numpy.permute_dims: numpy.transpose."""
    return _functions().transpose(a, axes)


def concat(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """numpy.concat: numpy.concatenate."""
    return _functions().concatenate(arrays, axis, out, dtype=dtype, casting=casting)


def astype(x, dtype, /, *, copy=True, device=None):
    """numpy.astype (NumPy 2): ``x`` in ``dtype``; ``copy=False`` returns x
    itself when it already has that dtype. Array-likes and scalars are
    taken too, as operands of the cast (NumPy takes only its ndarray).
    ``device`` must be None."""
    if device is not None:
        raise ValueError(f"gpuflow arrays have no device {device!r}: pass device=None")
    name = dtype_name(dtype)
    if not copy and isinstance(x, RemoteArray) and x._expr.dtype == name:
        return x
    return apply("cast", (x,), {"dtype": name})


def unstack(x, /, *, axis=0):
    """numpy.unstack (NumPy 2.1): the sub-arrays along ``axis``, a tuple."""
    x = _remote(x)
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    moved = _functions().moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(moved.shape[0]))


# ---- vecdot, matvec, vecmat (NumPy 2 gufuncs) ----------------------------------------


def _core_check(name, signature, operand, shape, needed):
    if len(shape) < needed:
        raise ValueError(f"{name}: Input operand {operand} does not have enough dimensions (has "
                         f"{len(shape)}, gufunc core with signature {signature} requires "
                         f"{needed})")


def _core_size(name, signature, operand, dim, got, want):
    if got != want:
        raise ValueError(f"{name}: Input operand {operand} has a mismatch in its core dimension "
                         f"{dim}, with gufunc signature {signature} (size {got} is different "
                         f"from {want})")


def _gufunc_operands(x1, x2):
    session = session_of((x1, x2))
    return _remote(x1, session), _remote(x2, session)


def _product_dtype(a, b):
    return _inference.promote_types([type_of(a), type_of(b)])


def vecdot(x1, x2, /, out=None, *, axis=-1, dtype=None):
    """numpy.vecdot (NumPy 2): sum(conj(x1) * x2) over ``axis`` (of each
    operand), the other axes broadcast; the promoted dtype (bool: any of
    the ands). One fused reduction."""
    functions = _functions()
    sig = "(n),(n)->()"
    a, b = _gufunc_operands(x1, x2)
    _core_check("vecdot", sig, 0, a.shape, 1)
    _core_check("vecdot", sig, 1, b.shape, 1)
    a = functions.moveaxis(a, axis, -1)
    b = functions.moveaxis(b, axis, -1)
    _core_size("vecdot", sig, 1, 0, b.shape[-1], a.shape[-1])
    target = _product_dtype(a, b) if dtype is None else dtype_name(dtype)
    for i, x in enumerate((a, b)):
        if not _inference.can_cast(x._expr.dtype, target, "same_kind"):
            raise _inference.cast_error("vecdot", i, x._expr.dtype, target, "same_kind")
    a, b = cast(a, target), cast(b, target)
    if target == "bool":
        result = functions.any(functions.logical_and(a, b), axis=-1)
    else:
        if _inference.is_complex(target):
            a = functions.conjugate(a)
        result = functions.sum(a * b, axis=-1, dtype=target)
    return rebind_out(out, result, "vecdot")


def _matmul(a, b):
    result = _functions().matmul(a, b)
    target = _product_dtype(a, b)
    return cast(result, target)


def matvec(x1, x2, /, out=None):
    """numpy.matvec (NumPy 2.2): x1 (..., m, n) times x2 (..., n) ->
    (..., m), as matmul of x2 with a trailing axis."""
    sig = "(m,n),(n)->(m)"
    a, b = _gufunc_operands(x1, x2)
    _core_check("matvec", sig, 0, a.shape, 2)
    _core_check("matvec", sig, 1, b.shape, 1)
    _core_size("matvec", sig, 1, 0, b.shape[-1], a.shape[-1])
    result = _matmul(a, b.reshape(b.shape + (1,)))
    return rebind_out(out, result[..., 0], "matvec")


def vecmat(x1, x2, /, out=None):
    """numpy.vecmat (NumPy 2.2): conj(x1) (..., n) times x2 (..., n, m) ->
    (..., m)."""
    sig = "(n),(n,m)->(m)"
    a, b = _gufunc_operands(x1, x2)
    _core_check("vecmat", sig, 0, a.shape, 1)
    _core_check("vecmat", sig, 1, b.shape, 2)
    _core_size("vecmat", sig, 1, 0, b.shape[-2], a.shape[-1])
    if _inference.is_complex(a._expr.dtype):
        a = _functions().conjugate(a)
    result = _matmul(a.reshape(a.shape[:-1] + (1, a.shape[-1])), b)
    return rebind_out(out, result[..., 0, :], "vecmat")


# ---- bitwise_count (NumPy 2) ---------------------------------------------------------

_U64 = np.uint64
_UNSIGNED = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


def _bitwise_count(x):
    """The popcount of |x| (NumPy's loop for signed ints), by the 64-bit
    SWAR sum: pairs, nibbles, bytes, then a multiply that adds the bytes."""
    t = type_of(x)
    dtype = "int64" if t.weak and _inference.kind(t.dtype) == "i" else t.dtype
    if _inference.kind(dtype) not in "biu":
        raise _inference._no_loop("bitwise_count")
    if dtype == "bool":
        dtype = "int8"
    v = cast(x, dtype)
    if _inference.kind(dtype) == "i":
        v = apply("where", (v < 0, -v, v))  # the minimum stays itself: one bit, as NumPy
    u = cast(cast(v, _UNSIGNED[_inference.itemsize(dtype)]), "uint64")

    def shr(y, n):
        return apply("floordiv", (y, _U64(1 << n)))

    def band(y, m):
        return apply("bitwise_and", (y, _U64(m)))

    u = u - band(shr(u, 1), 0x5555555555555555)
    u = band(u, 0x3333333333333333) + band(shr(u, 2), 0x3333333333333333)
    u = band(u + shr(u, 4), 0x0F0F0F0F0F0F0F0F)
    return cast(shr(u * _U64(0x0101010101010101), 56), "uint8")


bitwise_count = ufunc("bitwise_count", 1, 1, _bitwise_count, loop="input",
                      doc="numpy.bitwise_count (NumPy 2): the number of 1 bits in the "
                          "magnitude of each integer, uint8; bool counts as int8.")


# ---- block ---------------------------------------------------------------------------


def _block_index(index):
    return "arrays" + "".join(f"[{i}]" for i in index if i is not None)


def _block_depths(arrays, parent=()):
    """NumPy's _block_check_depths_match: (index of the first leaf, max
    ndim of the leaves)."""
    if type(arrays) is tuple:
        raise TypeError(f"{_block_index(parent)} is a tuple. Only lists can be used to arrange "
                        "blocks, and np.block does not allow implicit conversion from tuple to "
                        "ndarray.")
    if type(arrays) is list and arrays:
        found = [_block_depths(a, parent + (i,)) for i, a in enumerate(arrays)]
        first, max_ndim = found[0]
        for index, ndim in found[1:]:
            max_ndim = max(max_ndim, ndim)
            if len(index) != len(first):
                raise ValueError(f"List depths are mismatched. First element was at depth "
                                 f"{len(first)}, but there is an element at depth {len(index)} "
                                 f"({_block_index(index)})")
            if index[-1] is None:
                first = index
        return first, max_ndim
    if type(arrays) is list:
        return parent + (None,), 0
    return parent, _functions().ndim(arrays)


def _leaves(arrays):
    if type(arrays) is list:
        return [leaf for a in arrays for leaf in _leaves(a)]
    return [arrays]


def _atleast_nd(x, ndim, session):
    x = _remote(x, session)
    return x.reshape((1,) * (ndim - x.ndim) + x.shape) if x.ndim < ndim else x


def _block(arrays, depth, list_ndim, result_ndim, session):
    if depth < list_ndim:
        parts = [_block(a, depth + 1, list_ndim, result_ndim, session) for a in arrays]
        return _functions().concatenate(parts, axis=-(list_ndim - depth))
    return _atleast_nd(arrays, result_ndim, session)


def block(arrays):
    """numpy.block: nested lists of arrays joined from the innermost list
    (the last axis) outwards, every block raised to the result's ndim."""
    bottom, arr_ndim = _block_depths(arrays)
    list_ndim = len(bottom)
    if bottom and bottom[-1] is None:
        raise ValueError(f"List at {_block_index(bottom)} cannot be empty")
    session = session_of(_leaves(arrays))
    result = _block(arrays, 0, list_ndim, max(arr_ndim, list_ndim), session)
    return result.copy() if list_ndim == 0 else result


# ---- insert, delete ------------------------------------------------------------------


def _along(arr, axis):
    """(array, normalised axis): axis None flattens, as NumPy's."""
    arr = _remote(arr)
    if axis is None:
        arr = arr.reshape(-1) if arr.ndim != 1 else arr
        return arr, arr.ndim - 1
    return arr, _inference.normalize_axis(axis, arr.ndim)


def _host_index(obj):
    return obj.get() if isinstance(obj, RemoteArray) else obj


def delete(arr, obj, axis=None):
    """numpy.delete: ``arr`` without the sub-arrays at ``obj`` (an int, a
    slice, a sequence of ints or a boolean mask of the axis's length)
    along ``axis`` (None: of the flattened array); one take of the kept
    indices. A RemoteArray ``obj`` is fetched (one Execute)."""
    arr, axis = _along(arr, axis)
    n = arr.shape[axis]
    obj = _host_index(obj)
    keep = np.ones(n, dtype=bool)
    if isinstance(obj, slice):
        keep[obj] = False
    elif isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        if obj < -n or obj >= n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        keep[obj] = False
    else:
        given = obj
        obj = np.asarray(obj)
        if obj.size == 0 and not isinstance(given, np.ndarray):
            obj = obj.astype(np.intp)
        elif obj.size == 1 and obj.dtype.kind in "ui":
            return delete(arr, obj.item(), axis)
        if obj.dtype == bool:
            if obj.shape != (n,):
                raise ValueError("boolean array argument obj to delete must be one dimensional "
                                 f"and match the axis length of {n}")
            keep = ~obj
        else:
            keep[obj, ] = False
    return arr.take(np.flatnonzero(keep), axis=axis)


@functools.cache
def _insert_takes_masks():
    """Whether the running NumPy's insert reads a boolean obj as a mask
    (NumPy 2) rather than as the ints 0 and 1 (NumPy 1.x, with a
    FutureWarning): [False, True] inserts one value or two."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.insert(np.zeros(2), np.array([False, True]), 1).shape == (3,)


def insert(arr, obj, values, axis=None):
    """numpy.insert: ``values`` (cast to arr's dtype, broadcast as NumPy's
    ``new[..., obj, ...] = values``) placed before the indices ``obj`` (an
    int, a slice or a sequence) along ``axis`` (None: of the flattened
    array): one concatenation of arr and values and one take. A boolean
    ``obj`` is what the running NumPy makes of it: a mask (NumPy 2, its
    flatnonzero) or ints with NumPy 1.x's FutureWarning."""
    functions = _functions()
    arr, axis = _along(arr, axis)
    n = arr.shape[axis]
    obj = _host_index(obj)
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool and _insert_takes_masks():
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = np.flatnonzero(indices)
        elif indices.dtype == bool:
            warnings.warn("in the future insert will treat boolean arrays and array-likes as a "
                          "boolean index instead of casting it to integer", FutureWarning,
                          stacklevel=2)
            indices = indices.astype(np.intp)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or "
                             "scalar")
    if isinstance(values, (bool, int, float, complex)):
        # NumPy 2's array(values, dtype=arr.dtype): an int that does not fit
        # is its OverflowError.
        values = functions.full((), _inference.convert_scalar(values, arr._expr.dtype),
                                arr._expr.dtype, session=arr.session)
    values = _remote(values, arr.session).astype(arr._expr.dtype, copy=False)
    if values.ndim < arr.ndim:
        values = values.reshape((1,) * (arr.ndim - values.ndim) + values.shape)
    shape = list(arr.shape)
    if indices.size == 1:
        index = indices.item()
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        index = index + n if index < 0 else index
        if indices.ndim == 0:
            values = functions.moveaxis(values, 0, axis)
        numnew = values.shape[axis]
        shape[axis] = numnew
        values = functions.broadcast_to(values, shape)
        head = [slice(None)] * arr.ndim
        tail = list(head)
        head[axis], tail[axis] = slice(None, index), slice(index, None)
        return functions.concatenate([arr[tuple(head)], values, arr[tuple(tail)]], axis=axis)
    if indices.size == 0 and not isinstance(obj, np.ndarray):
        indices = indices.astype(np.intp)
    if indices.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    indices = indices.astype(np.intp)
    indices[indices < 0] += n
    numnew = len(indices)
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    old = np.ones(n + numnew, dtype=bool)
    old[indices] = False  # NumPy's IndexError for indices out of bounds
    source = np.empty(n + numnew, dtype=np.intp)
    source[old] = np.arange(n)
    source[indices] = n + np.arange(numnew)
    shape[axis] = numnew
    values = functions.broadcast_to(values, shape)
    return functions.concatenate([arr, values], axis=axis).take(source, axis=axis)


# ---- r_, c_ (NumPy's index tricks) ---------------------------------------------------

_SCALARS = (int, float, complex, bool, np.generic)


class AxisConcatenator:
    """numpy.lib.index_tricks.AxisConcatenator: ``obj[...]`` joins its
    items (arrays, scalars, slices as arange or, with a complex step, as
    linspace) along ``axis``; a leading string sets the axis, the minimum
    ndim and where 1-D items go ('0,2,0'), or 'r'/'c' for a row or column
    (a 2-D RemoteArray: gpuflow has no matrix class)."""

    def __init__(self, axis=0, matrix=False, ndmin=1, trans1d=-1):
        self.axis, self.matrix, self.ndmin, self.trans1d = axis, matrix, ndmin, trans1d

    def __getitem__(self, key):
        functions = _functions()
        if isinstance(key, str):
            raise NotImplementedError("gpuflow has no matrix class: the matrix-builder string "
                                      "form of r_/c_ is not supported")
        key = key if isinstance(key, tuple) else (key,)
        trans1d, ndmin, matrix, axis = self.trans1d, self.ndmin, self.matrix, self.axis
        col = False
        session = session_of([k for k in key if isinstance(k, RemoteArray)])
        objs, types, scalars = [], [], []
        for k, item in enumerate(key):
            scalar = False
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, (complex, np.complexfloating)):
                    from gpuflow import _ranges

                    new = _ranges.linspace(start, item.stop, int(abs(step)), session=session)
                else:
                    new = functions.arange(start, item.stop, step, session=session)
                if ndmin > 1:
                    new = _atleast_nd(new, ndmin, session)
                    if trans1d != -1:
                        new = new.swapaxes(-1, trans1d)
            elif isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    matrix, col = True, item == "c"
                    continue
                if "," in item:
                    vec = item.split(",")
                    try:
                        axis, ndmin = [int(x) for x in vec[:2]]
                        if len(vec) == 3:
                            trans1d = int(vec[2])
                        continue
                    except Exception as e:
                        raise ValueError(f"unknown special directive {item!r}") from e
                try:
                    axis = int(item)
                    continue
                except (ValueError, TypeError) as e:
                    raise ValueError("unknown special directive") from e
            elif type(item) in _SCALARS or isinstance(item, np.generic):
                new = item
                scalar = True
            else:
                item_ndim = functions.ndim(item)
                new = _atleast_nd(item, ndmin, session)
                if trans1d != -1 and item_ndim < ndmin:
                    k2, k1 = ndmin - item_ndim, trans1d
                    k1 = k1 + k2 + 1 if k1 < 0 else k1
                    axes = list(range(ndmin))
                    new = new.transpose(axes[:k1] + axes[k2:] + axes[k1:k2])
            if scalar:
                scalars.append(len(objs))
                types.append(type_of(item))
            else:
                types.append(_inference.Type(new._expr.dtype, ()))
            objs.append(new)
        if not objs:
            raise ValueError("need at least one array to concatenate")
        final = _inference.promote_types(types)
        for i in scalars:
            # NumPy 2's array(item, dtype=final): a Python int that does not
            # fit is its OverflowError; a numpy scalar is cast.
            v = objs[i]
            v = functions.full((), v if isinstance(v, np.generic) else
                               _inference.convert_scalar(v, final), session=session)
            objs[i] = _atleast_nd(v, ndmin, session)
        objs = [o.astype(final, copy=False) for o in objs]
        result = functions.concatenate(objs, axis=axis)
        if matrix:
            if result.ndim == 1:
                result = result.reshape(1, -1)
                if col:
                    result = result.T
            elif result.ndim > 2:
                raise ValueError("shape too large to be a matrix.")
        return result

    def __len__(self):
        return 0


class RClass(AxisConcatenator):
    """numpy.r_: items joined along the first axis."""

    def __init__(self):
        super().__init__(0)


class CClass(AxisConcatenator):
    """numpy.c_: items joined along the last axis, 1-D ones as columns."""

    def __init__(self):
        super().__init__(-1, ndmin=2, trans1d=0)


r_ = RClass()
c_ = CClass()


# ---- CuPy's aliases ------------------------------------------------------------------


def round_(a, decimals=0, out=None):
    """cupy.round_ (numpy.round_ before NumPy 2): numpy.around."""
    return _functions().around(a, decimals, out)


def msort(a):
    """numpy.msort (deprecated; CuPy keeps it): sort along the first axis,
    with NumPy's DeprecationWarning."""
    from gpuflow import _sorting

    warnings.warn("msort is deprecated, use np.sort(a, axis=0) instead", DeprecationWarning,
                  stacklevel=2)
    return _sorting.sort(a, axis=0)


def mask_indices(n, mask_func, k=0, *, session=None):
    """numpy.mask_indices: the indices where ``mask_func`` (gf.triu,
    gf.tril ...) of an n x n array of ones is nonzero."""
    functions = _functions()
    m = functions.ones((n, n), "int64", session=session_of((), session))
    return functions.nonzero(_remote(mask_func(m, k), m.session) != 0)


__all__ = sorted([
    "astype", "bitwise_count", "block", "c_", "concat", "cumulative_prod", "cumulative_sum",
    "delete", "insert", "mask_indices", "matrix_transpose", "matvec", "msort", "permute_dims",
    "r_", "round_", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "unstack", "vecdot", "vecmat",
] + _host_names + _poly_names)
