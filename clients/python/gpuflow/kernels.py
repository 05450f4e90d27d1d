"""Custom CUDA kernels with CuPy's constructors and call forms. They run on
the server's CUDA backend only (the CPU backend answers
FAILED_PRECONDITION, raised as :class:`gpuflow.FailedPreconditionError`).

    softplus = gpuflow.ElementwiseKernel(
        "T x", "T y", "y = x > 20 ? x : log1p(exp(x))", "softplus")
    y = softplus(x)                         # x: a RemoteArray or numpy array

    l2 = gpuflow.ReductionKernel(
        "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    n = l2(x, axis=1)

    add = gpuflow.RawKernel(r'''
    extern "C" __global__ void vec_add(const float* a, const float* b, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a[i] + b[i];
    }''', "vec_add")
    y = gpuflow.zeros(n, gpuflow.float32, session=s)     # writable
    add(((n + 255) // 256,), (256,), (a, b, y, np.int32(n)))
    y.get()                                              # the kernel's writes

Calls build graph nodes (ops ``elementwise_kernel``, ``reduction_kernel``,
``raw_kernel`` of docs/ops.md) like every other RemoteArray operation;
argument counts, raw parameters and launch dimensions are checked here,
before anything is sent.

Arrays are immutable, so a kernel's writes become new values: a RawKernel
call rebinds every *writable* RemoteArray argument (one made by
``gpuflow.empty``/``zeros``/``ones``/``full``/``arange``/``*_like`` or
``.copy()``) to the array as the kernel left it; ElementwiseKernel and
ReductionKernel rebind the output arrays passed to them. Other arguments
are inputs only. A raw kernel with several writable arguments is launched
once per argument that is evaluated, each launch on private copies of all
of them (the node's ``writes``), so no launch changes an array another
reads.
"""

import operator
import re

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import (
    RemoteArray,
    UnsupportedOperand,
    _Expr,
    dtype_name,
    operand,
    session_of,
)

