"""gpuflow.linalg: CuPy's ``cupy.linalg`` (and NumPy 2's ``numpy.linalg``
namespace) composed of the server's ops::

    import gpuflow as gf

    gf.linalg.norm(x, axis=-1)            # sqrt of a sum, one fused group
    gf.linalg.solve(a, b)                 # Gauss-Jordan with partial pivoting
    sign, logdet = gf.linalg.slogdet(a)

Norms are reductions; ``matrix_power`` and ``multi_dot`` are ``matmul``
chains. ``det``, ``slogdet``, ``inv``, ``solve`` (and ``tensorinv``,
``tensorsolve``) eliminate with partial pivoting: a loop of n steps on the
client that builds one lazy graph of O(n) nodes (each step an ``argmax``
for the pivot row, ``where`` swaps and a broadcast update of the whole
stack), evaluated in pieces of ``_STEPS_PER_GRAPH`` steps for large n. They
compute in the input's precision as LAPACK does (ints and bool in float64;
float16 is NumPy's ``TypeError``). ``inv`` and ``solve`` run one Execute at
the call to learn whether a pivot is zero (NumPy's ``LinAlgError``
"Singular matrix"), keeping the result on the server.

Not available (they need singular values or eigenvalues, which no server
op computes): ``svd``, ``eigh``, ``eigvalsh``, ``eig``, ``eigvals``, ``qr``,
``cholesky``, ``lstsq``, ``pinv``, ``matrix_rank``, ``cond``, ``svdvals``;
``norm`` of ord 2, -2 and 'nuc' for matrices raises NotImplementedError.
"""

import collections
import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, _execute, _leaf, asarray, session_of

LinAlgError = np.linalg.LinAlgError

SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])

# Steps of an elimination in one graph: about 20 nodes each, well inside the
# server's --max_graph_nodes (10000 by default).
_STEPS_PER_GRAPH = 64


def _f():
    from gpuflow import functions

    return functions


def _remote(x, session=None):
    if isinstance(x, RemoteArray):
        return x
    return asarray(x, session=session_of((), session))


def _remotes(*xs):
    session = session_of(xs)
    return [_remote(x, session) for x in xs]


def _kind(dtype):
    return "f" if dtype == "bfloat16" else np.dtype(dtype).kind


def _is_inexact(dtype):
    return _kind(dtype) in "fc"


# ---- norms ------------------------------------------------------------------------------


def _sum(x, axis, keepdims=False):
    return x.sum(axis=axis, keepdims=keepdims)


