"""Client-side dtype and shape inference, the same rules as the server's op
registry (engine/ir/ops_<family>.cc, engine/ir/promotion.cc; docs/ops.md).

RemoteArray uses it so that ``.shape`` and ``.dtype`` are known without a
round trip and so that misuse (shapes that do not broadcast, a bad axis, a
reshape that cannot work) raises at once, as in NumPy, instead of when the
graph runs. The server validates everything again; where the two disagree
the server is right, and tests/python/test_array_api.py compares them op by
op.

    t = infer("add", [Type("int8", (3,)), Type.weak(1)], {})
    t.dtype, t.shape   # ("int8", (3,))

Pure functions; thread-safe.
"""

import math
import operator
import warnings

import numpy as np

# numpy.exceptions.AxisError in NumPy >= 1.25 (numpy.AxisError is gone in 2.x).
AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

_ITEMSIZE = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
    "int64": 8, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
    "complex64": 8, "complex128": 16,
}
_KIND = {
    "bool": "b", "int8": "i", "int16": "i", "int32": "i", "int64": "i",
    "uint8": "u", "uint16": "u", "uint32": "u", "uint64": "u",
    "float16": "f", "bfloat16": "f", "float32": "f", "float64": "f",
    "complex64": "c", "complex128": "c",
}
# NumPy's type numbers in order; bfloat16 (a user dtype to NumPy) last.
_NUMPY_ORDER = {
    "bool": 0, "int8": 1, "uint8": 2, "int16": 3, "uint16": 4, "int32": 5, "uint32": 6,
    "int64": 7, "uint64": 8, "float32": 11, "float64": 12, "complex64": 14, "complex128": 15,
    "float16": 23, "bfloat16": 24,
}
_SIGNED_OF_SIZE = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


def itemsize(dtype):
    return _ITEMSIZE[dtype]


def kind(dtype):
    """'b', 'i', 'u', 'f' or 'c'."""
    return _KIND[dtype]


def is_float(dtype):
    return _KIND[dtype] == "f"


def is_complex(dtype):
    return _KIND[dtype] == "c"


def real_dtype(dtype):
    """float32 for complex64, float64 for complex128, any other dtype itself."""
    return {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)


def complex_dtype(dtype):
    """The complex dtype holding a float (or complex) dtype's values."""
    return "complex128" if dtype in ("float64", "complex128") else "complex64"


class Type:
    """The type of a value in a graph: dtype name, shape, and whether it is a
    weak Python scalar (NumPy 2's NEP 50)."""

    __slots__ = ("dtype", "shape", "weak")

    def __init__(self, dtype, shape, weak=False):
        self.dtype = dtype
        self.shape = tuple(shape)
        self.weak = weak

    @staticmethod
    def weak_scalar(value):
        """The type of a Python bool, int, float or complex used as an op input."""
        if isinstance(value, complex):
            return Type("complex128", (), True)
        if isinstance(value, bool):
            return Type("bool", (), True)
        if isinstance(value, int):
            if value > INT64_MAX:
                if value >= 1 << 64:
                    raise OverflowError(
                        f"Python integer {value} is too large for gpuflow (uint64 at most)")
                return Type("uint64", (), True)
            if value < INT64_MIN:
                raise OverflowError(
                    f"Python integer {value} is too small for gpuflow (int64 at least)")
            return Type("int64", (), True)
        return Type("float64", (), True)

    def __repr__(self):
        return f"Type({self.dtype}, {self.shape}{', weak' if self.weak else ''})"


# ---- promotion -----------------------------------------------------------------


def _min_float_for(dtype):
    return {1: "float16", 2: "float32"}.get(_ITEMSIZE[dtype], "float64")


def _promote_floats(a, b):
    if a == b:
        return a
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    return a if _ITEMSIZE[a] >= _ITEMSIZE[b] else b


def _promote_int_with_float(integer, floating):
    if _ITEMSIZE[integer] == 1:
        return floating
    return _promote_floats(_min_float_for(integer), floating)


def _promote_signed_with_unsigned(s, u):
    if _ITEMSIZE[s] > _ITEMSIZE[u]:
        return s
    if _ITEMSIZE[u] < 8:
        return _SIGNED_OF_SIZE[2 * _ITEMSIZE[u]]
    return "float64"


