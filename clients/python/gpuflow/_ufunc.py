"""NumPy's ufuncs for RemoteArrays: ``gf.add``, ``gf.sqrt``, ``gf.hypot`` ...
are :class:`ufunc` objects taking NumPy's parameters.

    gf.add(a, b, dtype=gf.float32)           # computes in float32 (casting checked)
    gf.sqrt(x, out=y)                        # rebinds y to the result, cast to y's dtype
    gf.multiply(a, 2, where=a > 0, out=a)    # a where the condition is false
    a += 1                                   # add(a, 1, out=a): same_kind, as NumPy
    gf.add.reduce(x, axis=0), gf.multiply.accumulate(x), gf.subtract.outer(u, v)

A ufunc with a server op records that op; the others are compositions of
server ops in one fused elementwise group (``hypot``, ``logaddexp``,
``arcsinh``, ``fmod`` ...), computed in float64 and rounded once to NumPy's
result dtype where rounding each step would drift from NumPy's answer.
``dtype=`` casts the inputs to that dtype (each checked against
``casting``, default 'same_kind', as NumPy checks them) and fails as NumPy
does when the ufunc has no loop for it; ``out=`` takes RemoteArrays, whose
Python objects are rebound to the result.
"""

import math

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import (
    RemoteArray,
    UnsupportedOperand,
    apply,
    dtype_name,
    operand,
    rebind_out,
    reduce,
    scan,
    session_of,
)

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


