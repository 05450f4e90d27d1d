"""Kernels written in Python, cupyx.jit-style, translated to CUDA C++ by the
client and run as ``raw_kernel`` nodes (see docs/jit.md).

    from gpuflow import jit

    @jit.rawkernel()
    def vec_add(a, b, y):
        i = jit.grid(1)
        if i < y.size:
            y[i] = a[i] + b[i]

    y = gpuflow.zeros(n, gpuflow.float32)           # writable, as for RawKernel
    vec_add(((n + 255) // 256,), (256,), (a, b, y))  # CuPy's call form
    vec_add[(n + 255) // 256, 256](a, b, y)          # Numba's
    print(vec_add.cuda_source(a, b, y))              # the CUDA C++, offline

At a call the argument types (an array's dtype and ndim; a numpy scalar's
dtype; Python int, float, complex and bool as int64, float64, complex128 and
bool) pick a translation, made once per signature and cached on the kernel.
The launch goes through :class:`gpuflow.RawKernel`, so its rules hold: a
kernel writes only arguments made writable by ``gpuflow.empty``/``zeros``/...
or ``.copy()``, and each argument it stores into is rebound to the array as
the kernel left it (one it only reads stays as it was). A kernel that stores
into an argument that is not writable is refused before anything is sent
(the write would otherwise be lost). Complex values are CuPy's
``complex<float>``/``complex<double>`` (docs/jit.md, "Complex values").

Arrays travel as pointers. For an array parameter of ndim N >= 1 the
translation appends N int64 parameters (its shape, C order) after the
user's parameters, so ``a.shape``, ``a.size`` and ``a[i, j]`` work; the
client passes them. Anything outside the supported subset raises
:class:`JitError` naming the construct and its file, line and column,
before anything is sent.

Translations are made without a server: ``cuda_source`` needs no session.
Global and closure numbers a kernel reads are taken when it is translated
for a signature.
"""

import ast
import builtins
import inspect
import math
import operator
import textwrap

import numpy as np

from gpuflow.kernels import RawKernel
from gpuflow.remote_array import RemoteArray

__all__ = [
    "JitError", "rawkernel", "grid", "gridsize", "threadIdx", "blockIdx", "blockDim", "gridDim",
    "laneid", "warpsize", "shared_memory", "syncthreads", "syncwarp", "atomic_add", "atomic_sub",
    "atomic_max", "atomic_min", "atomic_exch", "atomic_cas", "atomic_and", "atomic_or",
    "atomic_xor", "atomic_inc", "atomic_dec", "shfl_sync", "shfl_up_sync", "shfl_down_sync",
    "shfl_xor_sync", "all_sync", "any_sync", "ballot_sync",
]


class JitError(Exception):
    """A kernel uses Python that gpuflow.jit cannot translate (or types that
    do not fit). ``filename``, ``lineno`` and ``col`` (1-based) say where;
    ``construct`` names what, when the error is about a construct."""

    def __init__(self, message, filename=None, lineno=None, col=None, construct=None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.construct = construct
        where = f"{filename}:{lineno}:{col}: " if filename is not None else ""
        super().__init__(where + message)


# ---- what kernels can name ------------------------------------------------------------


class _Intrinsic:
    """A gpuflow.jit function: meaningful inside a kernel only."""

    def __init__(self, name):
        self.name = name
        self.__name__ = name
        self.__doc__ = f"gpuflow.jit.{name}: usable inside @gpuflow.jit.rawkernel functions only."

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"gpuflow.jit.{self.name}() can only be used inside a "
                           "@gpuflow.jit.rawkernel function")

    def __repr__(self):
        return f"gpuflow.jit.{self.name}"


class _Dim3:
    """threadIdx, blockIdx, blockDim, gridDim: ``.x``, ``.y``, ``.z`` (uint32)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"gpuflow.jit.{self.name}"


threadIdx = _Dim3("threadIdx")
blockIdx = _Dim3("blockIdx")
blockDim = _Dim3("blockDim")
gridDim = _Dim3("gridDim")
warpsize = _Intrinsic("warpsize")

grid = _Intrinsic("grid")
gridsize = _Intrinsic("gridsize")
laneid = _Intrinsic("laneid")
shared_memory = _Intrinsic("shared_memory")
syncthreads = _Intrinsic("syncthreads")
syncwarp = _Intrinsic("syncwarp")
atomic_add = _Intrinsic("atomic_add")
atomic_sub = _Intrinsic("atomic_sub")
atomic_max = _Intrinsic("atomic_max")
atomic_min = _Intrinsic("atomic_min")
atomic_exch = _Intrinsic("atomic_exch")
atomic_cas = _Intrinsic("atomic_cas")
atomic_and = _Intrinsic("atomic_and")
atomic_or = _Intrinsic("atomic_or")
atomic_xor = _Intrinsic("atomic_xor")
atomic_inc = _Intrinsic("atomic_inc")
atomic_dec = _Intrinsic("atomic_dec")
shfl_sync = _Intrinsic("shfl_sync")
shfl_up_sync = _Intrinsic("shfl_up_sync")
shfl_down_sync = _Intrinsic("shfl_down_sync")
shfl_xor_sync = _Intrinsic("shfl_xor_sync")
all_sync = _Intrinsic("all_sync")
any_sync = _Intrinsic("any_sync")
ballot_sync = _Intrinsic("ballot_sync")

# ---- types --------------------------------------------------------------------------------

_CTYPE = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
    "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
    "float64": "double", "complex64": "complex<float>", "complex128": "complex<double>",
}
# Types C promotes to int in arithmetic: results are cast back.
_NARROW = {"bool", "int8", "int16", "uint8", "uint16"}
_SUPPORTED_DTYPES = ", ".join(_CTYPE)


def _kind(dtype):
    return np.dtype(dtype).kind  # b, i, u, f, c


def _is_int(dtype):
    return _kind(dtype) in "iu"


def _is_float(dtype):
    return _kind(dtype) == "f"


def _is_complex(dtype):
    return _kind(dtype) == "c"


def _part(dtype):
    """The real type of a complex dtype's parts (complex64: float32)."""
    return "float32" if dtype == "complex64" else "float64"


class _V:
    """A translated expression: C code and its type. kind is scalar, array,
    tuple (``elts``) or object (a Python object such as a module). ``weak``
    marks Python literals (their type follows the other operand's);
    ``const`` holds a literal's value; ``pure`` is False for code with side
    effects (atomics, warp collectives)."""

    __slots__ = ("code", "dtype", "kind", "weak", "const", "pure", "obj", "elts")

    def __init__(self, code=None, dtype=None, kind="scalar", weak=False, const=None, pure=True,
                 obj=None, elts=None):
        self.code, self.dtype, self.kind = code, dtype, kind
        self.weak, self.const, self.pure, self.obj, self.elts = weak, const, pure, obj, elts


class _Array:
    """An array parameter or a shared-memory array."""

    def __init__(self, name, cname, dtype, ndim, dims, param=None, shared=False):
        self.name, self.cname, self.dtype, self.ndim = name, cname, dtype, ndim
        self.dims = dims          # C code per dimension (ints for static shared arrays)
        self.param = param        # index among the kernel's parameters, or None
        self.shared = shared


def _float_literal(value, dtype):
    if math.isnan(value):
        return "__int_as_float(0x7fc00000)" if dtype == "float32" else \
            "__longlong_as_double(0x7ff8000000000000LL)"
    if math.isinf(value):
        sign = "-" if value < 0 else ""
        return (f"{sign}__int_as_float(0x7f800000)" if dtype == "float32" else
                f"{sign}__longlong_as_double(0x7ff0000000000000LL)")
    if dtype == "float32":
        text = repr(float(np.float32(value)))
        return f"{text}f"
    return repr(float(value))


def _literal(value, dtype):
    """C code for the number ``value`` as ``dtype``."""
    if _is_complex(dtype):
        value = complex(value)
        part = _part(dtype)
        return (f"{_CTYPE[dtype]}({_float_literal(value.real, part)}, "
                f"{_float_literal(value.imag, part)})")
    if dtype == "bool":
        return "true" if value else "false"
    if _is_float(dtype):
        return _float_literal(float(value), dtype)
    value = int(value)
    if dtype == "uint64":
        return f"{value}ull"
    if dtype == "uint32":
        return f"{value}u"
    if dtype == "int64":
        return "(-9223372036854775807LL - 1)" if value == -2**63 else f"{value}LL"
    if dtype == "int32" and value == -2**31:
        return "(-2147483647 - 1)"
    return str(value) if value >= 0 or dtype == "int32" else f"({value})"


def _literal_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, np.generic):
        return value.dtype.name
    if isinstance(value, complex):
        return "complex128"
    return "int64" if isinstance(value, int) else "float64"


# ---- CUDA helpers the translation may need ----------------------------------------------