def promote_dtypes(a, b):
    """numpy.promote_types for two strong dtypes, bfloat16 included."""
    if a == b:
        return a
    ka, kb = _KIND[a], _KIND[b]
    if ka == "b":
        return b
    if kb == "b":
        return a
    if ka == "c" or kb == "c":
        return complex_dtype(promote_dtypes(real_dtype(a), real_dtype(b)))
    if ka == "f" and kb == "f":
        return _promote_floats(a, b)
    if ka == "f":
        return _promote_int_with_float(b, a)
    if kb == "f":
        return _promote_int_with_float(a, b)
    if ka == kb:
        return a if _ITEMSIZE[a] >= _ITEMSIZE[b] else b
    return _promote_signed_with_unsigned(a, b) if ka == "i" else _promote_signed_with_unsigned(b, a)


def _kind_rank(dtype):
    return {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}[_KIND[dtype]]


def promote_types(types):
    """numpy.result_type under NumPy 2 rules (weak Python scalars)."""
    main = None
    weak_rank = -1
    for t in types:
        if t.weak:
            weak_rank = max(weak_rank, _kind_rank(t.dtype))
        elif main is None or _NUMPY_ORDER[t.dtype] > _NUMPY_ORDER[main]:
            main = t.dtype
    if main is not None:
        strong = main
        for t in types:
            if not t.weak:
                strong = promote_dtypes(strong, t.dtype)
        if _kind_rank(strong) >= weak_rank:
            return strong
        if weak_rank == 3 and is_float(strong):
            return complex_dtype(strong)  # float32 + 1j is complex64
    return {0: "bool", 1: "int64", 2: "float64"}.get(weak_rank, "complex128")


def float_result(dtype):
    """The dtype numpy.sqrt (exp, sin, ...) returns for an input dtype."""
    return dtype if is_float(dtype) or is_complex(dtype) else _min_float_for(dtype)


def float_loop(types):
    """The dtype numpy.arctan2 computes in (the smallest safe float)."""
    strong_rank = max((_kind_rank(t.dtype) for t in types if not t.weak), default=-1)
    result = None
    for t in types:
        d = t.dtype
        if t.weak:
            rank = _kind_rank(d)
            if rank <= strong_rank:
                continue
            d = {0: "bool", 1: "int64", 2: "float64"}.get(rank, "complex128")
        if not is_float(d) and _ITEMSIZE[d] == 1:
            continue
        f = float_result(d)
        result = f if result is None else promote_dtypes(result, f)
    return result or "float16"


def _sum_dtype(dtype):
    return {"b": "int64", "i": "int64", "u": "uint64"}.get(_KIND[dtype], dtype)


def _mean_dtype(dtype):
    return dtype if is_float(dtype) or is_complex(dtype) else "float64"


# ---- shapes ----------------------------------------------------------------------


def format_shape(shape):
    """A shape as NumPy's broadcasting and indexing errors print it:
    (2,3), (4,), ()."""
    dims = [str(int(d)) for d in shape]
    return "(" + ",".join(dims) + ("," if len(dims) == 1 else "") + ")"


def broadcast_shapes(*shapes):
    """NumPy broadcasting; ValueError (NumPy's message) when they do not."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dim = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim != 1 and d != dim:
                raise ValueError(
                    "operands could not be broadcast together with shapes "
                    + "".join(format_shape(s) + " " for s in shapes)
                )
            dim = d
        out.append(dim)
    return tuple(out)


def normalize_axis(axis, rank):
    axis = operator.index(axis)
    if axis < -rank or axis >= rank:
        raise AxisError(axis, rank)
    return axis + rank if axis < 0 else axis


def normalize_axes(axes, rank):
    out = sorted(normalize_axis(a, rank) for a in axes)
    for a, b in zip(out, out[1:]):
        if a == b:
            raise ValueError(f"axis {a} is named more than once")
    return out


def _reduced(shape, axes, keepdims):
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def _reduction_axes(shape, attrs):
    axes = attrs.get("axes")
    if axes is None:
        return list(range(len(shape)))
    return normalize_axes(axes, len(shape))


def slice_length(start, stop, step, dim):
    """Python's slice semantics on one axis of size ``dim``."""
    return len(range(*slice(start, stop, step).indices(dim)))