class ufunc:  # noqa: N801 - NumPy's name
    """A NumPy-style universal function over RemoteArrays (see the module doc)."""

    def __init__(self, name, nin, nout, impl, *, loop="output", simple=False, reduce_op=None,
                 accumulate_op=None, identity=None, doc=""):
        self.__name__ = self.__qualname__ = name
        self.nin, self.nout, self.nargs = nin, nout, nin + nout
        self.identity = identity
        self.__doc__ = doc or f"numpy.{name} for RemoteArrays."
        self._impl = impl
        self._loop = loop  # what the inputs are cast to: "output", "promoted" or "input"
        self._simple = simple  # one server op: no preparation needed
        self._reduce_op = reduce_op
        self._accumulate_op = accumulate_op

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=True, casting="same_kind", order="K", dtype=None,
                 subok=True, signature=None):
        name = self.__name__
        if not self.nin <= len(args) <= self.nargs:
            raise TypeError(f"{name}() takes from {self.nin} to {self.nargs} positional "
                            f"arguments but {len(args)} were given")
        inputs, positional_out = args[:self.nin], args[self.nin:]
        if positional_out:
            if out is not None:
                raise TypeError("cannot specify 'out' as both a positional and keyword argument")
            out = positional_out
        outs = self._outs(out)
        _inference.check_casting(casting)
        if order not in ("K", "A", "C", "F"):
            raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got '{order}')")
        if signature is not None:
            raise NotImplementedError("signature= is not supported; use dtype=")
        plain = dtype is None and where is True and casting == "same_kind"
        if plain and self._simple and all(o is None for o in outs):
            return self._impl(*inputs)
        extra = [o for o in outs if o is not None] + ([where] if where is not True else [])
        session = session_of(list(inputs) + [v for v in extra if isinstance(v, RemoteArray)])
        inputs = [prepare(x, session) for x in inputs]
        types = [type_of(x) for x in inputs]
        if dtype is not None:
            results = self._with_dtype(inputs, types, dtype_name(dtype), casting)
        else:
            results = self._results(self._impl(*inputs))
            if casting in ("no", "equiv", "safe"):  # promotion always passes the others
                loop = {"output": results[0]._expr.dtype, "input": types[0].dtype,
                        "promoted": _inference.promote_types(types)}[self._loop]
                for i, t in enumerate(types):
                    if not t.weak and not _inference.can_cast(t.dtype, loop, casting):
                        raise _inference.cast_error(name, i, t.dtype, loop, casting)
        final = []
        for r, o in zip(results, outs):
            if where is not True:
                if o is not None:
                    if not _inference.can_cast(r._expr.dtype, o._expr.dtype, casting):
                        raise _inference.cast_error(name, None, r._expr.dtype, o._expr.dtype,
                                                    casting)
                    r = apply("where", (where, cast(r, o._expr.dtype), o))
                else:  # NumPy leaves these elements uninitialised; gpuflow zeros them
                    r = apply("where", (where, r, _zero(r._expr.dtype)), session=session)
            final.append(r if o is None else rebind_out(o, r, name, casting, broadcast=True))
        return final[0] if self.nout == 1 else tuple(final)

    def _outs(self, out):
        if out is None:
            return (None,) * self.nout
        outs = out if isinstance(out, tuple) else (out,)
        if len(outs) != self.nout:
            raise ValueError(f"The 'out' tuple must have exactly {self.nout} entries: one per "
                             "ufunc output")
        for o in outs:
            if o is not None and not isinstance(o, RemoteArray):
                raise TypeError("return arrays must be of ArrayType (gpuflow: a RemoteArray, "
                                f"whose Python object is rebound to the result), got "
                                f"{type(o).__name__}")
        return outs

    def _results(self, r):
        return list(r) if isinstance(r, tuple) else [r]

    def _with_dtype(self, inputs, types, target, casting):
        name = self.__name__
        no_loop = TypeError("No loop matching the specified signature and casting was found "
                            f"for ufunc {name}")
        if self._loop != "output":  # predicates: dtype= names the (bool) output
            if target != "bool":
                raise no_loop
            return self._results(self._impl(*inputs))
        converted = []
        for i, (x, t) in enumerate(zip(inputs, types)):
            if t.weak:
                # NumPy 2: a Python scalar goes into the loop if its kind
                # does (a float into an integer loop does not), except
                # under casting="unsafe".
                if casting != "unsafe" and not _inference.can_cast(t.dtype, target, "same_kind"):
                    raise _inference.cast_error(name, i, t.dtype, target, casting)
                value = _inference.convert_scalar(x, target)
                converted.append(cast(value, target) if target == "bfloat16" else value)
                continue
            if not _inference.can_cast(t.dtype, target, casting):
                raise _inference.cast_error(name, i, t.dtype, target, casting)
            converted.append(cast(x, target))
        results = self._results(self._impl(*converted))
        if any(r._expr.dtype != target for r in results):
            raise no_loop
        return results

    # -- methods ---------------------------------------------------------------------------

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=True):
        """numpy.ufunc.reduce for add, multiply, maximum, minimum,
        logical_and and logical_or (axis=0 by default, as NumPy)."""
        if self._reduce_op is None:
            raise NotImplementedError(f"{self.__name__}.reduce: gpuflow reduces with add, "
                                      "multiply, maximum, minimum, logical_and and logical_or")
        if where is not True:
            fill = self.identity if initial is None else initial
            if fill is None:
                raise ValueError(f"reduction operation '{self.__name__}' does not have an "
                                 "identity, so to use a where mask one has to specify 'initial'")
            array = apply("where", (where, array, fill))
        result = reduce(self._reduce_op, array, axis, keepdims, dtype=dtype)
        if initial is not None:
            result = cast(self(result, initial), result._expr.dtype)
        return rebind_out(out, result, self.__name__)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """numpy.ufunc.accumulate for add and multiply."""
        if self._accumulate_op is None:
            raise NotImplementedError(f"{self.__name__}.accumulate: gpuflow accumulates with add "
                                      "and multiply")
        return scan(self._accumulate_op, array, axis, dtype, out)

    def at(self, a, indices, b=None):
        """numpy.ufunc.at for add, multiply, maximum and minimum: every
        duplicate index combines (one scatter); rebinds ``a``. NumPy's
        casting check (the loop's dtype to a's, same_kind) is made here; the
        values are converted to a's dtype before they combine."""
        from gpuflow import _select, functions

        name = self.__name__
        mode = {"add": "add", "multiply": "mul", "maximum": "max", "minimum": "min"}.get(name)
        if mode is None:
            raise NotImplementedError(f"{name}.at: gpuflow combines duplicate indices with add, "
                                      "multiply, maximum and minimum")
        if not isinstance(a, RemoteArray):
            raise TypeError(f"{name}.at: the first argument must be a gpuflow array")
        if b is None:
            raise ValueError("second operand needed for ufunc")

        def probe(v):  # a 0-d stand-in of v's type, for the loop's dtype
            if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
                return v
            dtype = v._expr.dtype if isinstance(v, RemoteArray) else np.asarray(v).dtype.name
            return functions.zeros((), dtype, session=a.session)

        loop = self(probe(a), probe(b))._expr.dtype
        if not _inference.can_cast(loop, a._expr.dtype, "same_kind"):
            raise _inference.cast_error(name, None, loop, a._expr.dtype, "same_kind")
        a._expr = _select.scatter_key(a, indices, b, mode)._expr

    def outer(self, a, b, **kwargs):
        """numpy.ufunc.outer: ``self(a[..., None, ...], b)``."""
        if self.nin != 2:
            raise ValueError("outer product only supported for binary functions")
        session = session_of((a, b))
        a, b = prepare(a, session), prepare(b, session)
        nb = len(type_of(b).shape)
        if isinstance(a, RemoteArray) and nb:
            a = a.reshape(a.shape + (1,) * nb)
        return self(a, b, **kwargs)


