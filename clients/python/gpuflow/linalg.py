"""gpuflow.linalg: CuPy's ``cupy.linalg`` (and NumPy 2's ``numpy.linalg``
namespace) composed of the server's ops::

    import gpuflow as gf

    gf.linalg.norm(x, axis=-1)            # sqrt of a sum, one fused group
    gf.linalg.solve(a, b)                 # Gauss-Jordan with partial pivoting
    w, v = gf.linalg.eigh(h)              # parallel Jacobi, one Execute per sweep

Norms are reductions; ``matrix_power`` and ``multi_dot`` are ``matmul``
chains. ``det``, ``slogdet``, ``inv``, ``solve`` (and ``tensorinv``,
``tensorsolve``, ``cond``) eliminate with partial pivoting, ``cholesky``
goes column by column and ``qr`` applies Householder reflections with
LAPACK's conventions: each a loop of n steps on the client that builds one
lazy graph of O(n) nodes (stored on the server between graphs, at most
``_STEPS_PER_GRAPH`` steps in one, fewer under a small --max_graph_nodes).
``eigh``/``eigvalsh`` (two-sided) and ``svd`` (one-sided, Hestenes) are the
parallel Jacobi method: each sweep rotates every pair of columns once, n / 2
disjoint pairs at a time (a round-robin order, n - 1 steps), and one
Execute per sweep reads the largest off-diagonal ratio to decide whether to
go on (about 6 to 12 sweeps);
``pinv``, ``matrix_rank``, ``lstsq``, ``svdvals`` and the 2, -2 and 'nuc'
matrix norms use ``svd``. Everything computes in the input's precision as
LAPACK does (ints and bool in float64; float16 is NumPy's ``TypeError``,
except for ``eigh``/``eigvalsh``, which compute it in float32 as CuPy's).
``inv``, ``solve`` and ``cholesky`` run one Execute at the call to learn
whether a pivot is zero (NumPy's ``LinAlgError``), keeping the result on
the server.

``eig`` and ``eigvals`` (general square stacks) reduce to Hessenberg form
by Householder reflections and run single-shift QR iterations in complex
arithmetic (gpuflow._eig): n - 1 Givens steps per iteration, one Execute
every n iterations to test convergence, one more for real input (whose
result dtype, as NumPy's, depends on whether every eigenvalue is real).
"""

import collections
import functools
import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, _execute, _leaf, asarray, session_of

LinAlgError = np.linalg.LinAlgError

SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])

# At most this many steps of a loop go into one graph; fewer where the
# server's --max_graph_nodes (10000 by default) would not hold them (see
# _chunk: a step is 25 to 110 nodes).
_STEPS_PER_GRAPH = 64

# Graph nodes one step adds, measured with margin: elimination, Cholesky,
# Householder, two-sided and one-sided Jacobi, and gpuflow._eig's steps (a
# Hessenberg reflection, a QR iteration's Givens rotation, a row of the
# eigenvector back substitution).
_NODES_PER_STEP = {"eliminate": 40, "cholesky": 25, "qr": 55, "eigh": 110, "svd": 100,
                   "eig": 70}


