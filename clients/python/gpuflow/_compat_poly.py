"""NumPy's poly, polydiv and polyfit (numpy/lib/_polynomial_impl.py) on the
server's ops, beside gpuflow._poly's polyval, polymul, poly1d ...:

    gf.poly([1, 2, 3]); q, r = gf.polydiv(u, v); c = gf.polyfit(x, y, 3)

poly is one multiply-subtract per root, polydiv NumPy's long division (one
multiply-subtract of the divisor per quotient term), polyfit a least
squares solve by Householder QR of NumPy's scaled Vandermonde matrix (one
reflection per coefficient, then back substitution: backward stable, as
LAPACK's solvers are), all lazy except for the few values NumPy's logic
must read: the remainder's leading near-zeros (polydiv), whether complex
roots pair up (poly) and the rank of the fit (polyfit), one Execute each.
``roots`` is NumPy's: the eigenvalues (gpuflow.linalg.eigvals) of the
companion matrix of the coefficients without their leading and trailing
zeros (read on the client: one Execute for a RemoteArray), and as many
zeros as there were trailing ones; ``poly`` of a square matrix is the
polynomial of its eigenvalues, as NumPy's. Not provided:
``polyfit(full=True)`` (singular values).
"""

import numpy as np

from gpuflow import _inference
from gpuflow._ufunc import type_of
from gpuflow.remote_array import as_remote, asarray, evaluate, session_of

def _functions():
    from gpuflow import functions

    return functions


_remote = as_remote  # an array-like as a RemoteArray (remote_array.as_remote)


def _product_dtype(a, b):
    return _inference.promote_types([type_of(a), type_of(b)])


_MINTYPE = {"float32": "float32", "complex64": "complex64", "complex128": "complex128"}


def poly(seq_of_zeros):
    """numpy.poly of a 1-D sequence of roots: the monic polynomial's
    coefficients (float64, or float32/complex for such roots), one
    multiply-add per root; complex roots in conjugate pairs give a real
    result (one Execute for the check). A non-empty square matrix gives its
    characteristic polynomial, as NumPy's: the polynomial of its eigenvalues
    (gpuflow.linalg.eigvals, in their dtype)."""
    functions = _functions()
    z = _remote(seq_of_zeros)
    z = z.reshape(1) if z.ndim == 0 else z
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        from gpuflow import linalg

        z = linalg.eigvals(z)
        dt = z._expr.dtype
    elif z.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    else:
        dt = _MINTYPE.get(z._expr.dtype, "float64")
    if z.shape[0] == 0:
        return 1.0
    z = z.astype(dt, copy=False)
    a = functions.ones(1, dt, session=z.session)
    zero = functions.zeros(1, dt, session=z.session)
    for i in range(z.shape[0]):
        # convolve(a, [1, -z_i]): a shifted up one power, less z_i * a.
        a = functions.concatenate([a, zero]) - z[i] * functions.concatenate([zero, a])
    if _inference.is_complex(dt):
        # NumPy's sort(roots) == sort(conj(roots)): the roots are the same
        # multiset as their conjugates (each as often as its conjugate), no NaN.
        r = z.astype("complex128", copy=False)
        col = r.reshape(-1, 1)
        same = functions.sum(col == r, axis=1)
        mirrored = functions.sum(functions.conjugate(col) == r, axis=1)
        paired, nan = evaluate(functions.all(same == mirrored), functions.any(functions.isnan(r)))
        if paired and not nan:
            a = functions.real(a).copy()
    return a


