"""gpuflow.fft: NumPy's / CuPy's ``numpy.fft`` API, composed of server ops.

    import gpuflow as gf
    X = gf.fft.fft(x)                          # along the last axis
    Y = gf.fft.rfft2(img, norm="ortho")        # complex64 for float32 input
    x2 = gf.fft.irfftn(Y, s=img.shape[-2:])
    f = gf.fft.fftshift(gf.fft.fftfreq(256, d=0.1))

There is no FFT op on the server. A 1-D transform of length n is the
four-step (Cooley-Tukey) algorithm written as matmuls with DFT matrices of
at most ``_LEAF`` points and elementwise twiddle products:

* n is split into factors f0 * f1 * ... * fL, each at most _LEAF (the
  fewest factors, then the smallest sum: the cost in multiply-adds per
  element); a part of n whose prime factors all exceed _LEAF is one last
  factor, done by Bluestein's chirp-z algorithm (a circular convolution of
  length m >= 2p - 1, m's primes <= _LEAF, through the same transforms);
* one transpose puts the input's digits in reverse order (j = j0 + f0*j1 +
  ...); then, innermost first, each factor is a matmul with its DFT matrix
  (``x @ F`` for the innermost one along the last axis, ``F @ x`` for the
  others), after a product with the twiddles w_N^(j*K) of its level. The
  result comes out in natural order: no further transposes.

A transform along an axis that is not the last one runs in "column" form,
the axes after it folded into one trailing axis that every matmul carries
along (``F @ x``), so no axis is moved. The DFT matrices, twiddles and
chirps are computed here in float64 with NumPy and sent in the result's
dtype: as literals inside the graph when small (<= 64 KiB), else uploaded
once per session and kept (a bounded cache). A transform is a handful of
kernels (one matmul per factor, an elementwise product between them, one
transpose) and, as every gpuflow function, lazy: nothing runs before
``.get()``. Normalisation is folded into the last matrix.

Real transforms of an even n > _LEAF (n/2 without Bluestein) transform n/2
complex points: the pairs x[2j] + i*x[2j+1], packed by the first matmul's
matrix ([F, iF] interleaved), then X_k = Z_k a_k + conj(Z_(n/2-k)) b_k in
one elementwise step; irfft packs its spectrum the other way and
interleaves the real and imaginary parts of the n/2 results.

Dtypes are NumPy 2's and CuPy's: float16, float32 and complex64 (and
bfloat16) give complex64, every other dtype complex128; ``irfft`` and
``hfft`` give the matching real dtype; ``rfft`` and ``ihfft`` of complex
input raise TypeError.
"""

import collections
import functools
import math
import operator
import threading

import numpy as np

from gpuflow import _inference
from gpuflow import remote_array as _ra
from gpuflow.remote_array import RemoteArray, _Expr, apply, rebind_out

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
    "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

# The largest DFT done as one matmul with its matrix (64 x 64 complex128 is
# 64 KiB, a literal inside the graph).
_LEAF = 64
# Uploaded constants kept per session, in bytes.
_SESSION_CACHE_BYTES = 64 << 20

_SINGLE = ("float16", "bfloat16", "float32", "complex64")


def _complex_dtype(dtype):
    """complex64 for the single-precision (and smaller) dtypes, complex128
    for the rest, as NumPy 2 and CuPy type their transforms."""
    return "complex64" if dtype in _SINGLE else "complex128"


def _real_dtype(cdtype):
    return "float32" if cdtype == "complex64" else "float64"


# ---- constants ------------------------------------------------------------------------


def _roots(exponents, order):
    """exp(2 pi i * exponents / order) in complex128, the exponents reduced
    exactly (integers) to (-order/2, order/2] first."""
    e = np.mod(np.asarray(exponents, dtype=np.int64), order)
    e = np.where(2 * e > order, e - order, e)
    angle = (2 * np.pi / order) * e.astype(np.float64)
    return np.cos(angle) + 1j * np.sin(angle)


def _frozen(a, dtype):
    a = np.ascontiguousarray(a.astype(dtype))
    a.setflags(write=False)
    return a