_HELPERS = {
    "floordiv": r"""
template <class T> __device__ __forceinline__ T _gf_floordiv(T a, T b) {
  if (b == 0) return T(0);
  T q = T(a / b);
  if constexpr (T(-1) < T(0)) {
    if (T(a % b) != 0 && ((a < 0) != (b < 0))) q = T(q - 1);
  }
  return q;
}
__device__ __forceinline__ float _gf_floordiv(float a, float b) {
  if (b == 0.0f) return a / b;
  float m = fmodf(a, b);
  float d = (a - m) / b;
  if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) d -= 1.0f;
  if (d == 0.0f) return copysignf(0.0f, a / b);
  float f = floorf(d);
  return d - f > 0.5f ? f + 1.0f : f;
}
__device__ __forceinline__ double _gf_floordiv(double a, double b) {
  if (b == 0.0) return a / b;
  double m = fmod(a, b);
  double d = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) d -= 1.0;
  if (d == 0.0) return copysign(0.0, a / b);
  double f = floor(d);
  return d - f > 0.5 ? f + 1.0 : f;
}""",
    "mod": r"""
template <class T> __device__ __forceinline__ T _gf_mod(T a, T b) {
  if (b == 0) return T(0);
  T r = T(a % b);
  if constexpr (T(-1) < T(0)) {
    if (r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
  }
  return r;
}
__device__ __forceinline__ float _gf_mod(float a, float b) {
  float m = fmodf(a, b);
  if (b == 0.0f) return m;
  if (m != 0.0f) {
    if ((b < 0.0f) != (m < 0.0f)) m += b;
  } else {
    m = copysignf(0.0f, b);
  }
  return m;
}
__device__ __forceinline__ double _gf_mod(double a, double b) {
  double m = fmod(a, b);
  if (b == 0.0) return m;
  if (m != 0.0) {
    if ((b < 0.0) != (m < 0.0)) m += b;
  } else {
    m = copysign(0.0, b);
  }
  return m;
}""",
    "ipow": r"""
template <class T> __device__ __forceinline__ T _gf_ipow(T base, T e) {
  if constexpr (T(-1) < T(0)) {
    if (e < 0) return base == 1 ? T(1) : base == T(-1) ? T((e & 1) ? -1 : 1) : T(0);
  }
  T r = 1;
  while (e != 0) {
    if (e & 1) r = T(r * base);
    base = T(base * base);
    e = T(e >> 1);
  }
  return r;
}""",
    "abs": r"""
template <class T> __device__ __forceinline__ T _gf_abs(T x) {
  if constexpr (T(-1) < T(0)) return x < 0 ? T(-x) : x;
  return x;
}""",
    "minmax": r"""
template <class T> __device__ __forceinline__ T _gf_pymin(T a, T b) { return b < a ? b : a; }
template <class T> __device__ __forceinline__ T _gf_pymax(T a, T b) { return b > a ? b : a; }
template <class T> __device__ __forceinline__ T _gf_minimum(T a, T b) {
  return a != a ? a : b != b ? b : b < a ? b : a;
}
template <class T> __device__ __forceinline__ T _gf_maximum(T a, T b) {
  return a != a ? a : b != b ? b : b > a ? b : a;
}
template <class T> __device__ __forceinline__ T _gf_fmin(T a, T b) {
  return a != a ? b : b != b ? a : b < a ? b : a;
}
template <class T> __device__ __forceinline__ T _gf_fmax(T a, T b) {
  return a != a ? b : b != b ? a : b > a ? b : a;
}""",
    "sign": r"""
template <class T> __device__ __forceinline__ T _gf_sign(T x) {
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
}""",
    "square": r"""
template <class T> __device__ __forceinline__ T _gf_square(T x) { return T(x * x); }""",
    "classify": r"""
template <class T> __device__ __forceinline__ bool _gf_isnan(T x) { return x != x; }
template <class T> __device__ __forceinline__ bool _gf_isinf(T x) {
  return x == x && (x - x) != (x - x);
}
template <class T> __device__ __forceinline__ bool _gf_isfinite(T x) {
  return (x - x) == (x - x);
}
template <class T> __device__ __forceinline__ bool _gf_signbit(T x) { return x < 0; }
__device__ __forceinline__ bool _gf_signbit(float x) { return __float_as_int(x) < 0; }
__device__ __forceinline__ bool _gf_signbit(double x) {
  return __double_as_longlong(x) < 0;
}""",
    "laneid": r"""
__device__ __forceinline__ unsigned int _gf_laneid() {
  unsigned int id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}""",
}

# ---- functions kernels can call -----------------------------------------------------------

# Python/NumPy name -> C name of the double version (the float one adds "f").
_FLOAT_UNARY = {
    "sqrt": "sqrt", "cbrt": "cbrt", "exp": "exp", "exp2": "exp2", "expm1": "expm1",
    "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p", "sin": "sin",
    "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
    "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "erf": "erf", "erfc": "erfc",
    "gamma": "tgamma", "lgamma": "lgamma", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "rint": "rint", "fabs": "fabs",
}
_FLOAT_BINARY = {"atan2": "atan2", "arctan2": "atan2", "hypot": "hypot", "copysign": "copysign",
                 "fmod": "fmod", "pow": "pow"}
_MATH_NAMES = sorted(set(_FLOAT_UNARY) - {"arcsin", "arccos", "arctan", "arcsinh", "arccosh",
                                          "arctanh", "rint"}
                     | {"atan2", "hypot", "copysign", "fmod", "pow", "isnan", "isinf",
                        "isfinite", "degrees", "radians"})
_UFUNC_NAMES = sorted(set(_FLOAT_UNARY) - {"asin", "acos", "atan", "asinh", "acosh", "atanh",
                                           "gamma", "lgamma", "erf", "erfc"}
                      | {"abs", "absolute", "sign", "square", "negative", "isnan", "isinf",
                         "isfinite", "signbit", "deg2rad", "rad2deg", "degrees", "radians",
                         "logical_not", "maximum", "minimum", "fmax", "fmin", "arctan2",
                         "hypot", "power", "copysign", "fmod", "add", "subtract", "multiply",
                         "true_divide", "divide", "floor_divide", "remainder", "mod",
                         "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                         "right_shift", "real", "imag", "conj", "conjugate"})
# The functions of complex values kernels may call (by their C names in
# _FLOAT_UNARY): the server's complex<T> has them, with NumPy's special values.
_COMPLEX_FUNCTIONS = frozenset({
    "sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh",
    "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "rint",
})
_COMPLEX_UFUNCS = [n for n in _UFUNC_NAMES
                   if _FLOAT_UNARY.get(n) in _COMPLEX_FUNCTIONS or n == "exp2"]
_UFUNC_BINOP = {"add": ast.Add, "subtract": ast.Sub, "multiply": ast.Mult,
                "true_divide": ast.Div, "divide": ast.Div, "floor_divide": ast.FloorDiv,
                "remainder": ast.Mod, "mod": ast.Mod, "power": ast.Pow,
                "bitwise_and": ast.BitAnd, "bitwise_or": ast.BitOr, "bitwise_xor": ast.BitXor,
                "left_shift": ast.LShift, "right_shift": ast.RShift}

_BINOPS = {
    ast.Add: ("+", np.add), ast.Sub: ("-", np.subtract), ast.Mult: ("*", np.multiply),
    ast.Div: ("/", np.true_divide), ast.FloorDiv: ("//", np.floor_divide),
    ast.Mod: ("%", np.remainder), ast.Pow: ("**", np.power), ast.BitAnd: ("&", np.bitwise_and),
    ast.BitOr: ("|", np.bitwise_or), ast.BitXor: ("^", np.bitwise_xor),
    ast.LShift: ("<<", np.left_shift), ast.RShift: (">>", np.right_shift),
}
_PY_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
              ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
              ast.BitXor: operator.xor, ast.LShift: operator.lshift,
              ast.RShift: operator.rshift}
_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
            ast.GtE: ">="}

_CONSTRUCTS = {
    "With": "'with' statement", "AsyncWith": "'async with' statement",
    "Try": "'try' statement", "TryStar": "'try' statement", "Raise": "'raise' statement",
    "Assert": "'assert' statement", "Import": "'import' statement",
    "ImportFrom": "'import' statement", "Global": "'global' statement",
    "Nonlocal": "'nonlocal' statement", "Delete": "'del' statement",
    "ClassDef": "class definition", "FunctionDef": "nested function definition",
    "AsyncFunctionDef": "nested function definition", "Lambda": "lambda",
    "AsyncFor": "'async for' loop", "Match": "'match' statement",
    "ListComp": "list comprehension", "SetComp": "set comprehension",
    "DictComp": "dict comprehension", "GeneratorExp": "generator expression",
    "List": "list display", "Dict": "dict display", "Set": "set display",
    "JoinedStr": "f-string", "Yield": "'yield'", "YieldFrom": "'yield from'",
    "Await": "'await'", "NamedExpr": "assignment expression (:=)", "Starred": "starred expression",
    "Slice": "slice", "MatMult": "operator @", "Is": "operator 'is'",
    "IsNot": "operator 'is not'", "In": "operator 'in'", "NotIn": "operator 'not in'",
}

_CXX_RESERVED = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq threadIdx blockIdx blockDim gridDim warpSize main printf malloc free assert
atomicAdd atomicSub atomicMax atomicMin atomicExch atomicCAS atomicAnd atomicOr atomicXor
complex gf thrust i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16
""".split()) | frozenset(n + s for n in list(_FLOAT_UNARY.values()) + list(_FLOAT_BINARY.values())
                          for s in ("", "f")) | frozenset({"fmax", "fmaxf", "fmin", "fminf"})


def _construct_name(node):
    name = type(node).__name__
    return _CONSTRUCTS.get(name, f"'{name}'")


# ---- the translator ---------------------------------------------------------------------


class _Source:
    """A kernel function's parsed source and where it came from."""

    def __init__(self, func):
        self.func = func
        self.filename = getattr(func.__code__, "co_filename", "<unknown>")
        try:
            lines, start = inspect.getsourcelines(func)
        except (OSError, TypeError) as err:
            raise JitError(f"cannot read the source of {func.__qualname__!r} ({err}); "
                           "jit kernels must be defined in a file", self.filename,
                           func.__code__.co_firstlineno, 1) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        first = next((ln for ln in lines if ln.strip()), "")
        self.indent = len(first) - len(first.lstrip()) if dedented != text else 0
        self.line_offset = start - 1
        tree = ast.parse(dedented)
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not defs:
            raise JitError(f"{func.__qualname__!r} is not a 'def' function (a lambda?)",
                           self.filename, start, 1, construct="lambda")
        self.tree = defs[0]
        self.globals = func.__globals__
        self.closure = {}
        if func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass

    def error(self, node, message, construct=None):
        lineno = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", 0) + self.indent + 1
        return JitError(message, self.filename, lineno, col, construct)

    def unsupported(self, node, construct=None, hint=""):
        construct = construct or _construct_name(node)
        return self.error(node, f"{construct} is not supported in gpuflow.jit kernels{hint}",
                          construct)


def _assigned_names(body):
    names = set()
    for node in body:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
    return names


