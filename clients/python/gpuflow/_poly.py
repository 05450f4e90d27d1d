"""NumPy's legacy polynomial functions (1-D coefficient arrays, highest
power first) and the Vandermonde matrix, on the server's ops:

    gf.vander(x, 4); gf.polyval(p, x); gf.polyadd(p, q); gf.polysub(p, q)
    gf.polymul(p, q); gf.polyder(p, 2); gf.polyint(p, k=3.0); gf.poly1d(p)(x)

polyval is one fused Horner chain (a multiply-add per coefficient; a
RemoteArray's coefficients are sliced out first, one tiny copy each), vander
one cumulative product, polyadd/polysub/polyder/polyint a concatenation and
one elementwise step, all lazy. Where NumPy's logic needs the coefficients'
values, they are read on the client: polymul and poly1d trim leading zeros
(as ``numpy.poly1d`` does), which downloads coefficient arrays that live on
the server (one Execute; they are small) and uploads the trimmed ones.
``poly``, ``roots`` and ``polyfit`` (eigenvalues, least squares) are in
gpuflow._compat_poly; ``poly1d(r=True)`` and ``poly1d.roots`` use them.
"""

import operator

import numpy as np

from gpuflow import _inference
from gpuflow._ufunc import cast
from gpuflow.remote_array import RemoteArray, asarray, session_of


def _remote(x, session=None):
    if isinstance(x, poly1d):
        return x.coeffs
    if isinstance(x, RemoteArray):
        return x
    return asarray(np.asarray(x), session=session_of((), session))


def _session(*values):
    return session_of([v.coeffs if isinstance(v, poly1d) else v for v in values])


def _atleast_1d(x, session):
    x = _remote(x, session)
    return x.reshape(1) if x.ndim == 0 else x


def _len(p):
    if p.ndim == 0:
        raise TypeError("len() of unsized object")
    return p.shape[0]


