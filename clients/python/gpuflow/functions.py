"""Module functions with CuPy/NumPy names, each recording one or a few
server ops (docs/python.md lists the mapping; docs/ops.md the ops).

    import gpuflow as gf
    y = gf.where(x > 0, gf.sqrt(x), 0.0)      # x: a RemoteArray
    z = gf.zeros((3, 4), gf.float32, session=s)

Inputs may be RemoteArrays, numpy arrays (and other array-likes), Python
scalars (weak, as in NumPy 2) and numpy scalars. Functions that create
arrays take ``session=`` (default: the current session, i.e. the innermost
``with client.session() as s:`` of this thread).
"""

import builtins
import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow._ufunc import ALIASES, UFUNCS, ufunc
from gpuflow.remote_array import (
    RemoteArray,
    apply,
    arg_reduce,
    axes_attr,
    dtype_name,
    rebind_out,
    reduce,
    scan,
    session_of,
)


# NumPy's ufuncs (gpuflow._ufunc), under their names and NumPy's aliases.
for _name, _u in UFUNCS.items():
    globals()[_name] = _u
for _alias, _name in ALIASES.items():
    globals()[_alias] = UFUNCS[_name]


def round(a, decimals=0, out=None):  # noqa: A001 - numpy's name
    """numpy.round: half to even; ``decimals`` as NumPy (scale, round,
    unscale; integers with decimals < 0 round in float64)."""
    a = _as_remote(a)
    decimals = operator.index(decimals)
    if a._expr.dtype == "bool" and decimals == 0:
        result = apply("round", (a.astype("float16"),))  # NumPy's rint loop for bool: float16
    elif decimals != 0 and _inference.is_complex(a._expr.dtype):
        from gpuflow._bits import complex_from_parts

        # NumPy rounds each part as a real array (signed zeros, overflow to inf as its).
        result = complex_from_parts(round(a.real, decimals), round(a.imag, decimals),
                                    a._expr.dtype)
    elif decimals == 0 or (not _inference.is_float(a._expr.dtype) and decimals > 0):
        result = apply("round", (a,))
    elif _inference.is_float(a._expr.dtype):
        scale = 10.0 ** builtins.abs(decimals)
        result = (apply("round", (a * scale,)) / scale if decimals > 0
                  else apply("round", (a / scale,)) * scale)
    else:
        scale = 10.0 ** -decimals
        result = (apply("round", (a.astype("float64") / scale,)) * scale).astype(a.dtype)
    return rebind_out(out, result, "round", broadcast=True)


around = round


def where(condition, x=None, y=None):
    """numpy.where(condition, x, y). The one-argument form is nonzero
    (gpuflow._select: one Execute learns the count)."""
    if x is None and y is None:
        from gpuflow import _select

        return _select.nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return apply("where", (condition, x, y))


def _clip(a, a_min, a_max):
    if a_min is None and a_max is None:
        raise ValueError("One of max or min must be given")
    if a_min is None:
        return apply("minimum", (a, a_max))
    if a_max is None:
        return apply("maximum", (a, a_min))
    return apply("clip", (a, a_min, a_max))


_CLIP = ufunc("clip", 3, 1, _clip, simple=True)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):  # noqa: A002
    """numpy.clip; either bound may be None; ufunc keywords (out, dtype,
    casting, where) as NumPy's."""
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    return _CLIP(a, a_min, a_max, out=out, **kwargs)


def astype(x, dtype):
    """``x`` converted to ``dtype`` (the ``cast`` op)."""
    return apply("cast", (x,), {"dtype": dtype_name(dtype)})


# ---- reductions and scans -----------------------------------------------------------