class _Translator:
    def __init__(self, source, arg_types):
        self.src = source
        self.fn = source.tree
        self.helpers = []
        self.decls = []          # (ctype, cname) hoisted to the top of the kernel
        self.shared = []         # shared-memory declarations
        self.lines = []
        self.depth = 1
        self.loops = 0
        self.vars = {}           # name -> (dtype, cname)
        self.arrays = {}         # name -> _Array
        self.writes = {}         # parameter index -> first line that writes it
        self.counter = 0
        self.dynamic_shared = False
        self.statement = self.fn  # the statement being translated (for errors)
        args = self.fn.args
        if (args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.kw_defaults
                or args.posonlyargs):
            raise self.src.unsupported(self.fn, "*args, **kwargs, keyword-only arguments or "
                                                "defaults", " (kernel signatures are plain "
                                                "positional parameters)")
        self.params = [a.arg for a in args.args]
        if len(self.params) != len(arg_types):
            raise TypeError(f"{self.fn.name}() takes {len(self.params)} arguments but "
                            f"{len(arg_types)} were given")
        self.locals = _assigned_names(self.fn.body) | set(self.params)
        self.cnames = {}
        for name in sorted(self.locals | {self.fn.name}):
            if name.startswith("_gf"):
                raise self.src.error(self.fn, f"the name {name!r} is reserved (names starting "
                                              "with _gf are gpuflow's)")
            c = "v" + name if name.startswith("__") else name
            while c in _CXX_RESERVED or (c != name and c in self.locals | {self.fn.name}):
                c += "_"
            self.cnames[name] = c
        self.param_decls = []
        self.shape_decls = []
        for i, (name, t) in enumerate(zip(self.params, arg_types)):
            cname = self.cnames[name]
            if t[0] == "array":
                _, dtype, ndim = t
                dims = [f"_gf_{cname}_shape{k}" for k in range(ndim)]
                self.arrays[name] = _Array(name, cname, dtype, ndim, dims, param=i)
                self.param_decls.append((name, dtype, cname))
                self.shape_decls.extend(f"long long {d}" for d in dims)
            else:
                self.vars[name] = (t[1], cname)
                self.param_decls.append((None, t[1], cname))

    # -- output ------------------------------------------------------------------------

    def helper(self, key):
        if key not in self.helpers:
            self.helpers.append(key)

    def emit(self, line):
        self.lines.append("  " * self.depth + line)

    def temp(self, dtype):
        self.counter += 1
        name = f"_gf_t{self.counter}"
        self.decls.append((_CTYPE[dtype], name))
        return name

    def translate(self):
        body = self.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        self.block(body)
        params = []
        for name, dtype, cname in self.param_decls:
            if name is None:
                params.append(f"{_CTYPE[dtype]} {cname}")
            else:
                arr = self.arrays[name]
                const = "" if arr.param in self.writes else "const "
                params.append(f"{const}{_CTYPE[dtype]}* {cname}")
        params += self.shape_decls
        out = [f"// gpuflow.jit translation of {self.fn.name}() "
               f"({self.src.filename}:{self.fn.lineno + self.src.line_offset})"]
        if any("complex<" in text for text in params + self.shared + self.lines
               + [ctype for ctype, _ in self.decls]):
            # CuPy's complex<T> (the server's own, as for RawKernel code).
            out.append("#include <cupy/complex.cuh>")
        out += [_HELPERS[k].strip("\n") for k in self.helpers]
        name = self.cnames[self.fn.name]
        out.append(f'extern "C" __global__ void {name}({", ".join(params) or "void"}) {{')
        out += ["  " + s for s in self.shared]
        out += [f"  {ctype} {cname};" for ctype, cname in self.decls]
        out += self.lines
        out.append("}")
        return name, "\n".join(out) + "\n"

    # -- statements --------------------------------------------------------------------

    def block(self, stmts):
        for s in stmts:
            method = getattr(self, "stmt_" + type(s).__name__, None)
            if method is None:
                raise self.src.unsupported(s)
            self.statement = s
            method(s)

    def stmt_Pass(self, node):
        pass

    def stmt_Break(self, node):
        if not self.loops:
            raise self.src.error(node, "'break' outside a loop", "'break'")
        self.emit("break;")

    def stmt_Continue(self, node):
        if not self.loops:
            raise self.src.error(node, "'continue' outside a loop", "'continue'")
        self.emit("continue;")

    def stmt_Return(self, node):
        if node.value is not None and not (isinstance(node.value, ast.Constant)
                                           and node.value.value is None):
            raise self.src.unsupported(node, "'return' with a value", " (kernels return "
                                             "nothing; write results into arrays)")
        self.emit("return;")

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return
        v = self.expr(node.value)
        if v.kind == "scalar":
            self.emit(f"{v.code};" if v.dtype == "void" else f"(void)({v.code});")
        else:
            self.emit(f"(void)0;  // {type(node.value).__name__}")

    def stmt_If(self, node):
        self.emit(f"if ({self.truth(node.test)}) {{")
        while True:
            self.depth += 1
            self.block(node.body)
            self.depth -= 1
            orelse = node.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                node = orelse[0]
                self.emit(f"}} else if ({self.truth(node.test)}) {{")
                continue
            if orelse:
                self.emit("} else {")
                self.depth += 1
                self.block(orelse)
                self.depth -= 1
            self.emit("}")
            return

    def stmt_While(self, node):
        if node.orelse:
            raise self.src.unsupported(node, "'while ... else'")
        cond = self.truth(node.test)
        self.emit(f"while ({cond}) {{")
        self.depth += 1
        self.loops += 1
        self.block(node.body)
        self.loops -= 1
        self.depth -= 1
        self.emit("}")

    def stmt_For(self, node):
        if node.orelse:
            raise self.src.unsupported(node, "'for ... else'")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and self.global_object(it.func) is builtins.range):
            raise self.src.error(it, "for loops must iterate over range(...)",
                                 "for loop over a non-range iterable")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.src.error(it, "range() takes 1 to 3 positional arguments", "range()")
        if not isinstance(node.target, ast.Name):
            raise self.src.unsupported(node.target, "for loop target other than a name")
        args = [self.scalar(a) for a in it.args]
        for a, n in zip(args, it.args):
            if not _is_int(a.dtype):
                raise self.src.error(n, f"range() needs integers, got {a.dtype}", "range()")
        if len(args) == 1:
            args = [_V("0", "int64", weak=True, const=0)] + args
        if len(args) == 2:
            args.append(_V("1", "int64", weak=True, const=1))
        typed = [a.dtype for a in args if not a.weak]
        t = np.result_type(*typed).name if typed else "int64"
        if _kind(t) == "u" and any(a.weak and a.const < 0 for a in args):
            t = np.result_type(t, np.int64).name
        if t not in _CTYPE or not _is_int(t):
            raise self.src.error(it, f"range() arguments do not share an integer type ({t})",
                                 "range()")
        start, stop, step = args
        if step.const is not None and step.const == 0:
            raise self.src.error(it.args[2], "range() step must not be zero", "range()")
        name = node.target.id
        target = self.declare(name, _V(None, t), node.target)
        counter = self.temp(t)
        self.emit(f"{counter} = {self.cast(start, t)};")
        stop_c = self.cast(stop, t)
        if stop.const is None:
            s = self.temp(t)
            self.emit(f"{s} = {stop_c};")
            stop_c = s
        step_c = self.cast(step, t)
        if step.const is None:
            s = self.temp(t)
            self.emit(f"{s} = {step_c};")
            step_c = s
            cond = (f"({step_c} > 0 && {counter} < {stop_c}) || "
                    f"({step_c} < 0 && {counter} > {stop_c})")
        else:
            cond = f"{counter} {'<' if step.const > 0 else '>'} {stop_c}"
        self.emit(f"for (; {cond}; {counter} += {step_c}) {{")
        self.depth += 1
        self.emit(f"{target} = {counter};")
        self.loops += 1
        self.block(node.body)
        self.loops -= 1
        self.depth -= 1
        self.emit("}")

    def stmt_Assign(self, node):
        if len(node.targets) != 1:
            raise self.src.unsupported(node, "chained assignment (a = b = ...)")
        self.assign(node.targets[0], node.value, node)

    def stmt_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.src.unsupported(node, "annotation without a value or of a non-name")
        ann = self.expr(node.annotation)
        dtype = self.dtype_of_object(ann, node.annotation)
        name = node.target.id
        if name in self.vars and self.vars[name][0] != dtype:
            raise self.src.error(node, f"variable {name!r} is {self.vars[name][0]}; it cannot "
                                       f"be declared {dtype}", "variable changing type")
        v = self.scalar(node.value)
        if not (v.weak or np.can_cast(v.dtype, dtype, "same_kind")):
            raise self.src.error(node.value, f"cannot assign {v.dtype} to {name!r} declared "
                                             f"{dtype}", "variable changing type")
        cname = self.declare(name, _V(None, dtype), node.target)
        self.emit(f"{cname} = {self.cast(v, dtype)};")

    def stmt_AugAssign(self, node):
        target = node.target
        if isinstance(target, ast.Name):
            cur = self.expr(target)
            if cur.kind != "scalar":
                raise self.src.error(target, f"{target.id!r} is not a number",
                                     "augmented assignment")
            v = self.scalar(node.value)
            res = self.binop(node.op, cur, v, node)
            if res.dtype != cur.dtype and not np.can_cast(res.dtype, cur.dtype, "same_kind"):
                raise self.src.error(node, f"'{target.id} {_BINOPS[type(node.op)][0]}= ...' "
                                           f"changes the type of {target.id!r} from "
                                           f"{cur.dtype} to {res.dtype}",
                                     "variable changing type")
            self.emit(f"{cur.code} = {self.cast(res, cur.dtype)};")
        elif isinstance(target, ast.Subscript):
            arr, off = self.element(target)
            k = self.temp("int64")
            self.emit(f"{k} = {off};")
            cur = _V(f"{arr.cname}[{k}]", arr.dtype)
            v = self.scalar(node.value)
            res = self.binop(node.op, cur, v, node)
            self.store(arr, target)
            self.emit(f"{arr.cname}[{k}] = {self.stored(res, arr, node)};")
        else:
            raise self.src.unsupported(target, "augmented assignment to this target")

    def assign(self, target, value_node, node):
        if isinstance(target, ast.Name):
            if isinstance(value_node, ast.Call) and \
                    self.global_object(value_node.func) is shared_memory:
                self.declare_shared(target, value_node)
                return
            v = self.expr(value_node)
            self.assign_value(target, v, value_node)
        elif isinstance(target, ast.Subscript):
            v = self.scalar(value_node)
            arr, off = self.element(target)
            self.store(arr, target)
            self.emit(f"{arr.cname}[{off}] = {self.stored(v, arr, value_node)};")
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value_node, (ast.Tuple, ast.List)):
                values = [self.expr(e) for e in value_node.elts]
            else:
                v = self.expr(value_node)
                if v.kind != "tuple":
                    raise self.src.error(value_node, "only tuples (such as a.shape or "
                                                     "jit.grid(2)) can be unpacked",
                                         "unpacking a non-tuple")
                values = v.elts
            if len(values) != len(target.elts):
                raise self.src.error(node, f"cannot unpack {len(values)} values into "
                                           f"{len(target.elts)} targets", "unpacking")
            held = []
            for v in values:  # all values first, as Python does (a, b = b, a)
                if v.kind != "scalar" or v.dtype == "void":
                    raise self.src.error(value_node, "tuple elements must be numbers",
                                         "unpacking")
                if v.const is not None:
                    held.append(v)
                    continue
                t = self.temp(v.dtype)
                self.emit(f"{t} = {v.code};")
                held.append(_V(t, v.dtype))
            for t, v in zip(target.elts, held):
                if isinstance(t, ast.Name):
                    self.assign_value(t, v, value_node)
                elif isinstance(t, ast.Subscript):
                    arr, off = self.element(t)
                    self.store(arr, t)
                    self.emit(f"{arr.cname}[{off}] = {self.stored(v, arr, value_node)};")
                else:
                    raise self.src.unsupported(t, "nested unpacking")
        else:
            raise self.src.unsupported(target, f"assignment to {_construct_name(target)}")

    def assign_value(self, target, v, value_node):
        name = target.id
        if name in self.arrays:
            raise self.src.error(target, f"{name!r} is an array; arrays cannot be rebound",
                                 "rebinding an array")
        if v.kind == "array":
            raise self.src.error(value_node, "arrays cannot be assigned to variables (index "
                                             "the array instead)", "array assignment")
        if v.kind == "tuple":
            raise self.src.error(value_node, "tuples cannot be stored in variables; unpack them "
                                             "(i, j = jit.grid(2))", "tuple variable")
        if v.kind != "scalar" or v.dtype == "void":
            raise self.src.error(value_node, f"cannot store {self.describe(v)} in a variable",
                                 "non-numeric variable")
        if name in self.vars:
            dtype, cname = self.vars[name]
            if v.dtype != dtype and not (v.weak and np.can_cast(v.dtype, dtype, "same_kind")):
                raise self.src.error(target, f"variable {name!r} changes type from {dtype} to "
                                             f"{v.dtype} (a variable keeps the type of its "
                                             "first assignment; cast explicitly, e.g. "
                                             f"gpuflow.{dtype}(...))", "variable changing type")
            self.emit(f"{cname} = {self.cast(v, dtype)};")
            return
        cname = self.declare(name, v, target)
        self.emit(f"{cname} = {v.code if not v.weak else self.cast(v, self.vars[name][0])};")

    def declare(self, name, v, node):
        dtype = v.dtype
        if name in self.arrays:
            raise self.src.error(node, f"{name!r} is an array; arrays cannot be rebound",
                                 "rebinding an array")
        if name in self.vars:
            if self.vars[name][0] != dtype:
                raise self.src.error(node, f"variable {name!r} changes type from "
                                           f"{self.vars[name][0]} to {dtype}",
                                     "variable changing type")
            return self.vars[name][1]
        cname = self.cnames[name]
        self.vars[name] = (dtype, cname)
        self.decls.append((_CTYPE[dtype], cname))
        return cname

    def declare_shared(self, target, call):
        name = target.id
        if name in self.vars or name in self.arrays:
            raise self.src.error(target, f"{name!r} is already defined; a shared array needs "
                                         "a name of its own", "rebinding an array")
        kw = {k.arg: k.value for k in call.keywords}
        if set(kw) - {"dtype", "size", "alignment"} or len(call.args) > 3:
            raise self.src.error(call, "jit.shared_memory(dtype, size, alignment=None)",
                                 "jit.shared_memory")
        args = list(call.args) + [None] * (3 - len(call.args))
        dtype_node = args[0] if args[0] is not None else kw.get("dtype")
        size_node = args[1] if args[1] is not None else kw.get("size")
        align_node = args[2] if args[2] is not None else kw.get("alignment")
        if dtype_node is None:
            raise self.src.error(call, "jit.shared_memory needs a dtype", "jit.shared_memory")
        dtype = self.dtype_of_object(self.expr(dtype_node), dtype_node)
        cname = self.cnames[name]
        align = ""
        if align_node is not None:
            a = self.const_int(align_node, "the alignment")
            if a <= 0 or a & (a - 1):
                raise self.src.error(align_node, "the alignment must be a power of two",
                                     "jit.shared_memory")
            align = f"__align__({a}) "
        if size_node is None or (isinstance(size_node, ast.Constant) and size_node.value is None):
            if self.dynamic_shared:
                raise self.src.error(call, "only one dynamically sized shared array is "
                                           "supported", "jit.shared_memory")
            self.dynamic_shared = True
            self.shared.append(f"extern __shared__ {align or '__align__(16) '}"
                               f"unsigned char _gf_dynamic_smem[];")
            self.shared.append(f"{_CTYPE[dtype]}* {cname} = "
                               f"reinterpret_cast<{_CTYPE[dtype]}*>(_gf_dynamic_smem);")
            self.arrays[name] = _Array(name, cname, dtype, 1, [None], shared=True)
            return
        if isinstance(size_node, (ast.Tuple, ast.List)):
            dims = [self.const_int(e, "a shared array's size") for e in size_node.elts]
        else:
            dims = [self.const_int(size_node, "a shared array's size")]
        if not dims or any(d <= 0 for d in dims):
            raise self.src.error(size_node, "a shared array's size must be positive",
                                 "jit.shared_memory")
        total = math.prod(dims)
        if total * np.dtype(dtype).itemsize > 227 * 1024:
            raise self.src.error(size_node, "the shared array is larger than a block's shared "
                                            "memory (227 KiB)", "jit.shared_memory")
        self.shared.append(f"__shared__ {align}{_CTYPE[dtype]} {cname}[{total}];")
        self.arrays[name] = _Array(name, cname, dtype, len(dims), dims, shared=True)

    def stored(self, v, arr, node):
        """C code for v stored into an element of arr (cast to its dtype)."""
        if _is_complex(v.dtype) and not _is_complex(arr.dtype):
            raise self.src.error(node, f"cannot store {v.dtype} values into the {arr.dtype} "
                                       f"array {arr.name!r}: that would discard the imaginary "
                                       "part (NumPy warns, CuPy's complex<T> does not convert); "
                                       "store .real, .imag or abs() explicitly",
                                 "complex to real conversion")
        return self.cast(v, arr.dtype)

    def store(self, arr, node):
        if arr.param is not None:
            self.writes.setdefault(arr.param, node.lineno + self.src.line_offset)

    # -- expressions -------------------------------------------------------------------

    def describe(self, v):
        if v.kind == "scalar":
            return "nothing (a call without a value)" if v.dtype == "void" else v.dtype
        if v.kind == "array":
            return f"a {v.obj.ndim}-d {v.obj.dtype} array"
        if v.kind == "tuple":
            return "a tuple"
        return repr(v.obj)

    def expr(self, node):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.src.unsupported(node)
        return method(node)

    def scalar(self, node):
        v = self.expr(node)
        if v.kind != "scalar" or v.dtype == "void":
            raise self.src.error(node, f"expected a number here, got {self.describe(v)}",
                                 "non-numeric operand")
        return v

    def truth(self, node):
        return self.cast(self.scalar(node), "bool")

    def const_int(self, node, what):
        v = self.expr(node)
        if v.kind != "scalar" or v.const is None or not _is_int(v.dtype):
            raise self.src.error(node, f"{what} must be an integer constant",
                                 "non-constant size")
        return int(v.const)

    def cast(self, v, dtype, node=None):
        """C code for v converted to dtype. Complex values convert to complex
        and to bool (nonzero), not to other real types: that would drop the
        imaginary part, which NumPy warns about and CuPy's complex<T> refuses."""
        if v.dtype == dtype:
            return v.code
        if _is_complex(dtype):
            if v.const is not None:
                return _literal(v.const, dtype)
            if _is_complex(v.dtype):
                return f"{_CTYPE[dtype]}({v.code})"
            return f"{_CTYPE[dtype]}(({_CTYPE[_part(dtype)]})({v.code}))"
        if _is_complex(v.dtype):
            if dtype == "bool":
                if v.const is not None:
                    return _literal(bool(v.const), "bool")
                return f"({v.code} != {_CTYPE[v.dtype]}(0))"
            raise self.complex_to_real(node or self.statement, v.dtype, dtype)
        if v.const is not None:
            if dtype == "bool":
                return _literal(bool(v.const), "bool")
            if _is_int(dtype):
                info = np.iinfo(dtype)
                value = int(v.const)
                if info.min <= value <= info.max:
                    return _literal(value, dtype) if dtype in ("int32", "int64", "uint32",
                                                               "uint64") else \
                        f"(({_CTYPE[dtype]}){_literal(value, 'int64')})"
            if _is_float(dtype):
                return _literal(float(v.const), dtype)
        return f"(({_CTYPE[dtype]})({v.code}))"

    def complex_to_real(self, node, src, dst, what="convert"):
        return self.src.error(node, f"cannot {what} {src} to {dst}: that would discard the "
                                    "imaginary part (NumPy warns, CuPy's complex<T> does not "
                                    "convert); take .real, .imag or abs() explicitly",
                              "complex to real conversion")

    def expr_Constant(self, node):
        value = node.value
        if isinstance(value, bool):
            return _V(_literal(value, "bool"), "bool", weak=True, const=value)
        if isinstance(value, int):
            if not -2**63 <= value < 2**63:
                raise self.src.error(node, f"the integer {value} does not fit int64",
                                     "integer literal out of range")
            return _V(_literal(value, "int64"), "int64", weak=True, const=value)
        if isinstance(value, float):
            return _V(_literal(value, "float64"), "float64", weak=True, const=value)
        if isinstance(value, complex):
            return _V(_literal(value, "complex128"), "complex128", weak=True, const=value)
        what = {str: "string", bytes: "bytes"}.get(type(value))
        if value is None:
            what = "None"
        raise self.src.unsupported(node, f"{what or type(value).__name__} literal")

    def expr_Name(self, node):
        name = node.id
        if name in self.arrays:
            arr = self.arrays[name]
            return _V(arr.cname, arr.dtype, kind="array", obj=arr)
        if name in self.locals:
            if name not in self.vars:
                raise self.src.error(node, f"local variable {name!r} is used before it is "
                                           "assigned", "use before assignment")
            dtype, cname = self.vars[name]
            return _V(cname, dtype)
        return self.object_value(self.global_object(node), node)

    def names_global(self, node):
        """Whether node is a name (or attribute chain) of a Python object outside the kernel."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in self.locals

    def global_object(self, node):
        """The Python object a non-local name (or attribute chain) names, or None."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return None
            for scope in (self.src.closure, self.src.globals, vars(builtins)):
                if node.id in scope:
                    return scope[node.id]
            raise self.src.error(node, f"name {node.id!r} is not defined", "undefined name")
        if isinstance(node, ast.Attribute):
            base = self.global_object(node.value)
            if base is None or isinstance(base, (_Dim3,)):
                return None
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.src.error(node, f"{base!r} has no attribute {node.attr!r}",
                                     "unknown attribute") from None
        return None

    def object_value(self, obj, node):
        if isinstance(obj, (bool, np.bool_)):
            return _V(_literal(bool(obj), "bool"), "bool", weak=not isinstance(obj, np.bool_),
                      const=bool(obj))
        if isinstance(obj, (int, float, complex)) and not isinstance(obj, np.generic):
            return self.expr_Constant(ast.copy_location(ast.Constant(obj), node))
        if isinstance(obj, (np.integer, np.floating, np.complexfloating)):
            dtype = obj.dtype.name
            if dtype not in _CTYPE:
                raise self.src.error(node, f"{dtype} values are not supported", "dtype")
            return _V(_literal(obj.item(), dtype), dtype, const=obj.item())
        if obj is warpsize:
            return _V("warpSize", "int32")
        return _V(kind="object", obj=obj)

    def expr_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id not in self.locals:
            obj = self.global_object(node)
            return self.object_value(obj, node)
        base = self.expr(node.value)
        attr = node.attr
        if base.kind == "object":
            if isinstance(base.obj, _Dim3):
                if attr not in ("x", "y", "z"):
                    raise self.src.error(node, f"{base.obj!r} has .x, .y and .z",
                                         "unknown attribute")
                return _V(f"{base.obj.name}.{attr}", "uint32")
            try:
                return self.object_value(getattr(base.obj, attr), node)
            except AttributeError:
                raise self.src.error(node, f"{base.obj!r} has no attribute {attr!r}",
                                     "unknown attribute") from None
        if base.kind == "array":
            arr = base.obj
            if attr == "ndim":
                return _V(str(arr.ndim), "int64", weak=True, const=arr.ndim)
            if attr == "shape":
                return _V(kind="tuple", elts=[self.dim(arr, k, node) for k in range(arr.ndim)])
            if attr == "size":
                if not arr.dims:
                    return _V("1", "int64", weak=True, const=1)
                if arr.shared and arr.dims[0] is not None:
                    n = math.prod(arr.dims)
                    return _V(str(n), "int64", weak=True, const=n)
                dims = [self.dim(arr, k, node).code for k in range(arr.ndim)]
                return _V("(" + " * ".join(dims) + ")" if len(dims) > 1 else dims[0], "int64")
            raise self.src.error(node, f"arrays have .shape, .size and .ndim in kernels, not "
                                       f".{attr}", f"array attribute .{attr}")
        if base.kind == "scalar" and base.dtype != "void" and attr in ("real", "imag"):
            return self.complex_part(attr, base, node)
        raise self.src.error(node, f"{self.describe(base)} has no attribute .{attr} in kernels",
                             f"attribute .{attr}")

    def dim(self, arr, k, node):
        d = arr.dims[k]
        if d is None:
            raise self.src.error(node, f"the size of the dynamically sized shared array "
                                       f"{arr.name!r} is not known in the kernel",
                                 "shape of dynamic shared memory")
        if isinstance(d, int):
            return _V(str(d), "int64", weak=True, const=d)
        return _V(d, "int64")

    def expr_Subscript(self, node):
        base = self.expr(node.value)
        if base.kind == "tuple":
            k = self.const_int(node.slice, "a tuple index")
            if not -len(base.elts) <= k < len(base.elts):
                raise self.src.error(node, f"tuple index {k} out of range", "tuple index")
            return base.elts[k]
        if base.kind != "array":
            raise self.src.error(node, f"cannot index {self.describe(base)}", "indexing")
        arr, off = self.element(node, base)
        return _V(f"{arr.cname}[{off}]", arr.dtype)

    def element(self, node, base=None):
        """(array, C offset) for ``array[indices]``."""
        if base is None:
            base = self.expr(node.value)
        if base.kind != "array":
            raise self.src.error(node, f"cannot index {self.describe(base)}", "indexing")
        arr = base.obj
        index = node.slice
        if isinstance(index, ast.Tuple):
            items = index.elts
        else:
            items = [index]
        values = []
        for item in items:
            if isinstance(item, ast.Slice):
                raise self.src.unsupported(item)
            if isinstance(item, ast.Constant) and item.value is Ellipsis:
                raise self.src.unsupported(item, "Ellipsis (...) in an index")
            v = self.expr(item)
            if v.kind == "tuple":
                values.extend(v.elts)
                continue
            if v.kind != "scalar" or not _is_int(v.dtype):
                raise self.src.error(item, f"array indices must be integers, got "
                                           f"{self.describe(v)}", "non-integer index")
            values.append(v)
        if len(values) != arr.ndim:
            raise self.src.error(node, f"{arr.name!r} has {arr.ndim} dimension(s) but "
                                       f"{len(values)} indices were given (each element takes "
                                       "one index per dimension)", "partial indexing")
        if not values:
            return arr, "0"
        off = None
        for k, v in enumerate(values):
            if v.const is not None:
                c = int(v.const)
                if c < 0:
                    d = self.dim(arr, k, node)
                    if d.const is not None:
                        if c + d.const < 0:
                            raise self.src.error(node, f"index {c} is out of bounds",
                                                 "index out of bounds")
                        idx = str(c + d.const)
                    else:
                        idx = f"({d.code} - {-c})"
                else:
                    idx = str(c)
            else:
                idx = v.code if v.dtype == "int64" else f"((long long)({v.code}))"
            if off is None:
                off = idx
            else:
                d = self.dim(arr, k, node).code
                off = f"({off}) * {d} + {idx}"
        return arr, off

    def expr_Tuple(self, node):
        return _V(kind="tuple", elts=[self.expr(e) for e in node.elts])

    def promote(self, values, node, what):
        try:
            protos = [np.empty(0, v.dtype) if not v.weak else _weak_proto(v) for v in values]
            t = np.result_type(*protos).name
        except TypeError:
            raise self.src.error(node, f"{what}: {', '.join(v.dtype for v in values)} have no "
                                       "common type", what) from None
        if t not in _CTYPE:
            raise self.src.error(node, f"{what}: the result would be {t}", what)
        return t

    def binop(self, op, a, b, node):
        if type(op) not in _BINOPS:
            raise self.src.unsupported(node, _construct_name(op))
        sym, ufunc = _BINOPS[type(op)]
        if a.weak and b.weak:
            try:
                value = _PY_BINOPS[type(op)](a.const, b.const)
            except (ZeroDivisionError, ValueError, OverflowError, TypeError) as err:
                raise self.src.error(node, f"constant expression: {err}",
                                     f"operator {sym}") from None
            return self.object_value(value, node)
        try:
            protos = [np.empty(0, v.dtype) if not v.weak else _weak_proto(v) for v in (a, b)]
            rt = ufunc(*protos).dtype.name
        except TypeError:
            raise self.src.error(node, f"operator {sym} is not supported for {a.dtype} and "
                                       f"{b.dtype}", f"operator {sym}") from None
        if rt not in _CTYPE:
            raise self.src.error(node, f"operator {sym} on {a.dtype} and {b.dtype} gives {rt}",
                                 f"operator {sym}")
        ca, cb = self.cast(a, rt), self.cast(b, rt)
        pure = a.pure and b.pure
        if isinstance(op, ast.FloorDiv):
            self.helper("floordiv")
            return _V(f"_gf_floordiv({ca}, {cb})", rt, pure=pure)
        if isinstance(op, ast.Mod):
            self.helper("mod")
            return _V(f"_gf_mod({ca}, {cb})", rt, pure=pure)
        if isinstance(op, ast.Pow):
            if _is_complex(rt):   # NumPy's complex power (the server's c_pow)
                return _V(f"gf::pow({ca}, {cb})", rt, pure=pure)
            if _is_float(rt):
                fn = "powf" if rt == "float32" else "pow"
                return _V(f"{fn}({ca}, {cb})", rt, pure=pure)
            self.helper("ipow")
            return _V(f"_gf_ipow({ca}, {cb})", rt, pure=pure)
        code = f"({ca} {sym} {cb})"
        if rt in _NARROW:
            code = f"(({_CTYPE[rt]}){code})"
        return _V(code, rt, pure=pure)

    def expr_BinOp(self, node):
        if isinstance(node.op, ast.MatMult):
            raise self.src.unsupported(node, "operator @")
        return self.binop(node.op, self.scalar(node.left), self.scalar(node.right), node)

    def expr_UnaryOp(self, node):
        v = self.scalar(node.operand)
        op = node.op
        if isinstance(op, ast.Not):
            return _V(f"(!{self.cast(v, 'bool')})", "bool", pure=v.pure)
        if isinstance(op, ast.UAdd):
            return v
        if v.weak:
            try:
                value = -v.const if isinstance(op, ast.USub) else ~v.const
            except TypeError as err:   # ~ of a float or complex literal
                raise self.src.error(node, f"constant expression: {err}",
                                     "operator ~") from None
            return self.object_value(value, node)
        if isinstance(op, ast.USub):
            if v.dtype == "bool":
                raise self.src.error(node, "unary - is not supported for bool", "operator -")
            code = f"(-{v.code})"
        else:  # Invert
            if v.dtype == "bool":
                return _V(f"(!{v.code})", "bool", pure=v.pure)
            if not _is_int(v.dtype):
                raise self.src.error(node, f"operator ~ is not supported for {v.dtype}",
                                     "operator ~")
            code = f"(~{v.code})"
        if v.dtype in _NARROW:
            code = f"(({_CTYPE[v.dtype]}){code})"
        return _V(code, v.dtype, pure=v.pure)

    def expr_BoolOp(self, node):
        sym = " && " if isinstance(node.op, ast.And) else " || "
        values = [self.scalar(e) for e in node.values]
        return _V("(" + sym.join(self.cast(v, "bool") for v in values) + ")", "bool",
                  pure=all(v.pure for v in values))

    def expr_Compare(self, node):
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise self.src.unsupported(node, _construct_name(op))
        operands = [self.scalar(node.left)] + [self.scalar(c) for c in node.comparators]
        parts = []
        for k, op in enumerate(node.ops):
            if type(op) not in _COMPARE:
                raise self.src.unsupported(node, _construct_name(op))
            a, b = operands[k], operands[k + 1]
            if k > 0 and not a.pure:
                raise self.src.error(node, "the middle operand of a chained comparison must "
                                           "not have side effects (it is evaluated twice)",
                                     "chained comparison")
            t = self.promote([a, b], node, f"comparison {_COMPARE[type(op)]}")
            if _is_complex(t) and not isinstance(op, (ast.Eq, ast.NotEq)):
                raise self.unordered(node, _COMPARE[type(op)], a, b)
            parts.append(f"({self.cast(a, t)} {_COMPARE[type(op)]} {self.cast(b, t)})")
        code = parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
        return _V(code, "bool", pure=all(v.pure for v in operands))

    def unordered(self, node, sym, a, b):
        """The error for an order between complex values (Python's TypeError's words)."""
        names = [f"a Python {type(v.const).__name__}" if v.weak else v.dtype for v in (a, b)]
        return self.src.error(node, f"'{sym}' not supported between {names[0]} and {names[1]}: "
                                    "complex numbers are not ordered in kernels (== and != "
                                    "are; compare .real, .imag or abs())",
                              f"comparison {sym} of complex values")

    def expr_IfExp(self, node):
        cond = self.truth(node.test)
        a, b = self.scalar(node.body), self.scalar(node.orelse)
        if a.weak and b.weak and a.dtype != b.dtype:
            t = self.promote([_V(a.code, a.dtype), _V(b.code, b.dtype)], node,
                             "conditional expression")
        elif a.weak and b.weak:
            t = a.dtype
        else:
            t = self.promote([a, b], node, "conditional expression")
        return _V(f"({cond} ? {self.cast(a, t)} : {self.cast(b, t)})", t,
                  pure=a.pure and b.pure)

    # -- calls -------------------------------------------------------------------------

    def expr_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("conj", "conjugate") and \
                not self.names_global(func.value):
            base = self.expr(func.value)   # a number's z.conj() / z.conjugate()
            if base.kind == "scalar" and base.dtype != "void":
                if node.args or node.keywords:
                    raise self.src.error(node, f".{func.attr}() takes no arguments",
                                         f".{func.attr}()")
                return self.complex_part("conj", base, node)
        f = self.expr(node.func)
        if f.kind != "object":
            raise self.src.error(node, f"cannot call {self.describe(f)}", "call")
        obj = f.obj
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.src.unsupported(a)
        if isinstance(obj, _Intrinsic):
            return getattr(self, "call_" + obj.name)(node)
        if obj is shared_memory:
            raise self.src.error(node, "jit.shared_memory(...) must be assigned to a name",
                                 "jit.shared_memory")
        if (isinstance(obj, type) and issubclass(obj, np.generic)) or \
                any(obj is t for t in (int, float, bool, complex)):
            dtype = {int: "int64", float: "float64", bool: "bool", complex: "complex128"}.get(
                obj) or np.dtype(obj).name
            if dtype not in _CTYPE:
                raise self.src.error(node, f"{dtype} is not supported in kernels (supported: "
                                           f"{_SUPPORTED_DTYPES})", "dtype")
            if obj is complex and len(node.args) == 2 and not node.keywords:
                return self.complex_from_parts(node)
            if len(node.args) != 1 or node.keywords:
                raise self.src.error(node, "a cast takes one argument" + (
                    " (or two, complex(real, imag))" if obj is complex else ""), "cast")
            v = self.scalar(node.args[0])
            if _is_complex(v.dtype) and not _is_complex(dtype) and dtype != "bool":
                raise self.complex_to_real(node, v.dtype, dtype, what="cast")
            return _V(self.cast(v, dtype), dtype, pure=v.pure, const=_cast_const(v.const, dtype))
        if obj is builtins.range:
            raise self.src.error(node, "range() can only be used in 'for' loops", "range()")
        if obj is builtins.len:
            arr = self.expr(self.one_arg(node, "len"))
            if arr.kind == "tuple":
                return _V(str(len(arr.elts)), "int64", weak=True, const=len(arr.elts))
            if arr.kind != "array" or arr.obj.ndim == 0:
                raise self.src.error(node, "len() takes an array of 1 or more dimensions",
                                     "len()")
            return self.dim(arr.obj, 0, node)
        if obj in (builtins.min, builtins.max):
            if node.keywords or len(node.args) < 2:
                raise self.src.error(node, f"{obj.__name__}() takes two or more numbers in "
                                           "kernels", f"{obj.__name__}()")
            self.helper("minmax")
            values = [self.scalar(a) for a in node.args]
            acc = values[0]
            for v in values[1:]:
                t = self.promote([acc, v], node, f"{obj.__name__}()")
                if _is_complex(t):
                    raise self.unordered(node, "<" if obj is builtins.min else ">", v, acc)
                acc = _V(f"_gf_py{obj.__name__}({self.cast(acc, t)}, {self.cast(v, t)})", t,
                         pure=acc.pure and v.pure)
            return acc
        if obj is builtins.abs:
            return self.call_ufunc("abs", node)
        if obj is builtins.round or obj is builtins.pow or obj is builtins.divmod:
            if obj is builtins.pow and len(node.args) == 2 and not node.keywords:
                return self.binop(ast.Pow(), self.scalar(node.args[0]),
                                  self.scalar(node.args[1]), node)
            raise self.src.unsupported(node, f"{obj.__name__}()")
        name = _math_name(obj)
        if name is not None:
            return self.call_math(name, node)
        name = _ufunc_name(obj)
        if name is not None:
            return self.call_ufunc(name, node)
        raise self.src.error(node, f"calling {getattr(obj, '__name__', repr(obj))!r} is not "
                                   "supported in gpuflow.jit kernels (kernels call math.*, "
                                   "gpuflow/numpy ufuncs, casts and gpuflow.jit functions)",
                             f"call to {getattr(obj, '__name__', repr(obj))}")

    def complex_from_parts(self, node):
        """``complex(re, im)``: complex128 from two real numbers, as Python's."""
        re, im = (self.scalar(a) for a in node.args)
        for v, a in ((re, node.args[0]), (im, node.args[1])):
            if _is_complex(v.dtype):
                raise self.src.error(a, "complex(real, imag) takes real numbers in kernels, "
                                        f"got {v.dtype}", "cast")
        if re.const is not None and im.const is not None:
            value = complex(float(re.const), float(im.const))
            return _V(_literal(value, "complex128"), "complex128", const=value)
        return _V(f"complex<double>({self.cast(re, 'float64')}, {self.cast(im, 'float64')})",
                  "complex128", pure=re.pure and im.pure)

    def one_arg(self, node, what):
        if len(node.args) != 1 or node.keywords:
            raise self.src.error(node, f"{what}() takes exactly one argument", f"{what}()")
        return node.args[0]

    def float_type(self, v):
        return v.dtype if _is_float(v.dtype) and not v.weak else "float64"

    def float_call(self, base, v, node):
        t = self.float_type(v)
        fn = base + ("f" if t == "float32" else "")
        return _V(f"{fn}({self.cast(v, t)})", t, pure=v.pure)

    def float_call2(self, base, a, b, node, what):
        if a.weak and b.weak:
            t = "float64"
        else:
            t = self.promote([a, b], node, what)
            if not _is_float(t):
                t = "float64"
        fn = base + ("f" if t == "float32" else "")
        return _V(f"{fn}({self.cast(a, t)}, {self.cast(b, t)})", t, pure=a.pure and b.pure)

    def args_of(self, node, n, what):
        if len(node.args) != n or node.keywords:
            raise self.src.error(node, f"{what}() takes {n} argument(s) in kernels", what)
        return [self.scalar(a) for a in node.args]

    def call_math(self, name, node):
        what = f"math.{name}"
        for a in node.args:
            v = self.scalar(a)
            if _is_complex(v.dtype):
                raise self.src.error(a, f"{what}() takes real numbers, got {v.dtype} (Python's "
                                        "math raises TypeError for complex values; NumPy's and "
                                        "gpuflow's ufuncs take them)", what)
        if name in ("floor", "ceil", "trunc"):
            (v,) = self.args_of(node, 1, what)
            if _is_int(v.dtype) or v.dtype == "bool":
                return _V(self.cast(v, "int64"), "int64", pure=v.pure)
            f = self.float_call(name, v, node)
            return _V(f"((long long)({f.code}))", "int64", pure=v.pure)
        if name in ("isnan", "isinf", "isfinite"):
            (v,) = self.args_of(node, 1, what)
            self.helper("classify")
            return _V(f"_gf_{name}({self.cast(v, self.float_type(v))})", "bool", pure=v.pure)
        if name in ("degrees", "radians"):
            (v,) = self.args_of(node, 1, what)
            return self.scale_angle(name, v, node)
        if name in _FLOAT_BINARY:
            a, b = self.args_of(node, 2, what)
            return self.float_call2(_FLOAT_BINARY[name], a, b, node, what)
        if name == "log" and len(node.args) == 2:
            a, b = self.args_of(node, 2, what)
            la, lb = self.float_call("log", a, node), self.float_call("log", b, node)
            t = self.promote([la, lb], node, what)
            return _V(f"({self.cast(la, t)} / {self.cast(lb, t)})", t)
        (v,) = self.args_of(node, 1, what)
        return self.float_call(_FLOAT_UNARY[name], v, node)

    def scale_angle(self, name, v, node):
        t = self.float_type(v)
        factor = math.pi / 180 if name in ("radians", "deg2rad") else 180 / math.pi
        return _V(f"({self.cast(v, t)} * {_literal(factor, t)})", t, pure=v.pure)

    def call_ufunc(self, name, node):
        what = name
        if name in _UFUNC_BINOP:
            a, b = self.args_of(node, 2, what)
            return self.binop(_UFUNC_BINOP[name](), a, b, node)
        if name in ("real", "imag", "conj", "conjugate"):
            (v,) = self.args_of(node, 1, what)
            return self.complex_part(name, v, node)
        if name not in ("negative", "logical_not", "square") and \
                any(_is_complex(self.scalar(a).dtype) for a in node.args):
            return self.complex_ufunc(name, node)
        if name in ("abs", "absolute"):
            (v,) = self.args_of(node, 1, what)
            if _is_float(v.dtype):
                return self.float_call("fabs", v, node)
            if v.dtype == "bool":
                return v
            if v.weak:
                return self.object_value(abs(v.const), node)
            self.helper("abs")
            return _V(f"_gf_abs({v.code})", v.dtype, pure=v.pure)
        if name in ("sign", "square"):
            (v,) = self.args_of(node, 1, what)
            t = "int64" if v.weak and _is_int(v.dtype) else v.dtype
            if t == "bool":
                raise self.src.error(node, f"{name}() is not supported for bool", name)
            self.helper(name)
            return _V(f"_gf_{name}({self.cast(v, t)})", t, pure=v.pure)
        if name == "negative":
            return self.expr_UnaryOp(ast.copy_location(
                ast.UnaryOp(ast.USub(), self.one_arg(node, name)), node))
        if name == "logical_not":
            (v,) = self.args_of(node, 1, what)
            return _V(f"(!{self.cast(v, 'bool')})", "bool", pure=v.pure)
        if name in ("isnan", "isinf", "isfinite", "signbit"):
            (v,) = self.args_of(node, 1, what)
            self.helper("classify")
            t = "int64" if v.weak and _is_int(v.dtype) else v.dtype
            return _V(f"_gf_{name}({self.cast(v, t)})", "bool", pure=v.pure)
        if name in ("deg2rad", "rad2deg", "degrees", "radians"):
            (v,) = self.args_of(node, 1, what)
            return self.scale_angle("radians" if name in ("deg2rad", "radians") else
                                    "degrees", v, node)
        if name in ("maximum", "minimum", "fmax", "fmin"):
            a, b = self.args_of(node, 2, what)
            t = self.promote([a, b], node, name)
            self.helper("minmax")
            return _V(f"_gf_{name}({self.cast(a, t)}, {self.cast(b, t)})", t,
                      pure=a.pure and b.pure)
        if name in _FLOAT_BINARY:
            a, b = self.args_of(node, 2, what)
            return self.float_call2(_FLOAT_BINARY[name], a, b, node, name)
        (v,) = self.args_of(node, 1, what)
        return self.float_call(_FLOAT_UNARY[name], v, node)

    def complex_part(self, name, v, node):
        """``real``, ``imag`` and ``conj`` of a number (a real one is its own
        real part and conjugate, and has a zero imaginary part, as in NumPy)."""
        if not _is_complex(v.dtype):
            if name != "imag":
                return v
            if v.weak:
                return self.object_value(type(v.const)(0), node)
            return _V(_literal(0, v.dtype), v.dtype, const=0)
        if v.weak:
            value = v.const.real if name == "real" else v.const.imag if name == "imag" else \
                v.const.conjugate()
            return self.object_value(value, node)
        if name in ("conj", "conjugate"):
            return _V(f"gf::conj({v.code})", v.dtype, pure=v.pure)
        return _V(f"({v.code}).{name}()", _part(v.dtype), pure=v.pure)

    def complex_ufunc(self, name, node):
        """A ufunc of complex values: abs, isnan/isinf/isfinite and the complex
        functions of the server's complex<T> (NumPy's special values)."""
        if name in ("abs", "absolute"):
            (v,) = self.args_of(node, 1, name)
            if v.weak:
                return self.object_value(abs(v.const), node)
            return _V(f"gf::abs({v.code})", _part(v.dtype), pure=v.pure)
        if name in ("isnan", "isinf", "isfinite"):
            (v,) = self.args_of(node, 1, name)
            return _V(f"gf::{name}({v.code})", "bool", pure=v.pure)
        if name == "exp2":   # NumPy's: exp(z * ln 2), part by part
            (v,) = self.args_of(node, 1, name)
            t = v.dtype
            return _V(f"gf::exp({self.cast(v, t)} * {_literal(math.log(2), _part(t))})", t,
                      pure=v.pure)
        base = _FLOAT_UNARY.get(name)
        if base in _COMPLEX_FUNCTIONS:
            (v,) = self.args_of(node, 1, name)
            return _V(f"gf::{base}({v.code})", v.dtype, pure=v.pure)
        values = [self.scalar(a) for a in node.args]
        dtypes = " and ".join(v.dtype for v in values)
        try:
            protos = [np.empty(0, v.dtype) if not v.weak else _weak_proto(v) for v in values]
            getattr(np, name)(*protos)
        except (TypeError, AttributeError):
            raise self.src.error(node, f"ufunc '{name}' not supported for {dtypes} (NumPy does "
                                       "not define it for complex values either)",
                                 name) from None
        raise self.src.error(node, f"{name}() of complex values ({dtypes}) is not supported in "
                                   "gpuflow.jit kernels (complex values take + - * / **, == "
                                   "and !=, abs, real, imag, conj, isnan/isinf/isfinite and "
                                   f"{', '.join(_COMPLEX_UFUNCS)})", name)

    # -- gpuflow.jit functions ------------------------------------------------------------

    def intrinsic_args(self, node, names, required):
        """The arguments of a jit call, by position or keyword, as AST nodes."""
        what = f"jit.{self.global_name(node)}"
        if len(node.args) > len(names):
            raise self.src.error(node, f"{what}() takes at most {len(names)} arguments",
                                 what)
        out = dict(zip(names, node.args))
        for k in node.keywords:
            if k.arg not in names or k.arg in out:
                raise self.src.error(node, f"{what}() got an unexpected keyword {k.arg!r}", what)
            out[k.arg] = k.value
        for n in names[:required]:
            if n not in out:
                raise self.src.error(node, f"{what}() needs its argument {n!r}", what)
        return out

    def global_name(self, node):
        f = self.expr(node.func)
        return getattr(f.obj, "name", "?")

    def call_grid(self, node, size=False):
        args = self.intrinsic_args(node, ["ndim"], 1)
        n = self.const_int(args["ndim"], "jit.grid's ndim")
        if n not in (1, 2, 3):
            raise self.src.error(node, "ndim must be 1, 2 or 3", "jit.grid")
        elts = []
        for axis in "xyz"[:n]:
            if size:
                code = f"((long long)blockDim.{axis} * gridDim.{axis})"
            else:
                code = f"((long long)blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis})"
            elts.append(_V(code, "int64"))
        return elts[0] if n == 1 else _V(kind="tuple", elts=elts)

    def call_gridsize(self, node):
        return self.call_grid(node, size=True)

    def call_laneid(self, node):
        self.intrinsic_args(node, [], 0)
        self.helper("laneid")
        return _V("_gf_laneid()", "uint32")

    def call_syncthreads(self, node):
        self.intrinsic_args(node, [], 0)
        return _V("__syncthreads()", "void", pure=False)

    def mask(self, args, key):
        if key not in args:
            return "0xffffffffu"
        v = self.scalar(args[key])
        if not (_is_int(v.dtype) or v.dtype == "bool"):
            raise self.src.error(args[key], "a mask must be an integer", "mask")
        return self.cast(v, "uint32")

    def call_syncwarp(self, node):
        args = self.intrinsic_args(node, ["mask"], 0)
        return _V(f"__syncwarp({self.mask(args, 'mask')})", "void", pure=False)

    def atomic_target(self, args, node):
        arr_node = args["array"]
        base = self.expr(arr_node)
        if base.kind != "array":
            raise self.src.error(arr_node, f"the first argument of an atomic must be an array, "
                                           f"got {self.describe(base)}", "atomic")
        sub = ast.copy_location(ast.Subscript(value=arr_node, slice=args["index"],
                                              ctx=ast.Load()), node)
        arr, off = self.element(sub, base)
        self.store(arr, node)
        return arr, f"&{arr.cname}[{off}]"

    def atomic(self, node, op):
        names = ["array", "index", "compare", "value"] if op == "cas" else \
            ["array", "index", "value"]
        args = self.intrinsic_args(node, names, len(names))
        arr, ptr = self.atomic_target(args, node)
        t = arr.dtype
        ct = _CTYPE[t]
        v = self.scalar(args["value"])
        if not (v.weak or np.can_cast(v.dtype, t, "same_kind")):
            raise self.src.error(args["value"], f"atomic_{op} on a {t} array takes {t} values, "
                                                f"got {v.dtype}", f"jit.atomic_{op}")
        val = self.cast(v, t)
        ull = "unsigned long long"
        fn = {"add": "atomicAdd", "sub": "atomicSub", "max": "atomicMax", "min": "atomicMin",
              "exch": "atomicExch", "cas": "atomicCAS", "and": "atomicAnd", "or": "atomicOr",
              "xor": "atomicXor", "inc": "atomicInc", "dec": "atomicDec"}[op]
        code = None
        if op == "add" and t in ("int32", "uint32", "uint64", "float32", "float64"):
            code = f"{fn}({ptr}, {val})"
        elif op == "add" and t == "int64":
            code = f"((long long){fn}(({ull}*){ptr}, ({ull})({val})))"
        elif op == "sub" and t in ("int32", "uint32"):
            code = f"{fn}({ptr}, {val})"
        elif op == "sub" and t in ("float32", "float64"):
            code = f"atomicAdd({ptr}, -({val}))"
        elif op == "sub" and t in ("int64", "uint64"):
            code = f"(({ct})atomicAdd(({ull}*){ptr}, ({ull})0 - ({ull})({val})))"
        elif op in ("max", "min") and t in ("int32", "uint32", "int64", "uint64"):
            code = f"{fn}({ptr}, {val})"
        elif op in ("and", "or", "xor") and t in ("int32", "uint32", "uint64"):
            code = f"{fn}({ptr}, {val})"
        elif op in ("and", "or", "xor") and t == "int64":
            code = f"((long long){fn}(({ull}*){ptr}, ({ull})({val})))"
        elif op in ("inc", "dec") and t == "uint32":   # CUDA has them for unsigned int only
            code = f"{fn}({ptr}, {val})"
        elif op == "exch" and t in ("int32", "uint32", "uint64", "float32"):
            code = f"{fn}({ptr}, {val})"
        elif op == "exch" and t == "int64":
            code = f"((long long){fn}(({ull}*){ptr}, ({ull})({val})))"
        elif op == "exch" and t == "float64":
            code = (f"__longlong_as_double((long long){fn}(({ull}*){ptr}, "
                    f"({ull})__double_as_longlong({val})))")
        elif op == "cas":
            c = self.scalar(args["compare"])
            cmp_ = self.cast(c, t)
            if t in ("int32", "uint32", "uint64", "uint16"):
                code = f"{fn}({ptr}, {cmp_}, {val})"
            elif t == "int64":
                code = f"((long long){fn}(({ull}*){ptr}, ({ull})({cmp_}), ({ull})({val})))"
            elif t == "float32":
                code = (f"__int_as_float({fn}((int*){ptr}, __float_as_int({cmp_}), "
                        f"__float_as_int({val})))")
            elif t == "float64":
                code = (f"__longlong_as_double((long long){fn}(({ull}*){ptr}, "
                        f"({ull})__double_as_longlong({cmp_}), "
                        f"({ull})__double_as_longlong({val})))")
        if code is None:
            raise self.src.error(node, f"jit.atomic_{op} does not support {t} arrays",
                                 f"jit.atomic_{op}")
        return _V(code, t, pure=False)

    def call_atomic_add(self, node):
        return self.atomic(node, "add")

    def call_atomic_sub(self, node):
        return self.atomic(node, "sub")

    def call_atomic_max(self, node):
        return self.atomic(node, "max")

    def call_atomic_min(self, node):
        return self.atomic(node, "min")

    def call_atomic_exch(self, node):
        return self.atomic(node, "exch")

    def call_atomic_cas(self, node):
        return self.atomic(node, "cas")

    def call_atomic_and(self, node):
        return self.atomic(node, "and")

    def call_atomic_or(self, node):
        return self.atomic(node, "or")

    def call_atomic_xor(self, node):
        return self.atomic(node, "xor")

    def call_atomic_inc(self, node):
        return self.atomic(node, "inc")

    def call_atomic_dec(self, node):
        return self.atomic(node, "dec")

    def shuffle(self, node, fn, lane_name):
        args = self.intrinsic_args(node, ["mask", "var", lane_name, "width"], 3)
        mask = self.mask(args, "mask")
        v = self.scalar(args["var"])
        t = "int64" if v.weak and _is_int(v.dtype) else v.dtype
        if _is_complex(t):
            raise self.src.error(args["var"], f"jit.{fn[2:]} does not support {t} values "
                                              "(shuffle .real and .imag apart)", f"jit.{fn[2:]}")
        lane = self.scalar(args[lane_name])
        if not _is_int(lane.dtype):
            raise self.src.error(args[lane_name], f"{lane_name} must be an integer", fn)
        width = self.scalar(args["width"]) if "width" in args else _V("32", "int32")
        lane_c = self.cast(lane, "uint32" if fn == "__shfl_up_sync" or
                           fn == "__shfl_down_sync" else "int32")
        carrier = t
        if t in ("bool", "int8", "int16"):
            carrier = "int32"
        elif t in ("uint8", "uint16"):
            carrier = "uint32"
        code = f"{fn}({mask}, {self.cast(v, carrier)}, {lane_c}, {self.cast(width, 'int32')})"
        if carrier != t:
            code = f"(({_CTYPE[t]})({code}))"
        return _V(code, t, pure=False)

    def call_shfl_sync(self, node):
        return self.shuffle(node, "__shfl_sync", "val_id")

    def call_shfl_up_sync(self, node):
        return self.shuffle(node, "__shfl_up_sync", "delta")

    def call_shfl_down_sync(self, node):
        return self.shuffle(node, "__shfl_down_sync", "delta")

    def call_shfl_xor_sync(self, node):
        return self.shuffle(node, "__shfl_xor_sync", "lane_mask")

    def vote(self, node, fn, dtype):
        args = self.intrinsic_args(node, ["mask", "predicate"], 2)
        mask = self.mask(args, "mask")
        pred = self.scalar(args["predicate"])
        pred = self.cast(_V(self.cast(pred, "bool"), "bool") if _is_complex(pred.dtype) else
                         pred, "int32")
        code = f"{fn}({mask}, {pred})"
        return _V(f"({code} != 0)" if dtype == "bool" else code, dtype, pure=False)

    def call_all_sync(self, node):
        return self.vote(node, "__all_sync", "bool")

    def call_any_sync(self, node):
        return self.vote(node, "__any_sync", "bool")

    def call_ballot_sync(self, node):
        return self.vote(node, "__ballot_sync", "uint32")

    def call_warpsize(self, node):
        raise self.src.error(node, "jit.warpsize is a value, not a function", "jit.warpsize")

    def call_shared_memory(self, node):
        raise self.src.error(node, "jit.shared_memory(...) must be assigned to a name "
                                   "(smem = jit.shared_memory(gpuflow.float32, 256))",
                             "jit.shared_memory")

    def dtype_of_object(self, v, node):
        obj = v.obj if v.kind == "object" else None
        try:
            if obj is None or obj == "bfloat16":
                raise TypeError
            if obj in (int, float, bool, complex):
                dtype = {int: "int64", float: "float64", bool: "bool", complex: "complex128"}[obj]
            else:
                dtype = np.dtype(obj).name
        except TypeError:
            raise self.src.error(node, f"expected a dtype (such as gpuflow.float32), got "
                                       f"{self.describe(v)}", "dtype") from None
        if dtype not in _CTYPE:
            raise self.src.error(node, f"{dtype} is not supported in kernels (supported: "
                                       f"{_SUPPORTED_DTYPES})", "dtype")
        return dtype