def vander(x, N=None, increasing=False):
    """numpy.vander: columns x**(N-1) ... x**0 (or increasing), as one
    cumulative product in NumPy's dtype (x's dtype promoted with int64)."""
    from gpuflow import functions

    x = _remote(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = x.shape[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dtype = _inference.promote_dtypes(x._expr.dtype, "int64")
    if N == 0:
        return functions.zeros((n, 0), dtype, session=x.session)
    if N == 1:
        return functions.ones((n, 1), dtype, session=x.session)
    # Columns 1, x, x, ... multiplied up: 1, x, x*x, ... as NumPy's accumulate.
    first = np.arange(N) == 0  # a literal of the graph
    factors = functions.where(first, np.ones((), dtype)[()], cast(x, dtype).reshape(n, 1))
    v = functions.cumprod(factors, axis=1, dtype=dtype)
    return v if increasing else functions.flip(v, 1)


def polyval(p, x):
    """numpy.polyval: Horner's rule, one multiply-add per coefficient (one
    fused kernel), in NumPy's dtype (x's promoted with p's); coefficients the
    client holds are literals."""
    from gpuflow import functions

    if isinstance(p, poly1d):
        p = p.coeffs
    if isinstance(x, poly1d):
        y = 0
    else:
        session = session_of((p, x))
        if not isinstance(p, RemoteArray):
            p = np.asarray(p)
        x = _remote(x, session)
        if p.ndim == 0 or p.shape[0] == 0 or x._expr.dtype == "bfloat16":
            y = functions.zeros_like(x)
        else:
            y = np.zeros((), x._expr.dtype)[()]  # NumPy's zeros_like(x), as a literal
    if p.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    # A RemoteArray's coefficient is a 1-element slice (one small copy; a 0-d
    # one takes two) where broadcasting keeps x's shape.
    one = isinstance(p, RemoteArray) and p.ndim == 1 and getattr(x, "ndim", 0) >= 1
    for i in range(p.shape[0]):
        y = y * x + (p[i:i + 1] if one else p[i])
    return y


def _padded_pair(a1, a2):
    from gpuflow import functions

    session = _session(a1, a2)
    a1, a2 = _atleast_1d(a1, session), _atleast_1d(a2, session)
    diff = _len(a2) - _len(a1)
    if diff > 0:
        a1 = functions.concatenate([functions.zeros(diff, a1.dtype, session=session), a1])
    elif diff < 0:
        a2 = functions.concatenate([functions.zeros(-diff, a2.dtype, session=session), a2])
    return a1, a2


def _wrap(result, *inputs):
    return poly1d(result) if any(isinstance(v, poly1d) for v in inputs) else result


def polyadd(a1, a2):
    """numpy.polyadd: the shorter operand padded with leading zeros (no
    trimming, as NumPy; a poly1d operand gives a poly1d)."""
    x, y = _padded_pair(a1, a2)
    return _wrap(x + y, a1, a2)


def polysub(a1, a2):
    """numpy.polysub: as polyadd, subtracting."""
    x, y = _padded_pair(a1, a2)
    return _wrap(x - y, a1, a2)


def _trimmed(c, session):
    """numpy.poly1d's coefficients: 1-D, leading zeros trimmed ([0] when
    none is left). Reads the values (one Execute for a RemoteArray)."""
    if isinstance(c, poly1d):
        return c.coeffs
    host = c.get() if isinstance(c, RemoteArray) else np.asarray(c)
    host = np.atleast_1d(host)
    if host.ndim > 1:
        raise ValueError("Polynomial must be 1d only.")
    nonzero = np.flatnonzero(host != 0)
    host = host[nonzero[0]:] if nonzero.size else np.zeros(1, host.dtype)
    return asarray(host, session=session)


def polymul(a1, a2):
    """numpy.polymul: the convolution of the coefficients after poly1d's
    trimming of leading zeros (their values are read on the client)."""
    from gpuflow import functions

    session = _session(a1, a2)
    x, y = _trimmed(a1, session), _trimmed(a2, session)
    return _wrap(functions.convolve(x, y), a1, a2)


def polyder(p, m=1):
    """numpy.polyder: the m-th derivative (coefficients times arange, in
    NumPy's dtype: p's promoted with int64)."""
    from gpuflow import functions

    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    truepoly = isinstance(p, poly1d)
    val = _remote(p)
    for _ in range(m):
        n = _len(val) - 1
        val = val[:-1] * functions.arange(n, 0, -1, session=val.session)
    return poly1d(val) if truepoly else val


def polyint(p, m=1, k=None):
    """numpy.polyint: the m-th antiderivative with integration constants k
    (a scalar or m values, first one first); NumPy's dtype (true division by
    int64, then k's float64)."""
    from gpuflow import functions

    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    truepoly = isinstance(p, poly1d)
    val = _remote(p)
    session = val.session
    k = np.zeros(m, float) if k is None else k
    k = functions.atleast_1d(k) if isinstance(k, RemoteArray) else np.atleast_1d(k)
    if k.shape[0] == 1 and m > 1:
        k = k[0] * (functions.ones(m, float, session=session) if isinstance(k, RemoteArray)
                    else np.ones(m, float))
    if k.shape[0] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    for i in range(m):
        n = _len(val)
        constant = k[i:i + 1] if isinstance(k, RemoteArray) else \
            asarray(np.asarray(k[i:i + 1]), session=session)
        val = functions.concatenate(
            [val / functions.arange(n, 0, -1, session=session), constant])
    return poly1d(val) if truepoly else val


class poly1d:  # noqa: N801 - NumPy's name
    """numpy.poly1d, thin: coefficients (highest power first, leading zeros
    trimmed, which reads their values once), ``p(x)`` (polyval), ``order``,
    ``+``, ``-``, ``*`` (with poly1d objects, arrays or scalars), unary
    ``-``, ``deriv`` and ``integ``, ``roots`` (gpuflow.roots of the
    coefficients) and ``r=True`` (the coefficients of gpuflow.poly of the
    roots). Division, ``==`` (identity here) and printing in NumPy's
    polynomial notation are not provided."""

    def __init__(self, c_or_r, r=False, variable=None):
        if isinstance(c_or_r, poly1d):
            self._coeffs = c_or_r.coeffs
            self._variable = c_or_r.variable if variable is None else variable
            return
        session = _session(c_or_r)
        if r:
            from gpuflow import _compat_poly

            c_or_r = _compat_poly.poly(_remote(c_or_r, session))  # poly([]) is 1.0
        self._coeffs = _trimmed(c_or_r, session)
        self._variable = "x" if variable is None else variable

    @property
    def coeffs(self):
        """The coefficients, a 1-D RemoteArray."""
        return self._coeffs

    c = coef = coefficients = coeffs

    @property
    def variable(self):
        return self._variable

    @property
    def order(self):
        return self._coeffs.shape[0] - 1

    o = order

    @property
    def roots(self):
        """numpy.poly1d.roots: gpuflow.roots of the coefficients (the
        eigenvalues of the companion matrix)."""
        from gpuflow import _compat_poly

        return _compat_poly.roots(self._coeffs)

    r = roots

    def __len__(self):
        return self.order

    def __repr__(self):
        return f"poly1d({self._coeffs!r})"

    def __array__(self, dtype=None, copy=None):
        host = self._coeffs.get()
        return host if dtype is None else host.astype(dtype)

    def __call__(self, val):
        return polyval(self._coeffs, val)

    def __neg__(self):
        return poly1d(-self._coeffs)

    def __pos__(self):
        return self

    def __add__(self, other):
        return poly1d(polyadd(self._coeffs, _coefficients(other, self)))

    __radd__ = __add__

    def __sub__(self, other):
        return poly1d(polysub(self._coeffs, _coefficients(other, self)))

    def __rsub__(self, other):
        return poly1d(polysub(_coefficients(other, self), self._coeffs))

    def __mul__(self, other):
        if np.isscalar(other):
            return poly1d(self._coeffs * other)
        return poly1d(polymul(self._coeffs, _coefficients(other, self)))

    __rmul__ = __mul__

    def deriv(self, m=1):
        """The m-th derivative (polyder)."""
        return poly1d(polyder(self._coeffs, m))

    def integ(self, m=1, k=0):
        """The m-th antiderivative (polyint)."""
        return poly1d(polyint(self._coeffs, m, k))


def _coefficients(other, like):
    return other.coeffs if isinstance(other, poly1d) else poly1d(
        other if isinstance(other, RemoteArray) else
        asarray(np.asarray(other), session=like.coeffs.session)).coeffs


__all__ = ["poly1d", "polyadd", "polyder", "polyint", "polymul", "polysub", "polyval", "vander"]