def reshape_target(shape, requested):
    size = math.prod(shape)
    dims = [operator.index(d) for d in requested]
    if len(dims) > 64:  # NumPy 2's NPY_MAXDIMS
        raise ValueError(f"maximum supported dimension for an ndarray is currently 64, "
                         f"found {len(dims)}")
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    for d in dims:
        if d < -1:
            raise ValueError(f"negative dimensions not allowed: {tuple(dims)}")
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(dims)}")
        dims[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(dims)}")
    return tuple(dims)


# ---- per-op rules ----------------------------------------------------------------

_UNARY = {}
for _op in ("conj",):
    _UNARY[_op] = "same"
for _op in ("abs", "real", "imag"):
    _UNARY[_op] = "real_part"
_UNARY["angle"] = "angle"
for _op in ("neg", "sign", "floor", "ceil", "round", "relu"):
    _UNARY[_op] = "same_no_bool"
for _op in ("square", "reciprocal"):
    _UNARY[_op] = "bool_to_int8"
for _op in ("sqrt", "rsqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid",
            "gelu", "erf", "asin", "acos", "atan", "asinh", "acosh", "atanh"):
    _UNARY[_op] = "float"
for _op in ("isnan", "isinf", "logical_not"):
    _UNARY[_op] = "bool"
_UNARY["bitwise_not"] = "integer"

_BINARY = {}
for _op in ("add", "mul", "maximum", "minimum"):
    _BINARY[_op] = "promote"
_BINARY["sub"] = "no_bool"
_BINARY["div"] = "true_divide"
for _op in ("floordiv", "mod", "pow"):
    _BINARY[_op] = "bool_to_int8"
