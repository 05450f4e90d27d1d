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

import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import (
    RemoteArray,
    apply,
    arg_reduce,
    axes_attr,
    dtype_name,
    reduce,
    scan,
    session_of,
)


def _unary(op, numpy_name):
    def f(x, out=None):
        if out is not None:
            raise TypeError("out= is not supported: gpuflow arrays are immutable")
        return apply(op, (x,))

    f.__name__ = f.__qualname__ = numpy_name
    f.__doc__ = f"numpy.{numpy_name} (gpuflow op {op!r}; see docs/ops.md for dtypes)."
    return f


def _binary(op, numpy_name):
    def f(x1, x2, out=None):
        if out is not None:
            raise TypeError("out= is not supported: gpuflow arrays are immutable")
        return apply(op, (x1, x2))

    f.__name__ = f.__qualname__ = numpy_name
    f.__doc__ = f"numpy.{numpy_name} (gpuflow op {op!r}; see docs/ops.md for dtypes)."
    return f


# numpy name -> gpuflow op. Aliases share an op (absolute/abs, ...).
UNARY = {
    "negative": "neg", "absolute": "abs", "abs": "abs", "sign": "sign", "square": "square",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "log": "log", "log1p": "log1p",
    "expm1": "expm1", "sin": "sin", "cos": "cos", "tanh": "tanh", "sigmoid": "sigmoid",
    "relu": "relu", "gelu": "gelu", "erf": "erf", "floor": "floor", "ceil": "ceil",
    "rint": "round", "reciprocal": "reciprocal", "isnan": "isnan", "isinf": "isinf",
    "logical_not": "logical_not", "invert": "bitwise_not", "bitwise_not": "bitwise_not",
}
BINARY = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
    "floor_divide": "floordiv", "remainder": "mod", "mod": "mod", "power": "pow",
    "maximum": "maximum", "minimum": "minimum", "arctan2": "atan2", "equal": "eq",
    "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
}

for _name, _op in UNARY.items():
    globals()[_name] = _unary(_op, _name)
for _name, _op in BINARY.items():
    globals()[_name] = _binary(_op, _name)


def round(a, decimals=0, out=None):  # noqa: A001 - numpy's name
    """numpy.round with decimals=0 (half to even)."""
    if out is not None:
        raise TypeError("out= is not supported: gpuflow arrays are immutable")
    if decimals != 0:
        raise NotImplementedError("gpuflow rounds to integers only (decimals=0)")
    return apply("round", (a,))


around = round


def where(condition, x, y):
    """numpy.where(condition, x, y); the one-argument form is not supported."""
    return apply("where", (condition, x, y))


def clip(a, a_min, a_max, out=None):
    """numpy.clip; either bound may be None."""
    if out is not None:
        raise TypeError("out= is not supported: gpuflow arrays are immutable")
    if a_min is None and a_max is None:
        raise ValueError("One of max or min must be given")
    if a_min is None:
        return apply("minimum", (a, a_max))
    if a_max is None:
        return apply("maximum", (a, a_min))
    return apply("clip", (a, a_min, a_max))


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


def argmin(a, axis=None, out=None, keepdims=False):
    """numpy.argmin (int64; the first index on ties)."""
    return arg_reduce("argmin", a, axis, keepdims, out)


def argmax(a, axis=None, out=None, keepdims=False):
    """numpy.argmax (int64; the first index on ties)."""
    return arg_reduce("argmax", a, axis, keepdims, out)


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


def matmul(a, b, out=None):
    """numpy.matmul (also ``a @ b``)."""
    if out is not None:
        raise TypeError("out= is not supported: gpuflow arrays are immutable")
    return apply("matmul", (a, b))


def dot(a, b, out=None):
    """numpy.dot for operands of rank <= 2 (use matmul above)."""
    if out is not None:
        raise TypeError("out= is not supported: gpuflow arrays are immutable")
    return apply("dot", (a, b))


# ---- shapes ------------------------------------------------------------------------------


def _as_remote(a):
    return a if isinstance(a, RemoteArray) else asarray(a)