# ---- helpers -----------------------------------------------------------------------------


def prepare(x, session):
    """A RemoteArray for an array-like; Python scalars (weak) and numpy
    scalars (strong) stay as they are."""
    if isinstance(x, RemoteArray) or isinstance(x, np.generic):
        return x
    if isinstance(x, (bool, int, float, complex)):
        return x
    value, t = operand(x, session)
    if isinstance(value, np.ndarray):  # a small literal: a cast fuses with its reader
        return apply("cast", (value,), {"dtype": t.dtype}, session=session)
    return RemoteArray(session, value)


def type_of(x):
    if isinstance(x, RemoteArray):
        return _inference.Type(x._expr.dtype, x.shape)
    if isinstance(x, np.generic):
        return _inference.Type(x.dtype.name, ())
    return _inference.Type.weak_scalar(x)


def cast(x, dtype):
    """``x`` as ``dtype`` (no node when it already is a RemoteArray of it)."""
    if isinstance(x, RemoteArray) and x._expr.dtype == dtype:
        return x
    return apply("cast", (x,), {"dtype": dtype})


def _zero(dtype):
    return apply("cast", (0,), {"dtype": dtype})


def _op(name):
    return lambda *xs: apply(name, xs)


def float_out(*xs):
    """The dtype NumPy's float-only loops give: sqrt's rule for one input,
    arctan2's for two."""
    types = [type_of(x) for x in xs]
    if len(types) == 1:
        return _inference.float_result(_inference.promote_types(types))
    return _inference.float_loop(types)


def _in_float64(fn, complex_fn=None):
    """A float composition computed in float64 and rounded once to NumPy's
    result dtype (float16 for int8, float32 for float32 ...). Complex inputs
    go through ``complex_fn`` in complex128 where there is one (a cast to
    float64 would drop their imaginary parts); without one they are refused."""

    def run(*xs):
        out = float_out(*xs)
        if _inference.is_complex(out):
            if complex_fn is None:
                raise NotImplementedError(
                    f"{getattr(fn, '__name__', 'this function').lstrip('_')} of complex values is "
                    "not supported by gpuflow yet")
            return cast(complex_fn(*(cast(x, "complex128") for x in xs)), out)
        return cast(fn(*(cast(x, "float64") for x in xs)), out)

    return run


def _complex_sinh(z):
    return (_exp(z) - _exp(-z)) * 0.5


def _complex_cosh(z):
    return (_exp(z) + _exp(-z)) * 0.5


_where, _isnan, _isinf = _op("where"), _op("isnan"), _op("isinf")
_sqrt, _log, _log1p, _exp, _expm1 = _op("sqrt"), _op("log"), _op("log1p"), _op("exp"), _op("expm1")
_atan2, _maximum, _minimum, _pow = _op("atan2"), _op("maximum"), _op("minimum"), _op("pow")
_or, _and, _not = _op("logical_or"), _op("logical_and"), _op("logical_not")