_BINARY["atan2"] = "float"
# The ops NumPy has no complex loop for (TypeError "ufunc 'floor' not supported ...").
_NO_COMPLEX = frozenset(("floor", "ceil", "relu", "sigmoid", "gelu", "erf", "floordiv", "mod",
                         "atan2", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor"))
for _op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
    _BINARY[_op] = "bool"
for _op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _BINARY[_op] = "integer"
for _op in ("gcd", "lcm"):
    _BINARY[_op] = "int_only"  # NumPy has no bool loop for them

# NumPy's own messages where it has one.
_BOOL_MESSAGES = {
    "neg": "The numpy boolean negative, the `-` operator, is not supported, use the `~` operator "
           "or the logical_not function instead.",
    "sub": "numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the "
           "`^` operator, or the logical_xor function instead.",
}
# The ufunc names NumPy's messages use, for the server's op names.
NUMPY_NAMES = {
    "neg": "negative", "abs": "absolute", "sub": "subtract", "mul": "multiply", "div": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "atan2": "arctan2",
    "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
    "ge": "greater_equal", "round": "rint", "bitwise_not": "invert",
}


def numpy_error(fn, *args, **kwargs):
    """The exception NumPy itself raises for ``fn(*args, **kwargs)`` on
    small host values, or None: for errors whose class or text differ
    between NumPy versions, so that gpuflow raises the running NumPy's."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - whatever NumPy raises is the answer
        return e
    return None


def _no_loop(op):
    name = NUMPY_NAMES.get(op, op)
    return TypeError(
        f"ufunc '{name}' not supported for the input types, and the inputs could not be safely "
        "coerced to any supported types according to the casting rule ''safe''")


def _bool_error(op):
    return TypeError(_BOOL_MESSAGES.get(op, f"{op} is not supported for bool"))

UNARY_OPS = frozenset(_UNARY)
BINARY_OPS = frozenset(_BINARY)


def _unary(op, types):
    (t,) = types
    d = promote_types(types)
    rule = _UNARY[op]
    if is_complex(d) and op in _NO_COMPLEX:
        raise _no_loop(op)
    if rule == "same":
        return d
    if rule == "real_part":
        return real_dtype(d)
    if rule == "angle":
        return real_dtype(d) if is_complex(d) else float_loop([Type.weak_scalar(0), t])
    if rule == "same_no_bool":
        if d == "bool":
            raise _bool_error(op)
        return d
    if rule == "bool_to_int8":
        return "int8" if d == "bool" else d
    if rule == "float":
        return float_result(d)
    if rule == "bool":
        return "bool"
    if is_float(d) or is_complex(d):
        raise _no_loop(op)
    return d


def _binary(op, types):
    p = promote_types(types)
    rule = _BINARY[op]
    if is_complex(p) and op in _NO_COMPLEX:
        raise _no_loop(op)
    if rule == "promote":
        return p
    if rule == "no_bool":
        if p == "bool":
            raise _bool_error(op)
        return p
    if rule == "true_divide":
        return p if is_float(p) or is_complex(p) else "float64"
    if rule == "bool_to_int8":
        return "int8" if p == "bool" else p
    if rule == "float":
        return float_loop(types)
    if rule == "bool":
        return "bool"
    if is_float(p) or is_complex(p) or (rule == "int_only" and p == "bool"):
        raise _no_loop(op)
    return p


def _matmul(a, b):
    if not a.shape or not b.shape:
        raise ValueError("matmul: input operand does not have enough dimensions (0-d; use *)")
    ad = list(a.shape) if len(a.shape) > 1 else [1] + list(a.shape)
    bd = list(b.shape) if len(b.shape) > 1 else list(b.shape) + [1]
    if ad[-1] != bd[-2]:
        raise ValueError(
            f"matmul: shapes {a.shape} and {b.shape} are not aligned: {ad[-1]} != {bd[-2]}")
    try:
        batch = broadcast_shapes(tuple(ad[:-2]), tuple(bd[:-2]))
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions of {a.shape} and {b.shape} cannot be broadcast together"
        ) from None
    out = list(batch)
    if len(a.shape) > 1:
        out.append(ad[-2])
    if len(b.shape) > 1:
        out.append(bd[-1])
    return promote_dtypes(a.dtype, b.dtype), tuple(out)


def _dot(a, b):
    if len(a.shape) > 2 or len(b.shape) > 2:
        raise ValueError("dot supports operands of rank <= 2 (use matmul)")
    dtype = promote_dtypes(a.dtype, b.dtype)
    if not a.shape or not b.shape:
        return dtype, a.shape if b.shape == () else b.shape
    if a.shape[-1] != b.shape[0]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: "
                         f"{a.shape[-1]} (dim {len(a.shape) - 1}) != {b.shape[0]} (dim 0)")
    out = ([a.shape[0]] if len(a.shape) == 2 else []) + ([b.shape[1]] if len(b.shape) == 2 else [])
    return dtype, tuple(out)


def take_shape(shape, indices, axis):
    """numpy.take's result shape (the server's InferTake): TypeError for
    float indices, IndexError for a non-empty take from an empty axis."""
    if _KIND[indices.dtype] == "f":
        raise TypeError(f"Cannot cast array data from dtype('{indices.dtype}') to "
                        "dtype('int64') according to the rule 'same_kind'")
    if axis is None:
        size, out = math.prod(shape), tuple(indices.shape)
    else:
        axis = normalize_axis(axis, max(len(shape), 1))  # a 0-d array is taken as (1,)
        if not shape:
            size, out = 1, tuple(indices.shape)
        else:
            size = shape[axis]
            out = tuple(shape[:axis]) + tuple(indices.shape) + tuple(shape[axis + 1:])
    if size == 0 and math.prod(indices.shape) > 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    return out


def take_along_axis_shape(shape, indices, axis):
    """numpy.take_along_axis's result shape (the server's
    InferTakeAlongAxis), with NumPy's errors."""
    if _KIND[indices.dtype] not in "iu":
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        shape, axis = (math.prod(shape),), 0
    else:
        axis = normalize_axis(axis, len(shape))
    if len(shape) != len(indices.shape):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    out = []
    for d, (n, i) in enumerate(zip(shape, indices.shape)):
        if d == axis or n == i or n == 1:
            out.append(i)
        elif i == 1:
            out.append(n)
        else:
            fancy = [tuple(indices.shape) if e == axis else
                     tuple(shape[e] if k == e else 1 for k in range(len(shape)))
                     for e in range(len(shape))]
            raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                             "with shapes " + "".join(format_shape(f) + " " for f in fancy))
    if shape[axis] == 0 and math.prod(out) > 0:
        raise IndexError(f"index out of bounds: a non-empty take_along_axis from axis {axis} of "
                         "size 0")
    return tuple(out)


def _arange_shape(attrs):
    start, stop, step = attrs.get("start", 0), attrs["stop"], attrs.get("step", 1)
    if step == 0:
        raise ValueError("arange step must not be zero")
    if all(isinstance(v, int) for v in (start, stop, step)):
        return "int64", (len(range(start, stop, step)),)
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise ValueError("arange start, stop and step must be finite")
    return "float64", (max(0, math.ceil((stop - start) / step)),)


