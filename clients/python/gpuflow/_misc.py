"""More of NumPy's functions that NumPy writes as compositions, written the
same way on the server's ops:

    gf.cov(m); gf.corrcoef(x, y); gf.choose(a, [c0, c1], mode="wrap")
    gf.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v])
    gf.apply_along_axis(f, 1, x); gf.apply_over_axes(gf.sum, x, [0, 2])
    gf.nanargmax(x, axis=0); gf.nanargmin(x)

cov is one mean, one subtraction and one matmul; corrcoef divides by the
diagonal's square roots and clips. choose and piecewise are one fused chain
of ``where`` (choose of a RemoteArray of indices in mode "raise" one stack
and one gather, for the bounds check). apply_along_axis and apply_over_axes
are Python loops, as in NumPy and CuPy: apply_along_axis calls func1d on a
RemoteArray slice for every index of the other axes and stacks the results,
so it records one sub-graph per slice (use it for few slices).
"""

import math
import operator
import warnings

import numpy as np

from gpuflow import _inference
from gpuflow._ufunc import cast
from gpuflow.remote_array import (RemoteArray, apply, arg_reduce, asarray, rebind_out, reduce,
                                  session_of)


def _remote(x, session=None):
    if isinstance(x, RemoteArray):
        return x
    return asarray(np.asarray(x), session=session_of((), session))