def _signed(x, r):
    return _where(x < 0, -r, r)


# ---- compositions ----------------------------------------------------------------------


def _tan(x):
    return apply("sin", (x,)) / apply("cos", (x,))


def _arcsin(x):
    return _atan2(x, _sqrt((1 - x) * (1 + x)))


def _arccos(x):
    return _atan2(_sqrt((1 - x) * (1 + x)), x)


def _arctan(x):
    return _atan2(x, 1.0)


def _half_exp(t):
    e = _exp(0.5 * t)  # e^t / 2 without overflowing before sinh and cosh do
    return (0.5 * e) * e


def _sinh(x):
    t = abs(x)
    u = _expm1(t)
    return _signed(x, _where(t > 700, _half_exp(t), 0.5 * (u + u / (u + 1))))


def _cosh(x):
    t = abs(x)
    e = _exp(t)
    return _where(t > 700, _half_exp(t), 0.5 * (e + 1 / e))


def _arcsinh(x):
    t = abs(x)
    t2 = t * t
    small = _log1p(t + t2 / (1 + _sqrt(1 + t2)))
    medium = _log(2 * t + 1 / (_sqrt(t2 + 1) + t))
    large = _log(t) + _LN2
    return _signed(x, _where(t > 2.0 ** 28, large, _where(t > 2, medium, small)))


def _arccosh(x):
    t = x - 1
    small = _log1p(t + _sqrt(2 * t + t * t))
    medium = _log(2 * x - 1 / (x + _sqrt(x * x - 1)))
    large = _log(x) + _LN2
    r = _where(x > 2.0 ** 28, large, _where(x > 2, medium, small))
    return _where(x < 1, math.nan, r)


def _arctanh(x):
    t = abs(x)
    small = 0.5 * _log1p(2 * t + 2 * t * t / (1 - t))
    large = 0.5 * _log1p(2 * t / (1 - t))
    return _signed(x, _where(t < 0.5, small, large))


def _cbrt(x):
    t = abs(x)
    r = _pow(t, 1.0 / 3.0)
    newton = r - (r * r * r - t) / (3 * r * r)  # one step: NumPy's cbrt(27) is 3 exactly
    r = _where(_and(t > 1e-300, t < 1e300), newton, r)
    return _signed(x, r)


def _scaled(name, factor):
    def run(x):
        out = float_out(x)
        if _inference.is_complex(out):  # NumPy's loops for these are real only
            raise _inference._no_loop(name)
        work = "float32" if out in ("float16", "bfloat16") else out
        return cast(cast(x, work) * factor, out)

    return run


def _fabs(x):
    if _inference.is_complex(float_out(x)):
        raise _inference._no_loop("fabs")
    return abs(cast(x, float_out(x)))


def _rint(x):
    t = type_of(x)
    d = _inference.promote_types([t])
    if _inference.is_float(d) or _inference.is_complex(d):
        return apply("round", (x,))
    return cast(x, _inference.float_result(d))  # NumPy's rint has float loops only


def _trunc(x):
    if not _inference.is_float(_inference.promote_types([type_of(x)])):
        return apply("floor", (x,))  # integers keep their value and dtype, as floor
    return _where(x < 0, apply("ceil", (x,)), apply("floor", (x,)))


def _conjugate(x):
    d = _inference.promote_types([type_of(x)])
    if _inference.is_complex(d):
        return apply("conj", (x,))
    return cast(x, "int8" if d == "bool" else d)


def _signbit(x):
    d = _inference.promote_types([type_of(x)])
    if not _inference.is_float(d):
        return apply("lt", (x, 0))
    # The sign bit itself: the float's bytes as a signed int of its size are
    # negative exactly when it is set (-0.0 and -NaN too, as NumPy).
    signed = {2: "int16", 4: "int32", 8: "int64"}[_inference.itemsize(d)]
    return apply("lt", (apply("bitcast", (cast(x, d),), {"dtype": signed}), 0))