def infer(op, types, attrs):
    """(dtype name, shape) of ``op`` applied to inputs of ``types`` with
    ``attrs``; raises ValueError, TypeError or IndexError as NumPy would. Ops
    without a client-side rule (custom kernels) are not handled here."""
    if op in _UNARY:
        return _unary(op, types), types[0].shape
    if op in _BINARY:
        shape = broadcast_shapes(types[0].shape, types[1].shape)
        return _binary(op, types), shape
    if op == "where":
        return promote_types(types[1:]), broadcast_shapes(*(t.shape for t in types))
    if op == "clip":
        return promote_types(types), broadcast_shapes(*(t.shape for t in types))
    if op == "cast":
        return attrs["dtype"], types[0].shape
    if op == "bitcast":
        src, dst = types[0].dtype, attrs["dtype"]
        if "bool" in (src, dst) or _ITEMSIZE[src] != _ITEMSIZE[dst]:
            raise ValueError(f"bitcast from {src} to {dst}: the item sizes must match and neither "
                             "may be bool")
        return dst, types[0].shape
    a = types[0] if types else None
    if op in ("sum", "prod", "min", "max", "mean", "var", "std", "any", "all", "logsumexp"):
        axes = _reduction_axes(a.shape, attrs)
        shape = _reduced(a.shape, axes, attrs.get("keepdims", False))
        if op in ("min", "max") and any(a.shape[i] == 0 for i in axes):
            raise ValueError(f"zero-size array to reduction operation {op} which has no identity")
        if op == "logsumexp" and is_complex(a.dtype):
            raise _no_loop(op)
        if "dtype" in attrs:
            return real_dtype(attrs["dtype"]) if op in ("var", "std") else attrs["dtype"], shape
        if op in ("sum", "prod"):
            return _sum_dtype(a.dtype), shape
        if op in ("mean", "var", "std"):
            d = _mean_dtype(a.dtype)
            return real_dtype(d) if op in ("var", "std") else d, shape
        if op in ("any", "all"):
            return "bool", shape
        if op == "logsumexp":
            return float_result(a.dtype), shape
        return a.dtype, shape
    if op in ("argmin", "argmax"):
        keepdims = attrs.get("keepdims", False)
        if attrs.get("axis") is None:
            if math.prod(a.shape) == 0:
                raise ValueError(f"attempt to get {op} of an empty sequence")
            return "int64", (1,) * len(a.shape) if keepdims else ()
        axis = normalize_axis(attrs["axis"], len(a.shape))
        if a.shape[axis] == 0:
            raise ValueError(f"attempt to get {op} of an empty sequence")
        return "int64", _reduced(a.shape, [axis], keepdims)
    if op in ("softmax", "log_softmax"):
        normalize_axis(attrs.get("axis", -1), len(a.shape))
        if is_complex(a.dtype):
            raise _no_loop(op)
        return float_result(a.dtype), a.shape
    if op in ("cumsum", "cumprod"):
        dtype = attrs.get("dtype") or _sum_dtype(a.dtype)
        if attrs.get("axis") is None:
            return dtype, (math.prod(a.shape),)
        normalize_axis(attrs["axis"], len(a.shape))
        return dtype, a.shape
    if op == "matmul":
        return _matmul(types[0], types[1])
    if op == "dot":
        return _dot(types[0], types[1])
    if op == "reshape":
        return a.dtype, reshape_target(a.shape, attrs["shape"])
    if op == "transpose":
        rank = len(a.shape)
        axes = attrs.get("axes")
        if axes is None:
            perm = list(reversed(range(rank)))
        else:
            if len(axes) != rank:
                raise ValueError("axes don't match array")
            perm = [normalize_axis(x, rank) for x in axes]
            if len(set(perm)) != rank:
                raise ValueError("repeated axis in transpose")
        return a.dtype, tuple(a.shape[i] for i in perm)
    if op == "broadcast_to":
        target = tuple(attrs["shape"])
        if broadcast_shapes(a.shape, target) != target or len(a.shape) > len(target):
            raise ValueError(f"cannot broadcast an array of shape {a.shape} to {target}")
        return a.dtype, target
    if op == "expand_dims":
        rank = len(a.shape) + len(attrs["axes"])
        axes = normalize_axes(attrs["axes"], rank)
        it = iter(a.shape)
        return a.dtype, tuple(1 if i in axes else next(it) for i in range(rank))
    if op == "squeeze":
        if attrs.get("axes") is None:
            axes = [i for i, d in enumerate(a.shape) if d == 1]
        else:
            axes = normalize_axes(attrs["axes"], len(a.shape))
            for i in axes:
                if a.shape[i] != 1:
                    raise ValueError("cannot select an axis to squeeze out which has size not "
                                     "equal to one")
        return a.dtype, _reduced(a.shape, axes, False)
    if op == "slice":
        shape = list(a.shape)
        steps = attrs.get("steps") or [1] * len(attrs["starts"])
        axes = attrs.get("axes") or range(len(attrs["starts"]))
        for axis, start, stop, step in zip(axes, attrs["starts"], attrs["stops"], steps):
            if step == 0:
                raise ValueError("slice step cannot be zero")
            shape[axis] = slice_length(start, stop, step, shape[axis])
        return a.dtype, tuple(shape)
    if op == "concatenate":
        first = types[0].shape
        if any(not t.shape for t in types):
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        if any(len(t.shape) != len(first) for t in types):
            raise ValueError("all the input arrays must have the same number of dimensions")
        axis = normalize_axis(attrs.get("axis", 0), len(first))
        for t in types:
            if any(d != first[i] for i, d in enumerate(t.shape) if i != axis):
                raise ValueError("all the input array dimensions except for the concatenation "
                                 f"axis must match exactly, got {first} and {t.shape}")
        shape = list(first)
        shape[axis] = sum(t.shape[axis] for t in types)
        return promote_types([Type(t.dtype, t.shape) for t in types]), tuple(shape)
    if op == "stack":
        first = types[0].shape
        for t in types:
            if t.shape != first:
                raise ValueError("all input arrays must have the same shape, got "
                                 f"{first} and {t.shape}")
        axis = normalize_axis(attrs.get("axis", 0), len(first) + 1)
        shape = list(first)
        shape.insert(axis, len(types))
        return promote_types([Type(t.dtype, t.shape) for t in types]), tuple(shape)
    if op == "take":
        return a.dtype, take_shape(a.shape, types[1], attrs.get("axis"))
    if op == "take_along_axis":
        return a.dtype, take_along_axis_shape(a.shape, types[1], attrs.get("axis"))
    if op == "scatter":
        if kind(types[1].dtype) not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        if broadcast_shapes(types[2].shape, types[1].shape) != types[1].shape:
            raise ValueError(f"shape mismatch: value array of shape {format_shape(types[2].shape)} could "
                             f"not be broadcast to indexing result of shape "
                             f"{format_shape(types[1].shape)}")
        return a.dtype, a.shape
    if op == "flatnonzero":
        return "int64", (attrs["size"],)
    if op == "histogram":
        return ("int64" if len(types) == 2 else types[2].dtype), (types[1].shape[0] - 1,)
    if op in ("sort", "argsort", "searchsorted") and any(is_complex(t.dtype) for t in types):
        raise NotImplementedError(f"{op} of complex values is not supported by gpuflow yet")
    if op in ("sort", "argsort"):
        dtype = "int64" if op == "argsort" else a.dtype
        if "axis" not in attrs:
            return dtype, (math.prod(a.shape),)
        normalize_axis(attrs["axis"], len(a.shape))
        return dtype, a.shape
    if op == "searchsorted":
        return "int64", types[1].shape
    if op == "full":
        return attrs.get("dtype") or a.dtype, tuple(attrs["shape"])
    if op == "arange":
        dtype, shape = _arange_shape(attrs)
        return attrs.get("dtype") or dtype, shape
    if op in ("random_uniform", "random_normal"):
        dtype = attrs.get("dtype") or "float32"
        if not is_float(dtype):
            raise TypeError(f"{op} requires a float dtype, got {dtype}")
        return dtype, tuple(attrs["shape"])
    raise NotImplementedError(f"no client-side rule for op {op!r}")


