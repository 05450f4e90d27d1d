"""NumPy's creation, rounding, testing and window functions that CuPy also
has, composed of the server's elementwise ops, arange, sort and slices:

    gf.geomspace(1, 1000, 4); gf.fix(x); gf.isposinf(x); gf.i0(x)
    gf.hanning(64); gf.kaiser(64, 14.0); gf.trim_zeros(x); gf.sort_complex(z)
    gf.broadcast_shapes((3, 1), (4,)); gf.fromfunction(lambda i, j: i + j, (3, 4))

NumPy 2's algorithms (numpy/_core/function_base.py, numpy/lib/
_function_base_impl.py, _ufunclike_impl.py), so the values are NumPy's to
rounding. Creation functions take ``session=`` (default: the current
session).
"""

import math
import operator

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import (
    RemoteArray,
    asarray,
    dtype_name,
    rebind_out,
    session_of,
)


def _functions():
    from gpuflow import functions

    return functions


def _remote(x, session=None):
    return x if isinstance(x, RemoteArray) else asarray(x, session=session)


def _dtype_of(x):
    """The dtype NumPy's asanyarray gives ``x`` (Python scalars strong)."""
    if isinstance(x, RemoteArray):
        return x._expr.dtype
    return dtype_name(np.asarray(x).dtype)


def _is_scalar(x):
    return isinstance(x, (bool, int, float, complex, np.generic)) or (
        isinstance(x, np.ndarray) and x.ndim == 0)


# ---- creation ---------------------------------------------------------------------


def _has_zero(values):
    """Whether any of ``values`` (host or RemoteArrays) holds a zero (one
    Execute for the RemoteArrays)."""
    from gpuflow.remote_array import evaluate

    remote = [v for v in values if isinstance(v, RemoteArray)]
    if any(np.any(np.asarray(v) == 0) for v in values if not isinstance(v, RemoteArray)):
        return True
    return bool(remote) and any(bool(f) for f in evaluate(*((v == 0).any() for v in remote)))


def _host_sign(x):
    """NumPy 2's sign: x / |x| for complex values."""
    if x.dtype.kind == "c":
        with np.errstate(all="ignore"):
            return x / np.abs(x)
    return np.sign(x)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0, *, session=None):
    """numpy.geomspace (NumPy 2's algorithm): ``logspace`` of the log10 of
    start and stop rotated to the positive real axis (so negative and
    complex ends work), the ends exact, in float64 unless ``dtype`` or the
    inputs ask for another inexact type. A zero end raises NumPy's
    ValueError (one Execute when an end is a RemoteArray)."""
    from gpuflow import _ranges

    functions = _functions()
    session = session_of((start, stop), session)
    if _has_zero([start, stop]):
        raise ValueError("Geometric sequence cannot include zero")
    num = operator.index(num)
    types = [_inference.Type(_dtype_of(start), ()), _inference.Type(_dtype_of(stop), ()),
             _inference.Type("float64" if dtype is None else dtype_name(dtype), ()),
             _inference.Type.weak_scalar(float(num))]
    dt = _inference.promote_types(types)
    if _is_scalar(start) and _is_scalar(stop):
        s0, s1 = np.asarray(start).astype(dt), np.asarray(stop).astype(dt)
        sign = _host_sign(s0)
        with np.errstate(all="ignore"):
            s0, s1 = (s0 / sign).astype(dt), (s1 / sign).astype(dt)
            log0, log1 = np.log10(s0)[()], np.log10(s1)[()]
        s0, s1, sign = s0[()], s1[()], sign.astype(dt)[()]
    else:
        s0 = _remote(start, session).astype(dt, copy=False)
        s1 = _remote(stop, session).astype(dt, copy=False)
        sign = functions.sign(s0)
        s0, s1 = s0 / sign, s1 / sign
        log0, log1 = functions.log10(s0), functions.log10(s1)
    # NumPy 2's logspace: base ** linspace with the base a float64 array
    # (strong); a complex linspace is that of the real and imaginary parts.
    if _inference.is_complex(dt):
        y = (_ranges.linspace(log0.real, log1.real, num, endpoint, session=session)
             + 1j * _ranges.linspace(log0.imag, log1.imag, num, endpoint, session=session))
    else:
        y = _ranges.linspace(log0, log1, num, endpoint, session=session)
    result = functions.power(np.float64(10.0), y).astype(dt, copy=False)
    if num > 0:
        index = functions.arange(num, dtype="int64", session=session).reshape(
            (num,) + (1,) * (result.ndim - 1))
        result = functions.where(index == 0, s0, result)
        if num > 1 and endpoint:
            result = functions.where(index == num - 1, s1, result)
    result = (result * sign).astype(dt, copy=False)
    if axis != 0:
        result = functions.moveaxis(result, 0, axis)
    result = result if dtype is None else result.astype(dtype, copy=False)
    result._writable = True
    return result