@functools.lru_cache(maxsize=256)
def _dft_matrix(p, sign, scale, rows, cols, left, dtype, packed=False):
    """The p-point DFT matrix w_p^(sign*j*k) * scale, cut to its first
    ``rows`` x ``cols`` (k by j for ``left``, i.e. F @ x; j by k for x @ F).
    ``packed``: for real input pairs (x[2j], x[2j+1]) read as x[2j] +
    i*x[2j+1], each j's row (column for ``left``) twice, times 1 and i."""
    j = np.arange(p)
    m = (_roots(sign * np.outer(j, j), p) * scale)[:rows, :cols]
    if packed:
        pairs = np.stack([m, 1j * m], axis=-1 if left else 1)
        m = pairs.reshape((rows, 2 * cols) if left else (2 * rows, cols))
    return _frozen(m, dtype)


@functools.lru_cache(maxsize=256)
def _twiddles(f, n, sign, split, column, dtype):
    """The twiddles w_(f*n)^(sign*j*K) of a level (j < f, K < n): one table
    (f, n), or with ``split`` = R (n = Q*R) the two factors (f, Q, 1) and
    (f, 1, R) of K = q*R + t, each a few times smaller than the data. With
    ``column`` a trailing axis of 1."""
    j = np.arange(f)[:, None]
    tail = (1,) if column else ()
    if not split:
        return (_frozen(_roots(sign * j * np.arange(n)[None, :], f * n).reshape((f, n) + tail),
                        dtype),)
    q = np.arange(n // split)[None, :]
    t = np.arange(split)[None, :]
    a = _roots(sign * j * q * split, f * n).reshape((f, n // split, 1) + tail)
    b = _roots(sign * j * t, f * n).reshape((f, 1, split) + tail)
    return _frozen(a, dtype), _frozen(b, dtype)


@functools.lru_cache(maxsize=64)
def _chirp(p, sign, m, column, dtype):
    """Bluestein's constants for p points through a length-m convolution:
    the chirp c_j = w_p^(sign*j^2/2), and the m-point DFT (sign -1) of the
    kernel conj(c_|d|) (wrapped), divided by m."""
    j = np.arange(p)
    c = np.exp(1j * sign * np.pi * (np.mod(j * j, 2 * p) / p))
    b = np.zeros(m, np.complex128)
    b[:p] = np.conj(c)
    b[m - p + 1:] = np.conj(c[1:][::-1])
    kernel = np.fft.fft(b) / m
    tail = (1,) if column else ()
    return c.reshape((p,) + tail), _frozen(kernel.reshape((m,) + tail), dtype)


# session -> OrderedDict(key -> (RemoteArray, bytes)), the sessions least
# recently used first. An uploaded RemoteArray holds its session, so entries
# are dropped when their session is closed or more than _CACHED_SESSIONS use
# the cache (a weak mapping would never let go of either).
_UPLOADED = collections.OrderedDict()
_UPLOADED_LOCK = threading.Lock()
_CACHED_SESSIONS = 8


def _constant(session, host, key):
    """An operand for the constant ``host``: itself (a literal inside the
    graph) when small, else a session array uploaded once and kept for the
    session (at most _SESSION_CACHE_BYTES, least recently used dropped)."""
    limit = min(_ra._LITERAL_BYTES, session.client.limits.max_inline_bytes)
    if host.nbytes <= limit:
        return host
    with _UPLOADED_LOCK:
        for other in [s for s in _UPLOADED if s.closed]:
            del _UPLOADED[other]
        cache = _UPLOADED.get(session)
        if cache is None:
            cache = _UPLOADED[session] = collections.OrderedDict()
            while len(_UPLOADED) > _CACHED_SESSIONS:
                _UPLOADED.popitem(last=False)
        _UPLOADED.move_to_end(session)
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found[0]
    array = _ra.asarray(host, session=session)
    with _UPLOADED_LOCK:
        cache[key] = (array, host.nbytes)
        total = sum(b for _, b in cache.values())
        while total > _SESSION_CACHE_BYTES and len(cache) > 1:
            _, (_, dropped) = cache.popitem(last=False)
            total -= dropped
    return array


# ---- plans ----------------------------------------------------------------------------


def _smallest_prime_factor(n):
    if n % 2 == 0:
        return 2
    d = 3
    while d * d <= n:
        if n % d == 0:
            return d
        d += 2
    return n


@functools.lru_cache(maxsize=1024)
def _split_smooth(n):
    """Factors <= _LEAF whose product is n (n's primes all <= _LEAF): the
    fewest, then the smallest sum, largest first."""
    if n <= _LEAF:
        return (n,)
    best = None
    for d in range(_LEAF, 1, -1):
        if n % d == 0:
            rest = _split_smooth(n // d)
            cand = tuple(sorted((d,) + rest, reverse=True))
            if best is None or (len(cand), sum(cand)) < (len(best), sum(best)):
                best = cand
    return best


@functools.lru_cache(maxsize=1024)
def _plan(n):
    """The digits of an n-point transform, outermost first: factors <=
    _LEAF, and last the product of n's primes above _LEAF (Bluestein), if
    any."""
    smooth, rough, rest = 1, 1, n
    while rest > 1:
        p = _smallest_prime_factor(rest)
        rest //= p
        if p <= _LEAF:
            smooth *= p
        else:
            rough *= p
    digits = _split_smooth(smooth) if smooth > 1 else ()
    return digits + ((rough,) if rough > 1 else ()) or (1,)


@functools.lru_cache(maxsize=256)
def _convolution_length(n):
    """Bluestein's convolution length for n >= 2p - 1: the smallest number
    from n up to the next power of two whose primes are all <= _LEAF and
    which splits into no more factors than that power of two."""
    power = 1 << (n - 1).bit_length()
    levels = len(_split_smooth(power))
    for m in range(n, power):
        rest = m
        for d in range(2, _LEAF + 1):
            while rest % d == 0:
                rest //= d
        if rest == 1 and len(_split_smooth(m)) <= levels:
            return m
    return power


# ---- the transform --------------------------------------------------------------------


def _zeros(shape, dtype, session):
    # The value in the array's own dtype: the CPU backend's full crashes
    # converting a scalar to a complex dtype for more than 512 elements.
    value = 0.0 if dtype == "bfloat16" else np.zeros((), dtype)[()]
    return apply("full", (value,), {"shape": list(shape), "dtype": dtype}, session=session)


def _reshape(x, shape):
    """x reshaped; a reshape of a reshape is one (the server copies for
    each)."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if x._expr.op == "reshape" and isinstance(x._expr.inputs[0], _Expr):
        x = RemoteArray(x.session, x._expr.inputs[0])
        if x.shape == shape:
            return x
    return apply("reshape", (x,), {"shape": list(shape)})


def _cut(x, axis, keep):
    """x[..., :keep, ...] along the (non-negative) ``axis``."""
    if x.shape[axis] == keep:
        return x
    return apply("slice", (x,), {"starts": [0], "stops": [keep], "axes": [axis]})


def _dft(x, n, column, sign, scale, keep, cdtype, packed=False):
    """The n-point DFT w_n^(sign*j*k) * scale, first ``keep`` outputs, along
    axis -1 of x (row form) or axis -2 (column form: the last axis is
    carried along). ``packed``: x is real, 2n long on that axis, and point j
    is x[2j] + i*x[2j+1] (n smooth)."""
    session = x.session
    digits = _plan(n)
    tail = x.shape[-1:] if column else ()
    batch = x.shape[:x.ndim - 1 - len(tail)]
    depth = len(batch)
    if len(digits) > 1:
        # Digit reversal: x[j0 + f0*j1 + ...] to x[j0, j1, ...] (the pair of
        # a packed point last, then joined to the innermost digit).
        pair = (2,) if packed else ()
        x = _reshape(x, batch + digits[::-1] + pair + tail)
        count = len(digits)
        perm = (list(range(depth)) + [depth + count - 1 - i for i in range(count)]
                + list(range(depth + count, depth + count + len(pair) + len(tail))))
        x = apply("transpose", (x,), {"axes": perm})
        if packed:
            x = _reshape(x, batch + digits[:-1] + (2 * digits[-1],) + tail)
    last = len(digits) - 1
    x = _leaf(x, digits[-1], column, sign, scale if last == 0 else 1.0,
              keep if last == 0 else digits[-1], cdtype, packed)
    width = tail[0] if column else 1
    # Level i: x holds outer + (f_i, N) (+ tail), N the points of the levels
    # inside it, in natural order; below the innermost level N splits as
    # (f_(i+1), N / f_(i+1)), the previous matmul's rows and columns, and the
    # twiddles w^(j*K) are two factors along them.
    size, split = (keep if last == 0 else digits[-1]), 0
    for i in range(last - 1, -1, -1):
        f = digits[i]
        outer = batch + digits[:i]
        x = _reshape(x, outer + ((f, size // split, split) if split else (f, size)) + tail)
        for k, t in enumerate(_twiddles(f, size, sign, split, column, cdtype)):
            x = apply("mul", (x, _constant(session, t, ("twiddle", f, size, sign, split, column,
                                                         cdtype, k))))
        rows = -(-keep // size) if i == 0 else f
        matrix = _dft_matrix(f, sign, scale if i == 0 else 1.0, rows, f, True, cdtype)
        x = apply("matmul", (_constant(session, matrix, ("dft", f, sign, scale, rows, cdtype)),
                             _reshape(x, outer + (f, size * width))))
        split = size
        size *= rows
    x = _reshape(x, batch + (size,) + tail)
    if size != keep:
        x = _cut(x, x.ndim - 1 - len(tail), keep)
    return x


def _leaf(x, p, column, sign, scale, keep, cdtype, packed=False):
    """The innermost digit: p points along axis -1 (row) or -2 (column)."""
    session = x.session
    if packed:
        key = ("packed", p, sign, scale, keep, column, cdtype)
        if column:
            matrix = _dft_matrix(p, sign, scale, keep, p, True, cdtype, True)
            return apply("matmul", (_constant(session, matrix, key), x))
        matrix = _dft_matrix(p, sign, scale, p, keep, False, cdtype, True)
        return apply("matmul", (x, _constant(session, matrix, key)))
    if p == 1:
        x = x if x.dtype == cdtype else apply("cast", (x,), {"dtype": cdtype})
        return x if scale == 1.0 else apply("mul", (x, scale))
    if p > _LEAF:
        return _bluestein(x, p, column, sign, scale, keep, cdtype)
    if column:
        matrix = _dft_matrix(p, sign, scale, keep, p, True, cdtype)
        return apply("matmul", (_constant(session, matrix, ("dft", p, sign, scale, keep, cdtype)),
                                x))
    matrix = _dft_matrix(p, sign, scale, p, keep, False, cdtype)
    return apply("matmul", (x, _constant(session, matrix,
                                         ("dftT", p, sign, scale, keep, cdtype))))


def _bluestein(x, p, column, sign, scale, keep, cdtype):
    """p points by Bluestein's algorithm: X_k = c_k * sum_j (x_j c_j)
    conj(c_(k-j)), the sum a circular convolution of length m >= 2p - 1
    through two m-point transforms."""
    session = x.session
    m = _convolution_length(2 * p - 1)
    c, kernel = _chirp(p, sign, m, column, cdtype)
    axis = x.ndim - (2 if column else 1)
    y = apply("mul", (x, _constant(session, _frozen(c, cdtype), ("chirp", p, sign, column,
                                                                   cdtype))))
    y = _resized(y, axis, m)
    y = _dft(y, m, column, -1, 1.0, m, cdtype)
    y = apply("mul", (y, _constant(session, kernel, ("kernel", p, sign, m, column, cdtype))))
    y = _dft(y, m, column, 1, 1.0, keep, cdtype)
    post = c[:keep] * scale
    return apply("mul", (y, _constant(session, _frozen(post, cdtype),
                                      ("post", p, sign, scale, keep, column, cdtype))))


def _packable(n):
    """Whether a real transform of n points runs as n / 2 complex ones: n
    even, more than one matmul's worth, and n / 2 without Bluestein."""
    return n % 2 == 0 and n > _LEAF and _plan(n // 2)[-1] <= _LEAF


@functools.lru_cache(maxsize=128)
def _unpacking(n, sign, scale, column, dtype):
    """The factors (1 -/+ i w^k) * scale / 2 for k = 0 .. n/2 that turn the
    n/2-point DFT Z of packed pairs into the n-point DFT of real points:
    X_k = Z_k * a_k + conj(Z_(n/2-k)) * b_k (w = w_n^sign)."""
    w = _roots(sign * np.arange(n // 2 + 1), n)
    tail = (1,) if column else ()
    a = (1 - 1j * w) * (scale / 2)
    b = (1 + 1j * w) * (scale / 2)
    return _frozen(a.reshape(a.shape + tail), dtype), _frozen(b.reshape(b.shape + tail), dtype)


@functools.lru_cache(maxsize=128)
def _packing(n, sign, scale, column, dtype):
    """For the inverse direction: Z_k = X'_k * a_k + conj(X'_(n/2-k)) * b_k
    (k = 0 .. n/2; the last is dropped), a_k = (1 + i w^k) * scale,
    b_k = (1 - i w^k) * scale, and the mask of k = 0 and n/2, whose
    imaginary parts are ignored as NumPy's c2r ignores them."""
    w = _roots(sign * np.arange(n // 2 + 1), n)
    tail = (1,) if column else ()
    a = (1 + 1j * w) * scale
    b = (1 - 1j * w) * scale
    mask = np.zeros(n // 2 + 1)
    mask[[0, -1]] = 1
    return (_frozen(a.reshape(a.shape + tail), dtype), _frozen(b.reshape(b.shape + tail), dtype),
            _frozen(mask.reshape(mask.shape + tail), _real_dtype(dtype)))


def _reversed(x, axis):
    """x[..., ::-1, ...] along the (non-negative) ``axis``."""
    return apply("slice", (x,), {"starts": [_inference.INT64_MAX], "stops": [_inference.INT64_MIN],
                                 "steps": [-1], "axes": [axis]})


def _work_shape(x, axis, n):
    """(shape, column) of x's work form: lead + (n,) or lead + (n, width)."""
    lead, trail = x.shape[:axis], x.shape[axis + 1:]
    width = math.prod(trail)
    return (lead + (n,), False) if width == 1 else (lead + (n, width), True)


def _real_forward(x, axis, sign, scale, cdtype):
    """The n // 2 + 1 first points of the DFT of real x (n even, packable):
    an n/2-point transform of the pairs, then X_k = Z_k a_k + conj(Z_(m-k))
    b_k."""
    n = x.shape[axis]
    m = n // 2
    shape, column = _work_shape(x, axis, n)
    z = _dft(_reshape(x, shape), m, column, sign, 1.0, m, cdtype, packed=True)
    at = z.ndim - (2 if column else 1)
    first = apply("slice", (z,), {"starts": [0], "stops": [1], "axes": [at]})
    z = apply("concatenate", (z, first), {"axis": at})  # Z_0 .. Z_m (Z_m = Z_0)
    a, b = _unpacking(n, sign, scale, column, cdtype)
    session = x.session
    key = ("unpack", n, sign, scale, column, cdtype)
    y = apply("add", (apply("mul", (z, _constant(session, a, key + (0,)))),
                      apply("mul", (apply("conj", (_reversed(z, at),)),
                                    _constant(session, b, key + (1,))))))
    return _reshape(y, x.shape[:axis] + (m + 1,) + x.shape[axis + 1:])


def _real_inverse(x, axis, n, sign, scale, cdtype):
    """n real points (n even, packable) from the n // 2 + 1 of a Hermitian
    spectrum x along ``axis``: Z_k = X_k a_k + conj(X_(m-k)) b_k, an
    m-point transform, its real and imaginary parts interleaved."""
    m = n // 2
    full = x.shape
    shape, column = _work_shape(x, axis, m + 1)
    x = _reshape(x, shape)
    at = x.ndim - (2 if column else 1)
    a, b, mask = _packing(n, sign, scale, column, cdtype)
    session = x.session
    key = ("pack", n, sign, scale, column, cdtype)
    a, b, mask = (_constant(session, c, key + (i,)) for i, c in enumerate((a, b, mask)))

    def real_ends(v):  # v with the imaginary parts of k = 0 and m dropped
        return apply("sub", (v, apply("mul", (apply("mul", (apply("imag", (v,)), mask)), 1j))))

    z = apply("add", (apply("mul", (real_ends(x), a)),
                      apply("mul", (apply("conj", (real_ends(_reversed(x, at)),)), b))))
    z = _cut(z, at, m)
    z = _dft(z, m, column, sign, 1.0, m, cdtype)
    y = apply("stack", (apply("real", (z,)), apply("imag", (z,))), {"axis": at + 1})
    return _reshape(y, full[:axis] + (n,) + full[axis + 1:])


def _transform(x, axis, sign, scale, keep, cdtype):
    """The DFT of x along ``axis`` (its whole length, n), first ``keep``
    outputs: the axes after ``axis`` fold into one trailing axis (column
    form) or, when they hold one element, go (row form)."""
    n = x.shape[axis]
    lead, trail = x.shape[:axis], x.shape[axis + 1:]
    out_shape = lead + (keep,) + trail
    if math.prod(out_shape) == 0:
        return _zeros(out_shape, cdtype, x.session)
    width = math.prod(trail)
    if width == 1:
        y = _dft(_reshape(x, lead + (n,)), n, False, sign, scale, keep, cdtype)
    else:
        y = _dft(_reshape(x, lead + (n, width)), n, True, sign, scale, keep, cdtype)
    return _reshape(y, out_shape)


# ---- arguments ------------------------------------------------------------------------


def _dtype_name(a):
    return a.dtype if isinstance(a.dtype, str) else a.dtype.name


def _remote(a):
    if isinstance(a, RemoteArray):
        return a
    return _ra.asarray(a)


def _check_norm(norm):
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         '"forward".')


def _scale(n, norm, forward):
    """The factor a transform of n points is multiplied by for ``norm``."""
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    _check_norm(norm)
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") == forward:
        return 1.0 / n
    return 1.0


def _swap_direction(norm):
    _check_norm(norm)
    return {None: "forward", "backward": "forward", "ortho": "ortho",
            "forward": "backward"}[norm]


def _resized(x, axis, n):
    """x cropped or zero-padded to n along ``axis``, as numpy.fft does."""
    have = x.shape[axis]
    if have == n:
        return x
    if have > n:
        return _cut(x, axis, n)
    pad_shape = list(x.shape)
    pad_shape[axis] = n - have
    return apply("concatenate", (x, _zeros(pad_shape, _dtype_name(x), x.session)),
                 {"axis": axis})


def _length(a, n, axis):
    return a.shape[axis] if n is None else operator.index(n)


def _c2c(a, n, axis, norm, forward):
    a = _remote(a)
    axis = _inference.normalize_axis(axis, a.ndim)
    n = _length(a, n, axis)
    scale = _scale(n, norm, forward)
    cdtype = _complex_dtype(_dtype_name(a))
    x = _resized(a, axis, n)
    if x.dtype != cdtype:
        x = x.astype(cdtype)
    return _transform(x, axis, -1 if forward else 1, scale, n, cdtype)


def _r2c(a, n, axis, norm, forward, name):
    """rfft (forward) / the transform of ihfft before its conjugate."""
    a = _remote(a)
    axis = _inference.normalize_axis(axis, a.ndim)
    n = _length(a, n, axis)
    scale = _scale(n, norm, forward)
    if _inference.is_complex(_dtype_name(a)):
        parity = "even" if n % 2 == 0 else "odd"
        raise TypeError(f"ufunc '{name}_n_{parity}' not supported for the input types, and the "
                        "inputs could not be safely coerced to any supported types according "
                        "to the casting rule ''same_kind''")
    cdtype = _complex_dtype(_dtype_name(a))
    x = _resized(a, axis, n)
    rdtype = _real_dtype(cdtype)
    if x.dtype != rdtype:
        x = x.astype(rdtype)
    sign = -1 if forward else 1
    if _packable(n) and math.prod(x.shape):
        return _real_forward(x, axis, sign, scale, cdtype)
    return _transform(x, axis, sign, scale, n // 2 + 1, cdtype)


def _c2r(a, n, axis, norm, forward):
    """irfft (inverse) / hfft's transform of the conjugate: the Hermitian
    spectrum of a[:n//2 + 1] completed to n points, its real part."""
    a = _remote(a)
    axis = _inference.normalize_axis(axis, a.ndim)
    n = (a.shape[axis] - 1) * 2 if n is None else operator.index(n)
    scale = _scale(n, norm, forward)
    cdtype = _complex_dtype(_dtype_name(a))
    half = n // 2 + 1
    x = _resized(a, axis, half)
    if x.dtype != cdtype:
        x = x.astype(cdtype)
    sign = -1 if forward else 1
    if _packable(n) and math.prod(x.shape):
        return _real_inverse(x, axis, n, sign, scale, cdtype)
    mirrored = (n + 1) // 2 - 1  # X[n - k] = conj(X[k]) for k = 1 .. mirrored
    if mirrored > 0 and math.prod(x.shape):
        tail = apply("slice", (x,), {"starts": [mirrored], "stops": [0], "steps": [-1],
                                     "axes": [axis]})
        x = apply("concatenate", (x, apply("conj", (tail,))), {"axis": axis})
    else:
        x = _resized(x, axis, n)
    return apply("real", (_transform(x, axis, sign, scale, n, cdtype),))


def _out(out, result, name):
    return rebind_out(out, result, name, "same_kind")


# ---- 1-D ------------------------------------------------------------------------------


def fft(a, n=None, axis=-1, norm=None, out=None):
    """numpy.fft.fft: the n-point DFT along ``axis`` (cropped or zero-padded
    to n)."""
    return _out(out, _c2c(a, n, axis, norm, True), "fft")


def ifft(a, n=None, axis=-1, norm=None, out=None):
    """numpy.fft.ifft."""
    return _out(out, _c2c(a, n, axis, norm, False), "ifft")


def rfft(a, n=None, axis=-1, norm=None, out=None):
    """numpy.fft.rfft: the n // 2 + 1 non-negative frequencies of a real
    input's DFT (complex input raises TypeError, as NumPy 2)."""
    return _out(out, _r2c(a, n, axis, norm, True, "rfft"), "rfft")


def irfft(a, n=None, axis=-1, norm=None, out=None):
    """numpy.fft.irfft: n real points (default 2 * (m - 1)) from the
    n // 2 + 1 first values of a Hermitian spectrum."""
    return _out(out, _c2r(a, n, axis, norm, False), "irfft")


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """numpy.fft.hfft: the real DFT of a signal with Hermitian symmetry
    (irfft of the conjugate, the norm swapped)."""
    a = _remote(a)
    return _out(out, _c2r(apply("conj", (a,)), n, axis, _swap_direction(norm), False), "hfft")


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """numpy.fft.ihfft: the conjugate of rfft, the norm swapped."""
    y = _r2c(a, n, axis, _swap_direction(norm), True, "rfft")
    return _out(out, apply("conj", (y,)), "ihfft")


# ---- n-D ------------------------------------------------------------------------------


def _cook(a, s, axes, invreal=False):
    """numpy.fft's (s, axes) from the arguments; an entry -1 or None of s
    (NumPy 2) keeps that axis's length."""
    if s is None:
        shapeless = True
        if axes is None:
            s = list(a.shape)
        else:
            axes = [operator.index(x) for x in axes]
            s = [a.shape[_inference.normalize_axis(x, a.ndim)] for x in axes]
    else:
        shapeless = False
        s = list(s)
    if axes is None:
        axes = list(range(-len(s), 0))
    axes = [operator.index(x) for x in axes]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless:
        s[-1] = (a.shape[_inference.normalize_axis(axes[-1], a.ndim)] - 1) * 2
    s = [a.shape[_inference.normalize_axis(x, a.ndim)] if n is None or n == -1 else n
         for n, x in zip(s, axes)]
    return s, axes


def _c2c_n(a, s, axes, norm, forward):
    a = _remote(a)
    s, axes = _cook(a, s, axes)
    for n, axis in reversed(list(zip(s, axes))):
        a = _c2c(a, n, axis, norm, forward)
    return a


def fftn(a, s=None, axes=None, norm=None, out=None):
    """numpy.fft.fftn: 1-D transforms along ``axes`` (default: the last
    len(s), or all)."""
    return _out(out, _c2c_n(a, s, axes, norm, True), "fftn")


def ifftn(a, s=None, axes=None, norm=None, out=None):
    """numpy.fft.ifftn."""
    return _out(out, _c2c_n(a, s, axes, norm, False), "ifftn")


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """numpy.fft.fft2: fftn over the last two axes."""
    return _out(out, _c2c_n(a, s, axes, norm, True), "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """numpy.fft.ifft2."""
    return _out(out, _c2c_n(a, s, axes, norm, False), "ifft2")


def rfftn(a, s=None, axes=None, norm=None, out=None):
    """numpy.fft.rfftn: rfft along the last of ``axes``, fft along the
    others."""
    a = _remote(a)
    s, axes = _cook(a, s, axes)
    a = _r2c(a, s[-1], axes[-1], norm, True, "rfft")
    for n, axis in zip(s[:-1], axes[:-1]):
        a = _c2c(a, n, axis, norm, True)
    return _out(out, a, "rfftn")


def irfftn(a, s=None, axes=None, norm=None, out=None):
    """numpy.fft.irfftn: ifft along all but the last of ``axes``, irfft
    along it (default length 2 * (m - 1))."""
    a = _remote(a)
    s, axes = _cook(a, s, axes, invreal=True)
    for n, axis in zip(s[:-1], axes[:-1]):
        a = _c2c(a, n, axis, norm, False)
    return _out(out, _c2r(a, s[-1], axes[-1], norm, False), "irfftn")


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """numpy.fft.rfft2: rfftn over the last two axes."""
    return rfftn(a, s, axes, norm, out)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """numpy.fft.irfft2: irfftn over the last two axes."""
    return irfftn(a, s, axes, norm, out)


# ---- helpers --------------------------------------------------------------------------


def fftfreq(n, d=1.0, *, session=None):
    """numpy.fft.fftfreq: the sample frequencies [0, 1, ..., -1] / (d*n),
    float64, made on the server."""
    n = operator.index(n)
    val = 1.0 / (n * d)
    k = apply("arange", (), {"start": 0, "stop": n, "dtype": "int64"}, session=session)
    k = apply("where", (apply("ge", (k, (n - 1) // 2 + 1)), apply("sub", (k, n)), k))
    return apply("mul", (k, np.float64(val)))


def rfftfreq(n, d=1.0, *, session=None):
    """numpy.fft.rfftfreq: [0, 1, ..., n // 2] / (d*n), float64."""
    n = operator.index(n)
    val = 1.0 / (n * d)
    k = apply("arange", (), {"start": 0, "stop": n // 2 + 1, "dtype": "int64"}, session=session)
    return apply("mul", (k, np.float64(val)))


def _shifted(x, axes, sign):
    from gpuflow import _shapes

    x = _remote(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [sign * (dim // 2) for dim in x.shape]
    elif isinstance(axes, (int, np.integer)):
        shift = sign * (x.shape[axes] // 2)
    else:
        shift = [sign * (x.shape[ax] // 2) for ax in axes]
    if x.ndim == 0 or (isinstance(axes, tuple) and not axes):
        return RemoteArray(x.session, x._expr)
    return _shapes.roll(x, shift, axes)


def fftshift(x, axes=None):
    """numpy.fft.fftshift: the zero frequency moved to the centre (a roll by
    n // 2 along ``axes``, default all)."""
    return _shifted(x, axes, 1)


def ifftshift(x, axes=None):
    """numpy.fft.ifftshift: the inverse of fftshift."""
    return _shifted(x, axes, -1)