def _positive(x):
    if _inference.promote_types([type_of(x)]) == "bool":
        raise TypeError("ufunc 'positive' did not contain a loop with signature matching types "
                        "<class 'numpy.dtype[bool_]'> -> None")
    return cast(x, _inference.promote_types([type_of(x)]))


def _isfinite(x):
    return _not(_or(_isnan(x), _isinf(x)))


def _hypot(x, y):
    out = float_out(x, y)
    ax, ay = abs(cast(x, "float64")), abs(cast(y, "float64"))
    if out != "float64":  # no overflow in float64 for narrower values
        h = _sqrt(ax * ax + ay * ay)
    else:
        m, n = _maximum(ax, ay), _minimum(ax, ay)
        r = n / m
        h = _where(m == 0, 0.0, m * _sqrt(1 + r * r))
    return cast(_where(_or(_isinf(ax), _isinf(ay)), math.inf, h), out)


def _logaddexp(x, y):
    m, d = _maximum(x, y), -abs(x - y)
    return _where(x == y, x + _LN2, m + _log1p(_exp(d)))


def _logaddexp2(x, y):
    m, d = _maximum(x, y), -abs(x - y)
    return _where(x == y, x + 1, m + _log1p(_pow(2.0, d)) / _LN2)


def _heaviside(x, h0):
    out = float_out(x, h0)
    x, h = cast(x, out), cast(h0, out)
    return cast(_where(_isnan(x), x, _where(x == 0, h, _where(x < 0, 0.0, 1.0))), out)


def _copysign(x, y):
    out = float_out(x, y)
    ax = abs(cast(x, out))
    return cast(_where(_signbit(cast(y, out)), -ax, ax), out)


def _float_power(x, y):
    return _pow(cast(x, "float64"), cast(y, "float64"))


def _fmod(x, y):
    m = apply("mod", (x, y))
    p = m._expr.dtype
    if _inference.is_float(p):
        xf, yf = cast(x, p), cast(y, p)
        r = apply("mod", (abs(xf), abs(yf)))  # nonnegative operands: remainder is fmod
        return _where(_signbit(xf), -r, r)
    if _inference.kind(p) == "u":
        return m
    sign_differs = apply("ne", (apply("lt", (x, 0)), apply("lt", (y, 0))))
    return _where(_and(m != 0, sign_differs), m - y, m)


def _fminmax(op):
    def run(x, y):
        m = apply(op, (x, y))
        if not (_inference.is_float(m._expr.dtype) or _inference.is_complex(m._expr.dtype)):
            return m
        return cast(_where(_isnan(y), x, _where(_isnan(x), y, m)), m._expr.dtype)

    return run


def _shift_dtype(name, x, y):
    p = _inference.promote_types([type_of(x), type_of(y)])
    if _inference.is_float(p):
        raise TypeError(f"ufunc '{name}' not supported for the input types, and the inputs could "
                        "not be safely coerced to any supported types according to the casting "
                        "rule ''safe''")
    return "int8" if p == "bool" else p


def _typed(value, dtype):
    bits = 8 * _inference.itemsize(dtype)
    value %= 1 << bits
    if _inference.kind(dtype) == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return np.dtype(dtype).type(value)


def _left_shift(x, y):
    p = _shift_dtype("left_shift", x, y)
    bits = 8 * _inference.itemsize(p)
    xp = cast(x, p)
    if isinstance(y, (int, np.integer)) and not isinstance(y, (bool, np.bool_)):
        return xp * _typed(1 << int(y) if 0 <= y < bits else 0, p)
    return xp * _pow(_typed(2, p), cast(y, p))  # 2**y wraps to 0 from y = bits on