def _abs2(x):
    return (x.conj() * x).real if _kind(x.dtype) == "c" else x * x


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - NumPy's name
    """numpy.linalg.norm: vector norms (ord None/2, 1, inf, -inf, 0, any
    other p) over one axis, matrix norms ('fro', 1, -1, inf, -inf) over
    two; ints and bool as float64. Matrix ord 2, -2 and 'nuc' need singular
    values: NotImplementedError."""
    f = _f()
    x = _remote(x)
    if not _is_inexact(x.dtype):
        x = x.astype(np.float64)
    if axis is None:
        nd = x.ndim
        if ord is None or (_is_str(ord) and ord in ("f", "fro") and nd == 2) or (
                not _is_str(ord) and ord == 2 and nd == 1):
            ret = f.sqrt(_sum(_abs2(x.ravel()), None))
            return ret.reshape((1,) * nd) if keepdims else ret
    nd = x.ndim
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = int(axis)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
        axis = (axis,)
    if len(axis) == 1:
        if _is_str(ord):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        if ord == math.inf:
            return abs(x).max(axis=axis, keepdims=keepdims)
        if ord == -math.inf:
            return abs(x).min(axis=axis, keepdims=keepdims)
        if ord == 0:
            return (x != 0).astype(_inference.real_dtype(x._expr.dtype)).sum(axis=axis,
                                                                            keepdims=keepdims)
        if ord == 1:
            return _sum(abs(x), axis, keepdims)
        if ord is None or ord == 2:
            return f.sqrt(_sum(_abs2(x), axis, keepdims))
        p = float(ord)
        ret = _sum(abs(x) ** p, axis, keepdims)
        return ret ** np.reciprocal(np.asarray(p, dtype=ret.dtype)).item()
    if len(axis) == 2:
        row_axis = _inference.normalize_axis(axis[0], nd)
        col_axis = _inference.normalize_axis(axis[1], nd)
        if row_axis == col_axis:
            raise ValueError("Duplicate axes given.")
        if _is_str(ord) and ord == "nuc" or not _is_str(ord) and ord in (2, -2):
            raise NotImplementedError(
                f"gpuflow.linalg.norm: ord={ord!r} for matrices needs singular values, which "
                "gpuflow cannot compute (no SVD op)")
        if not _is_str(ord) and ord in (1, -1):
            if col_axis > row_axis:
                col_axis -= 1
            s = _sum(abs(x), row_axis)
            ret = s.max(axis=col_axis) if ord == 1 else s.min(axis=col_axis)
        elif not _is_str(ord) and ord in (math.inf, -math.inf):
            if row_axis > col_axis:
                row_axis -= 1
            s = _sum(abs(x), col_axis)
            ret = s.max(axis=row_axis) if ord == math.inf else s.min(axis=row_axis)
        elif ord is None or _is_str(ord) and ord in ("fro", "f"):
            ret = f.sqrt(_sum(_abs2(x), (row_axis, col_axis)))
        else:
            raise ValueError("Invalid norm order for matrices.")
        if keepdims:
            shape = list(x.shape)
            shape[axis[0]] = 1
            shape[axis[1]] = 1
            ret = ret.reshape(shape)
        return ret
    raise ValueError("Improper number of dimensions to norm.")


