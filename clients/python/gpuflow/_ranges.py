"""Evenly spaced values and grids, NumPy's algorithms on the server's
``arange`` (so the numbers are NumPy's, to the last bit for float64):

    gf.linspace(0, 1, 5); gf.logspace(0, 3, 4); gf.eye(3, k=1); gf.identity(4)
    xx, yy = gf.meshgrid(x, y); gf.mgrid[0:5, 0:1:3j]; gf.ogrid[0:4, 0:3]

Creation functions take ``session=`` (default: the current session);
``mgrid`` and ``ogrid`` use the current session.
"""

import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, apply, asarray, dtype_name, session_of


def _arange(num, dtype, session):
    if _inference.is_complex(dtype):  # the server's arange is real
        return _arange(num, _inference.real_dtype(dtype), session).astype(dtype)
    return apply("arange", (), {"start": 0, "stop": num, "dtype": dtype}, session=session,
                 writable=True)


def _is_scalar(x):
    return isinstance(x, (bool, int, float, np.generic)) or (
        isinstance(x, np.ndarray) and x.ndim == 0)


def _inexact(types):
    """The float dtype NumPy's linspace computes in: the inputs' result type,
    a float (float64 for integers)."""
    return _inference.promote_types(list(types) + [_inference.Type.weak_scalar(1.0)])


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             session=None):
    """numpy.linspace: ``arange(num) * step + start``, the last value
    ``stop``, computed as NumPy computes it."""
    from gpuflow import functions

    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = num - 1 if endpoint else num
    session = session_of((start, stop), session)
    if _is_scalar(start) and _is_scalar(stop):
        s0, s1 = np.asarray(start), np.asarray(stop)
        types = [_inference.Type(v.dtype.name, ()) if isinstance(x, (np.generic, np.ndarray))
                 else _inference.Type.weak_scalar(x) for x, v in ((start, s0), (stop, s1))]
        dt = _inexact(types)
        with np.errstate(all="ignore"):
            delta = np.subtract(s1, s0, dtype=dt)[()]
            step = delta / div if div > 0 else math.nan
        y = _arange(num, dt, session)
        index = _arange(num, "int64", session)  # exact, whatever dt holds
        if div > 0:
            y = y / div * delta if step == 0 else y * step
        else:
            y = y * delta
        y = y + s0.astype(dt)[()]
    else:
        from gpuflow._ufunc import UFUNCS

        a0 = start if isinstance(start, RemoteArray) else asarray(start, session=session)
        a1 = stop if isinstance(stop, RemoteArray) else asarray(stop, session=session)
        # A Python scalar beside an array is weak, as in NumPy 2:
        # linspace(0, float32 array) stays float32.
        dt = _inexact([_inference.Type.weak_scalar(x)
                       if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)
                       else _inference.Type(a._expr.dtype, a.shape)
                       for x, a in ((start, a0), (stop, a1))])
        delta = UFUNCS["subtract"](a1, a0, dtype=dt)
        y = _arange(num, dt, session).reshape((-1,) + (1,) * delta.ndim)
        index = _arange(num, "int64", session).reshape(y.shape)
        if div > 0:
            step = delta / div
            y = functions.where(step == 0, y / div * delta, y * step)
        else:
            step = math.nan
            y = y * delta
        y = (y + a0).astype(dt, copy=False)
    if endpoint and num > 1:
        y = functions.where(index == num - 1, stop, y).astype(dt, copy=False)
    if axis != 0:
        y = functions.moveaxis(y, 0, axis)
    if dtype is not None:
        target = dtype_name(dtype)
        if _inference.kind(target) in "iu":
            y = functions.floor(y)
        y = y.astype(target, copy=False)
    y._writable = True
    return (y, step) if retstep else y


def _shape(x):
    return x.shape if isinstance(x, RemoteArray) else np.shape(x)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, *,
             session=None):
    """numpy.logspace: ``base ** linspace(start, stop)``, as NumPy 2 writes
    it. A scalar base is the power's operand as it is: a Python float or
    int is weak, so float32 start and stop give float32 (a numpy scalar
    keeps its dtype). An array base is broadcast with start and stop, which
    become arrays of as many dimensions (Python scalars among them strong),
    and gets an axis where the samples go."""
    from gpuflow import functions

    session = session_of((start, stop, base), session)
    if not isinstance(base, (float, int)) and len(_shape(base)):
        ndmax = len(_inference.broadcast_shapes(_shape(start), _shape(stop), _shape(base)))

        def ndmin(x):
            if not isinstance(x, RemoteArray):
                return np.array(x, ndmin=ndmax)
            return x.reshape((1,) * (ndmax - x.ndim) + x.shape)

        start, stop = ndmin(start), ndmin(stop)
        base = functions.expand_dims(asarray(ndmin(base), session=session), axis)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis, session=session)
    result = functions.power(base, y)
    result = result if dtype is None else result.astype(dtype, copy=False)
    result._writable = True
    return result


def eye(N, M=None, k=0, dtype=float, order="C", *, session=None):  # noqa: N803
    """numpy.eye: ones on the k-th diagonal."""
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    if n < 0 or m < 0:
        raise ValueError("negative dimensions are not allowed")
    session = session_of((), session)
    i = _arange(n, "int64", session).reshape(n, 1)
    j = _arange(m, "int64", session).reshape(1, m)
    result = (j == i + operator.index(k)).astype(dtype_name(dtype), copy=False)
    result._writable = True
    return result