# C names that would be read as type placeholders by mistake; the server
# rejects them too (engine/ir/custom_kernel.cc).
_C_TYPE_NAMES = frozenset({"float", "double", "int", "long", "short", "char", "unsigned",
                           "signed", "half", "size_t", "ptrdiff_t", "void", "auto", "complex"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _check_identifier(name, what):
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ValueError(f"{what} {name!r} is not an identifier")


class _Param:
    __slots__ = ("raw", "ctype", "name", "dtype")

    def __init__(self, raw, ctype, name):
        self.raw = raw
        self.ctype = ctype
        self.name = name
        # The dtype a concrete type names; None for a placeholder ("T").
        self.dtype = ctype if ctype in _inference._KIND else None

    def __str__(self):
        return f"{'raw ' if self.raw else ''}{self.ctype} {self.name}"


def _parse_params(text, attr):
    """CuPy's "[raw] TYPE NAME, ..." with the server's rules: TYPE is a dtype
    name (float32, int64, ...) or a placeholder (T); C names are refused."""
    if not isinstance(text, str):
        raise TypeError(f"{attr} must be a string like 'T x, float32 y', got {type(text).__name__}")
    params = []
    if not text.strip():
        return params
    for part in text.split(","):
        words = part.split()
        raw = bool(words) and words[0] == "raw"
        if raw:
            words = words[1:]
        if len(words) != 2 or not all(_IDENTIFIER.match(w) for w in words):
            raise ValueError(f"cannot parse {part.strip()!r} in {attr} (expected '[raw] TYPE NAME')")
        ctype, name = words
        if ctype in _C_TYPE_NAMES:
            raise ValueError(f"{ctype!r} in {attr} is a C type name; use a dtype name such as "
                             "float32, float64 or int32, or a placeholder such as T")
        if name in ("i", "_ind") or name.startswith(("gf", "_gf")):
            raise ValueError(f"parameter name {name!r} in {attr} is reserved (i, _ind and names "
                             "starting with gf or _gf)")
        params.append(_Param(raw, ctype, name))
    return params


def _check_unique(*lists):
    names = [p.name for params in lists for p in params]
    for n in names:
        if names.count(n) > 1:
            raise ValueError(f"parameter {n!r} is declared twice")


def _is_scalar(value):
    return isinstance(value, (bool, int, float, complex, np.generic))


def _convert(value, param, session, kernel):
    """(graph input, Type, is_array) for an argument of an elementwise or
    reduction kernel."""
    if param.raw and _is_scalar(value):
        raise TypeError(
            f"{kernel}: raw parameter '{param}' needs an array, got {type(value).__name__}"
        )
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        if param.dtype is not None and param.dtype != "bfloat16":
            if isinstance(value, complex) and not _inference.is_complex(param.dtype):
                raise TypeError(f"{kernel}: a complex scalar ({value!r}) cannot be passed to "
                                f"'{param}'; declare a complex64 or complex128 parameter")
            value = np.dtype(param.dtype).type(value)  # CuPy casts scalars to the param type
    try:
        x, t = operand(value, session)
    except UnsupportedOperand as err:
        raise TypeError(f"{kernel}: argument for '{param}' is not an array or scalar: {err}") from None
    if param.raw and param.dtype is not None and t.dtype != param.dtype:
        raise TypeError(f"{kernel}: raw parameter '{param}' is declared {param.dtype} but the "
                        f"array is {t.dtype}")
    return x, t, not _is_scalar(value)


def _bind_placeholders(params, types, kernel):
    """Placeholder -> dtype, as the server binds them: arrays and numpy
    scalars first (conflicts are errors), then Python scalars."""
    bound = {}
    for p, t in zip(params, types):
        if p.dtype is None and not t.weak:
            if bound.setdefault(p.ctype, t.dtype) != t.dtype:
                raise TypeError(f"{kernel}: type {p.ctype} is bound to both {bound[p.ctype]} "
                                f"and {t.dtype} (by '{p.name}')")
    for p, t in zip(params, types):
        if p.dtype is None and t.weak:
            bound.setdefault(p.ctype, t.dtype)
    return bound


def _out_dtype(param, bound, kernel):
    if param.dtype is not None:
        return param.dtype
    if param.ctype in bound:
        return bound[param.ctype]
    raise TypeError(
        f"{kernel}: the type '{param.ctype}' of output '{param.name}' is not bound by any "
        "argument; pass the output array or declare a dtype in out_params"
    )


def _rebind(target, expr, kernel, what):
    if not isinstance(target, RemoteArray):
        raise TypeError(
            f"{kernel}: {what} must be a RemoteArray (e.g. gpuflow.empty(...)), got "
            f"{type(target).__name__}; gpuflow cannot write into host arrays"
        )
    target._expr = expr
    return target


def _no_options(options, kernel):
    if tuple(options):
        raise NotImplementedError(f"{kernel}: compile options are supported for RawKernel only")


class ElementwiseKernel:
    """cupy.ElementwiseKernel: ``kernel(*inputs)`` or
    ``kernel(*inputs, *outputs)``, returning a RemoteArray (a tuple for
    several outputs). Output arguments give the outputs' initial values,
    dtypes and shape, and are rebound to the results."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", no_return=False, return_tuple=False, *, loop_prep="",
                 after_loop="", options=()):
        self.in_params = in_params
        self.out_params = out_params
        self.operation = operation
        self.name = name
        self.preamble = preamble
        self.loop_prep = loop_prep
        self.after_loop = after_loop
        self.no_return = no_return
        self.return_tuple = return_tuple
        _check_identifier(name, "kernel name")
        _no_options(options, f"ElementwiseKernel {name!r}")
        self._ins = _parse_params(in_params, "in_params")
        self._outs = _parse_params(out_params, "out_params")
        _check_unique(self._ins, self._outs)
        if not self._outs:
            raise ValueError(f"{name}: out_params declares no output")
        self.nin = len(self._ins)
        self.nout = len(self._outs)
        self.nargs = self.nin + self.nout

    def __repr__(self):
        return f"ElementwiseKernel({self.name!r}, in={self.in_params!r}, out={self.out_params!r})"

    def __call__(self, *args, size=None, block_size=None, stream=None):
        kernel = f"ElementwiseKernel {self.name!r}"
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}: expected {self.nin} (inputs) or "
                f"{self.nargs} (inputs and outputs), got {len(args)}"
            )
        if not args:
            raise ValueError(f"{kernel}: a kernel node needs at least one argument (declare an "
                             "input, e.g. 'raw T unused', or pass the output arrays)")
        out_args = args[self.nin:]
        for p in self._outs:
            if p.raw and not out_args:
                raise ValueError(f"{kernel}: raw output parameter '{p.name}' needs its array: "
                                 "pass the outputs after the inputs")
        for p, value in zip(self._outs, out_args):
            if not isinstance(value, RemoteArray):
                raise TypeError(
                    f"{kernel}: output '{p}' must be a RemoteArray (e.g. gpuflow.empty(...)), got "
                    f"{type(value).__name__}; gpuflow cannot write into host arrays"
                )
        session = session_of(args)
        params = self._ins + (self._outs if out_args else [])
        inputs, types = [], []
        for value, p in zip(args, params):
            x, t, _ = _convert(value, p, session, kernel)
            inputs.append(x)
            types.append(t)
        for p, value, t in zip(self._outs, out_args, types[self.nin:]):
            if p.dtype is not None and t.dtype != p.dtype:
                raise TypeError(f"{kernel}: output '{p}' is declared {p.dtype} but the array is "
                                f"{t.dtype}")
        # The loop shape, as the server decides it: the non-raw in params
        # broadcast (scalars are 0-d), else size=, else the output arrays.
        non_raw = [t.shape for t, p in zip(types, self._ins) if not p.raw]
        shape = _inference.broadcast_shapes(*non_raw)
        if size is not None:
            size = operator.index(size)
            if size < 0:
                raise ValueError(f"{kernel}: size must be >= 0, got {size}")
            if shape:
                raise ValueError(f"{kernel}: size={size} is given but the arguments have shape "
                                 f"{shape}; pass size only when no non-raw array gives the shape")
            shape = (size,)
        elif not non_raw:
            given = [v for p, v in zip(self._outs, out_args) if not p.raw]
            if not given:
                raise ValueError(f"{kernel}: the loop size is undecided: pass size= or the "
                                 "output arrays")
            shape = given[0].shape
        for p, value in zip(self._outs, out_args):
            if not p.raw and value.shape != shape:
                raise ValueError(f"{kernel}: output '{p}' has shape {value.shape} but the "
                                 f"arguments broadcast to {shape}")
        bound = _bind_placeholders(params, types, kernel)
        attrs = {"in_params": self.in_params, "out_params": self.out_params,
                 "operation": self.operation, "name": self.name}
        for key in ("preamble", "loop_prep", "after_loop"):
            if getattr(self, key):
                attrs[key] = getattr(self, key)
        if size is not None:
            attrs["size"] = size
        results = []
        for i, p in enumerate(self._outs):
            dtype = _out_dtype(p, bound, kernel)
            node_attrs = dict(attrs, output=i) if i else attrs
            # A raw output keeps its array's shape (the kernel indexes it).
            expr = _Expr("elementwise_kernel", inputs, node_attrs, dtype,
                         out_args[i].shape if p.raw else shape)
            if out_args:
                results.append(_rebind(out_args[i], expr, kernel, f"output '{p}'"))
            else:
                results.append(RemoteArray(session, expr))
        if self.no_return:
            return None
        if len(results) == 1 and not self.return_tuple:
            return results[0]
        return tuple(results)


class ReductionKernel:
    """cupy.ReductionKernel: ``kernel(*inputs, axis=None, keepdims=False)``
    returns a RemoteArray; ``out=`` (or a trailing output argument) must be a
    RemoteArray of the result's shape, which is rebound to the result."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="",
                 options=()):
        self.in_params = in_params
        self.out_params = out_params
        self.map_expr = map_expr
        self.reduce_expr = reduce_expr
        self.post_map_expr = post_map_expr
        self.identity = identity
        self.name = name
        self.reduce_type = reduce_type
        self.preamble = preamble
        _check_identifier(name, "kernel name")
        _no_options(options, f"ReductionKernel {name!r}")
        self._ins = _parse_params(in_params, "in_params")
        self._outs = _parse_params(out_params, "out_params")
        _check_unique(self._ins, self._outs)
        if len(self._outs) != 1 or self._outs[0].raw:
            raise ValueError(f"{name}: a ReductionKernel has exactly one non-raw output, got "
                             f"{out_params!r}")
        if any(p.raw for p in self._ins):
            raise ValueError(f"{name}: raw parameters are not supported in reduction kernels")
        if not self._ins:
            raise ValueError(f"{name}: a ReductionKernel needs at least one input")
        self.nin = len(self._ins)
        self.nout = 1
        self.nargs = self.nin + 1

    def __repr__(self):
        return f"ReductionKernel({self.name!r}, in={self.in_params!r}, out={self.out_params!r})"

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        kernel = f"ReductionKernel {self.name!r}"
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}: expected {self.nin} (inputs) or "
                f"{self.nargs} (inputs and output), got {len(args)}"
            )
        if len(args) == self.nargs:
            if out is not None:
                raise TypeError(f"{kernel}: output given twice (argument and out=)")
            args, out = args[:-1], args[-1]
        session = session_of(args + ((out,) if isinstance(out, RemoteArray) else ()))
        inputs, types = [], []
        for value, p in zip(args, self._ins):
            x, t, _ = _convert(value, p, session, kernel)
            inputs.append(x)
            types.append(t)
        shape = _inference.broadcast_shapes(*(t.shape for t in types))
        axes = None
        if axis is not None:
            axes = [operator.index(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
            reduced = _inference.normalize_axes(axes, len(shape))
        else:
            reduced = list(range(len(shape)))
        out_shape = tuple(1 if i in reduced else d for i, d in enumerate(shape)
                          if keepdims or i not in reduced)
        dtype = _out_dtype(self._outs[0], _bind_placeholders(self._ins, types, kernel), kernel)
        attrs = {"in_params": self.in_params, "out_params": self.out_params,
                 "map_expr": self.map_expr, "reduce_expr": self.reduce_expr,
                 "post_map_expr": self.post_map_expr, "name": self.name}
        if self.identity is not None:
            attrs["identity"] = str(self.identity)
        if self.reduce_type is not None:
            attrs["reduce_type"] = (self.reduce_type if isinstance(self.reduce_type, str)
                                    else dtype_name(self.reduce_type))
        if self.preamble:
            attrs["preamble"] = self.preamble
        if axes is not None:
            attrs["axes"] = axes
        if keepdims:
            attrs["keepdims"] = True
        result = RemoteArray(session, _Expr("reduction_kernel", inputs, attrs, dtype, out_shape))
        if out is None:
            return result
        if not isinstance(out, RemoteArray):
            _rebind(out, None, kernel, "out")  # raises
        if out.shape != out_shape:
            raise ValueError(f"{kernel}: out has shape {out.shape}, the result has {out_shape}")
        if out._expr.dtype != dtype:
            result = result.astype(out._expr.dtype)
        return _rebind(out, result._expr, kernel, "out")


def _strip_comments(code):
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", code, flags=re.S)


def _signature_arity(code, name):
    """The parameter count of ``__global__ ... name(...)`` in ``code``, or
    None when it cannot be told (not found, overloads, macros)."""
    pattern = r"__global__[^;{}()]*?\b" + re.escape(name) + r"\s*\(([^)]*)\)"
    counts = set()
    for m in re.finditer(pattern, _strip_comments(code)):
        params = m.group(1).strip()
        if params in ("", "void"):
            counts.add(0)
            continue
        depth, n = 0, 1
        for ch in params:
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif ch == "," and depth == 0:
                n += 1
        counts.add(n)
    return counts.pop() if len(counts) == 1 else None


def _launch_dims(value, what):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        raise ValueError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    try:
        dims = [operator.index(d) for d in value]
    except TypeError:
        raise TypeError(f"{what} must hold ints, got {value!r}") from None
    if any(d < 1 or d >= 1 << 31 for d in dims):
        raise ValueError(f"{what} entries must be in [1, 2^31), got {tuple(dims)}")
    if what == "block" and int(np.prod(dims)) > 1024:
        raise ValueError(f"block {tuple(dims)} has {int(np.prod(dims))} threads; a block has at "
                         "most 1024")
    return dims


class RawKernel:
    """cupy.RawKernel: ``kernel(grid, block, args, shared_mem=0)``. Python
    ints are passed as int64, floats as float64, complex numbers as
    complex128 and bools as bool (as CuPy does); numpy scalars keep their
    dtype, so pass ``np.int32(n)`` to an ``int`` parameter and
    ``np.complex64(z)`` to a ``complex<float>`` one. Code that includes
    ``<cupy/complex.cuh>`` gets CuPy's ``complex<T>`` (gpuflow's own, with
    the same names). See the module doc for which arguments it writes."""

    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False, *,
                 enable_cooperative_groups=False, jitify=False):
        if not isinstance(code, str) or not isinstance(name, str):
            raise TypeError("RawKernel(code, name): both must be strings")
        _check_identifier(name, "kernel name")
        self.code = code
        self.name = name
        self.options = tuple(options)
        if not all(isinstance(o, str) for o in self.options):
            raise TypeError("RawKernel options must be strings")
        self.backend = backend
        self._arity = _signature_arity(code, name)

    def __repr__(self):
        return f"RawKernel({self.name!r})"

    def __call__(self, grid, block, args, *, shared_mem=0, _writes=None):
        # _writes (gpuflow.jit, which knows): the argument indices the
        # kernel stores into; default: every writable array argument.
        kernel = f"RawKernel {self.name!r}"
        grid = _launch_dims(grid, "grid")
        block = _launch_dims(block, "block")
        shared_mem = operator.index(shared_mem)
        if shared_mem < 0:
            raise ValueError(f"shared_mem must be >= 0, got {shared_mem}")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"{kernel}: args must be a tuple of kernel arguments, got "
                            f"{type(args).__name__}")
        if self._arity is not None and len(args) != self._arity:
            raise TypeError(
                f"{kernel} takes {self._arity} arguments (its signature in the code), got "
                f"{len(args)}"
            )
        session = session_of(args)
        inputs = []
        for i, value in enumerate(args):
            if isinstance(value, bool):
                value = np.bool_(value)
            elif isinstance(value, int):
                if not _inference.INT64_MIN <= value <= _inference.INT64_MAX:
                    raise OverflowError(f"{kernel}: argument {i} ({value}) does not fit int64")
                value = np.int64(value)
            elif isinstance(value, float):
                value = np.float64(value)
            elif isinstance(value, complex):
                value = np.complex128(value)
            elif isinstance(value, (list, tuple, str, bytes)) or value is None:
                raise TypeError(f"{kernel}: argument {i} is a {type(value).__name__}; pass "
                                "arrays and scalars")
            try:
                x, _ = operand(value, session)
            except UnsupportedOperand as err:
                raise TypeError(f"{kernel}: argument {i}: {err}") from None
            inputs.append(x)
        outputs = [i for i, v in enumerate(args) if isinstance(v, RemoteArray) and v.writable
                   and (_writes is None or i in _writes)]
        if not outputs:
            raise ValueError(
                f"{kernel} has no argument it could write: pass at least one array made by "
                "gpuflow.empty/zeros/ones/full (or .copy()); arrays from asarray and from other "
                "operations are read-only inputs"
            )
        # Each launch gets private copies of every argument the kernel
        # writes, so no array it reads changes (a launch per output).
        attrs = {"code": self.code, "name": self.name, "grid": grid, "block": block,
                 "writes": outputs}
        if shared_mem:
            attrs["shared_mem"] = shared_mem
        if self.options:
            attrs["options"] = list(self.options)
        for i in outputs:
            target = args[i]
            target._expr = _Expr("raw_kernel", inputs, dict(attrs, output=i),
                                 target._expr.dtype, target._expr.shape)