def _ndmin2(x):
    return x.reshape((1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x


def _functions():
    from gpuflow import functions

    return functions


# ---- covariance and correlation ------------------------------------------------------------


def _host_weights(weights, name, samples):
    """NumPy's checks of fweights/aweights, on their values (downloaded when
    they are RemoteArrays: one Execute)."""
    w = weights.get() if isinstance(weights, RemoteArray) else weights
    w = np.asarray(w, dtype=float)
    if name == "fweights" and not np.all(w == np.around(w)):
        raise TypeError("fweights must be integer")
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if w.shape[0] != samples:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if np.any(w < 0):
        raise ValueError(f"{name} cannot be negative")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """numpy.cov: NumPy's formula (the weighted mean subtracted, one matmul
    with the conjugate transpose, divided by NumPy's normalisation) in its
    dtype (float64 unless ``dtype``); ``rowvar=False`` transposes any 2-D
    m, a single row too (NumPy >= 2.2). Weights are checked and summed on the
    client, as NumPy does (downloaded when they are RemoteArrays)."""
    functions = _functions()
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    session = session_of((m, y, fweights, aweights))
    m = _remote(m, session)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _remote(y, session)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        types = [m] if y is None else [m, y]
        dtype = _inference.promote_types([_inference.Type(a._expr.dtype, ()) for a in types]
                                         + [_inference.Type("float64", ())])
    else:
        from gpuflow.remote_array import dtype_name

        dtype = dtype_name(dtype)
    X = _ndmin2(cast(m, dtype))
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return functions.zeros((0, 0), "float64", session=session)
    if y is not None:
        y = _ndmin2(cast(y, dtype))
        if not rowvar and y.shape[0] != 1:
            y = y.T
        X = functions.concatenate([X, y], axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    n = X.shape[1]
    w = None
    if fweights is not None:
        w = _host_weights(fweights, "fweights", n)
    if aweights is not None:
        aw = _host_weights(aweights, "aweights", n)
        w = aw if w is None else w * aw
    if w is None:
        avg = reduce("mean", X, 1, keepdims=True)
        fact = n - ddof
    else:
        w_sum = w.sum()
        wr = asarray(w.reshape(1, n), session=session)
        wide = _inference.promote_dtypes(dtype, "float64")
        avg = cast(reduce("sum", cast(X, wide) * wr, 1, keepdims=True) / float(w_sum), wide)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * aw) / w_sum
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    X = cast(X - avg, dtype)
    X_T = (X if w is None else X * wr).T
    if _inference.is_complex(X_T._expr.dtype):
        X_T = X_T.conj()
    c = functions.matmul(X, X_T)
    c = cast(c * np.true_divide(1, fact), c._expr.dtype)
    return c.squeeze() if 1 in c.shape else c  # (every shape op is a copy step)


def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """numpy.corrcoef: cov divided by the square roots of its diagonal, the
    real (and imaginary) parts clipped to [-1, 1] as NumPy does; ``bias``
    and ``ddof`` have no effect (NumPy's DeprecationWarning)."""
    functions = _functions()
    if bias is not np._NoValue or ddof is not np._NoValue:
        warnings.warn("bias and ddof have no effect and are deprecated", DeprecationWarning,
                      stacklevel=2)
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim != 2:
        return c / c
    stddev = functions.sqrt(functions.real(functions.diagonal(c)))
    c = cast(c / stddev.reshape(-1, 1), c.dtype)
    c = cast(c / stddev, c.dtype)  # stddev[None, :] by broadcasting
    if not _inference.is_complex(c._expr.dtype):
        return functions.clip(c, -1, 1)
    re, im = functions.real(c), functions.imag(c)
    outside = (abs(re) > 1) | (abs(im) > 1)
    rebuilt = cast(functions.clip(re, -1, 1) + 1j * functions.clip(im, -1, 1), c.dtype)
    return functions.where(outside, rebuilt, c)


# ---- choosing and selecting ----------------------------------------------------------------


def choose(a, choices, out=None, mode="raise"):
    """numpy.choose: a and the choices broadcast together, in the choices'
    result type; one fused chain of ``where``. mode "wrap" and "clip" as
    NumPy; "raise" raises NumPy's ValueError at the call for indices the
    client holds, and for a RemoteArray of indices takes one stack and one
    gather instead, whose bounds check raises InvalidArgumentError when the
    result is evaluated."""
    functions = _functions()
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if isinstance(choices, RemoteArray):
        choices = [choices[i] for i in range(choices.shape[0])] if choices.ndim else [choices]
    choices = list(choices)
    session = session_of([a] + choices)
    if not choices:
        raise ValueError("0-length sequence.")
    n = len(choices)
    if isinstance(a, RemoteArray):
        source = a._expr.dtype
    else:
        a = np.asarray(a)
        source = a.dtype.name
    if not _inference.can_cast(source, "int64", "safe"):
        raise TypeError(f"Cannot cast array data from dtype('{source}') to dtype('int64') "
                        "according to the rule 'safe'")
    checked = not isinstance(a, RemoteArray)
    if checked:
        if mode == "raise" and a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError("invalid entry in choice array")
        a = asarray(a, session=session)
    choices = [_remote(c, session) for c in choices]
    dtype = _inference.promote_types([_inference.Type(c._expr.dtype, ()) for c in choices])
    shape = _inference.broadcast_shapes(a.shape, *(c.shape for c in choices))
    index = cast(a, "int64")
    if mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = functions.clip(index, 0, n - 1)
    if mode != "raise" or checked:
        # Every index is valid: one fused chain of where, no stacked copy.
        result = cast(choices[-1], dtype)
        for k in range(n - 2, -1, -1):
            result = functions.where(index == k, choices[k], result)
        result = cast(result, dtype)
        if result.shape != tuple(shape):
            result = functions.broadcast_to(result, shape)
        return rebind_out(out, result, "choose")
    index = functions.where(index < 0, n, index)  # out of bounds, as NumPy's check
    stacked = functions.stack([functions.broadcast_to(cast(c, dtype), shape) for c in choices])
    index = functions.broadcast_to(index, shape).reshape((1,) + tuple(shape))
    result = functions.take_along_axis(stacked, index, axis=0).reshape(shape)
    return rebind_out(out, result, "choose")


def _condition_list(x, condlist):
    if isinstance(condlist, RemoteArray):
        if condlist.ndim == 0 or (condlist.ndim == 1 and x.ndim != 0):
            return [condlist]
        return [condlist[i] for i in range(condlist.shape[0])]
    if np.isscalar(condlist):
        return [condlist]
    if isinstance(condlist, np.ndarray):
        if condlist.ndim == 0 or (condlist.ndim == 1 and x.ndim != 0):
            return [condlist]
        return list(condlist)
    condlist = list(condlist)
    first = condlist[0]
    if not isinstance(first, (list, np.ndarray, RemoteArray)) and x.ndim != 0:
        return [condlist]
    return condlist


def piecewise(x, condlist, funclist, *args, **kw):
    """numpy.piecewise as one fused chain of ``where``: later conditions win,
    values are cast to x's dtype, an extra function is the 'otherwise'; a
    value that is not callable is a scalar or an array broadcast against x
    (NumPy also assigns a sequence of len(x[cond]) elements in order).
    Differs from NumPy for callables: each is called once with the whole of
    x (a RemoteArray of x's shape, plus ``args``/``kw``), not with x[cond],
    so it must be elementwise (CuPy refuses callables)."""
    functions = _functions()
    x = _remote(x, session_of((x,)))
    conds = []
    for c in _condition_list(x, condlist):
        c = cast(_remote(c, x.session), "bool")
        if c.shape != x.shape:
            for d, (n, k) in enumerate(zip(x.shape, c.shape)):
                if n != k:
                    raise IndexError(f"boolean index did not match indexed array along dimension "
                                     f"{d}; dimension is {n} but corresponding boolean dimension "
                                     f"is {k}")
            raise IndexError(f"piecewise needs conditions of x's shape {x.shape}, got {c.shape}")
        conds.append(c)
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:
        anything = functions.zeros(x.shape, "bool", session=x.session)
        for c in conds:
            anything = anything | c
        conds.append(~anything)
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = functions.zeros_like(x)
    for cond, func in zip(conds, funclist):
        value = func(x, *args, **kw) if callable(func) else func
        if not isinstance(value, (RemoteArray, bool, int, float, complex)):
            value = _remote(value, x.session)
        y = functions.where(cond, cast(value, x._expr.dtype), y)
    return y


# ---- applying functions along axes ---------------------------------------------------------


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """numpy.apply_along_axis: func1d on every 1-D slice along ``axis`` (a
    RemoteArray), the results stacked in the first result's dtype. A Python
    loop as in NumPy and CuPy: one sub-graph per slice."""
    functions = _functions()
    arr = _remote(arr)
    nd = arr.ndim
    axis = _inference.normalize_axis(axis, nd)
    view = arr.transpose([i for i in range(nd) if i != axis] + [axis])
    outer = view.shape[:-1]
    if any(d == 0 for d in outer):
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = []
    for index in np.ndindex(*outer):
        res = func1d(view[index + (Ellipsis,)], *args, **kwargs)
        res = _remote(res, arr.session)
        if results:
            res = functions.broadcast_to(cast(res, results[0].dtype), results[0].shape)
        results.append(res)
    first = results[0]
    buff = functions.stack(results).reshape(tuple(outer) + first.shape)
    dims = list(range(buff.ndim))
    permute = dims[:axis] + dims[buff.ndim - first.ndim:] + dims[axis:buff.ndim - first.ndim]
    return buff.transpose(permute)


def apply_over_axes(func, a, axes):
    """numpy.apply_over_axes: ``a = func(a, axis)`` for each axis, the axis
    put back (expand_dims) when func removed it."""
    functions = _functions()
    val = _remote(a)
    n = val.ndim
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        axis = operator.index(axis)
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if res.ndim == val.ndim:
            val = res
        else:
            res = functions.expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ValueError("function is not returning an array of the correct shape")
            val = res
    return val


# ---- NaN-ignoring arg reductions -----------------------------------------------------------


def _nan_arg(op, fill, a, axis, out, keepdims):
    a = _remote(a)
    dtype = a._expr.dtype
    if not (_inference.is_float(dtype) or _inference.is_complex(dtype)):
        return arg_reduce(op, a, axis, keepdims, out=out)
    nan = apply("isnan", (a,))
    index = arg_reduce(op, apply("where", (nan, fill, a)), axis, keepdims)
    all_nan = reduce("all", nan, axis, keepdims)
    return rebind_out(out, apply("where", (all_nan, -1, index)), "nan" + op)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """numpy.nanargmax: NaN counts as -inf (NumPy's formulation). An
    all-NaN slice gives -1, as in CuPy, where NumPy raises ValueError."""
    return _nan_arg("argmax", -math.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """numpy.nanargmin: NaN counts as +inf. An all-NaN slice gives -1, as in
    CuPy, where NumPy raises ValueError."""
    return _nan_arg("argmin", math.inf, a, axis, out, keepdims)


__all__ = ["apply_along_axis", "apply_over_axes", "choose", "corrcoef", "cov", "nanargmax",
           "nanargmin", "piecewise"]