def reshape(a, newshape, order="C"):
    """numpy.reshape (C order)."""
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
    src = [_inference.normalize_axis(s, a.ndim) for s in _seq(source)]
    dst = [_inference.normalize_axis(d, a.ndim) for d in _seq(destination)]
    if len(src) != len(dst):
        raise ValueError("source and destination must have the same number of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(order)


def _seq(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def ravel(a, order="C"):
    """numpy.ravel."""
    return _as_remote(a).reshape(-1, order=order)


def squeeze(a, axis=None):
    """numpy.squeeze."""
    return apply("squeeze", (a,), {"axes": axes_attr(axis)})


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


def concatenate(arrays, axis=0):
    """numpy.concatenate (promoted dtype)."""
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    return apply("concatenate", tuple(arrays), {"axis": operator.index(axis)})


def stack(arrays, axis=0):
    """numpy.stack (promoted dtype)."""
    return apply("stack", tuple(arrays), {"axis": operator.index(axis)})


# ---- creation ----------------------------------------------------------------------------


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return [operator.index(shape)]
    return [operator.index(d) for d in shape]


def full(shape, fill_value, dtype=None, *, session=None):
    """numpy.full; the result is writable (see gpuflow.remote_array)."""
    if isinstance(fill_value, np.ndarray) and fill_value.ndim == 0:
        fill_value = fill_value[()]
    attrs = {"shape": _shape(shape), "dtype": dtype_name(dtype) if dtype is not None else None}
    return apply("full", (fill_value,), attrs, session=session, writable=True)


def zeros(shape, dtype=float, *, session=None):
    """numpy.zeros; writable."""
    return full(shape, False if dtype_name(dtype) == "bool" else 0, dtype, session=session)


def ones(shape, dtype=float, *, session=None):
    """numpy.ones; writable."""
    return full(shape, True if dtype_name(dtype) == "bool" else 1, dtype, session=session)


def empty(shape, dtype=float, *, session=None):
    """Like zeros (the server has no uninitialised arrays); writable."""
    return zeros(shape, dtype, session=session)


def _like(a, dtype, shape):
    dtype = dtype if dtype is not None else a.dtype
    return (a.shape if shape is None else shape), dtype, session_of((a,))


def full_like(a, fill_value, dtype=None, shape=None):
    """numpy.full_like, in ``a``'s session; writable."""
    shape, dtype, s = _like(a, dtype, shape)
    return full(shape, fill_value, dtype, session=s)


def zeros_like(a, dtype=None, shape=None):
    """numpy.zeros_like, in ``a``'s session; writable."""
    shape, dtype, s = _like(a, dtype, shape)
    return zeros(shape, dtype, session=s)


def ones_like(a, dtype=None, shape=None):
    """numpy.ones_like, in ``a``'s session; writable."""
    shape, dtype, s = _like(a, dtype, shape)
    return ones(shape, dtype, session=s)


def empty_like(a, dtype=None, shape=None):
    """Like zeros_like; writable."""
    shape, dtype, s = _like(a, dtype, shape)
    return empty(shape, dtype, session=s)


def arange(start, stop=None, step=None, dtype=None, *, session=None):
    """numpy.arange; writable."""
    if stop is None:
        start, stop = 0, start
    attrs = {"start": _number(start), "stop": _number(stop),
             "step": None if step is None else _number(step),
             "dtype": dtype_name(dtype) if dtype is not None else None}
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


def asarray(a, dtype=None, *, session=None):
    """Uploads an array-like (numpy, torch on any device, DLPack, lists) as a
    RemoteArray; see :meth:`gpuflow.Session.asarray`."""
    from gpuflow.remote_array import asarray as _asarray

    return _asarray(a, dtype=dtype, session=session)


def array(obj, dtype=None, copy=True, *, session=None):
    """cupy.array: like :func:`asarray`, but the result is a writable copy
    (custom kernels may write it). ``copy=False`` is :func:`asarray`."""
    a = asarray(obj, dtype, session=session)
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


__all__ = sorted(
    list(UNARY) + list(BINARY) + [
        "all", "amax", "amin", "any", "arange", "array", "argmax", "argmin", "around", "asarray",
        "broadcast_to", "clip", "concatenate", "cumprod", "cumsum", "dot", "empty",
        "empty_like", "expand_dims", "flip", "full", "full_like", "log_softmax", "logsumexp",
        "matmul", "max", "mean", "min", "moveaxis", "ndim", "ones", "ones_like", "prod",
        "random_normal", "random_uniform", "ravel", "reshape", "round", "shape", "size",
        "softmax", "squeeze", "stack", "std", "sum", "swapaxes", "transpose", "var", "where",
        "zeros", "zeros_like",
    ]
)