def sum(a, axis=None, dtype=None, out=None, keepdims=False):  # noqa: A001
    """numpy.sum: bool and signed ints give int64, unsigned uint64, floats keep theirs."""
    return reduce("sum", a, axis, keepdims, dtype=dtype, out=out)


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """numpy.prod; dtypes as :func:`sum`."""
    return reduce("prod", a, axis, keepdims, dtype=dtype, out=out)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """numpy.mean: ints and bool give float64, floats keep theirs."""
    return reduce("mean", a, axis, keepdims, dtype=dtype, out=out)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """numpy.var (``dtype``: cast first)."""
    a = a if dtype is None else astype(a, dtype)
    return reduce("var", a, axis, keepdims, out=out, ddof=float(ddof) if ddof else None)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """numpy.std (``dtype``: cast first)."""
    a = a if dtype is None else astype(a, dtype)
    return reduce("std", a, axis, keepdims, out=out, ddof=float(ddof) if ddof else None)


def amin(a, axis=None, out=None, keepdims=False):
    """numpy.amin; NaN propagates; an empty reduction is an error."""
    return reduce("min", a, axis, keepdims, out=out)


def amax(a, axis=None, out=None, keepdims=False):
    """numpy.amax; NaN propagates; an empty reduction is an error."""
    return reduce("max", a, axis, keepdims, out=out)


min = amin  # noqa: A001
max = amax  # noqa: A001