def fromfunction(function, shape, *, dtype=float, like=None, session=None, **kwargs):
    """numpy.fromfunction: ``function`` called with the index grids of
    ``shape`` (RemoteArrays of ``dtype``) and ``kwargs``."""
    from gpuflow import _shapes

    grids = _shapes.indices(shape, dtype=dtype, session=session)
    return function(*(grids[i] for i in range(grids.shape[0])), **kwargs)


def asanyarray(a, dtype=None, order=None, *, session=None):
    """numpy.asanyarray: :func:`gpuflow.asarray` (there are no subclasses)."""
    return asarray(a, dtype=dtype, session=session)


def asarray_chkfinite(a, dtype=None, order=None, *, session=None):
    """numpy.asarray_chkfinite: :func:`gpuflow.asarray`, with NumPy's
    ValueError when a float or complex array holds an infinity or NaN (one
    Execute, which also stores the array)."""
    from gpuflow import _select

    a = asarray(a, dtype=dtype, session=session)
    dtype = a._expr.dtype
    if _inference.is_float(dtype) or _inference.is_complex(dtype):
        (finite,) = _select.evaluate_keeping([_functions().isfinite(a).all()], a)
        if not bool(finite):
            raise ValueError("array must not contain infs or NaNs")
    return a


_FLAGS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
          "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O",
          "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E"}


def require(a, dtype=None, requirements=None, *, like=None, session=None):
    """numpy.require: ``a`` as a RemoteArray of ``dtype`` meeting the flags
    in ``requirements`` ('C', 'A', 'O', 'E' always hold; 'W' gives a
    writable copy of an array custom kernels may not write; 'F' holds only
    for arrays with at most one axis longer than 1, as gpuflow keeps C
    order, else NotImplementedError)."""
    a = asarray(a, dtype=dtype, session=session)
    if not requirements:
        return a
    wanted = {_FLAGS[x.upper()] for x in requirements}
    if {"C", "F"} <= wanted:
        raise ValueError('Cannot specify both "C" and "F" order')
    if "F" in wanted and not a.flags.f_contiguous:
        raise NotImplementedError("gpuflow arrays are C-contiguous only: require(..., 'F') "
                                  "holds for arrays with at most one axis longer than 1")
    if "W" in wanted and not a.writable:
        return a.copy()
    return a


# ---- shapes and tests -------------------------------------------------------------


def broadcast_shapes(*args):
    """numpy.broadcast_shapes: the shape the given shapes broadcast to (ints
    are 1-D shapes), with NumPy's ValueError naming the arguments that
    clash."""
    shapes = [(operator.index(s),) if isinstance(s, (int, np.integer)) else
              tuple(operator.index(d) for d in s) for s in args]
    if any(d < 0 for s in shapes for d in s):
        raise ValueError("negative dimensions are not allowed")
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dim, source = 1, 0
        for j, s in enumerate(shapes):
            k = i - (rank - len(s))
            if k < 0 or s[k] == 1:
                continue
            if dim == 1:
                dim, source = s[k], j
            elif s[k] != dim:
                raise ValueError(
                    "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                    f"between arg {source} with shape {shapes[source]} and arg {j} with shape "
                    f"{s}.")
        out.append(dim)
    return tuple(out)


def isscalar(element):
    """numpy.isscalar: True for Python and numpy scalars (and strings), False
    for arrays, RemoteArrays of any shape included."""
    return bool(np.isscalar(element))


def _not_complex(x):
    if _inference.is_complex(x._expr.dtype):
        raise TypeError(f"This operation is not supported for {x._expr.dtype} values because it "
                        "would be ambiguous.")