def _cast_const(value, dtype):
    """A constant's value after a cast to dtype, or None where C and NumPy may disagree."""
    if value is None:
        return None
    if dtype == "bool":
        return bool(value)
    if _is_complex(dtype):
        return complex(np.array(value, dtype=np.complex128).astype(dtype))
    if isinstance(value, complex):
        return None
    if _is_float(dtype):
        return float(np.array(value, dtype=np.float64).astype(dtype))
    if isinstance(value, float) and not math.isfinite(value):
        return None
    value = int(value)
    info = np.iinfo(dtype)
    return value if info.min <= value <= info.max else None


def _weak_proto(v):
    if isinstance(v.const, (bool, np.bool_)):
        return False
    return 0 if _is_int(v.dtype) else 0j if _is_complex(v.dtype) else 0.0


_MATH_TABLE = None
_UFUNC_TABLE = None


def _math_name(obj):
    global _MATH_TABLE
    if _MATH_TABLE is None:
        _MATH_TABLE = {}
        for name in _MATH_NAMES:
            f = getattr(math, name, None)
            if f is not None:
                _MATH_TABLE[id(f)] = (f, name)
    hit = _MATH_TABLE.get(id(obj))
    return hit[1] if hit and hit[0] is obj else None


def _ufunc_name(obj):
    global _UFUNC_TABLE
    if _UFUNC_TABLE is None:
        import gpuflow

        _UFUNC_TABLE = {}
        for module in (np, gpuflow):
            for name in _UFUNC_NAMES:
                f = getattr(module, name, None)
                if f is not None and not isinstance(f, type):
                    _UFUNC_TABLE[id(f)] = (f, name)
    hit = _UFUNC_TABLE.get(id(obj))
    if hit and hit[0] is obj:
        return hit[1]
    # cupy's ufuncs (cupy.sqrt is a cupy._core._kernel.ufunc named "cupy_sqrt").
    if type(obj).__name__ == "ufunc":
        name = getattr(obj, "__name__", "") or ""
        name = name[5:] if name.startswith("cupy_") else name
        if name in _UFUNC_NAMES:
            return name
    return None