def any(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """numpy.any."""
    return reduce("any", a, axis, keepdims, out=out)


def all(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """numpy.all."""
    return reduce("all", a, axis, keepdims, out=out)


def argmin(a, axis=None, out=None, keepdims=False, *, dtype=None):
    """numpy.argmin (int64, or CuPy's ``dtype``; the first index on ties)."""
    return arg_reduce("argmin", a, axis, keepdims, out, dtype)


def argmax(a, axis=None, out=None, keepdims=False, *, dtype=None):
    """numpy.argmax (int64, or CuPy's ``dtype``; the first index on ties)."""
    return arg_reduce("argmax", a, axis, keepdims, out, dtype)


def logsumexp(a, axis=None, keepdims=False):
    """scipy.special.logsumexp (without weights)."""
    return reduce("logsumexp", a, axis, keepdims)


def _along_axis(op, x, axis):
    if axis is None:  # scipy's default: the whole array
        x = x if isinstance(x, RemoteArray) else asarray(x)
        return apply(op, (x.reshape(-1),), {"axis": 0}).reshape(x.shape)
    return apply(op, (x,), {"axis": operator.index(axis)})


def softmax(x, axis=None):
    """scipy.special.softmax (cupyx.scipy.special.softmax): axis=None
    normalises over the whole array, as SciPy does; pass axis=-1 for rows."""
    return _along_axis("softmax", x, axis)


def log_softmax(x, axis=None):
    """scipy.special.log_softmax; axis=None as in :func:`softmax`."""
    return _along_axis("log_softmax", x, axis)


def cumsum(a, axis=None, dtype=None, out=None):
    """numpy.cumsum (axis=None: the flattened array)."""
    return scan("cumsum", a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """numpy.cumprod (axis=None: the flattened array)."""
    return scan("cumprod", a, axis, dtype, out)


# ---- linear algebra ------------------------------------------------------------------


def matmul(a, b, out=None, *, casting="same_kind", order="K", dtype=None, subok=True,
           signature=None, axes=None, axis=None):
    """numpy.matmul (also ``a @ b``), with the ufunc keywords; ``axes``
    names the core axes of a, b and the result ([(-2, -1)] * 3 by default)."""
    kwargs = {"casting": casting, "order": order, "dtype": dtype, "signature": signature}
    if axis is not None:
        raise TypeError("axis can only be used with a single shared core dimension, not with the "
                        "2 distinct ones implied by signature (n?,k),(k,m?)->(n?,m?).")
    if axes is None:
        return UFUNCS["matmul"](a, b, out=out, **kwargs)
    a, b = _as_remote(a), _as_remote(b)
    axes = list(axes)
    core = [builtins.min(a.ndim, 2), builtins.min(b.ndim, 2)]
    core.append(builtins.max(core[0] + core[1] - 2, 0))
    if len(axes) != 3:
        raise ValueError("axes should be a list with an entry for all 3 inputs and outputs; "
                         "entries for outputs can only be omitted if none of them has core axes.")
    axes = [tuple(_seq(x)) for x in axes]
    for i, (given, n) in enumerate(zip(axes, core)):
        if len(given) != n:
            raise ValueError(f"axes item {i} should be a tuple with {n} elements")
    a = moveaxis(a, axes[0], list(range(-core[0], 0)))
    b = moveaxis(b, axes[1], list(range(-core[1], 0)))
    result = UFUNCS["matmul"](a, b, **kwargs)
    if core[2]:
        result = moveaxis(result, list(range(-core[2], 0)), list(axes[2]))
    return rebind_out(out, result, "matmul", casting, broadcast=True)


def dot(a, b, out=None):
    """numpy.dot for operands of rank <= 2 (use matmul above); ``out`` must
    have the result's dtype and shape, as NumPy requires."""
    result = apply("dot", (a, b))
    if out is not None and (not isinstance(out, RemoteArray) or out.dtype != result.dtype
                            or out.shape != result.shape):
        raise ValueError("output array is not acceptable (must have the right datatype, number "
                         "of dimensions, and be a C-Array)")
    return rebind_out(out, result, "dot")


# ---- shapes ------------------------------------------------------------------------------


def _as_remote(a):
    return a if isinstance(a, RemoteArray) else asarray(a)


def reshape(a, newshape, order="C"):
    """numpy.reshape (order "F" as NumPy reads it; see RemoteArray.reshape)."""
    return _as_remote(a).reshape(newshape, order=order)


def transpose(a, axes=None):
    """numpy.transpose."""
    return _as_remote(a).transpose(axes)


def swapaxes(a, axis1, axis2):
    """numpy.swapaxes."""
    return _as_remote(a).swapaxes(axis1, axis2)


def moveaxis(a, source, destination):
    """numpy.moveaxis."""
    a = _as_remote(a)
    src = _axis_tuple(source, a.ndim, "source")
    dst = _axis_tuple(destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(order)


def _seq(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def _axis_tuple(axes, ndim, argname):
    """numpy.lib.normalize_axis_tuple: normalised, checked, not repeated."""
    out = [_inference.normalize_axis(x, ndim) for x in _seq(axes)]
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in `{argname}` argument")
    return out


def ravel(a, order="C"):
    """numpy.ravel."""
    return _as_remote(a).ravel(order)


def squeeze(a, axis=None):
    """numpy.squeeze (a 0-d array takes axis 0 or -1, as NumPy's)."""
    from gpuflow.remote_array import _scalar_axis

    return apply("squeeze", (a,), {"axes": axes_attr(_scalar_axis(a, axis))})


def expand_dims(a, axis):
    """numpy.expand_dims."""
    return apply("expand_dims", (a,), {"axes": axes_attr(axis)})


def broadcast_to(array, shape):
    """numpy.broadcast_to."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return apply("broadcast_to", (array,), {"shape": [operator.index(d) for d in shape]})


def flip(m, axis=None):
    """numpy.flip: reversed along ``axis`` (None: every axis)."""
    m = _as_remote(m)
    axes = range(m.ndim) if axis is None else _seq(axis)
    key = [slice(None)] * m.ndim
    for a in axes:
        key[_inference.normalize_axis(a, m.ndim)] = slice(None, None, -1)
    return m[tuple(key)]


def take(a, indices, axis=None, out=None, mode="raise"):
    """numpy.take (gpuflow._gather): one take node."""
    from gpuflow import _gather

    return _gather.take(a, indices, axis, out, mode)


def take_along_axis(arr, indices, axis=-1):
    """numpy.take_along_axis (gpuflow._gather): one take_along_axis node."""
    from gpuflow import _gather

    return _gather.take_along_axis(arr, indices, axis)


def _joined(op, arrays, axis, out, dtype, casting):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to " + ("concatenate" if op == "concatenate"
                                                          else "stack"))
    _inference.check_casting(casting)
    if dtype is not None:
        target = dtype_name(dtype)
        session = session_of(arrays)
        arrays = [x if isinstance(x, RemoteArray) else asarray(x, session=session) for x in arrays]
        for x in arrays:
            if not _inference.can_cast(x._expr.dtype, target, casting):
                raise TypeError(f"Cannot cast array data from dtype('{x._expr.dtype}') to "
                                f"dtype('{target}') according to the rule '{casting}'")
        arrays = [x.astype(target, copy=False) for x in arrays]
    result = apply(op, tuple(arrays), {"axis": operator.index(axis)})
    return rebind_out(out, result, op, casting)


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """numpy.concatenate (promoted dtype, or ``dtype`` with its casting check)."""
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    return _joined("concatenate", arrays, axis, out, dtype, casting)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """numpy.stack (promoted dtype, or ``dtype`` with its casting check)."""
    return _joined("stack", arrays, axis, out, dtype, casting)


# ---- creation ----------------------------------------------------------------------------


def _shape(shape):
    if shape is None:  # NumPy's zeros(None): 0-d
        return []
    if isinstance(shape, (int, np.integer)):
        return [operator.index(shape)]
    return [operator.index(d) for d in shape]


def _order(order, allowed="CF"):
    """NumPy's check of an ``order`` argument; every order gives gpuflow's
    C-ordered array (the values are the same)."""
    if order is None:
        return
    if not isinstance(order, str) or order.upper() not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if order.upper() not in allowed:
        raise ValueError("only 'C' or 'F' order is permitted")


def full(shape, fill_value, dtype=None, order="C", *, session=None):
    """numpy.full; the result is writable (see gpuflow.remote_array)."""
    _order(order)
    if isinstance(fill_value, np.ndarray) and fill_value.ndim == 0:
        fill_value = fill_value[()]
    attrs = {"shape": _shape(shape), "dtype": dtype_name(dtype) if dtype is not None else None}
    return apply("full", (fill_value,), attrs, session=session, writable=True)


def zeros(shape, dtype=float, order="C", *, session=None):
    """numpy.zeros; writable."""
    _order(order)
    return full(shape, False if dtype_name(dtype) == "bool" else 0, dtype, session=session)


def ones(shape, dtype=float, order="C", *, session=None):
    """numpy.ones; writable."""
    _order(order)
    return full(shape, True if dtype_name(dtype) == "bool" else 1, dtype, session=session)


def empty(shape, dtype=float, order="C", *, session=None):
    """Like zeros (the server has no uninitialised arrays); writable."""
    _order(order)
    return zeros(shape, dtype, session=session)


def _like(a, dtype, shape):
    dtype = dtype if dtype is not None else a.dtype
    return (a.shape if shape is None else shape), dtype, session_of((a,))


def full_like(a, fill_value, dtype=None, order="K", subok=None, shape=None):
    """numpy.full_like, in ``a``'s session; writable."""
    _order(order, "CFAK")
    shape, dtype, s = _like(a, dtype, shape)
    return full(shape, fill_value, dtype, session=s)


def zeros_like(a, dtype=None, order="K", subok=None, shape=None):
    """numpy.zeros_like, in ``a``'s session; writable."""
    _order(order, "CFAK")
    shape, dtype, s = _like(a, dtype, shape)
    return zeros(shape, dtype, session=s)


def ones_like(a, dtype=None, order="K", subok=None, shape=None):
    """numpy.ones_like, in ``a``'s session; writable."""
    _order(order, "CFAK")
    shape, dtype, s = _like(a, dtype, shape)
    return ones(shape, dtype, session=s)


def empty_like(a, dtype=None, order="K", subok=None, shape=None):
    """Like zeros_like; writable."""
    _order(order, "CFAK")
    shape, dtype, s = _like(a, dtype, shape)
    return empty(shape, dtype, session=s)


def arange(start, stop=None, step=None, dtype=None, *, session=None):
    """numpy.arange; writable."""
    if stop is None:
        start, stop = 0, start
    name = dtype_name(dtype) if dtype is not None else None
    if name == "bool":
        n = math.ceil((_number(stop) - _number(start)) / (1 if step is None else _number(step)))
        if n > 2:
            raise TypeError("arange() is only supported for booleans when the result has at "
                            "most length 2.")
    if name is not None and _inference.is_complex(name):
        # The server's arange is real: the real part's values, then complex.
        real = arange(start, stop, step, _inference.real_dtype(name), session=session)
        return real.astype(name)
    attrs = {"start": _number(start), "stop": _number(stop),
             "step": None if step is None else _number(step), "dtype": name}
    return apply("arange", (), attrs, session=session, writable=True)


def _number(v):
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return float(v)


def random_uniform(shape, *, seed, low=0.0, high=1.0, dtype="float32", session=None):
    """Uniform values in [low, high), the same on every backend for a seed."""
    attrs = {"shape": _shape(shape), "seed": operator.index(seed), "low": float(low),
             "high": float(high), "dtype": dtype_name(dtype)}
    return apply("random_uniform", (), attrs, session=session, writable=True)


def random_normal(shape, *, seed, mean=0.0, std=1.0, dtype="float32", session=None):
    """Normal values (Box-Muller), the same on every backend for a seed."""
    attrs = {"shape": _shape(shape), "seed": operator.index(seed), "mean": float(mean),
             "std": float(std), "dtype": dtype_name(dtype)}
    return apply("random_normal", (), attrs, session=session, writable=True)


def asarray(a, dtype=None, order=None, *, session=None):
    """Uploads an array-like (numpy, torch on any device, DLPack, lists) as a
    RemoteArray; see :meth:`gpuflow.Session.asarray`. Every ``order`` gives
    a C-ordered array."""
    from gpuflow.remote_array import asarray as _asarray

    _order(order, "CFAK")

    return _asarray(a, dtype=dtype, session=session)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, session=None):
    """cupy.array: like :func:`asarray`, but the result is a writable copy
    (custom kernels may write it). ``copy=False`` is :func:`asarray`; every
    ``order`` gives a C-ordered array; ``ndmin`` prepends ones to the
    shape."""
    _order(order, "CFAK")
    a = asarray(obj, dtype, session=session)
    if a.ndim < operator.index(ndmin):
        a = a.reshape((1,) * (ndmin - a.ndim) + a.shape)
    return a.copy() if copy else a


def ndim(a):
    """numpy.ndim, without evaluating a RemoteArray."""
    return a.ndim if isinstance(a, RemoteArray) else np.ndim(a)


def shape(a):
    """numpy.shape, without evaluating a RemoteArray."""
    return a.shape if isinstance(a, RemoteArray) else np.shape(a)


def size(a):
    """numpy.size, without evaluating a RemoteArray."""
    return a.size if isinstance(a, RemoteArray) else np.size(a)


def result_type(*arrays_and_dtypes):
    """numpy.result_type under NumPy 2 rules (Python scalars weak), for
    RemoteArrays, arrays, scalars and dtypes (bfloat16 included)."""
    types = []
    for x in arrays_and_dtypes:
        if isinstance(x, RemoteArray):
            types.append(_inference.Type(x._expr.dtype, ()))
        elif isinstance(x, (bool, int, float, complex)):
            types.append(_inference.Type.weak_scalar(x))
        elif isinstance(x, (np.ndarray, np.generic)):
            types.append(_inference.Type(dtype_name(x.dtype), ()))
        else:
            types.append(_inference.Type(dtype_name(x), ()))
    name = _inference.promote_types(types)
    return name if name == "bfloat16" else np.dtype(name)


def can_cast(from_, to, casting="safe"):
    """numpy.can_cast for dtypes and RemoteArrays (by dtype, as NumPy 2)."""
    _inference.check_casting(casting)
    source = from_._expr.dtype if isinstance(from_, RemoteArray) else dtype_name(
        from_.dtype if isinstance(from_, (np.ndarray, np.generic)) else from_)
    return _inference.can_cast(source, dtype_name(to), casting)


# The NumPy functions composed in their own modules, and CuPy's ndarray names.
from gpuflow import _products, _ranges, _select, _shapes, _stats  # noqa: E402
from gpuflow import random  # noqa: E402,F401 - gpuflow.random, CuPy's cupy.random
from gpuflow._products import *  # noqa: E402,F401,F403
from gpuflow._ranges import *  # noqa: E402,F401,F403
from gpuflow._select import *  # noqa: E402,F401,F403
from gpuflow._shapes import *  # noqa: E402,F401,F403
from gpuflow._stats import *  # noqa: E402,F401,F403

ndarray = RemoteArray

__all__ = sorted(
    list(UFUNCS) + list(ALIASES) + _products.__all__ + _ranges.__all__ + _select.__all__
    + _shapes.__all__ + _stats.__all__ + [
        "all", "amax", "amin", "any", "arange", "array", "argmax", "argmin", "around", "asarray",
        "broadcast_to", "can_cast", "clip", "concatenate", "cumprod", "cumsum", "dot", "empty",
        "empty_like", "expand_dims", "flip", "full", "full_like", "log_softmax", "logsumexp",
        "max", "mean", "min", "moveaxis", "ndarray", "ndim", "ones", "ones_like",
        "prod", "random", "random_normal", "random_uniform", "ravel", "reshape", "result_type",
        "round", "shape", "size", "softmax", "squeeze", "stack", "std", "sum", "swapaxes",
        "take", "take_along_axis", "transpose", "ufunc", "var", "where", "zeros", "zeros_like",
    ]
)

# Sorting and the statistics NumPy defines through it (gpuflow._sorting).
from gpuflow import _sorting  # noqa: E402
from gpuflow._sorting import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _sorting.__all__)

# histogram, histogram_bin_edges, digitize (gpuflow._histogram).
from gpuflow import _histogram  # noqa: E402
from gpuflow._histogram import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _histogram.__all__)

# einsum, einsum_path (gpuflow._einsum).
from gpuflow import _einsum  # noqa: E402
from gpuflow._einsum import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _einsum.__all__)

# vander and the poly* functions, poly1d (gpuflow._poly); cov, corrcoef, choose,
# piecewise, apply_along_axis, apply_over_axes, nanargmax, nanargmin (gpuflow._misc).
from gpuflow import _misc, _poly  # noqa: E402
from gpuflow._misc import *  # noqa: E402,F401,F403
from gpuflow._poly import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _misc.__all__ + _poly.__all__)