def identity(n, dtype=None, *, session=None):
    """numpy.identity: the n x n identity (float64 by default)."""
    return eye(n, dtype=float if dtype is None else dtype, session=session)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """numpy.meshgrid (a tuple, as NumPy 2)."""
    from gpuflow import _shapes

    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    if not ndim:
        return ()
    session = session_of(xi)
    ones = (1,) * ndim
    out = []
    for i, x in enumerate(xi):
        x = x if isinstance(x, RemoteArray) else asarray(x, session=session)
        out.append(x.reshape(ones[:i] + (-1,) + ones[i + 1:]))
    if indexing == "xy" and ndim > 1:
        out[0] = out[0].reshape((1, -1) + ones[2:])
        out[1] = out[1].reshape((-1, 1) + ones[2:])
    if not sparse:
        out = _shapes.broadcast_arrays(*out)
    return tuple(out)


def _assign_shape(values, shape):
    """``values`` broadcast to ``shape`` as NumPy assigns into an array of
    it (NumPy's ValueError where they do not fit)."""
    from gpuflow import functions

    try:
        if len(values.shape) > len(shape):
            raise ValueError
        return functions.broadcast_to(values, shape)
    except ValueError:
        raise ValueError("could not broadcast input array from shape "
                         f"{_inference.format_shape(values.shape)} into shape "
                         f"{_inference.format_shape(shape)}") from None


def _complex_step(step):
    return isinstance(step, (complex, np.complexfloating))


def _grid_type(values):
    """np.result_type of grid bounds and steps (NumPy 2's weak Python
    scalars), RemoteArrays among them by their dtype."""
    types = []
    for v in values:
        if isinstance(v, RemoteArray):
            types.append(_inference.Type(v._expr.dtype, v.shape))
        elif isinstance(v, (np.ndarray, np.generic)):
            types.append(_inference.Type(np.asarray(v).dtype.name, np.shape(v)))
        else:
            types.append(_inference.Type.weak_scalar(v))
    return _inference.promote_types(types)


def _remote_bounds(key):
    """The slices of ``key`` with numpy array bounds made RemoteArrays where
    any bound is one (so the arithmetic is the RemoteArray's), and the
    session: the RemoteArrays' or the current one."""
    remote = [v for k in key for v in (k.start, k.stop) if isinstance(v, RemoteArray)]
    session = session_of(remote)
    if not remote:
        return key, session

    def bound(v):
        return asarray(v, session=session) if isinstance(v, np.ndarray) else v

    return [slice(bound(k.start), bound(k.stop), k.step) for k in key], session


class _Grid:
    """numpy.mgrid (dense) and numpy.ogrid (open), NumPy's nd_grid:
    ``grid[0:5, 0:1:3j]``; a complex step is a number of points, end
    included, and then the bounds may be arrays (numpy or RemoteArrays):
    ``arange(n) * ((stop - start) / (n - 1)) + start`` broadcast as NumPy
    computes it. Several slices are in the result type of all bounds and
    steps (ints and floats: float64)."""

    def __init__(self, sparse):
        self._sparse = sparse

    def __getitem__(self, key):
        from gpuflow import functions

        if isinstance(key, slice):
            return self._one(key)
        key, session = _remote_bounds(tuple(key))
        if not key:
            return functions.zeros((0,), "int64", session=session)
        sizes, numbers = [], [0]
        for k in key:
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if _complex_step(step):
                step = abs(step)
                sizes.append(int(step))
            else:
                sizes.append(int(math.ceil((k.stop - start) / (step * 1.0))))
            numbers += [start, k.stop, step]
        if any(s < 0 for s in sizes):
            raise ValueError("negative dimensions are not allowed")
        typ = _grid_type(numbers)
        axes = []
        for n, (k, size) in enumerate(zip(key, sizes)):
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if _complex_step(step):
                step = int(abs(step))
                if step != 1:
                    step = (k.stop - start) / float(step - 1)
            shape = [1] * len(sizes)
            shape[n] = size
            index = _arange(size, typ, session)
            if _is_scalar(step) and _is_scalar(start):
                axes.append((index * step + start).reshape(shape))
            elif self._sparse:  # NumPy: the values of the 1-D index, then its axis placed
                values = index * step + start
                axes.append(values.reshape(shape + list(values.shape[1:])))
            else:  # NumPy: the values of the index grid, assigned into it
                axes.append(functions.broadcast_to(index.reshape(shape), sizes) * step + start)
        if self._sparse:
            return tuple(axes)
        return functions.stack([_assign_shape(a, sizes).astype(typ, copy=False) for a in axes])

    @staticmethod
    def _one(key):
        from gpuflow import functions

        start = 0 if key.start is None else key.start
        stop, step = key.stop, key.step
        remote = [v for v in (start, stop) if isinstance(v, RemoteArray)]
        session = session_of(remote)
        if not _complex_step(step):
            return functions.arange(start, stop, step, session=session)
        step_float = abs(step)
        length = step = int(step_float)
        if remote:  # numpy bounds beside a RemoteArray: the RemoteArray's operators
            start, stop = (asarray(v, session=session) if isinstance(v, np.ndarray) else v
                           for v in (start, stop))
        if length != 1:
            step = (stop - start) / float(length - 1)
        typ = _grid_type([start, stop, step_float])
        return _arange(length, typ, session) * step + start


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)

__all__ = ["eye", "identity", "linspace", "logspace", "meshgrid", "mgrid", "ogrid"]