# ---- the decorator --------------------------------------------------------------------


def _arg_type(value, i, param, kernel):
    """('array', dtype, ndim) or ('scalar', dtype) for a call argument."""
    if isinstance(value, bool):
        return ("scalar", "bool")
    if isinstance(value, int):
        if not -2**63 <= value < 2**63:
            raise OverflowError(f"{kernel}: argument {i} ({value}) does not fit int64")
        return ("scalar", "int64")
    if isinstance(value, float):
        return ("scalar", "float64")
    if isinstance(value, complex):
        return ("scalar", "complex128")
    if isinstance(value, np.generic):
        dtype = value.dtype.name
        kind = "scalar"
        ndim = None
    elif isinstance(value, RemoteArray):
        dtype, kind, ndim = str(value._expr.dtype), "array", value.ndim
    elif hasattr(value, "dtype") and hasattr(value, "ndim") and hasattr(value, "shape"):
        dtype, kind, ndim = np.dtype(value.dtype).name, "array", int(value.ndim)
    else:
        raise TypeError(f"{kernel}: argument {i} ({param!r}) is a {type(value).__name__}; "
                        "pass arrays and scalars")
    if dtype not in _CTYPE:
        raise TypeError(f"{kernel}: argument {i} ({param!r}) is {dtype}; jit kernels take "
                        f"{_SUPPORTED_DTYPES}")
    return (kind, dtype) if kind == "scalar" else (kind, dtype, ndim)