def _right_shift(x, y):
    p = _shift_dtype("right_shift", x, y)
    signed = _inference.kind(p) == "i"
    limit = 8 * _inference.itemsize(p) - (1 if signed else 0)
    xp = cast(x, p)
    beyond = _where(xp < 0, _typed(-1, p), _typed(0, p)) if signed else _typed(0, p)
    if isinstance(y, (int, np.integer)) and not isinstance(y, (bool, np.bool_)):
        if 0 <= y < limit:
            return apply("floordiv", (xp, _typed(1 << int(y), p)))
        return cast(beyond, p) if signed else cast(apply("mul", (xp, beyond)), p)
    yp = cast(y, p)
    shifted = apply("floordiv", (xp, _pow(_typed(2, p), yp)))
    return cast(_where(_or(yp >= limit, yp < 0), beyond, shifted), p)


def _nextafter(x, y):
    """numpy.nextafter: the next float after x toward y, by one step of
    x's bytes read as a signed int (the server's bitcast)."""
    out = float_out(x, y)
    if _inference.is_complex(out):
        raise _inference._no_loop("nextafter")
    xf, yf = cast(x, out), cast(y, out)
    signed = {2: "int16", 4: "int32", 8: "int64"}[_inference.itemsize(out)]
    bits = apply("bitcast", (xf,), {"dtype": signed})
    # Away from zero (the magnitude grows) is +1 in the int for either sign.
    step = _where(apply("logical_xor", (yf > xf, xf < 0)), _typed(1, signed), _typed(-1, signed))
    moved = apply("bitcast", (bits + step,), {"dtype": out})
    one = apply("cast", (1,), {"dtype": signed}, session=session_of([xf, yf]))
    tiny = apply("bitcast", (one,), {"dtype": out})  # the smallest subnormal
    from_zero = _where(yf > 0, tiny, -tiny)
    r = _where(xf == yf, yf, _where(xf == 0, from_zero, moved))
    return cast(_where(_or(_isnan(xf), _isnan(yf)), xf + yf, r), out)


_U64 = np.uint64


def _float64_bits(x):
    return apply("bitcast", (x,), {"dtype": "uint64"})


def _exponent_field(u):
    """The 11 exponent bits of float64 bytes held in a uint64."""
    return apply("bitwise_and", (apply("floordiv", (u, _U64(1 << 52))), _U64(0x7FF)))


def _frexp(x):
    """numpy.frexp: (mantissa in [0.5, 1) with x's sign, int32 exponent),
    read from the float64 bytes of x (every narrower float is exact in
    float64; a float64 subnormal is scaled by 2**54 first); zeros,
    infinities and NaN are their own mantissa with exponent 0."""
    out = float_out(x)
    if _inference.is_complex(out):
        raise _inference._no_loop("frexp")
    xd = cast(x, "float64")
    subnormal = _and(_exponent_field(_float64_bits(xd)) == 0, xd != 0)
    y = _where(subnormal, xd * 2.0 ** 54, xd)
    u = _float64_bits(y)
    exponent = cast(_exponent_field(u), "int32") - _where(subnormal, np.int32(1022 + 54),
                                                          np.int32(1022))
    sign_and_fraction = apply("bitwise_and", (u, _U64((1 << 64) - 1 - (0x7FF << 52))))
    mantissa_bits = apply("bitwise_or", (sign_and_fraction, _U64(1022 << 52)))
    mantissa = apply("bitcast", (mantissa_bits,), {"dtype": "float64"})
    regular = _and(_isfinite(xd), xd != 0)
    return cast(_where(regular, mantissa, xd), out), cast(_where(regular, exponent, np.int32(0)),
                                                          "int32")


def _ldexp_dtype(x1, x2):
    t1, t2 = type_of(x1), type_of(x2)
    if t2.weak:
        if _inference.kind(t2.dtype) not in "biu":
            raise _inference._no_loop("ldexp")
        if not t1.weak and not -2**31 <= int(x2) < 2**31:
            raise OverflowError(f"Python integer {int(x2)} out of bounds for int32")
    elif _inference.kind(t2.dtype) not in "biu" or t2.dtype == "uint64":
        raise _inference._no_loop("ldexp")  # no safe cast to NumPy's int exponents
    if _inference.is_complex(t1.dtype):
        raise _inference._no_loop("ldexp")
    if t1.weak:  # NumPy's loop choice: float16 for a Python int with an array exponent
        return "float16" if _inference.kind(t1.dtype) in "bi" and not t2.weak else "float64"
    return _inference.float_result(t1.dtype)