# ---- casting and Python ints: NumPy's checks, made before anything is sent ------

CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


class UFuncTypeError(TypeError):
    """NumPy's UFuncTypeError: a ufunc's casting rule refuses a cast."""


def check_casting(casting):
    if casting not in CASTINGS:
        raise ValueError("casting must be one of 'no', 'equiv', 'safe', 'same_kind', or 'unsafe'")


def can_cast(from_dtype, to_dtype, casting="safe"):
    """numpy.can_cast for two gpuflow dtype names, bfloat16 included (which
    holds bool, int8 and uint8 exactly and fits in float32)."""
    if from_dtype == to_dtype or casting == "unsafe":
        return True
    if casting in ("no", "equiv"):
        return False
    if "bfloat16" not in (from_dtype, to_dtype):
        return bool(np.can_cast(from_dtype, to_dtype, casting))
    if casting == "safe":
        if to_dtype == "bfloat16":
            return from_dtype in ("bool", "int8", "uint8")
        return to_dtype in ("float32", "float64")
    return is_float(to_dtype)  # same_kind: anything to a float, floats only to floats


def cast_error(ufunc, what, from_dtype, to_dtype, casting):
    """NumPy's message for a refused cast of a ufunc's input ``what`` (an
    index) or output (``what`` None)."""
    where = "output" if what is None else f"input {what}"
    return UFuncTypeError(f"Cannot cast ufunc '{ufunc}' {where} from dtype('{from_dtype}') to "
                          f"dtype('{to_dtype}') with casting rule '{casting}'")