class _Translation:
    __slots__ = ("name", "source", "writes", "kernel", "arrays")

    def __init__(self, name, source, writes, arrays):
        self.name, self.source, self.writes, self.arrays = name, source, writes, arrays
        self.kernel = RawKernel(source, name)


class JitKernel:
    """A kernel made by :func:`rawkernel`. Launch it as CuPy does,
    ``kernel(grid, block, args, shared_mem=0)``, or as Numba does,
    ``kernel[grid, block](*args)`` (also ``[grid, block, stream,
    shared_mem]``; the stream is ignored: the graph orders the work)."""

    def __init__(self, func):
        if not inspect.isfunction(func):
            raise TypeError(f"gpuflow.jit.rawkernel decorates functions, got {func!r}")
        self.func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self._source = None
        self._cache = {}

    def __repr__(self):
        return f"<gpuflow.jit.rawkernel {self.func.__qualname__}>"

    def _params(self):
        return list(inspect.signature(self.func).parameters)

    def _signature(self, args):
        params = self._params()
        kernel = f"jit kernel {self.__name__!r}"
        if len(args) != len(params):
            raise TypeError(f"{kernel} takes {len(params)} arguments ({', '.join(params)}), "
                            f"got {len(args)}")
        return tuple(_arg_type(v, i, p, kernel) for i, (v, p) in enumerate(zip(args, params)))

    def _translate(self, sig):
        hit = self._cache.get(sig)
        if hit is not None:
            return hit
        if self._source is None:
            self._source = _Source(self.func)
        t = _Translator(self._source, sig)
        name, source = t.translate()
        arrays = [(a.param, a.ndim) for a in t.arrays.values() if a.param is not None]
        result = _Translation(name, source, dict(t.writes), sorted(arrays))
        self._cache[sig] = result
        return result

    def cuda_source(self, *args):
        """The CUDA C++ this kernel is translated to for these arguments
        (arrays, or anything with ``dtype``/``ndim``/``shape``, and scalars).
        Contacts no server."""
        return self._translate(self._signature(args)).source

    def __call__(self, grid, block, args, *, shared_mem=0):
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"jit kernel {self.__name__!r}: args must be a tuple of kernel "
                            f"arguments, got {type(args).__name__} (call kernel(grid, block, "
                            "args) or kernel[grid, block](*args))")
        args = tuple(args)
        tr = self._translate(self._signature(args))
        params = self._params()
        for i, line in sorted(tr.writes.items()):
            v = args[i]
            if not (isinstance(v, RemoteArray) and v.writable):
                raise ValueError(
                    f"jit kernel {self.__name__!r} writes {params[i]!r} (line {line}) but "
                    f"argument {i} is read-only: pass an array made by gpuflow.empty/zeros/"
                    "ones/full (or .copy()); arrays from asarray, numpy and other operations "
                    "are inputs only")
        full = []
        for v in args:
            if isinstance(v, bool):
                v = np.bool_(v)
            elif isinstance(v, int):
                v = np.int64(v)
            elif isinstance(v, float):
                v = np.float64(v)
            elif isinstance(v, complex):
                v = np.complex128(v)
            full.append(v)
        for i, ndim in tr.arrays:
            full.extend(np.int64(d) for d in args[i].shape)
        # Only what the kernel stores into is rebound (and copied for the
        # launch); other arguments stay inputs, writable or not.
        tr.kernel(grid, block, tuple(full), shared_mem=shared_mem, _writes=set(tr.writes))

    def __getitem__(self, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise TypeError("launch configuration: kernel[grid, block] or "
                            "kernel[grid, block, stream, shared_mem]")
        grid_, block_ = config[0], config[1]
        shared = config[3] if len(config) == 4 else 0

        def launch(*args):
            return self(grid_, block_, args, shared_mem=shared)

        return launch


def rawkernel(func=None, *, mode="cuda", device=False):
    """``@gpuflow.jit.rawkernel()`` (or without the parentheses): a Python
    function as a CUDA kernel. See the module doc and docs/jit.md."""
    if mode != "cuda":
        raise ValueError(f"mode must be 'cuda', got {mode!r}")
    if device:
        raise JitError("device functions (device=True) are not supported; kernels call "
                       "math.*, ufuncs, casts and gpuflow.jit functions",
                       construct="device function")
    if func is None:
        return JitKernel
    return JitKernel(func)