def _pow2(n):
    """2.0**n in float64 for int64 n in [-1022, 1023], from its bytes."""
    field = cast(n + 1023, "uint64") * _U64(1 << 52)
    return apply("bitcast", (field,), {"dtype": "float64"})


def _ldexp(x1, x2):
    """numpy.ldexp: x1 * 2**x2 rounded once, overflowing to inf and
    underflowing to 0 (musl's scalbn in float64: exact steps of 2**1023 or
    2**-969 bring the exponent in range, one multiplication rounds)."""
    out = _ldexp_dtype(x1, x2)
    session = session_of([x1, x2])
    y = apply("cast", (x1,), {"dtype": "float64"}, session=session)
    n = apply("cast", (x2,), {"dtype": "int64"}, session=session)
    n = _minimum(_maximum(n, np.int64(-2200)), np.int64(2200))
    for _ in range(2):
        up, down = n > 1023, n < -1022
        y = _where(up, y * 2.0 ** 1023, _where(down, y * 2.0 ** -969, y))
        n = _where(up, n - 1023, _where(down, n + 969, n))
    n = _minimum(_maximum(n, np.int64(-1022)), np.int64(1023))
    return cast(y * _pow2(n), out)


def _spacing(x):
    """numpy.spacing: nextafter(x, +-inf) - x, away from zero by x's sign
    (-0.0 counts as positive), float16 always toward +inf (NumPy's
    npy_half_spacing); NaN for infinities."""
    out = float_out(x)
    if _inference.is_complex(out):
        raise _inference._no_loop("spacing")
    xf = cast(x, out)
    infinity = abs(xf) + math.inf  # in x's dtype (NaN for NaN, which stays NaN)
    toward = infinity if out == "float16" else _where(xf < 0, -infinity, infinity)
    step = _nextafter(xf, toward) - xf
    return cast(_where(_isinf(xf), abs(xf - xf), step), out)  # NumPy's NaN is positive


def _modf(x):
    out = float_out(x)
    xf = cast(x, out)
    whole = _where(xf < 0, apply("ceil", (xf,)), apply("floor", (xf,)))
    return _where(_isinf(xf), 0.0, xf - whole), whole


def _divmod(x, y):
    return apply("floordiv", (x, y)), apply("mod", (x, y))


# ---- the table ---------------------------------------------------------------------------

# NumPy name -> server op: one node each.
_SIMPLE_UNARY = {
    "negative": "neg", "absolute": "abs", "sign": "sign", "square": "square", "sqrt": "sqrt",
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sin": "sin", "cos": "cos",
    "tanh": "tanh", "floor": "floor", "ceil": "ceil", "reciprocal": "reciprocal",
    "invert": "bitwise_not", "rsqrt": "rsqrt", "sigmoid": "sigmoid", "relu": "relu",
    "gelu": "gelu", "erf": "erf",
}
_PREDICATES = {"isnan": "isnan", "isinf": "isinf", "logical_not": "logical_not"}
_SIMPLE_BINARY = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
    "floor_divide": "floordiv", "remainder": "mod", "power": "pow", "maximum": "maximum",
    "minimum": "minimum", "arctan2": "atan2", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "gcd": "gcd", "lcm": "lcm",
}
_COMPARISONS = {
    "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
    "greater_equal": "ge", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_xor": "logical_xor",
}
_REDUCE = {"add": ("sum", "cumsum", 0), "multiply": ("prod", "cumprod", 1),
           "maximum": ("max", None, None), "minimum": ("min", None, None),
           "logical_and": ("all", None, True), "logical_or": ("any", None, False),
           "bitwise_or": (None, None, 0), "bitwise_xor": (None, None, 0),
           "bitwise_and": (None, None, -1)}