_COMPARISONS = frozenset(("eq", "ne", "lt", "le", "gt", "ge"))
_NO_INT_CONVERSION = _COMPARISONS | {"logical_and", "logical_or", "logical_xor", "logical_not",
                                     "isnan", "isinf", "cast"}


def _weak_int_target(op, index, dtype):
    """The dtype a weak Python int input is converted to (the server's
    WeakIntTarget, engine/ir/validate.cc): elementwise ops convert it to what
    they compute in, which is their output dtype but for comparisons (which
    take any int exactly) and logical ops (which only test != 0); full to its
    dtype; other ops take it as an array of its own."""
    if op == "full":
        return dtype
    if op in _NO_INT_CONVERSION or (op == "where" and index == 0):
        return None
    if op in _UNARY or op in _BINARY or op in ("where", "clip"):
        return dtype
    return None


def check_literals(op, types, values, dtype):
    """NumPy's errors for literal inputs, raised where NumPy raises them: a
    Python int that the op must convert to an integer dtype that cannot hold
    it (OverflowError), an integer to a negative integer power (ValueError)."""
    for i, (t, v) in enumerate(zip(types, values)):
        if t.weak and isinstance(v, int) and not isinstance(v, bool):
            target = _weak_int_target(op, i, dtype)
            if target is not None and _KIND[target] in "iu":
                info = np.iinfo(target)
                if not info.min <= v <= info.max:
                    raise OverflowError(f"Python integer {v} out of bounds for {target}")
    if op == "pow" and not is_float(dtype) and not is_complex(dtype) and len(values) == 2:
        exponent = values[1]
        negative = False
        if isinstance(exponent, (int, np.integer)) and not isinstance(exponent, (bool, np.bool_)):
            negative = exponent < 0
        elif isinstance(exponent, np.ndarray) and exponent.dtype.kind == "i":
            negative = bool((exponent < 0).any())
        if negative:
            raise ValueError("Integers to negative integer powers are not allowed.")


def convert_scalar(value, dtype):
    """A Python or numpy scalar converted to ``dtype`` as NumPy's assignment
    (``a[0] = value``, ``a.fill(value)``) converts it: a numpy scalar of
    that dtype (a Python float for bfloat16). An int out of bounds raises
    OverflowError, a NaN or infinity into an integer dtype ValueError or
    OverflowError, with NumPy's messages; other floats are truncated."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, complex) and _KIND[dtype] != "c":
        if _KIND[dtype] == "b":
            return np.bool_(value != 0)
        # NumPy: float(1j) and int(1j) are TypeErrors.
        raise TypeError(f"float() argument must be a string or a real number, not 'complex'"
                        if _KIND[dtype] == "f" else
                        "int() argument must be a string, a bytes-like object or a real number, "
                        "not 'complex'")
    if _KIND[dtype] in "iu" and not isinstance(value, bool):
        if isinstance(value, float):
            if math.isnan(value):
                raise ValueError("cannot convert float NaN to integer")
            if math.isinf(value):
                raise OverflowError("cannot convert float infinity to integer")
            with np.errstate(all="ignore"):
                return np.array(value).astype(dtype)[()]
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype}")
    if dtype == "bfloat16":
        return float(value)
    with np.errstate(all="ignore"):
        return np.dtype(dtype).type(value)