def isposinf(x, out=None):
    """numpy.isposinf: isinf and not signbit (NumPy's TypeError for
    complex values)."""
    functions = _functions()
    x = _remote(x)
    _not_complex(x)
    return functions.logical_and(functions.isinf(x), functions.logical_not(functions.signbit(x)),
                                 out=out)


def isneginf(x, out=None):
    """numpy.isneginf: isinf and signbit (NumPy's TypeError for complex
    values)."""
    functions = _functions()
    x = _remote(x)
    _not_complex(x)
    return functions.logical_and(functions.isinf(x), functions.signbit(x), out=out)


def fix(x, out=None):
    """numpy.fix: rounded toward zero (floor where x >= 0, else ceil), so
    floats keep their dtype and -0.5 gives -0.0. Integers and bool are
    already whole and keep their dtype, as gpuflow's floor and ceil keep
    integers (NumPy 2.0 gave float64 for them); complex values raise
    NumPy's TypeError."""
    functions = _functions()
    x = _remote(x)
    if _inference.kind(x._expr.dtype) in "iub":
        result = x.copy()
    else:
        up = functions.ceil(x)  # first, as NumPy: complex values raise ceil's TypeError
        result = functions.where(x >= 0, functions.floor(x), up)
    return rebind_out(out, result, "fix", "same_kind", broadcast=True)


def trim_zeros(filt, trim="fb", axis=None):
    """numpy.trim_zeros (NumPy 2.2, any number of dimensions): the smallest
    slice holding every nonzero element, trimmed at the front ('f'), back
    ('b') or both, along ``axis`` (None: every axis). One Execute learns,
    per axis, which positions hold a nonzero element; an all-zero array
    becomes empty along the trimmed axes. A RemoteArray comes back (not a
    list for a list)."""
    trim_l = trim.lower()
    if trim_l not in ("fb", "bf", "f", "b"):
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    a = _remote(filt)
    if a.ndim == 0:
        return a
    axes = range(a.ndim) if axis is None else [_inference.normalize_axis(axis, a.ndim)]
    if a.size == 0:
        spans = None
    else:
        from gpuflow.remote_array import evaluate

        nonzero = a != 0
        rows = [nonzero.any(axis=tuple(j for j in range(a.ndim) if j != i)) if a.ndim > 1
                else nonzero for i in range(a.ndim)]
        found = [np.flatnonzero(v) for v in evaluate(*rows)]
        spans = None if not found[0].size else [(f[0], f[-1] + 1) for f in found]
    key = [slice(None)] * a.ndim
    for i in axes:
        if spans is None:
            key[i] = slice(0, 0)
        else:
            first, last = spans[i]
            key[i] = slice(first if "f" in trim_l else None, last if "b" in trim_l else None)
    return a[tuple(key)]


def sort_complex(a):
    """numpy.sort_complex: sorted along the last axis by real part, then
    imaginary part (NaNs last, as NumPy orders them), as complex: complex64
    for int8, int16, uint8 and uint16, complex128 for other real dtypes, a
    complex array's own dtype (a lexsort of the parts, as gpuflow's sort
    takes no complex values)."""
    from gpuflow import _gather, _sorting

    a = _remote(a)
    dtype = a._expr.dtype
    if not _inference.is_complex(dtype):
        target = "complex64" if dtype in ("int8", "int16", "uint8", "uint16") else "complex128"
        return _sorting.sort(a).astype(target)
    if a.ndim == 0:
        raise _inference.AxisError(-1, 0)
    # NumPy's complex order: R + Rj < R + nanj < nan + Rj < nan + nanj.
    functions = _functions()
    real, imag = a.real, a.imag
    nan_class = (functions.isnan(real).astype("int8") * 2 + functions.isnan(imag).astype("int8"))
    order = _sorting.lexsort((imag, real, nan_class), axis=-1)
    return _gather.take_along_axis(a, order, -1)


# ---- special functions and windows ------------------------------------------------

# Cephes' Chebyshev coefficients for exp(-x) I0(x), [0, 8] and (8, inf) on
# 32/x - 2 (NumPy's _i0A and _i0B, numpy/lib/_function_base_impl.py).
_I0_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1,
)
_I0_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1,
)