def polydiv(u, v):
    """numpy.polydiv: quotient and remainder (float, the promoted dtype) by
    NumPy's long division, one multiply-subtract of v per quotient term;
    the remainder's leading near-zeros (NumPy's allclose(r[0], 0,
    rtol=1e-14)) are trimmed after one Execute. poly1d in, poly1d out."""
    from gpuflow import _poly

    functions = _functions()
    truepoly = isinstance(u, _poly.poly1d) or isinstance(v, _poly.poly1d)
    u = u.coeffs if isinstance(u, _poly.poly1d) else u
    v = v.coeffs if isinstance(v, _poly.poly1d) else v
    session = session_of((u, v))
    u, v = _remote(u, session), _remote(v, session)
    u = (u.reshape(1) if u.ndim == 0 else u) + 0.0
    v = (v.reshape(1) if v.ndim == 0 else v) + 0.0
    w = _product_dtype(u, v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    r = u.astype(w, copy=False)
    q = []
    for k in range(m - n + 1):
        d = (scale * r[k]).astype(w, copy=False)
        q.append(d)
        shifted = functions.concatenate([functions.zeros(k, w, session=session), v,
                                         functions.zeros(m - n - k, w, session=session)])
        r = (r - d * shifted).astype(w, copy=False)
    q = functions.stack(q) if q else functions.zeros(1, w, session=session)
    host = r.get()
    start = 0
    while start < host.shape[0] - 1 and np.allclose(host[start], 0, rtol=1e-14):
        start += 1
    r = functions.asarray(host[start:], session=session)
    if truepoly:
        return _poly.poly1d(q), _poly.poly1d(r)
    return q, r


# ---- polyfit -------------------------------------------------------------------------


def _householder(a, b, complex_):
    """Q^H a and Q^H b for the Householder QR of the (n, p) ``a`` (n >= p):
    one reflection per column, applied to the rows below it; the result's
    top p rows of a hold R (below its diagonal: rounding-level values)."""
    functions = _functions()
    p = a.shape[1]
    for k in range(p):
        sub = a[k:, k]
        x0 = sub[0]
        norm = functions.sqrt(functions.sum(functions.absolute(sub) ** 2))
        if complex_:
            size = functions.absolute(x0)
            phase = functions.where(size == 0, 1.0, x0 / functions.where(size == 0, 1.0, size))
            alpha = -phase * norm
        else:
            alpha = functions.where(x0 < 0, norm, -norm)
        v = functions.concatenate([(x0 - alpha).reshape(1), sub[1:]])
        vv = functions.sum(functions.absolute(v) ** 2)
        beta = functions.where(vv == 0, 0.0, 2.0 / functions.where(vv == 0, 1.0, vv))
        vh = functions.conjugate(v) if complex_ else v
        column = v.reshape(-1, 1)
        parts = []
        for m in (a, b):
            tail = m[k:]
            tail = tail - beta * column * functions.matmul(vh, tail).reshape(1, -1)
            parts.append(functions.concatenate([m[:k], tail]) if k else tail)
        a, b = parts
    return a, b


def _back_substitute(r, qb):
    """The solution of the upper triangular ``r`` (p, p) times c = ``qb``
    (p, k), one row of c per step from the last."""
    functions = _functions()
    p = r.shape[0]
    rows = [None] * p
    for j in reversed(range(p)):
        acc = qb[j]
        if j < p - 1:
            acc = acc - functions.matmul(r[j, j + 1:], functions.stack(rows[j + 1:]))
        rows[j] = acc / r[j, j]
    return functions.stack(rows)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """numpy.polyfit: the least squares polynomial of degree ``deg`` (highest
    power first; a (deg + 1, k) array for a 2-D y), ``w`` weights and
    ``cov`` (True or 'unscaled') as NumPy's, float64 or complex128 as
    NumPy's. NumPy's scaled Vandermonde matrix is solved by Householder QR
    (one Execute at the call brings R and Q^H y, (deg + 1)^2 + ... values,
    to check the rank, then back substitution stays lazy) instead of
    LAPACK's SVD: the same solution for a full-rank fit. The rank is
    |R_kk| > rcond * max |R_jj|, which is never below the SVD's rank: a fit
    NumPy finds rank-deficient may be solved here without its RankWarning;
    one rank-deficient here (and too few points for the degree) raises
    numpy.linalg.LinAlgError, as NumPy's minimum-norm solution needs the
    SVD. ``full=True`` (singular values) raises NotImplementedError."""
    from gpuflow import _poly

    functions = _functions()
    order = int(deg) + 1
    session = session_of((x, y, w))
    x = _remote(x, session) + 0.0
    y = _remote(y, session) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if full:
        raise NotImplementedError("polyfit(full=True) returns singular values, which gpuflow "
                                  "does not compute")
    for v in (x, y):
        if v._expr.dtype in ("float16", "bfloat16"):
            raise TypeError(f"array type {v._expr.dtype} is unsupported in linalg")
    if rcond is None:
        rcond = x.shape[0] * np.finfo(x._expr.dtype).eps
    lhs = _poly.vander(x, order)
    dtype = _inference.promote_dtypes(lhs._expr.dtype, y._expr.dtype)
    complex_ = _inference.is_complex(dtype)
    if cov and _inference.is_complex(lhs._expr.dtype):
        raise NotImplementedError("polyfit(cov=...) of complex x is not supported by gpuflow")
    lhs = lhs.astype(dtype, copy=False)
    rhs = y.reshape(y.shape[0], -1)
    if w is not None:
        w = _remote(w, session) + 0.0
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w.reshape(-1, 1)
        # NumPy's ``rhs *= w``: in y's dtype (a float32 y stays float32).
        rhs = (rhs * w.reshape(-1, 1)).astype(y._expr.dtype, copy=False)
    rhs = rhs.astype(dtype, copy=False)
    scale = functions.sqrt(functions.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    n = x.shape[0]
    if n < order:
        raise np.linalg.LinAlgError(
            f"polyfit of degree {deg} to {n} points is rank-deficient: NumPy's minimum-norm "
            "solution needs the SVD, which gpuflow does not compute")
    qa, qb = _householder(lhs, rhs, complex_)
    resids = functions.sum(functions.absolute(qb[order:]) ** 2, axis=0)
    r_host, qb_host, resids_host = evaluate(functions.triu(qa[:order]), qb[:order], resids)
    diagonal = np.abs(np.diag(r_host))
    if not np.all(diagonal > rcond * diagonal.max()):
        raise np.linalg.LinAlgError(
            "polyfit is rank-deficient (NumPy warns 'Polyfit may be poorly conditioned' and "
            "returns its minimum-norm solution, which needs the SVD gpuflow does not compute)")
    r = asarray(r_host, session=session)
    c = _back_substitute(r, asarray(qb_host, session=session)) / scale.reshape(-1, 1)
    c = c.reshape(-1) if y.ndim == 1 else c
    if not cov:
        return c
    # NumPy's inv(lhs.T @ lhs) = R^-1 R^-T (R is real for a real x, also when
    # a complex y made it complex-typed).
    r_real = asarray(r_host.real, session=session)
    rinv = _back_substitute(r_real, functions.eye(order, session=session))
    vbase = functions.matmul(rinv, rinv.T) / functions.outer(scale, scale)
    if cov == "unscaled":
        fac = 1.0
    else:
        if n <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = asarray(resids_host, session=session) / (n - order)
    if y.ndim == 1:
        return c, vbase * fac
    return c, vbase.reshape(order, order, 1) * fac


def roots(p):
    """numpy.roots: the roots of the polynomial with coefficients ``p``
    (highest power first), the eigenvalues of its companion matrix (built
    on the server; NumPy's dtypes: real when every root is real, float32
    and complex64 stay single, ints become float64); leading zeros are
    dropped and trailing zeros are roots 0, which reads the coefficients
    on the client (one Execute for a RemoteArray). Roots come in the
    eigenvalue solver's order, which need not be NumPy's."""
    from gpuflow import _poly, linalg

    functions = _functions()
    if isinstance(p, _poly.poly1d):
        p = p.coeffs
    session = session_of((p,))
    x = _remote(p, session)
    x = x.reshape(1) if x.ndim == 0 else x
    if x.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    host = x.get()
    nonzero = np.flatnonzero(host)
    if nonzero.size == 0:
        return functions.zeros(0, np.float64, session=session)
    trailing = host.shape[0] - int(nonzero[-1]) - 1
    x = x[int(nonzero[0]):int(nonzero[-1]) + 1]
    if np.dtype(x.dtype).kind not in "fc":
        x = x.astype(np.float64)
    n = x.shape[0]
    if n > 1:
        first = np.arange(n - 1)[:, None] == 0
        companion = functions.where(first, (-x[1:] / x[0])[None, :],
                                    functions.eye(n - 1, k=-1, dtype=x.dtype, session=session))
        found = linalg._eigvals_by_value(companion.astype(x.dtype))
    else:
        found = functions.zeros(0, np.float64, session=session)
    if trailing:
        found = functions.concatenate([found, functions.zeros(trailing, found.dtype,
                                                              session=session)])
    return found


__all__ = ["poly", "polydiv", "polyfit", "roots"]