def _is_str(v):
    return isinstance(v, str)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    """NumPy 2's numpy.linalg.vector_norm: the norm of the flattened array
    (axis None), along one axis or over a tuple of axes."""
    x = _remote(x)
    shape = list(x.shape)
    if axis is None:
        y, ax = x.ravel(), 0
    elif isinstance(axis, tuple):
        axes = tuple(_inference.normalize_axis(a, x.ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis")
        rest = tuple(i for i in range(x.ndim) if i not in axes)
        y = x.transpose(axes + rest).reshape(
            (math.prod(shape[i] for i in axes),) + tuple(shape[i] for i in rest))
        ax = 0
    else:
        y, ax = x, axis
    res = norm(y, axis=ax, ord=ord)
    if keepdims:
        kept = (range(len(shape)) if axis is None else
                (axis if isinstance(axis, tuple) else (axis,)))
        for a in kept:
            shape[_inference.normalize_axis(a, len(shape))] = 1
        res = res.reshape(tuple(shape))
    return res


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    """NumPy 2's numpy.linalg.matrix_norm: :func:`norm` over the last two axes."""
    x = _remote(x)
    _assert_stacked_2d(x)
    return norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


# ---- products -----------------------------------------------------------------------------


def matmul(x1, x2, /):
    """numpy.linalg.matmul (NumPy 2): :func:`gpuflow.matmul`."""
    return _f().matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    """numpy.linalg.tensordot (NumPy 2): :func:`gpuflow.tensordot`."""
    return _f().tensordot(x1, x2, axes=axes)


def outer(x1, x2, /):
    """numpy.linalg.outer (NumPy 2): of two 1-D arrays only."""
    x1, x2 = _remotes(x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={x1.ndim} and x2.ndim={x2.ndim}.")
    return _f().outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    """numpy.linalg.cross (NumPy 2): of 3-element vectors only."""
    x1, x2 = _remotes(x1, x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"are {x1.shape[axis]} and {x2.shape[axis]} dimensional instead.")
    return _f().cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
    """numpy.linalg.diagonal (NumPy 2): of the last two axes."""
    return _f().diagonal(_remote(x), offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    """numpy.linalg.trace (NumPy 2): of the last two axes."""
    return _f().trace(_remote(x), offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def matrix_transpose(x, /):
    """numpy.linalg.matrix_transpose (NumPy 2): the last two axes swapped."""
    x = _remote(x)
    if x.ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional")
    return x.swapaxes(-1, -2)


def vecdot(x1, x2, /, *, axis=-1):
    """numpy.linalg.vecdot (NumPy 2): sum(conj(x1) * x2) along ``axis``,
    in the operands' promoted dtype (a ``matmul`` of the broadcast stacks)."""
    f = _f()
    x1, x2 = _remotes(x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("vecdot: Input operand does not have enough dimensions")
    a = f.moveaxis(x1, axis, -1)
    b = f.moveaxis(x2, axis, -1)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"vecdot: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (n),(n)->() (size {b.shape[-1]} is different from "
                         f"{a.shape[-1]})")
    if _kind(a.dtype) == "c":
        a = a.conj()
    return f.matmul(a[..., None, :], b[..., :, None])[..., 0, 0]


def multi_dot(arrays, *, out=None):
    """numpy.linalg.multi_dot: the product of 2-D arrays (the first and the
    last may be 1-D) in the cheapest order (NumPy's dynamic programme)."""
    f = _f()
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    arrays = _remotes(*arrays)
    if n == 2:
        return f.dot(arrays[0], arrays[1], out=out)
    first, last = arrays[0], arrays[-1]
    ndim_first, ndim_last = first.ndim, last.ndim
    if ndim_first == 1:
        arrays[0] = first.reshape(1, -1)
    if ndim_last == 1:
        arrays[-1] = last.reshape(-1, 1)
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    dims = [a.shape[0] for a in arrays] + [arrays[-1].shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def chain(i, j):
        if i == j:
            return arrays[i]
        return f.dot(chain(i, split[i][j]), chain(split[i][j] + 1, j))

    result = chain(0, n - 1)
    if ndim_first == 1 and ndim_last == 1:
        result = result[0, 0]
    elif ndim_first == 1 or ndim_last == 1:
        result = result.ravel()
    if out is not None:
        from gpuflow.remote_array import rebind_out

        return rebind_out(out, result, "multi_dot")
    return result


def matrix_power(a, n):
    """numpy.linalg.matrix_power: repeated squaring with ``matmul`` (n < 0:
    of :func:`inv`; n == 0: the identity in a's dtype)."""
    f = _f()
    a = _remote(a)
    _assert_stacked_2d(a)
    _assert_stacked_square(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        eye = f.eye(a.shape[-1], dtype=a.dtype, session=a.session)
        return f.broadcast_to(eye, a.shape).copy()
    if n < 0:
        a, n = inv(a), -n
    if n == 1:
        return a.copy()
    if n == 2:
        return f.matmul(a, a)
    if n == 3:
        return f.matmul(f.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else f.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else f.matmul(result, z)
    return result


# ---- elimination: det, slogdet, inv, solve ------------------------------------------------


def _assert_stacked_2d(*arrays):
    for a in arrays:
        if a.ndim < 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                              "two-dimensional")


def _assert_stacked_square(*arrays):
    for a in arrays:
        if a.shape[-1] != a.shape[-2]:
            raise LinAlgError("Last 2 dimensions of the array must be square")


def _common_type(*arrays):
    """NumPy's linalg computing dtype: float32/complex64 stay, other
    inexact and all int/bool inputs become float64/complex128; float16
    and bfloat16 are TypeError."""
    single, is_complex = True, False
    for a in arrays:
        name = a._expr.dtype
        if name in ("float16", "bfloat16"):
            raise TypeError(f"array type {name} is unsupported in linalg")
        kind = _kind(name)
        if kind == "c":
            is_complex = True
        if name not in ("float32", "complex64"):
            single = False
    if is_complex:
        return np.dtype(np.complex64 if single else np.complex128)
    return np.dtype(np.float32 if single else np.float64)


def _store(arrays, download=()):
    """Evaluates ``arrays`` (kept on the server, as owned temporaries) and
    ``download`` (returned as numpy) in one Execute: (new RemoteArrays,
    numpy values)."""
    session = arrays[0].session
    exprs = [a._expr for a in arrays] + [d._expr for d in download]
    names = [session._new_temp_name() for _ in arrays] + [None] * len(download)
    values, _ = _execute(session, exprs, names)
    stored = [RemoteArray(session, _leaf(session, name, info.dtype, info.shape, owned=True))
              for name, info in zip(names[:len(arrays)], values)]
    return stored, list(values[len(arrays):])


def _eliminate(m, n, jordan, on_pivot):
    """Partial-pivoting elimination of the (..., n, n + k) stack ``m``
    over its first n columns: Gauss (below the pivots) or Gauss-Jordan
    (jordan: every other row, pivot rows scaled to 1). ``on_pivot(state,
    pivot, swapped)`` folds each step's pivot (..., ) and whether rows were
    swapped into a tuple of RemoteArrays; returns (m, state)."""
    f = _f()
    rows = np.arange(n)
    state = on_pivot(None, None, None)
    for k in range(n):
        if k and k % _STEPS_PER_GRAPH == 0:
            stored, _ = _store([m, *state])
            m, state = stored[0], tuple(stored[1:])
        col = m[..., :, k]
        cand = f.where(rows >= k, abs(col), -1)
        p = f.argmax(cand, axis=-1)
        onehot = rows == p[..., None]
        row_p = f.where(onehot[..., :, None], m, 0).sum(axis=-2, dtype=m.dtype)
        row_k = m[..., k, :]
        is_k = (rows == k)[:, None]
        m = f.where(is_k, row_p[..., None, :], f.where(onehot[..., :, None], row_k[..., None, :],
                                                       m))
        pivot = row_p[..., k]
        safe = f.where(pivot == 0, 1, pivot)
        factor = m[..., :, k] / safe[..., None]
        below = (rows != k) if jordan else (rows > k)
        update = m - factor[..., :, None] * row_p[..., None, :]
        if jordan:
            m = f.where(is_k, row_p[..., None, :] / safe[..., None, None],
                        f.where(below[:, None], update, m))
        else:
            m = f.where(below[:, None], update, m)
        state = on_pivot(state, pivot, p != k)
    return m, state


def _square_stack(a):
    a = _remote(a)
    _assert_stacked_2d(a)
    _assert_stacked_square(a)
    dtype = _common_type(a)
    return a.astype(dtype) if a.dtype != dtype else a, dtype


def slogdet(a):
    """numpy.linalg.slogdet: (sign, log|det|) from an LU elimination with
    partial pivoting; a zero pivot gives (0, -inf). A namedtuple, as NumPy 2's."""
    f = _f()
    m, dtype = _square_stack(a)
    n = m.shape[-1]
    real = _inference.real_dtype(dtype.name)
    batch = m.shape[:-2]
    if n == 0:
        return SlogdetResult(f.ones(batch, dtype, session=m.session),
                             f.zeros(batch, real, session=m.session))

    def fold(state, pivot, swapped):
        if state is None:
            return (f.ones(batch, dtype, session=m.session),
                    f.zeros(batch, real, session=m.session))
        sign, logdet = state
        mag = abs(pivot)
        unit = f.where(mag == 0, 0, pivot / f.where(mag == 0, 1, mag))
        sign = sign * f.where(swapped, -unit, unit)
        return sign, logdet + f.log(mag)

    _, (sign, logdet) = _eliminate(m, n, False, fold)
    return SlogdetResult(sign.astype(dtype), logdet.astype(real))


def det(a):
    """numpy.linalg.det: sign * exp(log|det|) of :func:`slogdet`, as NumPy
    computes it (0 for a singular matrix)."""
    sign, logdet = slogdet(a)
    return sign * _f().exp(logdet)


def _singular_fold(batch, session):
    f = _f()

    def fold(state, pivot, swapped):
        if state is None:
            return (f.zeros(batch, np.bool_, session=session),)
        (singular,) = state
        return (singular | (pivot == 0),)

    return fold


def _solve_augmented(a, b, dtype):
    """Gauss-Jordan of [a | b] (b: (..., n, k), broadcast together): x, or
    LinAlgError("Singular matrix") after one Execute."""
    f = _f()
    n = a.shape[-1]
    batch = _inference.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = f.broadcast_to(a, batch + a.shape[-2:])
    b = f.broadcast_to(b, batch + b.shape[-2:])
    if n == 0 or math.prod(batch) == 0 or b.shape[-1] == 0:
        return f.zeros(batch + b.shape[-2:], dtype, session=a.session)
    m = f.concatenate([a, b], axis=-1)
    m, (singular,) = _eliminate(m, n, True, _singular_fold(batch, a.session))
    x = m[..., :, n:]
    (x,), (flag,) = _store([x], [singular.any()])
    if bool(flag):
        raise LinAlgError("Singular matrix")
    return x


def inv(a):
    """numpy.linalg.inv: Gauss-Jordan of [a | I]; LinAlgError("Singular
    matrix") when a pivot is zero (one Execute at the call)."""
    f = _f()
    m, dtype = _square_stack(a)
    n = m.shape[-1]
    eye = f.eye(n, dtype=dtype, session=m.session)
    return _solve_augmented(m, f.broadcast_to(eye, m.shape), dtype)


def solve(a, b):
    """numpy.linalg.solve, with NumPy 2's rule for b: a vector (..., n)
    only when b is 1-D, else a stack of (..., n, k) matrices; batch axes
    broadcast."""
    a, b = _remotes(a, b)
    _assert_stacked_2d(a)
    _assert_stacked_square(a)
    dtype = _common_type(a, b)
    n = a.shape[-1]
    vector = b.ndim == 1
    if vector:
        if b.shape[0] != n:
            raise ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0, "
                             f"with gufunc signature (m,m),(m)->(m) (size {b.shape[0]} is "
                             f"different from {n})")
        b = b[:, None]
    elif b.ndim < 2 or b.shape[-2] != n:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (m,m),(m,n)->(m,n) (size "
                         f"{b.shape[-2] if b.ndim >= 2 else b.shape[0]} is different from {n})")
    else:
        _inference.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = _solve_augmented(a.astype(dtype), b.astype(dtype), dtype)
    return x[..., 0] if vector else x


def tensorinv(a, ind=2):
    """numpy.linalg.tensorinv: :func:`inv` of a reshaped to (prod(shape[:ind]),
    prod(shape[ind:]))."""
    a = _remote(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    old = a.shape
    inv_shape = old[ind:] + old[:ind]
    rows = math.prod(old[ind:])
    return inv(a.reshape(rows, -1)).reshape(inv_shape)


def tensorsolve(a, b, axes=None):
    """numpy.linalg.tensorsolve: :func:`solve` of the reshaped tensor
    equation ``tensordot(a, x, x.ndim) == b``."""
    a, b = _remotes(a, b)
    an = a.ndim
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)
            order.insert(an, k)
        a = a.transpose(order)
    old = a.shape[-(an - b.ndim):]
    size = math.prod(old)
    if a.size != size ** 2:
        raise LinAlgError("Input arrays must satisfy the requirement "
                          "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    return solve(a.reshape(size, size), b.ravel()).reshape(old)


__all__ = [
    "LinAlgError", "cross", "det", "diagonal", "inv", "matmul", "matrix_norm", "matrix_power",
    "matrix_transpose", "multi_dot", "norm", "outer", "slogdet", "solve", "tensordot",
    "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]