def _chbevl(x, vals):
    """Cephes' chbevl: the Chebyshev series ``vals`` at x (NumPy's order of
    operations)."""
    b0, b1, b2 = vals[0], 0.0, 0.0
    for v in vals[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + v
    return 0.5 * (b0 - b2)


def i0(x):
    """numpy.i0: the modified Bessel function of the first kind, order 0,
    by Cephes' Chebyshev series as NumPy evaluates it, computed in float64
    and rounded once to a float input's dtype (NumPy computes float16 and
    float32 in their own precision, so float16 of |x| > 11 overflows there
    and not here); other real dtypes give float64; complex values raise
    NumPy's TypeError."""
    functions = _functions()
    x = _remote(x)
    dtype = x._expr.dtype
    if _inference.is_complex(dtype):
        raise TypeError("i0 not supported for complex values")
    target = dtype if _inference.is_float(dtype) else "float64"
    ax = functions.abs(x.astype("float64", copy=False))
    grow = functions.exp(ax)
    small = grow * _chbevl(ax / 2.0 - 2, _I0_A)
    large = grow * _chbevl(32.0 / ax - 2.0, _I0_B) / functions.sqrt(ax)
    return functions.where(ax <= 8.0, small, large).astype(target, copy=False)


def _window_length(M):  # noqa: N803 - numpy's name
    """M as NumPy 2 takes it: a float64 (np.array([0.0, M]))."""
    return float(np.array([0.0, M])[1])


def _short_window(m, session):
    """The window of M < 1 (empty) or M == 1 (one 1.0), float64; None for others."""
    functions = _functions()
    if m < 1:
        return functions.zeros(0, "float64", session=session)
    if m == 1:
        return functions.ones(1, "float64", session=session)
    return None


def _symmetric_positions(m, session):
    """NumPy's arange(1 - M, M, 2) in float64."""
    return _functions().arange(1.0 - m, m, 2.0, dtype="float64", session=session)


def _window(M, session, formula):  # noqa: N803
    """NumPy's windows of M points that are formula(n, M) of the positions
    n = arange(1 - M, M, 2) for M >= 2, and its short windows (empty, [1.0])
    otherwise."""
    m = _window_length(M)
    session = session_of((), session)
    short = _short_window(m, session)
    if short is not None:
        return short
    return formula(_symmetric_positions(m, session), m)


def bartlett(M, *, session=None):  # noqa: N803
    """numpy.bartlett: the triangular window of M points (float64)."""
    where = _functions().where
    return _window(M, session, lambda n, m: where(n <= 0, 1 + n / (m - 1), 1 - n / (m - 1)))


def blackman(M, *, session=None):  # noqa: N803
    """numpy.blackman: the Blackman window of M points (float64)."""
    cos = _functions().cos
    return _window(M, session, lambda n, m: (0.42 + 0.5 * cos(math.pi * n / (m - 1))
                                             + 0.08 * cos(2.0 * math.pi * n / (m - 1))))


def hamming(M, *, session=None):  # noqa: N803
    """numpy.hamming: the Hamming window of M points (float64)."""
    cos = _functions().cos
    return _window(M, session, lambda n, m: 0.54 + 0.46 * cos(math.pi * n / (m - 1)))


def hanning(M, *, session=None):  # noqa: N803
    """numpy.hanning: the Hann window of M points (float64)."""
    cos = _functions().cos
    return _window(M, session, lambda n, m: 0.5 + 0.5 * cos(math.pi * n / (m - 1)))


def kaiser(M, beta, *, session=None):  # noqa: N803
    """numpy.kaiser: the Kaiser window of M points (float64), i0 of
    ``beta * sqrt(1 - ((n - alpha) / alpha) ** 2)`` over i0(beta); M <= 0
    gives an empty array, as NumPy's arange(0, M) does."""
    functions = _functions()
    m = _window_length(M)
    beta = float(np.array([0.0, m, beta])[2])
    session = session_of((), session)
    if m == 1:
        return functions.ones(1, "float64", session=session)
    n = functions.arange(0.0, m, dtype="float64", session=session) if m > 0 else \
        functions.zeros(0, "float64", session=session)
    alpha = (m - 1) / 2.0
    return i0(beta * functions.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(np.float64(beta))


__all__ = ["asanyarray", "asarray_chkfinite", "bartlett", "blackman", "broadcast_shapes", "fix",
           "fromfunction", "geomspace", "hamming", "hanning", "i0", "isneginf", "isposinf",
           "isscalar", "kaiser", "require", "sort_complex", "trim_zeros"]