# tril_indices, unravel_index, ravel_multi_index, ix_, fill_diagonal, copyto ...
# (gpuflow._index_helpers).
from gpuflow import _index_helpers  # noqa: E402
from gpuflow._index_helpers import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _index_helpers.__all__)

# geomspace, fix, isposinf, i0, the window functions, trim_zeros, sort_complex ...
# (gpuflow._numpy_misc).
from gpuflow import _numpy_misc  # noqa: E402
from gpuflow._numpy_misc import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _numpy_misc.__all__)

# intersect1d, union1d, setdiff1d, setxor1d, in1d and isin (gpuflow._sets).
from gpuflow import _sets  # noqa: E402
from gpuflow._sets import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _sets.__all__)

# packbits and unpackbits (gpuflow._bits, which also makes view(dtype) change
# the item size and complex arrays from their parts).
from gpuflow import _bits  # noqa: E402
from gpuflow._bits import *  # noqa: E402,F401,F403

__all__ = sorted(set(__all__ + _bits.__all__))

# NumPy 2's array-API names (cumulative_sum, unique_all, vecdot, ...), block,
# insert, delete, r_/c_ and CuPy's host-interop names (asnumpy, save, load,
# from_dlpack ...) (gpuflow._compat, gpuflow._compat_host).
from gpuflow import _compat  # noqa: E402
from gpuflow._compat import *  # noqa: E402,F401,F403

__all__ = sorted(__all__ + _compat.__all__)