def _chunk(session, kind):
    """Steps per graph for ``kind``: _STEPS_PER_GRAPH, or fewer so that a
    graph stays within half the server's node limit."""
    limit = session.client.limits.max_graph_nodes or 10000
    return max(1, min(_STEPS_PER_GRAPH, limit // (2 * _NODES_PER_STEP[kind])))


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


@functools.lru_cache(maxsize=None)
def _numpy_norm_of_nothing_is_zero(ord, matrix):  # noqa: A002 - NumPy's name
    """Whether the installed NumPy's norm of order ``ord`` (a vector norm,
    or a matrix norm for ``matrix``) whose maximum runs over an empty axis
    is 0 (NumPy 2's max with initial=0, for inf and, of matrices, 1, inf
    and 2) rather than NumPy 1.x's ValueError of a maximum of nothing.
    Asked of NumPy itself, once per order."""
    host = np.zeros((0, 1) if matrix and ord == math.inf else (1, 0))
    try:
        np.linalg.norm(host, ord, axis=(0, 1) if matrix else 1)
    except ValueError:
        return False
    return True


def _norm_max(x, axis, keepdims, ord, matrix):  # noqa: A002 - NumPy's name
    """x.max(axis) of non-negative values, NumPy's norm's reduction: 0 of
    an empty axis where the installed NumPy's norm gives 0 (its
    initial=0), else the maximum (a ValueError of nothing as NumPy 1.x)."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    if any(x.shape[a] == 0 for a in axes) and _numpy_norm_of_nothing_is_zero(ord, matrix):
        axes = {_inference.normalize_axis(a, x.ndim) for a in axes}
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keepdims
                      or i not in axes)
        return _f().zeros(shape, x.dtype, session=x.session)
    return x.max(axis=axis, keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - NumPy's name
    """numpy.linalg.norm: vector norms (ord None/2, 1, inf, -inf, 0, any
    other p) over one axis, matrix norms ('fro', 1, -1, inf, -inf; 2, -2
    and 'nuc' of :func:`svd`'s singular values) over two; ints and bool as
    float64. The maximum of an empty axis (orders inf; of matrices 1, inf
    and 2) is the installed NumPy's: 0 (NumPy 2) or a ValueError (1.x)."""
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
            return _norm_max(abs(x), axis, keepdims, math.inf, False)
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
        exponent_dtype = np.float32 if ret.dtype == "bfloat16" else ret.dtype
        return ret ** np.reciprocal(np.asarray(p, dtype=exponent_dtype)).item()
    if len(axis) == 2:
        row_axis = _inference.normalize_axis(axis[0], nd)
        col_axis = _inference.normalize_axis(axis[1], nd)
        if row_axis == col_axis:
            raise ValueError("Duplicate axes given.")
        if _is_str(ord) and ord == "nuc" or not _is_str(ord) and ord in (2, -2):
            sv = svd(f.moveaxis(x, (row_axis, col_axis), (-2, -1)), compute_uv=False)
            if ord == "nuc":
                ret = sv.sum(axis=-1)
            else:
                ret = _norm_max(sv, -1, False, 2, True) if ord == 2 else sv.min(axis=-1)
        elif not _is_str(ord) and ord in (1, -1):
            if col_axis > row_axis:
                col_axis -= 1
            s = _sum(abs(x), row_axis)
            ret = (_norm_max(s, col_axis, False, 1, True) if ord == 1
                   else s.min(axis=col_axis))
        elif not _is_str(ord) and ord in (math.inf, -math.inf):
            if row_axis > col_axis:
                row_axis -= 1
            s = _sum(abs(x), col_axis)
            ret = (_norm_max(s, row_axis, False, math.inf, True) if ord == math.inf
                   else s.min(axis=row_axis))
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
    """numpy.linalg.matrix_transpose (NumPy 2): :func:`gpuflow.matrix_transpose`."""
    return _f().matrix_transpose(_remote(x))


def vecdot(x1, x2, /, *, axis=-1):
    """numpy.linalg.vecdot (NumPy 2): :func:`gpuflow.vecdot`, sum(conj(x1) *
    x2) along ``axis``."""
    return _f().vecdot(x1, x2, axis=axis)


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
    session = (arrays or download)[0].session
    # A session array already is stored: it is kept as it is.
    todo = [a for a in arrays if a._expr.op is not None]
    exprs = [a._expr for a in todo] + [d._expr for d in download]
    names = [session._new_temp_name() for _ in todo] + [None] * len(download)
    values, _ = _execute(session, exprs, names)
    made = {id(a): RemoteArray(session, _leaf(session, name, info.dtype, info.shape, owned=True))
            for a, name, info in zip(todo, names, values)}
    return [made.get(id(a), a) for a in arrays], list(values[len(todo):])


def _eliminate(m, n, jordan, on_pivot):
    """Partial-pivoting elimination of the (..., n, n + k) stack ``m``
    over its first n columns: Gauss (below the pivots) or Gauss-Jordan
    (jordan: every other row, pivot rows scaled to 1). ``on_pivot(state,
    pivot, swapped)`` folds each step's pivot (..., ) and whether rows were
    swapped into a tuple of RemoteArrays; returns (m, state)."""
    f = _f()
    rows = np.arange(n)
    state = on_pivot(None, None, None)
    chunk = _chunk(m.session, "eliminate")
    for k in range(n):
        if k and k % chunk == 0:
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


# ---- cholesky, qr ------------------------------------------------------------------------


def _steps(state, k, kind):
    """``state`` (a list of RemoteArrays), stored on the server every
    :func:`_chunk` steps so that no graph outgrows the server's limit."""
    if k and k % _chunk(state[0].session, kind) == 0:
        state, _ = _store(state)
    return state


def cholesky(a, /, *, upper=False):
    """numpy.linalg.cholesky: L with a = L L^H from a's lower triangle (the
    upper one is not read, as LAPACK's potrf), column by column;
    ``upper=True`` gives L^H (NumPy 2). LinAlgError("Matrix is not
    positive definite") after one Execute at the call."""
    f = _f()
    m, dtype = _square_stack(a)
    n = m.shape[-1]
    if n == 0 or m.size == 0:
        return f.zeros(m.shape, dtype, session=m.session)
    rows = np.arange(n)
    out = f.zeros(m.shape, dtype, session=m.session)
    bad = f.zeros(m.shape[:-2], np.bool_, session=m.session)
    for k in range(n):
        m, out, bad = _steps([m, out, bad], k, "cholesky")
        d = m[..., k, k].real
        bad = bad | ~(d > 0)
        root = f.sqrt(f.where(d > 0, d, 1)).astype(dtype)
        col = f.where(rows > k, m[..., :, k] / root[..., None], 0)
        col = f.where(rows == k, root[..., None], col)
        out = f.where(rows == k, col[..., :, None], out)
        m = m - col[..., :, None] * col.conj()[..., None, :]
    (out,), (flag,) = _store([out], [bad.any()])
    if bool(flag):
        raise LinAlgError("Matrix is not positive definite")
    return out.swapaxes(-1, -2).conj() if upper else out


QRResult = collections.namedtuple("QRResult", ["Q", "R"])


def qr(a, mode="reduced"):
    """numpy.linalg.qr by Householder reflections with LAPACK's (geqrf's)
    conventions, so Q and R are NumPy's to rounding: ``mode`` 'reduced'
    (Q (..., M, K), R (..., K, N)), 'complete' (Q (..., M, M)), 'r' (R
    only) or 'raw' (LAPACK's packed reflectors h (..., N, M) and tau (...,
    K))."""
    f = _f()
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    r = _remote(a)
    _assert_stacked_2d(r)
    dtype = _common_type(r)
    r = r.astype(dtype) if r.dtype != dtype else r
    mm, nn = r.shape[-2:]
    kk = min(mm, nn)
    batch = r.shape[:-2]
    complex_ = dtype.kind == "c"
    real = _inference.real_dtype(dtype.name)
    eye = f.eye(mm, dtype=dtype, session=r.session)
    q = f.broadcast_to(eye, batch + (mm, mm)).copy()
    rows = np.arange(mm)
    raw = mode == "raw"
    packed = f.zeros(r.shape, dtype, session=r.session) if raw else None
    taus = f.zeros(batch + (kk,), dtype, session=r.session) if raw else None
    for k in range(kk):
        if raw:
            r, q, packed, taus = _steps([r, q, packed, taus], k, "qr")
        else:
            r, q = _steps([r, q], k, "qr")
        col = r[..., :, k]
        alpha = r[..., k, k]
        tail = f.where(rows > k, col, 0)
        xnorm = f.sqrt(_sum(_abs2(tail), -1)).astype(real)
        alpha_re = alpha.real if complex_ else alpha
        alpha_im = alpha.imag if complex_ else None
        norm_all = f.sqrt(abs(alpha) ** 2 + xnorm * xnorm)
        beta = f.where(alpha_re >= 0, -norm_all, norm_all)
        keep = xnorm == 0
        if complex_:
            keep = keep & (alpha_im == 0)
        safe_beta = f.where(keep, 1, beta)
        tau = f.where(keep, 0, (beta - alpha) / safe_beta).astype(dtype)
        scale = f.where(keep, 1, alpha - beta)
        v = f.where(rows == k, 1, f.where(rows > k, col / scale[..., None], 0)).astype(dtype)
        vh = v.conj() if complex_ else v
        # R := H^H R and Q := Q H with H = I - tau v v^H.
        w = f.matmul(vh[..., None, :], r)[..., 0, :]
        t = tau.conj() if complex_ else tau
        r = r - (t[..., None] * v)[..., :, None] * w[..., None, :]
        qv = f.matmul(q, v[..., :, None])[..., :, 0]
        q = q - (tau[..., None] * qv)[..., :, None] * vh[..., None, :]
        if raw:
            below = (rows[:, None] > k) & (np.arange(nn)[None, :] == k)
            packed = f.where(below, v[..., :, None], packed)
            taus = f.where(np.arange(kk) == k, tau[..., None], taus)
    upper = rows[:, None] <= np.arange(nn)
    if raw:
        return f.where(upper, r, packed).astype(dtype).swapaxes(-1, -2), taus
    r = f.where(upper, r, 0).astype(dtype)
    if mode == "r":
        return r[..., :kk, :]
    if mode == "complete":
        return QRResult(q, r)
    return QRResult(q[..., :, :kk], r[..., :kk, :])


# ---- Jacobi: eigh, eigvalsh, svd and what needs singular values -------------------------

# Sweeps of the parallel (round-robin) Jacobi method before giving up; each
# sweep visits every pair of columns once, in n - 1 steps of n / 2 disjoint
# pairs rotated at once. Quadratic convergence takes 6 to 12 in practice.
_MAX_SWEEPS = 40


def _round_robin(n):
    """n - 1 layouts of the even number n: each a list of column indices
    in which positions (2i, 2i + 1) are a pair, every pair once over all."""
    others = list(range(1, n))
    layouts = []
    for step in range(n - 1):
        ring = [0] + others[step:] + others[:step]
        layout = []
        for i in range(n // 2):
            layout += [ring[i], ring[n - 1 - i]]
        layouts.append(layout)
    return layouts


class _Layout:
    """Tracks which original column sits at each position of arrays whose
    columns (and, for eigh, rows) are permuted step by step."""

    def __init__(self, n):
        self.where = np.arange(n)  # where[original] = position now

    def gather(self, layout):
        index = self.where[np.asarray(layout)]
        self.where = np.empty_like(self.where)
        self.where[np.asarray(layout)] = np.arange(len(layout))
        return index

    def home(self):
        return self.gather(list(range(len(self.where))))


def _rotation(app, aqq, apq, complex_):
    """Jacobi's rotation (c, s, phase) that zeroes the off-diagonal entry
    of the Hermitian 2x2 [[app, apq], [conj(apq), aqq]]: t = s / c is the
    smaller root of t^2 + 2 zeta t - 1, zeta = (aqq - app) / (2 |apq|);
    phase = apq / |apq| (1 where apq is 0: no rotation)."""
    f = _f()
    mag = abs(apq)
    rotate = mag > 0
    safe = f.where(rotate, mag, 1)
    zeta = (aqq - app) / (2 * safe)
    t = 1 / (abs(zeta) + f.sqrt(1 + zeta * zeta))
    t = f.where(rotate & f.isfinite(zeta), f.where(zeta < 0, -t, t), 0)
    c = 1 / f.sqrt(1 + t * t)
    if complex_:
        phase = f.where(rotate, apq / safe, 1).astype(apq.dtype)
    else:
        phase = f.where(apq < 0, -1.0, 1.0).astype(apq.dtype)
    return c, c * t, phase


def _rotate_pairs(x, c, s, phase, axis, complex_):
    """Applies the rotations to the pairs of columns (axis -1) or rows
    (axis -2) at positions (2i, 2i + 1): p' = c p - s b, q' = (s p + c b)
    phase with b = q conj(phase) (rows: the conjugate rotation)."""
    f = _f()
    shape = x.shape
    if axis == -1:
        pairs = x.reshape(shape[:-1] + (shape[-1] // 2, 2))
        p, q = pairs[..., 0], pairs[..., 1]
        c, s, ph = c[..., None, :], s[..., None, :], phase[..., None, :]
    else:
        pairs = x.reshape(shape[:-2] + (shape[-2] // 2, 2, shape[-1]))
        p, q = pairs[..., 0, :], pairs[..., 1, :]
        c, s, ph = c[..., :, None], s[..., :, None], phase[..., :, None]
    if complex_ and axis == -2:
        ph = ph.conj()
    b = q * (ph.conj() if complex_ else ph)
    p2 = c * p - s * b
    q2 = (s * p + c * b) * ph
    return f.stack([p2, q2], axis=-1 if axis == -1 else -2).astype(x.dtype).reshape(shape)


def _pad_even(x, rows_too):
    f = _f()
    n = x.shape[-1]
    if n % 2 == 0:
        return x
    x = f.concatenate([x, f.zeros(x.shape[:-1] + (1,), x.dtype, session=x.session)], axis=-1)
    if rows_too:
        x = f.concatenate([x, f.zeros(x.shape[:-2] + (1, n + 1), x.dtype, session=x.session)],
                          axis=-2)
    return x


def _tolerance(dtype, n):
    return float(np.finfo(np.dtype(_inference.real_dtype(np.dtype(dtype).name))).eps) * max(n, 1)


def _jacobi_eigh(a, vectors):
    """Two-sided parallel Jacobi of the Hermitian stack a (..., n, n):
    (eigenvalues (..., n) in a's real dtype, eigenvectors or None), not
    sorted."""
    f = _f()
    n = a.shape[-1]
    dtype = a.dtype
    complex_ = np.dtype(dtype).kind == "c"
    m = _pad_even(a, True)
    big = m.shape[-1]
    v = f.broadcast_to(f.eye(big, dtype=dtype, session=a.session), m.shape).copy() \
        if vectors else None
    layout = _Layout(big)
    schedule = _round_robin(big)
    tol = _tolerance(dtype, n)
    real = _inference.real_dtype(np.dtype(dtype).name)
    # The off-diagonal entries against the Frobenius norm (unchanged by the
    # rotations): a relative measure that zero eigenvalues do not upset.
    fro = f.sqrt(_sum(_abs2(m), (-2, -1))).astype(real)
    fro = f.where(fro > 0, fro, 1)
    steps, chunk = 0, _chunk(a.session, "eigh")
    for _ in range(_MAX_SWEEPS):
        off = f.zeros(m.shape[:-2], real, session=a.session)
        for order in schedule:
            if steps and steps % chunk == 0:
                stored, _ = _store([m, off, fro] + ([v] if vectors else []))
                m, off, fro = stored[:3]
                v = stored[3] if vectors else None
            steps += 1
            index = layout.gather(order)
            m = f.take(f.take(m, index, axis=-1), index, axis=-2)
            if vectors:
                v = f.take(v, index, axis=-1)
            d = f.diagonal(m, 0, -2, -1).real.reshape(m.shape[:-2] + (big // 2, 2))
            app, aqq = d[..., 0], d[..., 1]
            apq = f.diagonal(m, 1, -2, -1)[..., ::2]
            off = f.maximum(off, (abs(apq) / fro[..., None]).max(axis=-1))
            c, s, phase = _rotation(app, aqq, apq, complex_)
            m = _rotate_pairs(_rotate_pairs(m, c, s, phase, -1, complex_), c, s, phase, -2,
                              complex_)
            if vectors:
                v = _rotate_pairs(v, c, s, phase, -1, complex_)
        stored, (worst,) = _store([m] + ([v] if vectors else []), [off.max()])
        m = stored[0]
        v = stored[1] if vectors else None
        if not float(worst) > tol:  # NaN too: NaN in, NaN out, as LAPACK's
            break
    else:
        raise LinAlgError("Eigenvalues did not converge")
    home = layout.home()
    m = f.take(f.take(m, home, axis=-1), home, axis=-2)
    w = f.diagonal(m, 0, -2, -1).real[..., :n]
    if vectors:
        v = f.take(v, home, axis=-1)[..., :n, :n]
    return w, v


def _hermitian_stack(a, uplo):
    """(the Hermitian stack read from a's ``uplo`` triangle in its
    computing dtype, the dtype of the results): float16 computes in float32
    and gives float16, as CuPy's eigh (NumPy refuses float16)."""
    f = _f()
    if uplo not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    a = _remote(a)
    half = a.dtype == np.float16
    m, dtype = _square_stack(a.astype(np.float32) if half else a)
    n = m.shape[-1]
    rows = np.arange(n)
    low = rows[:, None] > rows[None, :] if uplo == "L" else rows[:, None] < rows[None, :]
    part = f.where(low, m, 0)
    diag = f.where(rows[:, None] == rows[None, :], m.real if dtype.kind == "c" else m, 0)
    hermitian = (part + part.swapaxes(-1, -2).conj() + diag).astype(dtype)
    return hermitian, np.dtype(np.float16) if half else dtype


EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def eigh(a, UPLO="L"):  # noqa: N803 - NumPy's name
    """numpy.linalg.eigh: the eigenvalues (ascending, a's real dtype) and
    eigenvectors (columns) of the Hermitian stack read from its lower
    (UPLO='L') or upper triangle, by the parallel Jacobi method (one
    Execute per sweep to test convergence). A namedtuple, as NumPy 2's;
    eigenvectors are NumPy's up to a unit factor per column. float16 is
    computed in float32 and returned as float16, as CuPy does."""
    f = _f()
    m, dtype = _hermitian_stack(a, UPLO)
    real = _inference.real_dtype(dtype.name)
    if m.size == 0:
        return EighResult(f.zeros(m.shape[:-1], real, session=m.session),
                          f.zeros(m.shape, dtype, session=m.session))
    w, v = _jacobi_eigh(m, True)
    order = f.argsort(w, axis=-1)
    return EighResult(f.take_along_axis(w, order, axis=-1).astype(real),
                      f.take_along_axis(v, order[..., None, :], axis=-1).astype(dtype))


def eigvalsh(a, UPLO="L"):  # noqa: N803 - NumPy's name
    """numpy.linalg.eigvalsh: :func:`eigh`'s eigenvalues alone."""
    f = _f()
    m, dtype = _hermitian_stack(a, UPLO)
    real = _inference.real_dtype(dtype.name)
    if m.size == 0:
        return f.zeros(m.shape[:-1], real, session=m.session)
    w, _ = _jacobi_eigh(m, False)
    return f.sort(w, axis=-1).astype(real)


def _jacobi_svd(a, vectors):
    """One-sided (Hestenes) parallel Jacobi of the stack a (..., m, n), m
    >= n: (a with orthogonal columns, V, or None), columns in place."""
    f = _f()
    n = a.shape[-1]
    dtype = a.dtype
    complex_ = np.dtype(dtype).kind == "c"
    real = _inference.real_dtype(np.dtype(dtype).name)
    x = _pad_even(a, False)
    big = x.shape[-1]
    v = f.broadcast_to(f.eye(big, dtype=dtype, session=a.session),
                       a.shape[:-2] + (big, big)).copy() if vectors else None
    layout = _Layout(big)
    schedule = _round_robin(big)
    tol = _tolerance(dtype, a.shape[-2])
    # Pairs of columns at the rounding noise of the whole matrix (the null
    # space of a rank-deficient one) count as orthogonal: rotating noise
    # does not make it less so.
    noise = (_sum(_abs2(x), (-2, -1)) * float(np.finfo(real).eps)).astype(real)
    has_nan = f.isnan(x).any()
    steps, chunk = 0, _chunk(a.session, "svd")
    for sweep in range(_MAX_SWEEPS):
        off = f.zeros(a.shape[:-2], real, session=a.session)
        for order in schedule:
            if steps and steps % chunk == 0:
                stored, _ = _store([x, off, noise] + ([v] if vectors else []))
                x, off, noise = stored[:3]
                v = stored[3] if vectors else None
            steps += 1
            index = layout.gather(order)
            x = f.take(x, index, axis=-1)
            if vectors:
                v = f.take(v, index, axis=-1)
            pairs = x.reshape(x.shape[:-1] + (big // 2, 2))
            p, q = pairs[..., 0], pairs[..., 1]
            alpha = _sum(_abs2(p), -2).astype(real)
            beta = _sum(_abs2(q), -2).astype(real)
            gamma = _sum((p.conj() if complex_ else p) * q, -2)
            scale = f.maximum(f.sqrt(alpha * beta), noise[..., None])
            off = f.maximum(off, f.where(scale > 0, abs(gamma) / f.where(scale > 0, scale, 1),
                                         0).max(axis=-1))
            c, s, phase = _rotation(alpha, beta, gamma, complex_)
            x = _rotate_pairs(x, c, s, phase, -1, complex_)
            if vectors:
                v = _rotate_pairs(v, c, s, phase, -1, complex_)
        stored, values = _store([x] + ([v] if vectors else []),
                                [off.max()] + ([has_nan] if sweep == 0 else []))
        x = stored[0]
        v = stored[1] if vectors else None
        worst = values[0]
        if sweep == 0 and bool(values[1]) or math.isnan(float(worst)):
            raise LinAlgError("SVD did not converge")  # NumPy's for NaN input
        if not float(worst) > tol:
            break
    else:
        raise LinAlgError("SVD did not converge")
    home = layout.home()
    x = f.take(x, home, axis=-1)[..., :n]
    if vectors:
        v = f.take(v, home, axis=-1)[..., :n, :n]
    return x, v


SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])


def _svd_stack(a):
    a = _remote(a)
    _assert_stacked_2d(a)
    dtype = _common_type(a)
    return (a.astype(dtype) if a.dtype != dtype else a), dtype


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """numpy.linalg.svd by the one-sided parallel Jacobi method (one
    Execute per sweep to test convergence): (U, S, Vh) with S descending
    in a's real dtype, a namedtuple as NumPy 2's; U's columns for zero
    singular values and ``full_matrices``' extra ones complete an
    orthonormal basis (a Householder QR of U). Singular vectors are
    NumPy's up to a unit factor per pair. ``hermitian`` is accepted and
    takes the general path."""
    del hermitian
    f = _f()
    x, dtype = _svd_stack(a)
    real = _inference.real_dtype(dtype.name)
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    if x.size == 0:
        s = f.zeros(batch + (k,), real, session=x.session)
        if not compute_uv:
            return s
        um, vn = (m, n) if full_matrices else (k, k)
        u = f.broadcast_to(f.eye(m, um, dtype=dtype, session=x.session), batch + (m, um))
        vh = f.broadcast_to(f.eye(vn, n, dtype=dtype, session=x.session), batch + (vn, n))
        return SVDResult(u.copy(), s, vh.copy())
    wide = m < n
    if wide:
        x = x.swapaxes(-1, -2).conj()
    cols, v = _jacobi_svd(x, compute_uv)
    sigma = f.sqrt(_sum(_abs2(cols), -2)).astype(real)
    order = f.argsort(-sigma, axis=-1)
    sigma = f.take_along_axis(sigma, order, axis=-1)
    if not compute_uv:
        return sigma
    cols = f.take_along_axis(cols, order[..., None, :], axis=-1)
    v = f.take_along_axis(v, order[..., None, :], axis=-1)
    u = cols / f.where(sigma > 0, sigma, 1)[..., None, :].astype(dtype)
    # Orthonormal columns where sigma is 0, and the complement for
    # full_matrices: Householder QR of u keeps its other columns (up to sign).
    q, r = qr(u, "complete")
    sign = f.diagonal(r, 0, -2, -1)
    sign = f.where(abs(sign) > 0.5, sign / f.where(abs(sign) > 0, abs(sign), 1), 1)
    rows = u.shape[-2]
    fix = f.concatenate([sign, f.ones(batch + (rows - sign.shape[-1],), dtype,
                                      session=x.session)], axis=-1) if rows > k else sign
    u_full = q * fix[..., None, :]
    u = u_full if full_matrices else u_full[..., :, :k]
    vh = v.swapaxes(-1, -2).conj()
    if wide:
        # a^H = U S V^H, so a = V S U^H.
        u, vh = vh.swapaxes(-1, -2).conj(), u.swapaxes(-1, -2).conj()
    return SVDResult(u.astype(dtype), sigma, vh.astype(dtype))


def svdvals(x, /):
    """numpy.linalg.svdvals (NumPy 2): :func:`svd`'s singular values alone."""
    return svd(x, compute_uv=False)


def _no_value():
    pass


@functools.lru_cache(maxsize=None)
def _numpy_rank_of_empty_is_zero():
    """Whether the installed NumPy's matrix_rank of an empty matrix is 0
    (NumPy 2.5's largest singular value with initial=0, gh-30422) rather
    than the ValueError of a maximum of nothing (NumPy 1.24). Asked of
    NumPy itself, once."""
    try:
        np.linalg.matrix_rank(np.zeros((0, 1)))
    except ValueError:
        return False
    return True


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803 - NumPy's name
    """numpy.linalg.matrix_rank: the number of singular values above
    ``tol`` (default: the largest times max(M, N) times eps, or times
    ``rtol``); an int64 RemoteArray (0-d, whether any element is nonzero,
    for fewer than 2 axes: CuPy's array where NumPy gives an int). Of
    empty matrices without ``tol``, the installed NumPy's: 0 or its
    ValueError (see _numpy_rank_of_empty_is_zero)."""
    f = _f()
    a = _remote(A)
    if a.ndim < 2:
        return (a != 0).any().astype(np.int64)
    s = svd(a, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(a.shape[-2:]) * float(np.finfo(np.dtype(s.dtype)).eps)
        else:
            rtol = _remote(rtol, a.session)[..., None]
        if s.shape[-1] == 0 and _numpy_rank_of_empty_is_zero():
            largest = f.zeros(s.shape[:-1] + (1,), s.dtype, session=a.session)  # initial=0
        else:
            largest = s.max(axis=-1, keepdims=True)
        cutoff = largest * rtol
    else:
        cutoff = _remote(tol, a.session)[..., None]
    return f.count_nonzero(s > cutoff, axis=-1)


def pinv(a, rcond=None, hermitian=False, *, rtol=_no_value):
    """numpy.linalg.pinv: V diag(1/s) U^H of :func:`svd`, singular values
    at most rcond times the largest counted as 0 (NumPy 2's defaults:
    rcond 1e-15; ``rtol=None``: max(M, N) eps)."""
    f = _f()
    a, dtype = _svd_stack(a)
    if rcond is None:
        if rtol is _no_value:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(a.shape[-2:]) * float(np.finfo(_inference.real_dtype(dtype.name)).eps)
        else:
            rcond = rtol
    m, n = a.shape[-2:]
    if a.size == 0:
        return f.zeros(a.shape[:-2] + (n, m), dtype, session=a.session)
    u, s, vh = svd(a.conj(), full_matrices=False, hermitian=hermitian)
    cutoff = _remote(rcond, a.session)[..., None] * s.max(axis=-1, keepdims=True)
    large = s > cutoff
    inv_s = f.where(large, 1 / f.where(large, s, 1), 0)
    return f.matmul(vh.swapaxes(-1, -2), (inv_s[..., None] * u.swapaxes(-1, -2)).astype(dtype))


def lstsq(a, b, rcond=None):
    """numpy.linalg.lstsq of a 2-D a and a 1-D or 2-D b through :func:`svd`:
    (x, residuals, rank, s); singular values at most rcond times the
    largest (default max(M, N) eps; negative: eps) are dropped; residuals
    are the squared column norms of b - a x when rank == N < M, else
    empty; rank is a Python int (one Execute)."""
    f = _f()
    a, b = _remotes(a, b)
    vector = b.ndim == 1
    if vector:
        b = b[:, None]
    for x in (a, b):
        if x.ndim != 2:
            raise LinAlgError(f"{x.ndim}-dimensional array given. Array must be two-dimensional")
    m, n = a.shape
    if b.shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    dtype = _common_type(a, b)
    real = _inference.real_dtype(dtype.name)
    if rcond is None:
        rcond = float(np.finfo(real).eps) * max(n, m)
    elif rcond < 0:
        rcond = float(np.finfo(real).eps)  # LAPACK's: machine precision
    a, b = a.astype(dtype), b.astype(dtype)
    k = min(m, n)
    if k == 0:
        x = f.zeros((n, b.shape[1]), dtype, session=a.session)
        s = f.zeros((0,), real, session=a.session)
        rank = 0
    else:
        u, s, vh = svd(a, full_matrices=False)
        large = s > rcond * s[..., :1]
        (rank,) = _store([], [f.count_nonzero(large)])[1]
        rank = int(rank)
        inv_s = f.where(large, 1 / f.where(large, s, 1), 0).astype(dtype)
        x = f.matmul(vh.swapaxes(-1, -2).conj(),
                     inv_s[:, None] * f.matmul(u.swapaxes(-1, -2).conj(), b))
    if rank == n and m > n:
        resid = _sum(_abs2(b - f.matmul(a, x)), 0).astype(real)
    else:
        resid = f.zeros((0,), real, session=a.session)
    if vector:
        x = x[:, 0]
    return x, resid, rank, s


@functools.lru_cache(maxsize=None)
def _numpy_cond_is_real():
    """Whether the installed NumPy's cond of a complex matrix is real for
    every p (NumPy >= 2.3: the real dtype, gh-18304) rather than complex
    for the orders computed as norm(x) * norm(inv(x)) (NumPy 1.24 casts
    their real product to the input's complex dtype). Asked of NumPy
    itself, once."""
    return np.linalg.cond(np.eye(1, dtype=np.complex128), 1).dtype.kind != "c"


def cond(x, p=None):
    """numpy.linalg.cond: s_max / s_min of :func:`svd` (p None, 2; -2 the
    inverse), else norm(x, p) * norm(inv(x), p) (square stacks; a singular
    one gives inf, as NumPy's NaN-to-inf). Complex input gives the real
    dtype of its precision, as NumPy 2 (for those other orders NumPy 1.24
    gives the complex dtype: the installed NumPy's, _numpy_cond_is_real)."""
    f = _f()
    x = _remote(x)
    if x.ndim >= 2 and x.size == 0:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or (not _is_str(p) and p in (2, -2)):
        s = svd(x, compute_uv=False)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        m, dtype = _square_stack(x)
        inverse, singular = _inverse_unchecked(m, dtype)
        if _numpy_cond_is_real():
            dtype = np.dtype(_inference.real_dtype(dtype.name))
        r = (norm(m, p, axis=(-2, -1)) * norm(inverse, p, axis=(-2, -1))).astype(dtype)
        r = f.where(singular, math.inf, r).astype(dtype)
    had_nan = f.isnan(x).any(axis=(-2, -1)) if x.ndim >= 2 else f.isnan(x).any()
    return f.where(f.isnan(r) & ~had_nan, math.inf, r).astype(r.dtype)


def _inverse_unchecked(m, dtype):
    """(inverse, singular flags) of the square stack m, lazily (no check)."""
    f = _f()
    n = m.shape[-1]
    eye = f.broadcast_to(f.eye(n, dtype=dtype, session=m.session), m.shape)
    batch = m.shape[:-2]
    aug, (singular,) = _eliminate(f.concatenate([m, eye], axis=-1), n, True,
                                  _singular_fold(batch, m.session))
    return aug[..., :, n:], singular


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


# ---- eig, eigvals: Hessenberg reduction and shifted QR (gpuflow._eig) ----------------------

EigResult = collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


@functools.lru_cache(maxsize=None)
def _numpy_eig_always_complex():
    """Whether the installed NumPy's eig and eigvals return complex arrays
    for every real input (NumPy 2.5.2 does) rather than real ones when every
    eigenvalue is real (NumPy 1.24 does). Asked of NumPy itself, once,
    rather than guessed from its version."""
    return np.linalg.eigvals(np.zeros((1, 1))).dtype.kind == "c"


def _eig(a, vectors, by_value=None):
    """(eigenvalues, eigenvectors or None) of the square stack a, with
    NumPy's dtypes: complex input gives complex results; real input real
    ones when every eigenvalue of the stack is real and ``by_value`` (by
    default: when the installed NumPy's eig decides so,
    _numpy_eig_always_complex), else complex ones, in which real eigenvalues
    have imaginary parts of exactly 0 and real vectors, and pairs are exact
    conjugates."""
    from gpuflow import _eig as schur_qr

    if by_value is None:
        by_value = not _numpy_eig_always_complex()
    f = _f()
    m, dtype = _square_stack(a)
    session = m.session
    n = m.shape[-1]
    complex_in = dtype.kind == "c"
    cdt = np.dtype(np.complex64 if dtype in (np.float32, np.complex64) else np.complex128)
    rdt = np.dtype(_inference.real_dtype(cdt.name))
    if m.size == 0:
        out = cdt if complex_in or not by_value else rdt
        return (f.zeros(m.shape[:-1], out, session=session),
                f.zeros(m.shape, out, session=session) if vectors else None)
    if n == 1:
        # A 1x1 matrix's eigenvalue is its element, real for real input.
        (bad,) = _store([], [~f.isfinite(m).all()])[1]
        if bool(bad):
            raise LinAlgError("Array must not contain infs or NaNs")
        out = dtype if by_value else cdt
        return (m[..., 0].astype(out),
                f.ones(m.shape, out, session=session) if vectors else None)
    t, z = schur_qr.schur(m.astype(cdt), vectors, True)
    w = f.diagonal(t, 0, -2, -1)
    v = None
    if vectors:
        v = schur_qr.normalize_columns(f.matmul(z, schur_qr.triangular_eigenvectors(t)))
    if complex_in:
        return w.astype(cdt), v
    # Real input: which eigenvalues are real and which pair up is read on
    # the client (gpuflow._eig), as NumPy's result dtype depends on it.
    scale = f.sqrt(_sum(_abs2(t), (-2, -1)))
    stored, (w_host, scale_host) = _store([v] if vectors else [], [w, scale])
    values, src, conj, real = schur_qr.pair_conjugates(np.asarray(w_host), np.asarray(scale_host),
                                                       float(np.finfo(rdt).eps))
    all_real = by_value and bool(real.all())
    w = _remote(values.real.astype(rdt) if all_real else values.astype(cdt), session)
    if not vectors:
        return w, None
    v = f.take_along_axis(stored[0], _remote(src, session)[..., None, :], axis=-1)
    v = f.where(_remote(conj, session)[..., None, :], v.conj(), v)
    if all_real:
        v = v.real
    else:
        v = f.where(_remote(real, session)[..., None, :], v.real, v)
    # Dropping a real eigenvector's rounding-level imaginary part: unit norm again.
    norm = f.sqrt(_sum(_abs2(v), -2))
    return w, (v / norm[..., None, :]).astype(rdt if all_real else cdt)


def eig(a):
    """numpy.linalg.eig: the eigenvalues and right eigenvectors (unit
    columns) of a square stack, as NumPy 2's EigResult namedtuple. Real
    input gives real arrays when every eigenvalue is real (where the
    installed NumPy does so; NumPy 2.5.2 returns complex ones always), else
    complex ones with conjugate pairs side by side (positive imaginary part
    first) and real eigenvalues exactly real, as LAPACK's dgeev; the
    eigenvalues' order is the Schur form's
    (not NumPy's: neither sorts) and each eigenvector is NumPy's up to a
    unit factor. Householder to Hessenberg, then single-shift QR
    iterations in complex arithmetic, one Execute every n iterations to
    test convergence, and one more for real input (gpuflow._eig);
    LinAlgError for infs and NaNs, as NumPy's."""
    w, v = _eig(a, True)
    return EigResult(w, v)


def eigvals(a):
    """numpy.linalg.eigvals: :func:`eig`'s eigenvalues alone (no
    eigenvectors are computed), in the dtype the installed NumPy's eigvals
    gives."""
    return _eig(a, False)[0]


def _eigvals_by_value(a):
    """:func:`eigvals`, real for real input when every eigenvalue is real
    whatever NumPy's eigvals does (numpy.roots' rule)."""
    return _eig(a, False, by_value=True)[0]


__all__ = [
    "LinAlgError", "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "inv",
    "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
    "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]