_COMPOSED_UNARY = {
    "tan": _in_float64(_tan, _tan), "arcsin": _in_float64(_arcsin, _op("asin")),
    "arccos": _in_float64(_arccos, _op("acos")), "arctan": _in_float64(_arctan, _op("atan")),
    "sinh": _in_float64(_sinh, _complex_sinh), "cosh": _in_float64(_cosh, _complex_cosh),
    "arcsinh": _in_float64(_arcsinh, _op("asinh")),
    "arccosh": _in_float64(_arccosh, _op("acosh")),
    "arctanh": _in_float64(_arctanh, _op("atanh")),
    "exp2": _in_float64(lambda x: _pow(2.0, x), lambda x: _pow(2.0, x)),
    "log2": _in_float64(lambda x: _log(x) / _LN2, lambda x: _log(x) / _LN2),
    "log10": _in_float64(lambda x: _log(x) / _LN10, lambda x: _log(x) / _LN10),
    "cbrt": _in_float64(_cbrt), "rad2deg": _scaled("rad2deg", 180.0 / math.pi),
    "degrees": _scaled("degrees", 180.0 / math.pi),
    "deg2rad": _scaled("deg2rad", math.pi / 180.0),
    "radians": _scaled("radians", math.pi / 180.0), "fabs": _fabs, "rint": _rint, "trunc": _trunc,
    "conjugate": _conjugate, "positive": _positive, "spacing": _spacing,
}
_COMPOSED_PREDICATES = {"signbit": _signbit, "isfinite": _isfinite}
_COMPOSED_BINARY = {
    "hypot": _hypot, "logaddexp": _in_float64(_logaddexp),
    "logaddexp2": _in_float64(_logaddexp2), "heaviside": _heaviside, "copysign": _copysign,
    "float_power": _float_power, "fmod": _fmod, "fmax": _fminmax("maximum"),
    "fmin": _fminmax("minimum"), "left_shift": _left_shift, "right_shift": _right_shift,
    "nextafter": _nextafter, "ldexp": _ldexp,
}

UFUNCS = {}


def _add(name, nin, nout, impl, **kw):
    reduce_op, accumulate_op, identity = _REDUCE.get(name, (None, None, None))
    UFUNCS[name] = ufunc(name, nin, nout, impl, reduce_op=reduce_op, accumulate_op=accumulate_op,
                         identity=identity, **kw)


for _name, _o in _SIMPLE_UNARY.items():
    _add(_name, 1, 1, _op(_o), simple=True)
for _name, _o in _PREDICATES.items():
    _add(_name, 1, 1, _op(_o), simple=True, loop="input")
for _name, _o in _SIMPLE_BINARY.items():
    _add(_name, 2, 1, _op(_o), simple=True)
for _name, _o in _COMPARISONS.items():
    _add(_name, 2, 1, _op(_o), simple=True, loop="promoted")
for _name, _f in _COMPOSED_UNARY.items():
    _add(_name, 1, 1, _f)
for _name, _f in _COMPOSED_PREDICATES.items():
    _add(_name, 1, 1, _f, loop="input")
for _name, _f in _COMPOSED_BINARY.items():
    _add(_name, 2, 1, _f)
_add("modf", 1, 2, _modf)
_add("frexp", 1, 2, _frexp)
_add("divmod", 2, 2, _divmod)
_add("matmul", 2, 1, _op("matmul"), simple=True)

# NumPy's aliases: the same ufunc object under another name.
ALIASES = {
    "abs": "absolute", "true_divide": "divide", "mod": "remainder", "conj": "conjugate",
    "bitwise_not": "invert", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "acos": "arccos", "asin": "arcsin",
    "atan": "arctan", "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh",
    "atan2": "arctan2", "pow": "power",
}


def array_ufunc(np_ufunc, method, inputs, kwargs):
    """RemoteArray.__array_ufunc__: ``np.sqrt(remote)`` and friends run as
    gpuflow's ufunc of the same name (NotImplemented for the others)."""
    ours = UFUNCS.get(np_ufunc.__name__)
    if ours is None or method not in ("__call__", "reduce", "accumulate", "outer"):
        return NotImplemented
    try:
        fn = ours if method == "__call__" else getattr(ours, method)
        return fn(*inputs, **kwargs)
    except UnsupportedOperand:
        return NotImplemented
